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
      .to eq([%w[user complete job], ["assistant", "complete", nil]]) # the failed answer's message, answered
    expect(sent_messages(primary.requests.last)).to eq([%w[user Hi]])
  end

  it "takes the same key with other attachments as another prompt, the same files (by digest) as the same turn" do
    png = "\x89PNG\r\n\x1A\n".b + "one"
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
    primary.enqueue({ text: "One image." })
    chat.ask("What?", idempotency_key: "job", with: { data: png, mime_type: "image/png", filename: "a.png" })

    # The same bytes under another name are the same file: the stored answer, no request.
    again = chat.ask("What?", idempotency_key: "job", with: { data: png.dup, mime_type: "image/png", filename: "b.png" })
    expect(again.content).to eq("One image.")
    expect { chat.ask("What?", idempotency_key: "job", with: { data: png + "x", mime_type: "image/png" }) }
      .to raise_error(ArgumentError, /idempotency_key "job" was already used for this prompt with other attachments/)
    expect { chat.ask("What?", idempotency_key: "job") }.to raise_error(ArgumentError, /other attachments/)
    expect(primary.request_count).to eq(1)
    expect(chat.messages.count { |m| m.role == "user" }).to eq(1)
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

RSpec.describe "ask(text, idempotency_key:) in JSON mode" do
  include_context "with fake providers"

  it "replays a stored answer with reply.json, as it was when answered" do
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai).with_json_mode
    primary.enqueue({ text: "```json\n{\"a\": [1, 2]}\n```\n" })
    first = chat.ask("Numbers?", idempotency_key: "job-1")
    again = chat.ask("Numbers?", idempotency_key: "job-1")

    expect(primary.request_count).to eq(1)
    expect(again.attempts).to be_empty
    expect(again.json).to eq({ "a" => [1, 2] })
    expect(again.json).to eq(first.json)
    expect(chat.ask("Numbers?", idempotency_key: "job-1", json: false).json).to be_nil
  end

  it "checks a replayed answer against the schema asked now" do
    schema = { "type" => "object", "properties" => { "a" => { "type" => "integer" } },
               "required" => ["a"], "additionalProperties" => false }
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
    primary.enqueue({ text: '{"b": "text"}' })
    chat.ask("Text?", idempotency_key: "job-2")

    expect(chat.with_json_mode.ask("Text?", idempotency_key: "job-2").json).to eq({ "b" => "text" })
    expect(chat.with_schema(schema).ask("Text?", idempotency_key: "job-2").json).to be_nil
    expect(primary.request_count).to eq(1)
  end
end
