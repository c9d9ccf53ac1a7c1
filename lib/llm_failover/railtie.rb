# frozen_string_literal: true

require "rails/railtie"

module LlmFailover
  # Rails integration, loaded by lib/llm_failover.rb when Rails is: acts_as_llm_chat /
  # acts_as_llm_message in every model without a require, `bin/rails llm_failover:report`,
  # and token counts that the app's filter_parameters (`:token`) leave readable.
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

    # After the app's initializers: ActiveRecord's own hook has copied filter_parameters
    # into filter_attributes by the time this one runs.
    config.after_initialize do
      ActiveSupport.on_load(:active_record) do
        self.filter_attributes = LlmFailover::ActiveRecord::NotSecret.filters(filter_attributes)
      end
    end

    rake_tasks do
      load File.expand_path("tasks/llm_failover.rake", __dir__)
    end
  end
end
