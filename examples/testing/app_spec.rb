# frozen_string_literal: true

# An app's RSpec suite with LlmFailover::Testing, as doc/testing.md shows it:
#
#   bundle exec rspec examples/testing/app_spec.rb --order random --seed 3
#
# The configuration below is the app's own (config/initializers/llm_failover.rb in a Rails
# app, loaded by spec/rails_helper.rb): real base URLs, a cache. Each example runs against
# the FakeProvider with a state store and a cache of its own.
require "llm_failover"
require "llm_failover/testing"

LlmFailover.configure do |c|
  c.provider :openai, api: :openai, api_key: "sk-test", base_url: "https://api.openai.com/v1"
  c.provider :anthropic, api: :anthropic, api_key: "sk-ant-test"
  c.retry_interval = 0.01                   # no test waits a real backoff
  c.cache = LlmFailover::MemoryCache.new
end

LlmFailover::Testing.rspec!

RSpec.describe "Summaries" do
  let(:chat) do
    LlmFailover.chat(model: "gpt-4o", provider: :openai,
                     backup_model: "claude-sonnet-4-6", backup_provider: :anthropic)
  end

  # Four failures each: two of these examples in a row would open the primary's circuit
  # (threshold 5) for the examples after them, had each not a state store of its own.
  3.times do |i|
    it "fails over when OpenAI is overloaded (#{i + 1})" do
      fake_llm.on(:openai).enqueue(*Array.new(4) { { error: :overloaded } })   # the first try and 3 retries
      fake_llm.on(:anthropic).enqueue({ text: "Hi from the backup" })
      expect(chat.ask("Hello #{i}").content).to eq("Hi from the backup")
      expect(fake_llm.on(:openai).request_count).to eq(4)
    end
  end

  it "answers from the primary" do
    fake_llm.on(:openai).enqueue({ text: "Hi from OpenAI" })
    expect(chat.ask("Hello").provider).to eq(:openai)
  end

  context "with the same prompt in two examples" do
    it "answers the first from the provider" do
      fake_llm.on(:openai).default = { text: "first" }
      expect(chat.ask("Cache me").content).to eq("first")
      expect(fake_llm.request_count).to eq(1)
    end

    it "answers the second from the provider too: each example's cache starts empty" do
      fake_llm.on(:openai).default = { text: "second" }
      expect(chat.ask("Cache me").content).to eq("second")
    end
  end

  it "may configure its own policy" do
    LlmFailover.configure { |c| c.max_retries = 0 }
    fake_llm.on(:openai).enqueue({ error: :overloaded })
    fake_llm.on(:anthropic).enqueue({ text: "backup at once" })
    expect(chat.ask("Hello").content).to eq("backup at once")
  end

  it "has the app's policy again after an example configured its own" do
    expect(LlmFailover.configuration.max_retries).to eq(3)
  end
end
