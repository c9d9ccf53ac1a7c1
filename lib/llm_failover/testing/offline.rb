# frozen_string_literal: true

require_relative "isolation"

module LlmFailover
  module Testing
    # Offline development: `LLM_FAILOVER_FAKE=1 bin/rails server` answers every call from
    # the process's FakeProvider (LlmFailover::Testing.fake) instead of the providers, so
    # an app runs with no network and no keys' cost (doc/rails.md). The Railtie starts it
    # after the app's initializers; a plain Ruby app calls {.start!} after its configure.
    # Never in production: {.start!} raises there.
    module Offline
      VARIABLE = "LLM_FAILOVER_FAKE"

      # What every call answers unless the app scripts another: streamed a word at a time
      # at a pace a chat UI shows as typing.
      DEFAULT_ANSWER = {
        text: "This is an offline answer from the llm_failover FakeProvider (#{VARIABLE}=1): " \
              "no provider was called. Script other answers with " \
              "LlmFailover::Testing.fake.on(:provider_name).enqueue(...).",
        chunk_delay: 0.03
      }.freeze

      class << self
        # @param env [Hash] the environment
        # @return [Boolean] whether LLM_FAILOVER_FAKE asks for offline answers
        def requested?(env = ENV)
          %w[1 true yes].include?(env[VARIABLE].to_s.strip.downcase)
        end

        # Points every provider of +config+ at the FakeProvider, each at its own lane
        # (keys and headers unchanged), and sets its default answer. Says so through
        # +logger+ and on stderr.
        # @param config [Configuration, nil] nil: LlmFailover.configuration
        # @param logger [#warn, nil] nil: the configuration's
        # @param env [Hash] where RAILS_ENV and RACK_ENV are read
        # @param rails_env [String, nil] Rails.env in a Rails app
        # @return [FakeProvider]
        # @raise [LlmFailover::ConfigurationError] in production
        def start!(config: nil, logger: nil, env: ENV, rails_env: nil)
          refuse_production!(env, rails_env)
          require "llm_failover" # not at the top: llm_failover/testing loads without the extension
          config ||= LlmFailover.configuration
          logger ||= config.logger
          fp = Testing.fake
          fp.default = DEFAULT_ANSWER
          Testing.point_providers(config, fp)
          announce(fp, config, logger)
          fp
        end

        private

        def refuse_production!(env, rails_env)
          why = if rails_env.to_s == "production" then "Rails.env is production"
                elsif env["RAILS_ENV"] == "production" then "RAILS_ENV=production"
                elsif env["RACK_ENV"] == "production" then "RACK_ENV=production"
                end
          return unless why

          raise LlmFailover::ConfigurationError,
                "#{VARIABLE}=#{env[VARIABLE]} is set but #{why}: the FakeProvider would answer every call " \
                "in place of your providers. Unset #{VARIABLE} in production."
        end

        def announce(fp, config, logger)
          names = config.providers.keys
          message = "llm_failover: #{VARIABLE}=1: every call is answered offline by the FakeProvider at " \
                    "#{fp.url} (providers #{names.empty? ? 'none configured' : names.map(&:inspect).join(', ')}); " \
                    "no request reaches a provider"
          logger&.warn(message)
          warn(message) # on the terminal too: a developer must not mistake these answers for a provider's
        end
      end
    end
  end
end
