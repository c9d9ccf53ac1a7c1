# frozen_string_literal: true

module LlmFailover
  # What on_chain_exhausted receives: every target of a call failed on errors that a
  # healthy backup could have fixed (outages, rate limits, timeouts, empty accounts).
  class Alert
    # @return [String, nil] the chat's feature
    attr_reader :feature
    # @return [String] the final error's class name
    attr_reader :error_class
    # @return [String] the call's request_id
    attr_reader :request_id
    # @return [Array<AttemptRecord>] every attempt of that call
    attr_reader :attempts
    # @return [Array<Symbol>] the providers tried, in order
    attr_reader :providers
    # @return [Array<String>] the models tried, in order
    attr_reader :models
    # @return [Time] when this feature x error class first failed in the current window
    attr_reader :first_seen
    # @return [Integer] failures of the same kind swallowed since the previous alert
    attr_reader :suppressed

    def initialize(feature:, error_class:, request_id:, attempts:, providers:, models:, first_seen:, suppressed: 0)
      @feature = feature
      @error_class = error_class
      @request_id = request_id
      @attempts = attempts.dup.freeze
      @providers = providers.dup.freeze
      @models = models.dup.freeze
      @first_seen = first_seen
      @suppressed = suppressed
      freeze
    end

    # Hash access, for callbacks written against a Hash.
    def [](key)
      to_h[key.to_sym]
    end

    def to_h
      { feature: feature, error_class: error_class, request_id: request_id, attempts: attempts,
        providers: providers, models: models, first_seen: first_seen, suppressed: suppressed }
    end

    def inspect
      "#<#{self.class.name} feature=#{feature.inspect} #{error_class} providers=#{providers.inspect} " \
        "request_id=#{request_id}>"
    end
  end
end
