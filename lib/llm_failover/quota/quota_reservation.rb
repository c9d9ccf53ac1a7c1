# frozen_string_literal: true

require_relative "quota"

module LlmFailover
  # One call's hold on a shared quota (Chat's quota_key:): a unit reserved in the state
  # store before the call, atomically for the whole fleet, so that two processes that
  # both see 999 of 1,000 cannot both call the primary. Given back when the call was
  # answered from the cache, failed on every target or never reached the primary;
  # with quota_by: :tokens, made the tokens the primary's attempts used.
  #
  # @api private: built by Chat for every call with a quota_key
  class QuotaReservation
    # @return [Target] the primary, whose requests the unit pays for
    attr_reader :target

    # @param store [#reserve_quota, #adjust_quota] the state store
    # @param by [Symbol] :calls or :tokens
    # @param target [Target] the primary
    def initialize(store:, key:, limit:, window:, by:, target:)
      @store = store
      @key = key
      @limit = limit
      @window = window
      @by = by
      @target = target
      @held = 0
    end

    # Reserves one unit unless the quota is used up (the store's check, atomic for
    # the fleet: the same rule as Quota#exceeded?).
    # @return [Quota] the quota as it stood before this call, for the call's pick
    def reserve
      @period, @ttl = @window.at
      reserved, used = @store.reserve_quota(@key, @period, 1, @limit, @ttl)
      @held = reserved ? 1 : 0
      Quota.new(limit: @limit, used: used - @held)
    end

    # Gives back what this call holds (nothing when the reservation was refused).
    def release
      adjust(-@held)
    end

    # After the call. +primary_sent+: whether any request may have reached the primary;
    # +tokens+: the input and output tokens of those requests.
    def settle(primary_sent:, tokens:)
      return if @held.zero?
      return release unless primary_sent

      adjust(tokens - @held) if @by == :tokens
    end

    def inspect
      "#<#{self.class.name} #{@key.inspect} #{@period} held=#{@held}>"
    end

    private

    def adjust(delta)
      return if delta.zero?

      @store.adjust_quota(@key, @period, delta, @ttl)
      @held += delta
    end
  end
end
