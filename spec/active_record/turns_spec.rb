# frozen_string_literal: true

require_relative "ar_spec_helper"
require "llm_failover/report"

# Issue 23, item 12: a call that failed is not lost when a later call of the same turn
# (a retried job's ask with its idempotency_key, a #complete after a failed #ask)
# answered. Every attempt names its turn (turn_id), and the report counts by it.
ArSpec.describe "Turns in the attempt records and the report" do
  include_context "with fake providers"

  before do
    LlmFailover.configure do |c|
      c.usage_log = attempt_log
      c.max_retries = 0
    end
  end

  let(:attempts) { LlmFailover::ActiveRecord::Attempt.order(:started_at, :attempt).to_a }

  def ask_failing(chat, text, **options)
    expect { chat.ask(text, **options) }.to raise_error(LlmFailover::ServerError)
  end

  it "gives a retried job's calls the turn of its user row, and counts the turn answered" do
    chat = Chat.create!(model: "gpt-4o", provider: "openai", feature: "jobs")
    primary.enqueue({ error: :server }, { text: "answered on the retry" })
    ask_failing(chat, "Summarise", idempotency_key: "job-1")
    reply = chat.ask("Summarise", idempotency_key: "job-1")
    expect(reply.content).to eq("answered on the retry")

    user = chat.messages.find_by(role: "user")
    expect(attempts.map { |a| [a.success, a.turn_id] }).to eq([[false, "messages/#{user.id}"], [true, "messages/#{user.id}"]])
    expect(attempts.map(&:request_id).uniq.size).to eq(2)
    expect(reply.attempts.map(&:turn_id)).to eq(["messages/#{user.id}"])

    report = LlmFailover::Report.new
    expect(report.summary).to include(requests: 2, failures: 1, lost: 0)
    expect(report.features.map { |f| [f.feature, f.requests, f.lost] }).to eq([["jobs", 2, 0]])
  end

  it "counts a call that failed after retries as answered when #complete answered its turn (a plain chat)" do
    LlmFailover.configuration.max_retries = 1
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, feature: "plain")
    primary.enqueue({ error: :server }, { error: :server }, { text: "second time lucky" })
    ask_failing(chat, "Hello")
    expect(chat.complete.content).to eq("second time lucky")

    expect(attempts.map(&:turn_id).uniq.size).to eq(1)
    expect(attempts.map(&:turn_id).first).to match(/\A\h{8}-\h{4}-\h{4}-\h{4}-\h{12}\z/)
    expect(LlmFailover::Report.new.summary).to include(requests: 2, attempts: 3, failures: 2, lost: 0)
  end

  it "keeps counting lost the calls of turns nobody answered, and a turn answered only before it failed" do
    chat = Chat.create!(model: "gpt-4o", provider: "openai")
    primary.enqueue({ error: :server }, { text: "B's answer" }, { error: :server })
    ask_failing(chat, "A")             # its own turn, never answered
    chat.ask("B")                      # another turn
    expect { chat.complete }.to raise_error(LlmFailover::ServerError) # B's turn again, after its answer

    expect(attempts.map(&:turn_id).uniq.size).to eq(2)
    expect(LlmFailover::Report.new.summary).to include(requests: 3, failures: 2, lost: 2)
  end

  it "counts once a call whose every attempt failed, its turn answered by a later job" do
    LlmFailover.configuration.max_retries = 1
    chats = Array.new(2) do
      Chat.create!(model: "gpt-4o", provider: "openai", backup_model: "claude-sonnet-4-6",
                   backup_provider: "anthropic", feature: "jobs")
    end
    primary.enqueue(*Array.new(4) { { error: :server } }, { text: "at last" })
    backup.enqueue(*Array.new(4) { { error: :server } })
    ask_failing(chats[0], "Q", idempotency_key: "job-9")
    ask_failing(chats[1], "Q", idempotency_key: "job-10") # another chat's turn: nobody answers it
    chats[0].ask("Q", idempotency_key: "job-9")

    report = LlmFailover::Report.new
    expect(report.summary).to include(requests: 3, attempts: 9, lost: 1)
    expect(report.features.map { |f| [f.feature, f.lost] }).to eq([["jobs", 1]])
  end

  it "keeps logging and reporting on a table made before the turn_id column" do
    old = Class.new(LlmFailover::ActiveRecord::Attempt) do
      self.table_name = "old_turn_attempts"
      def self.name = "OldTurnAttempt"
    end
    ActiveRecord::Base.connection_pool.with_connection do |c|
      LlmFailover::ActiveRecord::Schema.define(c, chats: "old_turn_chats", messages: "old_turn_messages",
                                                  attempts: "old_turn_attempts", force: true)
      c.remove_index(:old_turn_attempts, :turn_id)
      c.remove_column(:old_turn_attempts, :turn_id)
    end
    old.reset_column_information
    LlmFailover.configuration.usage_log = LlmFailover::ActiveRecord::AttemptLog.new(model: old)
    chat = Chat.create!(model: "gpt-4o", provider: "openai")
    primary.enqueue({ error: :server }, { text: "fine" })
    ask_failing(chat, "Q", idempotency_key: "k")
    chat.ask("Q", idempotency_key: "k")
    expect(old.count).to eq(2)
    # Without turns, each call is its own: the failed one counts lost, as before.
    expect(LlmFailover::Report.new(attempts: old).summary).to include(requests: 2, lost: 1)
  ensure
    ActiveRecord::Base.connection_pool.with_connection do |c|
      %w[old_turn_message_tool_calls old_turn_messages old_turn_chats old_turn_attempts].each { |t| c.drop_table(t, if_exists: true) }
    end
  end
end
