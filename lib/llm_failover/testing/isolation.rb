# frozen_string_literal: true

require_relative "fake_provider"
require_relative "helpers"

module LlmFailover
  # Helpers for an app's own test suite (doc/testing.md). Every test runs against one
  # FakeProvider per process, with a configuration of its own: the app's providers
  # (same names, APIs and keys) pointed at the fake, each at its own queue; a fresh
  # MemoryStateStore, so no circuit, Retry-After cooldown or idempotency claim of an
  # earlier test is seen; a fresh MemoryCache when the app configured a cache; the
  # on_chain_exhausted throttle forgotten. After the test the app's configuration is
  # back as it was, whatever the test configured.
  #
  # @example RSpec (spec/rails_helper.rb or spec/spec_helper.rb)
  #   require "llm_failover/testing"
  #   LlmFailover::Testing.rspec!
  #
  # @example Minitest (test/test_helper.rb)
  #   require "llm_failover/testing"
  #   LlmFailover::Testing.minitest!
  #
  # @example In a test
  #   fake_llm.on(:openai).enqueue({ error: :overloaded }, { error: :overloaded })
  #   fake_llm.on(:anthropic).enqueue({ text: "Hi from the backup" })
  module Testing
    # The access token a provider configured with a token source sends in a test: the
    # source itself is not asked (it would reach the cloud), and the fake takes any token.
    OFFLINE_TOKEN = "llm-failover-test-token"
    # The AWS credentials a Bedrock provider signs with in a test when it was configured
    # with a source or none (the environment's): the fake checks no signature unless told to.
    OFFLINE_AWS_CREDENTIALS = { access_key_id: "AKIDLLMFAILOVERTEST", secret_access_key: "llm-failover-test-secret" }
                              .freeze

    @fake = nil
    @fake_pid = nil
    @fake_lock = Mutex.new

    class << self
      # The process's FakeProvider, started on first use, and again in a forked child (a
      # parallel test worker), which has none of its parent's server threads. It is never
      # stopped: its threads end with the process, and an at_exit stop would run before
      # the tests of minitest/autorun, which runs them from an at_exit hook registered
      # earlier.
      # @return [FakeProvider]
      def fake
        fp = @fake
        return fp if fp && @fake_pid == Process.pid

        @fake_lock.synchronize do
          unless @fake && @fake_pid == Process.pid
            @fake = FakeProvider.start
            @fake_pid = Process.pid
          end
          @fake
        end
      end

      # Runs the block as one isolated test (see the module's documentation) and puts the
      # app's configuration back after it. Nested calls each get their own.
      # @yieldparam fake [FakeProvider] reset: nothing queued, nothing logged
      # @return [Object] the block's value
      def isolate
        before = enter
        begin
          yield fake
        ensure
          leave(before)
        end
      end

      # Every RSpec example isolated, and #fake_llm in every example.
      # @return [void]
      def rspec!
        ::RSpec.configure { |config| config.include Helpers }
      end

      # Every Minitest test (ActiveSupport::TestCase included) isolated, and #fake_llm in
      # every test.
      # @return [void]
      def minitest!
        ::Minitest::Test.include(Helpers)
      end

      # @api private: starts an isolated test
      # @return [Configuration] the app's configuration, for #leave
      def enter
        # Required here, not at the top: llm_failover/testing is also loaded where the
        # compiled extension is not (a FakeProvider in a script of its own).
        require "llm_failover"
        config = test_configuration(LlmFailover.configuration, fake.reset)
        LlmFailover.alerts.reset!
        LlmFailover.swap_configuration(config)
      end

      # @api private: ends an isolated test
      # @param before [Configuration] what #enter returned
      def leave(before)
        LlmFailover.swap_configuration(before)
        fake.reset
        nil
      end

      # @api private: the copy of +config+ a test runs with
      # @return [Configuration]
      def test_configuration(config, fp)
        copy = config.with_overrides({})
        point_providers(copy, fp)
        copy.state_store = LlmFailover::MemoryStateStore.new
        copy.cache = LlmFailover::MemoryCache.new unless config.cache.nil?
        copy
      end

      # @api private: declares every provider of +config+ again, the same but for its
      # base_url: its own lane of +fp+, at the path its host takes (the one rule of the
      # test helpers and offline mode), and a source's credential: OFFLINE_TOKEN (Vertex
      # AI's service account and googleauth's too), or OFFLINE_AWS_CREDENTIALS for Bedrock's
      # (a source's, aws-sdk-core's chain or the environment's)
      # @return [void]
      def point_providers(config, fp)
        config.providers.each_value do |p|
          options = p.options
          if p.credential.is_a?(Credentials::AwsSource)
            options = options.merge(credentials: OFFLINE_AWS_CREDENTIALS)
          elsif p.credential.is_a?(Credentials::TokenSource) # a callable, a service account, googleauth's
            options = options.merge(access_token: OFFLINE_TOKEN, credentials: nil)
          end
          config.provider(p.name, **options, base_url: fp.on(p.name).base_url(fake_api(p)))
        end
      end

      # @api private: what the FakeProvider calls +provider+'s host (FakeProvider#base_url)
      # @return [Symbol]
      def fake_api(provider)
        provider.host.layout == :azure_foundry ? :azure_foundry : provider.api
      end
    end
  end
end
