# frozen_string_literal: true

require "rails/railtie"
require_relative "active_record/not_secret"
require_relative "records/warnings"

module LlmFailover
  # Rails integration, loaded by lib/llm_failover.rb when Rails is: acts_as_llm_chat /
  # acts_as_llm_message in every model without a require, `bin/rails llm_failover:report`,
  # the gem's warnings in the app's log, and token counts that the app's
  # filter_parameters (`:token`) leave readable in the SQL log and in request parameters.
  #
  # Nothing here loads ActiveRecord::Base: llm_failover/active_record only registers
  # an on_load(:active_record) hook and defines the Attempt model lazily, so the
  # framework defaults the app's initializers set still apply to ActiveRecord::Base.
  # It is required before the app's initializers, which name AttemptLog.
  class Railtie < ::Rails::Railtie
    initializer "llm_failover.active_record", before: :load_config_initializers do
      require_relative "active_record" if defined?(::ActiveRecord::Railtie)
    end

    # LlmFailover::Job for the app's jobs, without a require, once ActiveJob loads.
    initializer "llm_failover.active_job" do
      ActiveSupport.on_load(:active_job) { require "llm_failover/job" }
    end

    # The gem's warnings (a failing sink, Redis down, a null cache) go to the app's log
    # unless the app's initializer names another logger: this runs before it.
    initializer "llm_failover.logger", before: :load_config_initializers do
      LlmFailover.configuration.logger ||= ::Rails.logger
    end

    # After the app's initializers: ActiveRecord's own hook has copied filter_parameters
    # into filter_attributes by the time this one runs, and no request has built its
    # parameter filter from config.filter_parameters yet.
    config.after_initialize do |app|
      ActiveSupport.on_load(:active_record) do
        self.filter_attributes = LlmFailover::ActiveRecord::NotSecret.filters(filter_attributes)
      end
      filters = app.config.filter_parameters
      filters.replace(LlmFailover::ActiveRecord::NotSecret.filters(filters))
      LlmFailover::Railtie.check_cache(LlmFailover.configuration)
    end

    # LLM_FAILOVER_FAKE=1: the providers the app's initializers declared are answered
    # offline by the FakeProvider (doc/rails.md); never in production.
    config.after_initialize do
      LlmFailover::Railtie.start_offline_fake
    end

    rake_tasks do
      load File.expand_path("tasks/llm_failover.rake", __dir__)
    end

    # Starts offline answers when LLM_FAILOVER_FAKE asks for them.
    # @return [Boolean] whether it started them
    # @raise [ConfigurationError] when asked in production
    def self.start_offline_fake(env: ENV)
      return false if env["LLM_FAILOVER_FAKE"].to_s.empty? # llm_failover/testing stays unloaded

      require_relative "testing" # the whole of it, the file LlmFailover autoloads Testing from
      return false unless Testing::Offline.requested?(env)

      Testing::Offline.start!(env: env, rails_env: ::Rails.env)
      true
    end

    # Says at boot when the response cache is Rails' null store (development's until
    # `bin/rails dev:cache`): every call would miss it without a word.
    # @param config [Configuration]
    # @return [Boolean] whether it warned
    def self.check_cache(config)
      return false unless defined?(::ActiveSupport::Cache::NullStore) && config.cache.is_a?(::ActiveSupport::Cache::NullStore)

      Warnings.warn("c.cache is #{config.cache.class.name}, which keeps nothing: every call misses the response " \
                    "cache (in development run `bin/rails dev:cache`, or set c.cache to another store)",
                    logger: config.logger)
      true
    end
  end
end
