# frozen_string_literal: true

require "bigdecimal"

require_relative "../errors"
require "llm_failover/llm_failover" # the compiled extension
require_relative "quota_window"

module LlmFailover
  # A spending budget for the primary model: how much may be used and how much has
  # been. A limit of 0 or nil means unlimited, so a quota of 0 never stops a call.
  # The answers come from the C core (ext/llm_failover/quota_class.c), the same code
  # the attempt loop uses.
  #
  # @example
  #   quota = LlmFailover::Quota.new(limit: 1000, used: 250)
  #   quota.exceeded?     # => false
  #   quota.remaining     # => 750.0
  #   quota.percent_used  # => 25.0
  class Quota
    # @!method limit
    #   @return [Numeric, nil] the limit as given (nil or 0: unlimited)
    # @!method used
    #   @return [Numeric] the amount used, as given
    # @!method unlimited?
    #   @return [Boolean] whether the limit is 0 or nil
    # @!method exceeded?
    #   @return [Boolean] `!unlimited? && used >= limit`
    # @!method remaining
    #   @return [Float] what is left to use, never negative; Float::INFINITY when unlimited
    # @!method percent_used
    #   @return [Float] 100 * used / limit (above 100 when overspent); 0.0 when unlimited

    # @param limit [Numeric, nil] the budget; 0 or nil means unlimited
    # @param used [Numeric] how much of it has been spent
    # @raise [ConfigurationError] a negative, non-finite or non-numeric value
    def initialize(limit:, used:)
      __set(checked(:limit, limit, allow_nil: true), checked(:used, used, allow_nil: false))
    end

    # A shared quota by :usd counts nano-dollars in the state store: integers, each
    # amount rounded up.
    USD_UNITS = 1_000_000_000

    # A shared quota's live figure, read from the state store: what a chat with the same
    # quota_key, quota, quota_window and quota_by counts against.
    # @example
    #   LlmFailover::Quota.live(key: "tenant-42", limit: 1000, window: :month).remaining
    #   LlmFailover::Quota.live(key: "tenant-42", limit: 50, by: :usd).used  # => BigDecimal dollars
    # @param by [Symbol] :calls, :tokens or :usd (used in dollars, a BigDecimal)
    # @param store [#quota_used] the configured state store unless given
    # @return [Quota]
    def self.live(key:, limit:, window: :month, by: :calls, store: LlmFailover.configuration.state_store)
      period, = QuotaWindow.new(window).at
      used = store.quota_used(key.to_s, period)
      new(limit: limit, used: by == :usd ? BigDecimal(used) / USD_UNITS : used)
    end

    # @return [String] e.g. `#<LlmFailover::Quota limit=1000 used=250 remaining=750.0 percent_used=25.0>`
    def inspect
      if unlimited?
        "#<#{self.class.name} unlimited (limit=#{shown(limit)}) used=#{shown(used)}>"
      else
        "#<#{self.class.name} limit=#{shown(limit)} used=#{shown(used)} " \
          "remaining=#{remaining.inspect} percent_used=#{percent_used.round(2).inspect}>"
      end
    end
    alias to_s inspect

    private

    # A BigDecimal (dollars) as its decimal figure, not 0.5e2.
    def shown(value)
      value.is_a?(BigDecimal) ? value.to_s("F") : value.inspect
    end

    # A real, finite, non-negative number (nil too when allowed), or a ConfigurationError.
    def checked(name, value, allow_nil:)
      return value if value.nil? && allow_nil
      return value if value.is_a?(Numeric) && value.real? && value.finite? && !value.negative?

      allowed = allow_nil ? "a non-negative number or nil (0 and nil mean unlimited)" : "a non-negative number"
      raise ConfigurationError, "quota #{name} must be #{allowed}, got #{value.inspect}"
    end
  end
end
