# frozen_string_literal: true

module LlmFailover
  # One call's hold on a shared quota (Chat's quota_key:): a unit reserved in the state
  # store before the call, atomically for the whole fleet, so that two processes that
  # both see 999 of 1,000 cannot both call the primary. Given back when the call was
  # answered from the cache, failed on every target or never reached the primary;
  # with quota_by: :tokens, made the tokens the primary's attempts used.
  #
  # @api private: built by Chat for every call with a quota_key
  class QuotaReservation
    # @param store [#reserve_quota, #adjust_quota] the state store
    # @param by [Symbol] :calls or :tokens
    def initialize(store:, key:, limit:, window:, by:, enforce:)
      @store = store
      @key = key
      @limit = limit
      @window = window
      @by = by
      @enforce = enforce
      @held = 0
    end

    # Reserves one unit when the counter is below the limit.
    # @return [Hash] the quota figures the engine picks the first target from:
    #   { limit:, used:, enforce: }, used at the limit or past it when nothing was reserved
    def reserve
      @period, @ttl = @window.at
      reserved, used = @store.reserve_quota(@key, @period, 1, @limit, @ttl)
      @held = reserved ? 1 : 0
      { limit: @limit, used: reserved ? used - 1 : [used, @limit].max, enforce: @enforce }
    end

    # Gives back what this call holds (nothing when the reservation was refused).
    def release
      adjust(-@held)
    end

    # After an answer. +primary_sent+: whether any request went to the primary;
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
