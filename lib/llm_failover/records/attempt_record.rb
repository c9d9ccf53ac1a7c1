# frozen_string_literal: true

require "bigdecimal"
require "json"
require "time"
require_relative "../chat/target"

module LlmFailover
  # One HTTP attempt of a logical call (retries and failover included). Every attempt
  # of one call shares its request_id. Failed attempts keep the tokens the provider
  # reported and what they cost: a cost report that reads only successes is not a cost
  # report.
  class AttemptRecord
    FIELDS = %i[request_id attempt provider model feature success error_class error_message http_status
                failover_eligible retry_after latency_ms first_token_ms input_tokens output_tokens
                cached_input_tokens cache_write_tokens started_at provider_request_id cached cancelled scrubbed
                skipped hedged turn_id cache_tier similarity cost cost_saved host].freeze

    # @return [String] UUID shared by every attempt of one call
    attr_reader :request_id
    # @return [Integer] 1, 2, ... across the whole call
    attr_reader :attempt
    # @return [Symbol] the configured provider name (a pool's, when the chat named one)
    attr_reader :provider
    # @return [Symbol, nil] the provider entry that served it: one of a pool's hosts, or
    #   the provider itself; nil for a cache hit (no host was asked)
    attr_reader :host
    # @return [String] the model asked for
    attr_reader :model
    # @return [String, nil]
    attr_reader :feature
    # @return [String, nil] the error's class name, e.g. "LlmFailover::RateLimitError"
    attr_reader :error_class
    attr_reader :error_message, :http_status, :retry_after, :latency_ms, :first_token_ms,
                :input_tokens, :output_tokens, :provider_request_id
    # @return [Time]
    attr_reader :started_at
    # @return [Hash{String => Integer}, nil] how many values of each kind the scrubber
    #   replaced in the call's request, e.g. {"card" => 1}; nil when it did not run
    attr_reader :scrubbed
    # @return [String, nil] the turn the call answered (the user message it answers),
    #   shared by every call that answered it again: a retried job, a #complete after a
    #   failed #ask. The report counts a failed call as lost only when no later call of
    #   its turn answered.
    attr_reader :turn_id
    # @return [Symbol, nil] a cache hit's tier, :exact or :semantic
    attr_reader :cache_tier
    # @return [Float, nil] a semantic hit's cosine similarity
    attr_reader :similarity
    # @return [Integer, nil] of input_tokens, those read from the provider's prompt cache
    #   (billed at the cached-input price); nil when the provider did not say
    attr_reader :cached_input_tokens
    # @return [Integer, nil] of input_tokens, those written to the provider's prompt cache
    attr_reader :cache_write_tokens
    # @return [BigDecimal, nil] USD: what the provider bills for this attempt's tokens at
    #   the configured prices (Configuration#pricing); 0 for a cache hit, a skip or an
    #   attempt that reported no tokens; nil when tokens were billed at a price not known
    attr_reader :cost
    # @return [BigDecimal, nil] a cache hit's: what the answer cost when it was made
    attr_reader :cost_saved

    def initialize(request_id:, attempt:, provider:, model:, feature: nil, success:, error_class: nil,
                   error_message: nil, http_status: nil, failover_eligible: false, retry_after: nil,
                   latency_ms: nil, first_token_ms: nil, input_tokens: nil, output_tokens: nil,
                   cached_input_tokens: nil, cache_write_tokens: nil, started_at: nil, provider_request_id: nil,
                   cached: false, cancelled: false, scrubbed: nil, skipped: false, hedged: false, turn_id: nil,
                   cache_tier: nil, similarity: nil, cost: nil, cost_saved: nil, host: nil)
      @request_id = request_id
      @host = host&.to_sym
      @attempt = attempt
      @provider = provider
      @model = model
      @feature = feature
      @success = success ? true : false
      @error_class = error_class.is_a?(Module) ? error_class.name : error_class
      @error_message = error_message
      @http_status = http_status
      @failover_eligible = failover_eligible ? true : false
      @retry_after = retry_after
      @latency_ms = latency_ms
      @first_token_ms = first_token_ms
      @input_tokens = input_tokens
      @output_tokens = output_tokens
      @cached_input_tokens = cached_input_tokens
      @cache_write_tokens = cache_write_tokens
      @started_at = started_at.is_a?(Numeric) ? Time.at(started_at) : started_at
      @provider_request_id = provider_request_id
      @cached = cached ? true : false
      @cancelled = cancelled ? true : false
      @scrubbed = scrubbed
      @skipped = skipped ? true : false
      @hedged = hedged ? true : false
      @turn_id = turn_id
      @cache_tier = cache_tier&.to_sym
      @similarity = similarity
      @cost = cost
      @cost_saved = cost_saved
      freeze
    end

    def success?
      @success
    end
    alias success success?

    # Whether the error would let a backup take over (false on success).
    def failover_eligible?
      @failover_eligible
    end
    alias failover_eligible failover_eligible?

    # Whether the response cache answered (no request was sent).
    def cached?
      @cached
    end
    alias cached cached?

    # Whether the attempt was stopped by Chat#cancel!, or cut as the loser of a hedged
    # request (#hedged?: the other attempt produced its first token first). Not a
    # provider's failure: it neither failed over nor counts against the provider.
    def cancelled?
      @cancelled
    end
    alias cancelled cancelled?

    # Whether the attempt was one of a hedged request's two, sent side by side because
    # the primary's first token was late (hedge_after): the winner and the loser
    # (cancelled) both say so.
    def hedged?
      @hedged
    end
    alias hedged hedged?

    # Whether no request was sent to the target: its circuit was open (error_class
    # "LlmFailover::CircuitOpenError"), or it cannot take the message's attachments
    # (error_class "LlmFailover::AttachmentRefusedError", the message naming the file
    # and the limit), or it is a pool's host whose credential source failed (error_class
    # "LlmFailover::ConfigurationError", the call's error). No status, latency 0.
    def skipped?
      @skipped
    end
    alias skipped skipped?

    # @return [Hash{Symbol => Object}] JSON-native values only: provider as a String,
    #   started_at as an ISO 8601 String with milliseconds, cost and cost_saved as
    #   decimal Strings ("0.0042": exact, as a Float would not be)
    def to_h
      FIELDS.to_h do |name|
        value = public_send(name)
        value = value.to_s if %i[provider cache_tier host].include?(name) && value
        value = value.utc.iso8601(3) if value.is_a?(Time)
        value = value.to_s("F") if value.is_a?(BigDecimal)
        [name, value]
      end
    end

    def as_json(*)
      to_h
    end

    def to_json(*args)
      to_h.to_json(*args)
    end

    def inspect
      outcome = success? ? (cached? ? "cached" : "ok") : "#{error_class}#{" #{http_status}" if http_status}"
      outcome += " skipped" if skipped?
      outcome = "cancelled" if cancelled?
      outcome += " hedged" if hedged?
      via = host && host != provider ? " via #{host}" : ""
      "#<#{self.class.name} #{request_id} ##{attempt} #{Target.label(provider, model)}#{via} #{outcome}>"
    end
  end
end
