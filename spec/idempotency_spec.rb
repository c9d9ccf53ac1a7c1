# frozen_string_literal: true

require "spec_helper"

RSpec.describe "ask(text, idempotency_key:) in memory" do
  include_context "with fake providers"

  before { LlmFailover.configuration.max_retries = 0 }

  it "stores the prompt once, answers a failed turn again and replays a complete one" do
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
    primary.enqueue({ error: :server })
    expect { chat.ask("Hi", idempotency_key: :job) }.to raise_error(LlmFailover::ServerError)
    primary.enqueue({ text: "Hello." })
    expect(chat.ask("Hi", idempotency_key: "job").content).to eq("Hello.")
    expect(chat.ask("Hi", idempotency_key: "job").content).to eq("Hello.")

    expect(primary.request_count).to eq(2)
    expect(chat.messages.map { |m| [m.role, m.status, m.idempotency_key] })
      .to eq([%w[user complete job], ["assistant", "failed", nil], ["assistant", "complete", nil]])
    expect(sent_messages(primary.requests.last)).to eq([%w[user Hi]])
  end

  it "refuses a turn that later messages follow, and a store without keys" do
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
    primary.enqueue({ error: :server })
    expect { chat.ask("First", idempotency_key: "a") }.to raise_error(LlmFailover::ServerError)
    chat.ask("Second")
    expect { chat.ask("First", idempotency_key: "a") }.to raise_error(ArgumentError, /later messages/)

    listed = LlmFailover.chat(model: "gpt-4o", provider: :openai, store: SpecListStore.new)
    expect { listed.ask("Hi", idempotency_key: "a") }.to raise_error(LlmFailover::ConfigurationError, /idempotency_key/)
    expect { chat.ask("Hi", idempotency_key: " ") }.to raise_error(ArgumentError, /idempotency_key/)
  end
end
