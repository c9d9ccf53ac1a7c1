# frozen_string_literal: true

require_relative "ar_spec_helper"

ArSpec.describe "ask(text, idempotency_key:) on a chat record" do
  include_context "with fake providers"

  before { LlmFailover.configuration.max_retries = 0 }

  let(:chat) { Chat.create!(model: "gpt-4o", provider: "openai") }

  def rows(record = chat)
    Message.where(chat_id: record.id).order(:id).map { |m| [m.role, m.status, m.content, m.idempotency_key] }
  end

  it "answers a failed turn again, from another instance, without storing the prompt twice" do
    primary.enqueue({ error: :unavailable })
    expect { chat.ask("Summarize", idempotency_key: "job-1") }.to raise_error(LlmFailover::ServiceUnavailableError)
    expect(rows).to eq([["user", "complete", "Summarize", "job-1"], ["assistant", "failed", "", nil]])
    failed = Message.where(role: "assistant").sole.id

    primary.enqueue({ text: "A summary." })
    reply = Chat.find(chat.id).ask("Summarize", idempotency_key: "job-1")
    expect(reply.content).to eq("A summary.")
    # One turn, one answer row: the failed one, answered (issue 27, item 6).
    expect(rows).to eq([["user", "complete", "Summarize", "job-1"], ["assistant", "complete", "A summary.", nil]])
    expect(Message.where(role: "assistant").sole.id).to eq(failed)
    expect(sent_messages(primary.requests.last)).to eq([%w[user Summarize]])
  end

  it "returns the stored answer without a request once the turn is complete" do
    primary.enqueue({ text: "Once." })
    first = chat.ask("Hi", idempotency_key: "job-2")
    again = Chat.find(chat.id).ask("Hi", idempotency_key: "job-2") { |_c| raise "no chunk expected" }

    expect(primary.request_count).to eq(1)
    expect([again.content, again.model, again.provider, again.output_tokens])
      .to eq([first.content, first.model, first.provider, first.output_tokens])
    expect(again.attempts).to be_empty
    expect(rows.size).to eq(2)
  end

  it "keeps keys per chat, and refuses a key used for another prompt" do
    other = Chat.create!(model: "gpt-4o", provider: "openai")
    chat.ask("One", idempotency_key: "k")
    other.ask("Two", idempotency_key: "k")
    expect(primary.request_count).to eq(2)
    expect { chat.ask("Three", idempotency_key: "k") }.to raise_error(ArgumentError, /another prompt/)
    expect(rows.map(&:first)).to eq(%w[user assistant])
  end

  it "refuses a key used with other attachments, from another instance; the same files are the same turn" do
    pdf = "%PDF-1.4\n%%EOF\n".b
    primary.enqueue({ error: :unavailable })
    expect { chat.ask("Read", idempotency_key: "job-a", with: { data: pdf, mime_type: "application/pdf" }) }
      .to raise_error(LlmFailover::ServiceUnavailableError)

    other_file = { data: "#{pdf}% another\n".b, mime_type: "application/pdf" }
    expect { Chat.find(chat.id).ask("Read", idempotency_key: "job-a", with: other_file) }
      .to raise_error(ArgumentError, /already used for this prompt with other attachments/)
    expect(primary.request_count).to eq(1)

    primary.enqueue({ text: "Read it." })
    reply = Chat.find(chat.id).ask("Read", idempotency_key: "job-a", with: StringIO.new(pdf))
    expect(reply.content).to eq("Read it.")
    expect(primary.requests.last.attachments.map(&:data)).to eq([pdf])
    expect(rows.map(&:first)).to eq(%w[user assistant])
  end

  it "lets the unique index settle two writers of one key" do
    store = chat.llm_store
    expect(store.add_user_once("Same", "job-3")).to be(true)
    expect(Chat.find(chat.id).llm_store.add_user_once("Same", "job-3")).to be(false)
    expect(rows).to eq([["user", "complete", "Same", "job-3"]])
  end
end
