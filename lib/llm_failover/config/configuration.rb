# frozen_string_literal: true

require_relative "../errors"
require_relative "../health/memory_state_store"
require_relative "../records/usage_log"
require_relative "provider_config"

module LlmFailover
  # The providers and the call policy. Every setter validates at once, so a bad value
  # fails at boot with ConfigurationError rather than on the first call in production.
  # A Chat works on its own copy (see #with_overrides), so per-chat overrides never
  # leak into the global configuration.
  class Configuration
    MIB = 1024 * 1024

    # name => default. Every one of them may be overridden per chat.
    DEFAULTS = {
      max_retries: 3,
      retry_interval: 0.1,
      retry_backoff_factor: 2,
      retry_max_interval: 30,
      retry_interval_randomness: 0.5,
      connect_timeout: 5,
      first_token_timeout: 30,
      idle_timeout: 30,
      request_timeout: 300,
      failover_on_context_length: false,
      max_response_bytes: 32 * MIB,
      usage_log: nil,
      on_chain_exhausted: nil,
      alert_window: 900,
      logger: nil,
      cache: nil,
      cache_ttl: 86_400,
      scrubber: nil,
      circuit_threshold: 5,
      circuit_cooldown: 60,
      circuit_first_probe: 5,
      max_wait_in_call: 10,
      hedge_after: nil,
      state_store: nil,
      on_circuit_change: nil,
      circuit_log: nil,
      cancel_poll_interval: 0.2,
      idempotency_wait: 60,
      trace_content: false,
      max_tool_rounds: 10,
      log_tool_content: false,
      attachment_private_hosts: false
    }.freeze

    OPTIONS = DEFAULTS.keys.freeze

    # The numbers the engine needs on every request, in seconds where they are times.
    ENGINE_POLICY = %i[max_retries retry_interval retry_backoff_factor retry_max_interval
                       retry_interval_randomness connect_timeout first_token_timeout idle_timeout
                       request_timeout failover_on_context_length max_response_bytes].freeze

    attr_reader(*OPTIONS)

    def initialize
      @providers = {}
      DEFAULTS.each { |name, value| instance_variable_set(:"@#{name}", value) }
      @state_store = MemoryStateStore.new
    end

    # Declares (or redeclares) a provider.
    # @example
    #   c.provider :groq, api: :openai, api_key: ENV["GROQ_API_KEY"], base_url: "https://api.groq.com/openai/v1"
    # @return [ProviderConfig]
    # Attachment options (images:, documents:, attachment_urls:, max_attachment_bytes:,
    # max_attachments:): see ProviderConfig#initialize.
    def provider(name, api:, api_key:, base_url: nil, headers: {}, **attachments)
      config = ProviderConfig.new(name, api: api, api_key: api_key, base_url: base_url, headers: headers,
                                  **attachments)
      @providers = @providers.merge(config.name => config).freeze
      config
    end

    # @return [Hash{Symbol => ProviderConfig}]
    def providers
      @providers
    end

    # @raise [ConfigurationError] naming the configured providers when +name+ is unknown
    def provider_config(name)
      @providers[name] || provider_config_by_name(name) # a Symbol, nearly always
    end

    def max_retries=(value)
      @max_retries = integer(:max_retries, value, min: 0)
      @engine_policy = nil
    end

    def retry_interval=(value)
      @retry_interval = number(:retry_interval, value, min: 0)
      @engine_policy = nil
    end

    def retry_backoff_factor=(value)
      # Below 1 the waits would shrink, which is never what a backoff means.
      @retry_backoff_factor = number(:retry_backoff_factor, value, min: 1)
      @engine_policy = nil
    end

    # The longest a call sleeps in one wait (a Retry-After, a backoff) before its next
    # attempt; a longer Retry-After fails over at once, and a call that ends on an error
    # meaning "later" further away than this raises RetryLater (retry_at, retry_in)
    # instead of sleeping. Per chat: LlmFailover.chat(max_wait_in_call: 30).
    def max_wait_in_call=(value)
      @max_wait_in_call = number(:max_wait_in_call, value, min: 0)
      @engine_policy = nil
    end

    # Hedged requests: when the primary's first token is this late, the backup is sent
    # beside it and the first of the two to produce a token answers (the other is cut
    # and recorded as cancelled). Seconds, or :auto (HedgeDelay: a percentile of the
    # primary's recent times to first token, kept in the state store); nil or false:
    # off (the default). Without a backup it does nothing.
    def hedge_after=(value)
      @hedge_after = if value.nil? || value == false then nil
                     elsif value == :auto then :auto
                     else number(:hedge_after, value, positive: true)
                     end
      @engine_policy = nil
    end

    def retry_max_interval=(value)
      @retry_max_interval = number(:retry_max_interval, value, min: 0)
      @engine_policy = nil
    end

    def retry_interval_randomness=(value)
      value = number(:retry_interval_randomness, value, min: 0)
      raise ConfigurationError, "retry_interval_randomness must be within 0..1, got #{value}" if value > 1

      @retry_interval_randomness = value
      @engine_policy = nil
    end

    def connect_timeout=(value)
      @connect_timeout = number(:connect_timeout, value, positive: true)
      @engine_policy = nil
    end

    def first_token_timeout=(value)
      @first_token_timeout = number(:first_token_timeout, value, positive: true)
      @engine_policy = nil
    end

    def idle_timeout=(value)
      @idle_timeout = number(:idle_timeout, value, positive: true)
      @engine_policy = nil
    end

    def request_timeout=(value)
      @request_timeout = number(:request_timeout, value, positive: true)
      @engine_policy = nil
    end

    def failover_on_context_length=(value)
      unless [true, false].include?(value)
        raise ConfigurationError, "failover_on_context_length must be true or false, got #{value.inspect}"
      end

      @failover_on_context_length = value
      @engine_policy = nil
    end

    def max_response_bytes=(value)
      @max_response_bytes = integer(:max_response_bytes, value, min: 1)
      @engine_policy = nil
    end

    # One sink or an Array of sinks: a callable, an object responding to #call or
    # #record, or a Logger (one JSON line per attempt). nil for none.
    def usage_log=(value)
      UsageLog.new(value) # validates
      @usage_log = value.is_a?(Array) ? value.dup.freeze : value
      @usage_log_emitter = nil
    end

    # A callable given an Alert when every target of a call failed on errors a
    # backup could have fixed; see Alerts.
    def on_chain_exhausted=(value)
      unless value.nil? || value.respond_to?(:call)
        raise ConfigurationError, "on_chain_exhausted must respond to #call, got #{value.class}"
      end

      @on_chain_exhausted = value
    end

    def alert_window=(value)
      @alert_window = number(:alert_window, value, min: 0)
    end

    # The response cache: nil (off, the default), a MemoryCache, or any store with
    # #read(key) and #write(key, value, expires_in:) such as Rails.cache.
    def cache=(value)
      unless value.nil? || (value.respond_to?(:read) && value.respond_to?(:write))
        raise ConfigurationError, "cache must respond to #read and #write(key, value, expires_in:), got #{value.class}"
      end

      @cache = value
    end

    # What replaces sensitive values before a request leaves the process: nil (off,
    # the default), a Scrubber, or any object with #scrub(text) -> [text, mapping].
    def scrubber=(value)
      unless value.nil? || value.respond_to?(:scrub)
        raise ConfigurationError, "scrubber must respond to #scrub(text) -> [text, mapping], got #{value.class}"
      end

      @scrubber = value
    end

    # Seconds between two looks at the cancel_requested_at of the chat records answering
    # in this process (a Stop button in another process): one query per chats table each
    # time, however many calls run (ActiveRecord::CancelWatcher).
    def cancel_poll_interval=(value)
      @cancel_poll_interval = number(:cancel_poll_interval, value, positive: true)
    end

    # Seconds an ask waits for another call answering the same idempotency_key (a
    # double-submitted form, a job run twice) before IdempotencyConflict.
    def idempotency_wait=(value)
      @idempotency_wait = number(:idempotency_wait, value, positive: true)
    end

    # Model turns one ask may make with tools (LlmFailover.chat(max_tool_rounds:) for
    # one chat); past them, ToolLoopError with the transcript intact.
    def max_tool_rounds=(value)
      @max_tool_rounds = integer(:max_tool_rounds, value, min: 1)
    end

    # Seconds: the longest a call can run, every attempt on both targets taking its
    # whole request_timeout and the longest wait between them. Past it, what a call
    # left unfinished is a dead process's (a claim on an idempotency_key's turn, a
    # streaming row).
    # @api private
    def longest_call
      2 * (max_retries + 1) * (request_timeout + retry_max_interval)
    end

    # Whether OpenTelemetry spans carry the prompt and the answer (gen_ai.prompt,
    # gen_ai.completion): off by default, since a trace backend is seldom where an app
    # keeps what its users wrote.
    # true lets a URL attachment be downloaded from a loopback or private address
    # (tests, an intranet); false (the default) refuses it and its redirects there.
    def attachment_private_hosts=(value)
      unless [true, false].include?(value)
        raise ConfigurationError, "attachment_private_hosts must be true or false, got #{value.inspect}"
      end

      @attachment_private_hosts = value
    end

    def trace_content=(value)
      raise ConfigurationError, "trace_content must be true or false, got #{value.inspect}" unless [true, false].include?(value)

      @trace_content = value
    end

    # Whether a tool run's "tool.llm_failover" event and usage-log line carry its
    # arguments and its result: off by default, since they hold what the app's users
    # and its own systems said (addresses, order numbers, records).
    def log_tool_content=(value)
      unless [true, false].include?(value)
        raise ConfigurationError, "log_tool_content must be true or false, got #{value.inspect}"
      end

      @log_tool_content = value
    end

    # Seconds a cached answer lives; nil leaves it to the store.
    def cache_ttl=(value)
      @cache_ttl = value.nil? ? nil : number(:cache_ttl, value, positive: true)
    end

    # Consecutive counted failed attempts of one target that open its circuit; 0
    # turns the breaker off.
    def circuit_threshold=(value)
      @circuit_threshold = integer(:circuit_threshold, value, min: 0)
    end

    # Seconds a circuit stays open before one request probes it (fractions allowed).
    def circuit_cooldown=(value)
      @circuit_cooldown = number(:circuit_cooldown, value, positive: true)
    end

    # Seconds an opened circuit waits before its first half-open probe. Later waits
    # grow with the outage (a sixth of its age so far, at least this, at most
    # circuit_cooldown: lf_circuit_interval, in the C core), so that a target is back
    # in use within a sixth of its outage. A value at or above circuit_cooldown keeps
    # the fixed schedule of one probe per cooldown.
    def circuit_first_probe=(value)
      @circuit_first_probe = number(:circuit_first_probe, value, positive: true)
    end

    # Where circuit state lives: a MemoryStateStore (per process, the default), a
    # RedisStateStore (a fleet), or any object speaking their protocol.
    def state_store=(value)
      missing = %i[admit record health claim].reject { |m| value.respond_to?(m) }
      unless missing.empty?
        raise ConfigurationError, "state_store must respond to #{missing.join(', ')} " \
                                  "(a LlmFailover::MemoryStateStore or RedisStateStore), got #{value.class}"
      end

      @state_store = value
    end

    # A callable given a CircuitEvent whenever a target's circuit changes state.
    def on_circuit_change=(value)
      unless value.nil? || value.respond_to?(:call)
        raise ConfigurationError, "on_circuit_change must respond to #call, got #{value.class}"
      end

      @on_circuit_change = value
    end

    # Where circuit changes are persisted (LlmFailover::ActiveRecord::CircuitLog, or any
    # #call(CircuitEvent)); a failing log is logged, never raised.
    def circuit_log=(value)
      unless value.nil? || value.respond_to?(:call)
        raise ConfigurationError, "circuit_log must respond to #call, got #{value.class}"
      end

      @circuit_log = value
    end

    # Where the gem's own warnings go (a failing sink, a failing alert callback).
    def logger=(value)
      unless value.nil? || value.respond_to?(:warn)
        raise ConfigurationError, "logger must respond to #warn (a Logger), got #{value.class}"
      end

      @logger = value
      @usage_log_emitter = nil
    end

    # @return [Configuration] a copy with +overrides+ applied and validated
    # @raise [ConfigurationError] naming unknown options
    def with_overrides(overrides)
      # Built here once so that every copy starts with them (each is dropped again by
      # the setters it concerns): a chat's copy would otherwise build both per call.
      engine_policy
      usage_log_emitter
      return dup if overrides.empty?

      unknown = overrides.keys.reject { |k| OPTIONS.include?(k) }
      unless unknown.empty?
        raise ConfigurationError,
              "unknown option#{'s' if unknown.size > 1} #{unknown.map(&:inspect).join(', ')} " \
              "(known: #{OPTIONS.map(&:inspect).join(', ')})"
      end

      copy = dup
      overrides.each { |name, value| copy.public_send(:"#{name}=", value) }
      copy
    end

    # @api private: the UsageLog of this configuration's sinks, built once and built
    # again after usage_log= or logger= (each drops it); a copy made by
    # #with_overrides shares it until one of them runs on the copy.
    def usage_log_emitter
      @usage_log_emitter ||= UsageLog.new(@usage_log, logger: @logger)
    end

    # @api private: the policy part of an engine request, in the engine's types:
    # frozen, built once and again only after a policy setter ran (each setter drops
    # it), so that a call only points at it (bench/README.md).
    def engine_policy
      @engine_policy ||= {
        max_retries: @max_retries, retry_interval: @retry_interval.to_f,
        retry_backoff_factor: @retry_backoff_factor.to_f,
        retry_max_interval: [@retry_max_interval, @max_wait_in_call].min.to_f, # no wait past max_wait_in_call
        retry_interval_randomness: @retry_interval_randomness.to_f, connect_timeout: @connect_timeout.to_f,
        first_token_timeout: @first_token_timeout.to_f, idle_timeout: @idle_timeout.to_f,
        request_timeout: @request_timeout.to_f, failover_on_context_length: @failover_on_context_length,
        max_response_bytes: @max_response_bytes,
        hedge_after: @hedge_after.is_a?(Numeric) ? @hedge_after.to_f : nil # :auto: per call (HedgeDelay)
      }.freeze
    end

    def inspect
      opts = OPTIONS.map { |name| "#{name}=#{summary(public_send(name))}" }.join(" ")
      "#<#{self.class.name} providers=[#{@providers.values.map(&:inspect).join(', ')}] #{opts}>"
    end
    alias to_s inspect

    def pretty_print(pp)
      pp.text(inspect)
    end

    private

    def provider_config_by_name(name)
      key = name.respond_to?(:to_sym) ? name.to_sym : name
      @providers.fetch(key) do
        known = @providers.empty? ? "none; declare one with LlmFailover.configure { |c| c.provider ... }" : @providers.keys.map(&:inspect).join(", ")
        raise ConfigurationError, "unknown provider #{name.inspect} (configured: #{known})"
      end
    end

    # Sinks, loggers and callbacks are shown by class only: their own #inspect may
    # hold anything.
    def summary(value)
      case value
      when nil, true, false, Numeric then value.inspect
      when Array then "[#{value.map { |v| summary(v) }.join(', ')}]"
      when Proc then value.lambda? ? "#<lambda>" : "#<proc>"
      else "#<#{value.class.name}>"
      end
    end

    def number(name, value, min: nil, positive: false)
      unless value.is_a?(Numeric) && value.real? && (!value.is_a?(Float) || value.finite?)
        raise ConfigurationError, "#{name} must be a finite number, got #{value.inspect}"
      end
      raise ConfigurationError, "#{name} must be positive, got #{value}" if positive && value <= 0
      raise ConfigurationError, "#{name} must not be negative, got #{value}" if value.negative?
      raise ConfigurationError, "#{name} must be at least #{min}, got #{value}" if min && value < min

      value
    end

    def integer(name, value, min:)
      raise ConfigurationError, "#{name} must be an Integer, got #{value.inspect}" unless value.is_a?(Integer)
      raise ConfigurationError, "#{name} must not be negative, got #{value}" if value.negative?
      raise ConfigurationError, "#{name} must be at least #{min}, got #{value}" if value < min

      value
    end
  end
end
