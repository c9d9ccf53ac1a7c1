# frozen_string_literal: true

require "bigdecimal"

require_relative "quota"

module LlmFailover
  # One call's hold on a shared quota (Chat's quota_key:), taken in the state store
  # before anything is sent, atomically for the whole fleet, and settled after.
  #
  # By :calls the hold is one unit, kept when a request reached the primary and an
  # answer came (from any target). By :tokens and :usd it is the most the primary's
  # request can cost (a CallCeiling: its input, max_tokens of output, at the primary's
  # price for :usd), and becomes what the primary's requests were billed, failed ones
  # included. So a fleet spends past the limit by no more than the largest hold in
  # flight: a call is let through only while the count, holds included, is below the
  # limit. A call that sent the primary nothing (cut before sending, a cache hit, an
  # open circuit, a refused connection) gives its hold back.
  #
  # The store counts integers: calls, tokens, or nano-dollars (USD * 1e9, each amount
  # rounded up).
  #
  # @api private: built by Chat for every call with a quota_key
  class QuotaReservation
    # Counter units per unit of the quota.
    UNITS = { calls: 1, tokens: 1, usd: Quota::USD_UNITS }.freeze

    # @return [Target] the primary, whose requests the hold pays for
    attr_reader :target

    # @param store [#reserve_quota, #adjust_quota] the state store
    # @param limit [Numeric] the quota (dollars for :usd)
    # @param by [Symbol] :calls, :tokens or :usd
    # @param target [Target] the primary
    # @param price [Price, nil] the primary's (:usd needs one)
    def initialize(store:, key:, limit:, window:, by:, target:, price: nil)
      @store = store
      @key = key
      @limit = limit
      @window = window
      @by = by
      @target = target
      @price = price
      @held = 0
    end

    # Holds the most this call can cost unless the quota is used up (the store's
    # check, atomic for the fleet: the same rule as Quota#exceeded?).
    # @param ceiling [CallCeiling, nil] the request's (:tokens and :usd)
    # @return [Quota] the quota as it stood before this call, for the call's pick
    def reserve(ceiling = nil)
      @period, @ttl = @window.at
      amount = hold_for(ceiling)
      reserved, used = @store.reserve_quota(@key, @period, amount, units(@limit), @ttl)
      @held = reserved ? amount : 0
      Quota.new(limit: @limit, used: shown(used - @held))
    end

    # Gives back what this call holds (nothing when the reservation was refused).
    def release
      adjust(-@held)
    end

    # After the call. +primary_sent+: whether any request may have reached the primary;
    # +tokens+ and +cost+ (BigDecimal USD, nil: not known): what those requests were
    # billed; +answered+: whether the call got an answer.
    def settle(primary_sent:, tokens: 0, cost: nil, answered: true)
      return if @held.zero?
      return release unless primary_sent

      case @by
      when :calls then release unless answered
      when :tokens then adjust(tokens - @held)
      when :usd then adjust(units(cost) - @held) if cost # unknown: the hold stands for it
      end
    end

    def inspect
      "#<#{self.class.name} #{@key.inspect} #{@period} by=#{@by} held=#{@held}>"
    end

    private

    def hold_for(ceiling)
      case @by
      when :calls then 1
      when :tokens then ceiling.tokens(@price)
      when :usd then units(ceiling.cost(@price))
      end
    end

    # Counter units of +amount+ (dollars for :usd), rounded up.
    def units(amount)
      @by == :usd ? (BigDecimal(amount.to_s) * UNITS[:usd]).ceil.to_i : amount
    end

    # What a pick and an error message show: dollars as a Float for :usd.
    def shown(units)
      @by == :usd ? units.fdiv(UNITS[:usd]) : units
    end

    def adjust(delta)
      return if delta.zero?

      @store.adjust_quota(@key, @period, delta, @ttl)
      @held += delta
    end
  end
end
