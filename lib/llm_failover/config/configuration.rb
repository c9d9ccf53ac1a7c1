# frozen_string_literal: true

require_relative "../errors"
require "llm_failover/llm_failover" # Engine::Policy
require_relative "../health/memory_state_store"
require_relative "../records/usage_log"
require_relative "provider_config"
require_relative "pool_config"
require_relative "checks"
require_relative "call_policy"
require_relative "circuit_options"
require_relative "feature_options"
require_relative "money_options"
require_relative "../safe_inspect"

module LlmFailover
  # The providers and the call policy. Every setter validates at once, so a bad value
  # fails at boot with ConfigurationError rather than on the first call in production.
  # A Chat works on its own copy (see #with_overrides), so per-chat overrides never
  # leak into the global configuration. The setters live by concern: CallPolicy (the
  # engine's retries, timeouts and limits), CircuitOptions (the breaker and its state
  # store), FeatureOptions (records, alerts, cache, scrubbing, cancellation, tracing,
  # logging), MoneyOptions (prices); Checks holds the number rules they share.
  class Configuration
    include SafeInspect

    include Checks
    include CallPolicy
    include CircuitOptions
    include FeatureOptions
    include MoneyOptions

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
      semantic_cache: nil,
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
      attachment_private_hosts: false,
      prices: nil
    }.freeze

    OPTIONS = DEFAULTS.keys.freeze

    # The options the engine's policy (#engine_policy) is made of: each setter drops it.
    ENGINE_POLICY = %i[max_retries retry_interval retry_backoff_factor retry_max_interval
                       retry_interval_randomness connect_timeout first_token_timeout idle_timeout
                       request_timeout failover_on_context_length max_response_bytes max_wait_in_call
                       hedge_after circuit_threshold circuit_cooldown circuit_first_probe].freeze

    attr_reader(*OPTIONS)

    def initialize
      @providers = {}
      @pools = {}
      DEFAULTS.each { |name, value| instance_variable_set(:"@#{name}", value) }
      @state_store = MemoryStateStore.new
      @prices = Prices.default
    end

    # Declares (or redeclares) a provider. Its options (the host's, the credential,
    # models:, attachments): see ProviderConfig#initialize and doc/providers.md.
    # @example
    #   c.provider :groq, api: :openai, api_key: ENV["GROQ_API_KEY"], base_url: "https://api.groq.com/openai/v1"
    #   c.provider :vertex, api: :vertex, project: "my-project", location: "us-east5", access_token: -> { ... }
    # @return [ProviderConfig]
    # @raise [ConfigurationError] a bad or missing option, before any HTTP
    def provider(name, api:, **options)
      config = ProviderConfig.new(name, api: api, **options)
      raise ConfigurationError, "provider #{config.name.inspect}: a pool has that name" if @pools.key?(config.name)

      @providers = @providers.merge(config.name => config).freeze
      # A pool that has it as a host takes the new entry.
      @pools = @pools.transform_values { |pool| pool.host?(config.name) ? pool.rebuilt(@providers) : pool }.freeze
      config
    end

    # Declares (or redeclares) a pool: one name for several configured providers, its
    # hosts, each picked by weight (1 unless given) among those with headroom. Used
    # wherever a provider's name is (provider:, backup_provider:).
    # @example
    #   c.pool :gpt, hosts: [{ provider: :azure_east, weight: 2 }, { provider: :azure_west }, { provider: :openai }]
    # @return [PoolConfig]
    # @raise [ConfigurationError] a host that is not a configured provider, a bad weight
    def pool(name, hosts:)
      unless (name.is_a?(Symbol) || name.is_a?(String)) && !name.to_s.strip.empty?
        raise ConfigurationError, "pool name must be a non-empty Symbol or String, got #{name.class}"
      end
      raise ConfigurationError, "pool #{name.to_sym.inspect}: a provider has that name" if @providers.key?(name.to_sym)

      config = PoolConfig.new(name.to_sym, hosts: hosts, providers: @providers)
      @pools = @pools.merge(config.name => config).freeze
      config
    end

    # @return [Hash{Symbol => ProviderConfig}]
    def providers
      @providers
    end

    # @return [Hash{Symbol => PoolConfig}]
    def pools
      @pools
    end

    # @return [ProviderConfig, PoolConfig] the provider or pool of that name
    # @raise [ConfigurationError] naming the configured providers when +name+ is unknown
    def provider_config(name)
      @providers[name] || @pools[name] || provider_config_by_name(name) # a Symbol, nearly always
    end

    # Seconds: the longest a call can run, every attempt on both targets taking its
    # whole request_timeout and the longest wait between them. Past it, what a call
    # left unfinished is a dead process's (a streaming row; a claim on an
    # idempotency_key's turn where the store names no owners, see Idempotency).
    # @api private
    def longest_call
      2 * (max_retries + 1) * (request_timeout + retry_max_interval)
    end

    # @return [Configuration] a copy with +overrides+ applied and validated
    # @raise [ConfigurationError] naming unknown options
    def with_overrides(overrides)
      # Built here once so that every copy starts with them (each is dropped again by
      # the setters it concerns): a chat's copy would otherwise build both per call.
      engine_policy
      usage_log_emitter
      pricing
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

    # @api private: the engine request's policy (an Engine::Policy): frozen, built once
    # and again only after one of ENGINE_POLICY's setters ran (each drops it), so that a
    # call only points at it.
    def engine_policy
      @engine_policy ||= Engine::Policy.new(
        max_retries: @max_retries, retry_interval: @retry_interval.to_f,
        retry_backoff_factor: @retry_backoff_factor.to_f,
        retry_max_interval: [@retry_max_interval, @max_wait_in_call].min.to_f, # no wait past max_wait_in_call
        retry_interval_randomness: @retry_interval_randomness.to_f, connect_timeout: @connect_timeout.to_f,
        first_token_timeout: @first_token_timeout.to_f, idle_timeout: @idle_timeout.to_f,
        request_timeout: @request_timeout.to_f, failover_on_context_length: @failover_on_context_length,
        max_response_bytes: @max_response_bytes,
        hedge_after: @hedge_after.is_a?(Numeric) ? @hedge_after.to_f : nil, # :auto: per call (HedgeDelay)
        circuit_threshold: @circuit_threshold, circuit_cooldown: @circuit_cooldown.to_f,
        circuit_first_probe: @circuit_first_probe&.to_f,
        # A probe is its call's for its one request's deadline and a second for the store,
        # so that a slow probe keeps the target to itself until it ends; a probe whose
        # process died frees the target after that long.
        circuit_probe_ttl: @request_timeout + 1.0
      ).freeze
    end

    def inspect
      opts = OPTIONS.map { |name| "#{name}=#{summary(public_send(name))}" }.join(" ")
      pools = @pools.empty? ? "" : " pools=[#{@pools.values.map(&:inspect).join(', ')}]"
      "#<#{self.class.name} providers=[#{@providers.values.map(&:inspect).join(', ')}]#{pools} #{opts}>"
    end

    private

    def provider_config_by_name(name)
      key = name.respond_to?(:to_sym) ? name.to_sym : name
      @providers.fetch(key) do
        @pools.fetch(key) do
          names = @providers.keys + @pools.keys
          known = names.empty? ? "none; declare one with LlmFailover.configure { |c| c.provider ... }" : names.map(&:inspect).join(", ")
          raise ConfigurationError, "unknown provider #{name.inspect} (configured: #{known})"
        end
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
  end
end
