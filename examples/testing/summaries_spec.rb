# frozen_string_literal: true

# An app's own spec against the FakeProvider, as doc/testing.md shows it:
#
#   bundle exec rspec examples/testing/summaries_spec.rb
require "llm_failover"
require "llm_failover/testing"

RSpec.describe "Summaries" do
  around do |example|
    LlmFailover::Testing::FakeProvider.open do |fp|
      @fp = fp
      LlmFailover.configure do |c|
        c.provider :openai, api: :openai, api_key: "test", base_url: fp.base_url(:openai)
        c.provider :anthropic, api: :anthropic, api_key: "test", base_url: fp.base_url(:anthropic)
        c.retry_interval = 0.01                            # no test waits a real backoff
        c.state_store = LlmFailover::MemoryStateStore.new  # circuits from earlier tests stay there
      end
      example.run
    end
  end

  let(:chat) do
    LlmFailover.chat(model: "gpt-4o", provider: :openai,
                     backup_model: "claude-sonnet-4-6", backup_provider: :anthropic)
  end

  it "fails over when OpenAI is rate limited for too long" do
    @fp.enqueue({ error: :rate_limit, retry_after: 120 },   # OpenAI: too long to wait
                { text: "Hi from the backup" })             # Anthropic answers
    expect(chat.ask("Hello").content).to eq("Hi from the backup")
    expect(@fp.requests.map(&:api)).to eq(%i[openai anthropic])
  end

  it "never hides a wrong key behind the backup" do
    @fp.enqueue({ error: :unauthorized })
    expect { chat.ask("Hello") }.to raise_error(LlmFailover::UnauthorizedError)
    expect(@fp.request_count).to eq(1)
  end

  # Six failures in a row would open the primary's circuit (threshold 5) for the next
  # tests, had the around hook not given each test a store of its own.
  6.times do |i|
    it "answers from the primary after a failover in another test (#{i + 1})" do
      @fp.enqueue({ error: :server }, { error: :server }, { error: :server }, { error: :server },
                  { text: "from the backup" })
      expect(chat.ask("Hello").provider).to eq(:anthropic)
      @fp.enqueue({ text: "from the primary" })
      expect(chat.ask("Again").provider).to eq(:openai)
    end
  end
end
