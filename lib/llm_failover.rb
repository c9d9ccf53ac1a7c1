# frozen_string_literal: true

require "llm_failover/version"
require "llm_failover/errors"
require "llm_failover/llm_failover" # the compiled extension: Engine and the C core

require "llm_failover/provider_config"
require "llm_failover/configuration"
require "llm_failover/model_name"
require "llm_failover/quota"
require "llm_failover/quota_window"
require "llm_failover/quota_reservation"
require "llm_failover/model_picker"
require "llm_failover/memory_store/message"
require "llm_failover/memory_store"
require "llm_failover/chunk"
require "llm_failover/reply"
require "llm_failover/attempt_record"
require "llm_failover/usage_log"
require "llm_failover/alert"
require "llm_failover/alerts"
require "llm_failover/target"
require "llm_failover/answer_format"
require "llm_failover/memory_cache"
require "llm_failover/response_cache"
require "llm_failover/text"
require "llm_failover/scrubber"
require "llm_failover/circuit_event"
require "llm_failover/quota_counters"
require "llm_failover/memory_state_store"
require "llm_failover/circuit_breaker"
require "llm_failover/call"
require "llm_failover/idempotency"
require "llm_failover/cancellation"
require "llm_failover/chat"
require "llm_failover/tools"

# LLM chat calls with honest retries and one-level provider failover.
#
# @example
#   LlmFailover.configure do |c|
#     c.provider :openai, api: :openai, api_key: ENV["OPENAI_API_KEY"]
#   end
#   LlmFailover.chat(model: "gpt-4o", provider: :openai).ask("Hello")
module LlmFailover
  # Keywords of LlmFailover.chat that describe the chat itself; every other keyword
  # must be a Configuration option and overrides it for this chat only.
  CHAT_OPTIONS = %i[model provider backup_model backup_provider quota quota_used enforce_quota feature
                    store temperature max_tokens system instructions cache cache_namespace scrub
                    quota_key quota_window quota_by cancel_check].freeze

  # Loaded on first use: only apps that share state through Redis need redis-client.
  autoload :RedisStateStore, "llm_failover/redis_state_store"

  @lock = Mutex.new

  class << self
    # Yields the process-wide configuration; setters validate at once.
    # @yieldparam config [Configuration]
    # @return [Configuration]
    def configure
      yield configuration
      configuration
    end

    # @return [Configuration]
    def configuration
      @configuration || @lock.synchronize { @configuration ||= Configuration.new }
    end

    # Forgets providers and options, alert windows and sink warnings.
    def reset_configuration!
      @lock.synchronize { @configuration = Configuration.new }
      alerts.reset!
      UsageLog.reset_warnings!
      nil
    end

    # A new chat over the global configuration. Any Configuration option may be given
    # as a keyword to override it for this chat (`max_retries: 0`).
    # @return [Chat]
    # @raise [ConfigurationError] unknown provider or option, bad value
    # @raise [ModelNotFoundError] empty model
    def chat(model: nil, provider: nil, system: nil, instructions: nil, **options)
      # Most chats are given no options at all, and most of the rest override nothing.
      overrides = options.empty? ? options : options.reject { |k, _| CHAT_OPTIONS.include?(k) }
      chat_options = overrides.empty? ? options : options.slice(*CHAT_OPTIONS)
      chat = Chat.new(config: configuration.with_overrides(overrides), model: model, provider: provider,
                      **chat_options)
      text = system || instructions
      chat.with_instructions(text) if text
      chat
    end

    # The process-wide engine (a libcurl connection pool, dropped in forked children).
    # @return [Engine]
    def engine
      @engine || @lock.synchronize { @engine ||= Engine.new }
    end

    # Each known target's circuit, from the configured state store (Redis's view of
    # the fleet with a RedisStateStore).
    # @return [Array<Hash>] :provider, :model, :state (:closed, :open, :half_open),
    #   :failures, :opened_at, :cooldown_until, :last_error
    def health
      configuration.state_store.health
    end

    # @api private: the process-wide on_chain_exhausted throttle
    # @return [Alerts]
    def alerts
      @alerts || @lock.synchronize { @alerts ||= Alerts.new }
    end
  end
end

require "llm_failover/railtie" if defined?(::Rails::Railtie)
