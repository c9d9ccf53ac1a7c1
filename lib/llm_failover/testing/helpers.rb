# frozen_string_literal: true

module LlmFailover
  module Testing
    # Included in an RSpec example group or a Minitest test class: each example or test
    # runs isolated (LlmFailover::Testing.isolate) and can script the fake.
    module Helpers
      # RSpec: an around hook on the group (its nested groups inherit it). Minitest
      # takes #before_setup and #after_teardown below instead.
      def self.included(base)
        super
        base.around { |example| LlmFailover::Testing.isolate { example.run } } if base.respond_to?(:around)
      end

      # @return [FakeProvider] the fake every configured provider talks to in this test;
      #   `fake_llm.on(:openai)` is provider :openai's own script ({FakeProvider::Lane})
      def fake_llm
        LlmFailover::Testing.fake
      end

      # Minitest's hook for libraries, before the test's own setup.
      def before_setup
        @llm_failover_before = LlmFailover::Testing.enter
        super
      end

      # Minitest's hook for libraries, after the test's own teardown.
      def after_teardown
        super
      ensure
        LlmFailover::Testing.leave(@llm_failover_before) if @llm_failover_before
      end
    end
  end
end
