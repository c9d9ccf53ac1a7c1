# frozen_string_literal: true

require_relative "llm_failover/version"
require_relative "llm_failover/errors"
require "llm_failover/llm_failover" # the compiled extension (Engine and the C core), put in lib/ by rake compile

# Each file requires what it uses; these are the folders, by concern (doc/architecture.md).
require_relative "llm_failover/config/configuration"
require_relative "llm_failover/config/provider_config"
require_relative "llm_failover/attachments"
require_relative "llm_failover/chat/chat"
require_relative "llm_failover/chat/call"
require_relative "llm_failover/chat/chunk"
require_relative "llm_failover/chat/reply"
require_relative "llm_failover/chat/target"
require_relative "llm_failover/chat/memory_store"
require_relative "llm_failover/health/circuit_breaker"
require_relative "llm_failover/health/memory_state_store"
require_relative "llm_failover/cache/memory_cache"
require_relative "llm_failover/cache/response_cache"
require_relative "llm_failover/cache/memory_index"
require_relative "llm_failover/cache/semantic_cache"
require_relative "llm_failover/scrubber/scrubber"
require_relative "llm_failover/quota/quota"
require_relative "llm_failover/quota/model_picker"
require_relative "llm_failover/records/attempt_record"
require_relative "llm_failover/records/usage_log"
require_relative "llm_failover/records/alerts"
require_relative "llm_failover/tools/tool"
require_relative "llm_failover/tools/tool_call"
require_relative "llm_failover/tools/runner"
require_relative "llm_failover/embeddings/embedder"

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
  autoload :RedisStateStore, File.expand_path("llm_failover/health/redis_state_store", __dir__)
  # Loaded on first use: an app's test helper, or an initializer that asks
  # LlmFailover::Testing::Offline.requested? (doc/rails.md).
  autoload :Testing, File.expand_path("llm_failover/testing", __dir__)
  # The semantic cache's shared indexes, loaded on first use (redis-client, ActiveRecord).
  autoload :RedisIndex, File.expand_path("llm_failover/cache/redis_index", __dir__)
  autoload :ActiveRecordIndex, File.expand_path("llm_failover/cache/active_record_index", __dir__)
  autoload :SharedIndex, File.expand_path("llm_failover/cache/shared_index", __dir__)
  autoload :MirroredIndex, File.expand_path("llm_failover/cache/mirrored_index", __dir__)
  # Loaded on first use (it loads ActiveRecord): config/routes.rb names Report::Engine.
  autoload :Report, File.expand_path("llm_failover/report", __dir__)

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

    # @api private: LlmFailover::Testing's switch between the app's configuration and a
    # test's copy of it
    # @param config [Configuration]
    # @return [Configuration] the one it replaced
    def swap_configuration(config)
      before = configuration
      @lock.synchronize { @configuration = config }
      before
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

    # Embeddings of +texts+ from +model+ on +provider+ (OpenAI-compatible), through the
    # attempt loop: retried, and failed over to +backup_provider+ for the same model.
    # With a configured scrubber the texts leave the process scrubbed, as a chat's do.
    # @param texts [String, Array<String>]
    # @param scrub [Boolean] false: send the texts as they are (as a chat's scrub: false)
    # @return [Embeddings]
    # @raise [Error] every target failed
    def embed(texts, model:, provider:, backup_provider: nil, feature: nil, scrub: true)
      Embedder.new(config: configuration, model: model, provider: provider, backup_provider: backup_provider,
                   feature: feature, scrub: scrub).embed(texts)
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

require_relative "llm_failover/railtie" if defined?(::Rails::Railtie)
