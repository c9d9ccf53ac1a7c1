# frozen_string_literal: true

# An app's Minitest suite with LlmFailover::Testing, as doc/testing.md shows it:
#
#   bundle exec ruby examples/testing/app_test.rb --seed 3
#
# The configuration below is the app's own (config/initializers/llm_failover.rb in a Rails
# app): real base URLs, a cache. Each test runs against the FakeProvider with a state
# store and a cache of its own, so the tests pass in every order.
require "minitest/autorun"
require "llm_failover"
require "llm_failover/testing"

LlmFailover.configure do |c|
  c.provider :openai, api: :openai, api_key: "sk-test", base_url: "https://api.openai.com/v1"
  c.provider :anthropic, api: :anthropic, api_key: "sk-ant-test"
  c.retry_interval = 0.01                   # no test waits a real backoff
  c.cache = LlmFailover::MemoryCache.new
end

LlmFailover::Testing.minitest!

class SummaryTest < Minitest::Test
  def chat
    LlmFailover.chat(model: "gpt-4o", provider: :openai,
                     backup_model: "claude-sonnet-4-6", backup_provider: :anthropic)
  end

  # Four failures each: two of these tests in a row would open the primary's circuit
  # (threshold 5) for the tests after them, had each test not a state store of its own.
  3.times do |i|
    define_method(:"test_fails_over_when_openai_is_overloaded_#{i + 1}") do
      fake_llm.on(:openai).enqueue(*Array.new(4) { { error: :overloaded } })   # the first try and 3 retries
      fake_llm.on(:anthropic).enqueue({ text: "Hi from the backup" })
      assert_equal "Hi from the backup", chat.ask("Hello #{i}").content
      assert_equal 4, fake_llm.on(:openai).request_count
    end
  end

  def test_the_primary_answers
    fake_llm.on(:openai).enqueue({ text: "Hi from OpenAI" })
    assert_equal :openai, chat.ask("Hello").provider
  end

  # The same prompt in two tests: each test's cache starts empty.
  def test_a_cached_answer_stays_in_its_test
    fake_llm.on(:openai).default = { text: "first" }
    assert_equal "first", chat.ask("Cache me").content
    assert_equal 1, fake_llm.request_count
  end

  def test_a_cached_answer_from_another_test_is_not_seen
    fake_llm.on(:openai).default = { text: "second" }
    assert_equal "second", chat.ask("Cache me").content
  end

  # A test may configure what it likes; the next test has the app's configuration again.
  def test_configures_its_own_policy
    LlmFailover.configure { |c| c.max_retries = 0 }
    fake_llm.on(:openai).enqueue({ error: :overloaded })
    fake_llm.on(:anthropic).enqueue({ text: "backup at once" })
    assert_equal "backup at once", chat.ask("Hello").content
  end

  def test_has_the_apps_policy
    assert_equal 3, LlmFailover.configuration.max_retries
  end
end
