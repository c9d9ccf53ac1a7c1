# frozen_string_literal: true

require_relative "ar_spec_helper"

# Issue 27, item 6: a turn answered again (a retried job, a complete after a failed
# ask) has one assistant row, the failed one taken by the answer, while every failed
# call stays in the attempt records.
ArSpec.describe "One assistant row per turn" do
  include_context "with fake providers"

  before do
    LlmFailover.configure do |c|
      c.usage_log = attempt_log
      c.max_retries = 0
    end
  end

  let(:chat) { Chat.create!(model: "gpt-4o", provider: "openai", feature: "jobs") }

  def rows
    Message.where(chat_id: chat.id).order(:id).pluck(:id, :role, :status, :content)
  end

  it "answers in the failed row of the runs before, and keeps every run in the attempt log" do
    primary.enqueue({ chunks: ["half ", "an ", "answer"], cut_after: 2 }, { error: :server }, { text: "Done." })
    expect { chat.ask("Go", idempotency_key: "job-1") { |_c| } }.to raise_error(LlmFailover::StreamInterruptedError)
    user, failed = rows
    expect(failed.drop(1)).to eq(["assistant", "failed", "half an "])
    expect { Chat.find(chat.id).ask("Go", idempotency_key: "job-1") }.to raise_error(LlmFailover::ServerError)
    expect(rows).to eq([user, [failed[0], "assistant", "failed", ""]])

    seen = []
    reply = Chat.find(chat.id).ask("Go", idempotency_key: "job-1") { |c| seen << c.content }
    expect(reply.content).to eq("Done.")
    expect(seen.join).to eq("Done.")
    expect(rows).to eq([user, [failed[0], "assistant", "complete", "Done."]])
    answer = Message.find(failed[0])
    expect([answer.model, answer.provider, answer.output_tokens]).to eq(["gpt-4o", "openai", reply.output_tokens])

    log = LlmFailover::ActiveRecord::Attempt.order(:started_at).pluck(:success, :error_class, :turn_id)
    expect(log).to eq([[false, "LlmFailover::StreamInterruptedError", "messages/#{user[0]}"],
                       [false, "LlmFailover::ServerError", "messages/#{user[0]}"], [true, nil, "messages/#{user[0]}"]])
  end

  it "clears the reason of a row settled after a dead process, when complete answers its turn" do
    user = Message.create!(chat: chat, role: "user", content: "Before the crash")
    dead = Message.create!(chat: chat, role: "assistant", content: "half an ans", status: "failed",
                           model: "gpt-4o", provider: "openai", failure_reason: "abandoned mid-answer")
    primary.enqueue({ text: "Answered" })
    Chat.find(chat.id).complete
    expect(rows).to eq([[user.id, "user", "complete", "Before the crash"], [dead.id, "assistant", "complete", "Answered"]])
    expect(dead.reload.failure_reason).to be_nil
  end

  it "gives a new turn, and the turn after a cancelled answer, a row of their own" do
    primary.enqueue({ error: :server }, { text: "B" })
    expect { chat.ask("A") }.to raise_error(LlmFailover::ServerError)
    chat.ask("B") # another turn: A's failed row stays A's
    expect(rows.map { |r| r.drop(1) }).to eq([%w[user complete A], ["assistant", "failed", ""],
                                              %w[user complete B], %w[assistant complete B]])

    Message.where(chat_id: chat.id).last.update!(status: "cancelled") # as Chat#cancel! leaves it
    primary.enqueue({ text: "B again" })
    chat.complete
    expect(rows.last(2).map { |r| r.drop(2) }).to eq([%w[cancelled B], ["complete", "B again"]])
  end

  it "lets one store take a failed row, and the next one start its own" do
    primary.enqueue({ error: :server })
    expect { chat.ask("A") }.to raise_error(LlmFailover::ServerError)
    failed = Message.where(chat_id: chat.id, role: "assistant").sole
    first = LlmFailover::ActiveRecord::MessageStore.new(Chat.find(chat.id))
    second = LlmFailover::ActiveRecord::MessageStore.new(Chat.find(chat.id))
    expect(first.start_assistant(model: "gpt-4o", provider: "openai").id).to eq(failed.id)
    expect(second.start_assistant(model: "gpt-4o", provider: "openai").id).not_to eq(failed.id)
    expect(Message.where(chat_id: chat.id, role: "assistant").pluck(:status)).to eq(%w[streaming streaming])
  end

  it "never takes a failed row it read as the last once another process added rows after it" do
    primary.enqueue({ error: :server })
    expect { chat.ask("A") }.to raise_error(LlmFailover::ServerError)
    failed = Message.where(chat_id: chat.id, role: "assistant").sole
    store = LlmFailover::ActiveRecord::MessageStore.new(Chat.find(chat.id))
    expect(store.conversation.map(&:role)).to eq(%w[user]) # it read the failed row as the chat's last
    Message.create!(chat: chat, role: "user", content: "B") # another process's turn, meanwhile
    started = store.start_assistant(model: "gpt-4o", provider: "openai")
    expect(started.id).not_to eq(failed.id)
    expect(failed.reload.status).to eq("failed")
    expect(rows.map { |r| r[1] }).to eq(%w[user assistant user assistant])
  end
end

RSpec.describe "One assistant message per turn, in memory" do
  include_context "with fake providers"

  it "answers in the failed message, and the attempts of both calls are recorded" do
    records = []
    LlmFailover.configure do |c|
      c.usage_log = ->(r) { records << r }
      c.max_retries = 0
    end
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
    primary.enqueue({ error: :server }, { error: :server }, { text: "Hello." })
    expect { chat.ask("Hi", idempotency_key: "job") }.to raise_error(LlmFailover::ServerError)
    failed = chat.messages.last
    expect { chat.ask("Hi", idempotency_key: "job") }.to raise_error(LlmFailover::ServerError)
    expect(chat.messages.size).to eq(2)
    expect(chat.ask("Hi", idempotency_key: "job").content).to eq("Hello.")

    expect(chat.messages.map { |m| [m.role, m.status, m.content] }).to eq([%w[user complete Hi], %w[assistant complete Hello.]])
    expect(chat.messages.last).to equal(failed)
    expect(records.map(&:success?)).to eq([false, false, true])
    expect(records.map(&:turn_id).uniq.size).to eq(1)
  end
end
