# frozen_string_literal: true

require_relative "ar_spec_helper"
require "llm_failover/report"

ArSpec.describe "cancel! on a chat record" do
  include_context "with fake providers"

  before do
    LlmFailover.configuration.max_retries = 0
    LlmFailover.configuration.usage_log = attempt_log
  end

  let(:chat) do
    Chat.create!(model: "gpt-4o", provider: "openai", backup_model: "claude-sonnet-4-6", backup_provider: "anthropic")
  end

  # The job: asks on its own thread (its own connection), streaming.
  def start_job(record)
    shown = Queue.new
    thread = Thread.new do
      ActiveRecord::Base.connection_pool.with_connection do
        Chat.find(record.id).ask("Write an essay") { |c| shown << c.content }
      end
    end
    [thread, shown]
  end

  it "is stopped by a Stop button's instance of the record while the provider stalls" do
    primary.enqueue({ chunks: ["First ", "words ", "never ", "more"], stall_after: 2 })
    job, shown = start_job(chat)
    2.times { shown.pop }

    # The controller's action: another instance, loaded by id.
    Chat.find(chat.id).cancel!
    reply = job.value

    expect([reply.cancelled?, reply.content, reply.failover?]).to eq([true, "First words ", false])
    expect(raw_rows("SELECT role, status, content FROM messages WHERE chat_id = ? ORDER BY id", chat.id).map(&:values))
      .to eq([["user", "complete", "Write an essay"], ["assistant", "cancelled", "First words "]])
    attempts = raw_rows("SELECT provider, success, cancelled FROM llm_failover_attempts").map(&:values)
    expect(attempts).to eq([["openai", 0, 1]])
    expect(backup.request_count).to eq(0)
  end

  def message_rows
    raw_rows("SELECT role, status, content FROM messages WHERE chat_id = ? ORDER BY id", chat.id).map(&:values)
  end

  it "stops an answer whose Stop came while its job was queued, before any request; a later question is answered" do
    asked_at = Time.current # the controller enqueues the job with the time the user asked
    Chat.find(chat.id).cancel! # Stop, before the job runs
    reply = Chat.find(chat.id).ask("Queued question", asked_at: asked_at) { |_c| }

    expect([reply.cancelled?, reply.content]).to eq([true, ""])
    expect(primary.request_count + backup.request_count).to eq(0)
    expect(message_rows).to eq([%w[user complete Queued\ question], ["assistant", "cancelled", ""]])
    expect(raw_rows("SELECT provider, success, cancelled FROM llm_failover_attempts").map(&:values))
      .to eq([["openai", 0, 1]])

    # The next question was asked after that Stop: it is answered.
    primary.enqueue({ chunks: ["Answered"] })
    reply = Chat.find(chat.id).ask("Next question", asked_at: Time.current)
    expect([reply.cancelled?, reply.content]).to eq([false, "Answered"])
  end

  it "stops a stored question's answer (a retried job, #complete) when Stop came after it was stored" do
    single = Chat.create!(model: "gpt-4o", provider: "openai")
    primary.enqueue({ error: :unavailable })
    expect { Chat.find(single.id).ask("Question", idempotency_key: "job-1") }
      .to raise_error(LlmFailover::ServiceUnavailableError)
    Chat.find(single.id).cancel! # Stop while the job waits for its retry

    retried = Chat.find(single.id).ask("Question", idempotency_key: "job-1")
    expect([retried.cancelled?, retried.content]).to eq([true, ""])
    expect(primary.request_count).to eq(1)

    # The stopped answer asked for again (a Regenerate button) is answered.
    primary.enqueue({ chunks: ["Regenerated"] })
    expect(Chat.find(single.id).complete.content).to eq("Regenerated")

    # A question the app stored itself, Stop, then the job that answers it.
    single.messages.create!(role: "user", content: "Stored by the controller")
    Chat.find(single.id).cancel!
    expect(Chat.find(single.id).complete.cancelled?).to be(true)
    expect(primary.request_count).to eq(2)
  end

  it "leaves the next ask alone, and a chat whose table lacks the column says so" do
    Chat.find(chat.id).cancel! # nothing running: the next ask is not affected
    primary.enqueue({ chunks: ["Fine"] })
    expect(Chat.find(chat.id).ask("Hi").cancelled?).to be(false)

    ActiveRecord::Base.connection_pool.with_connection do |c|
      LlmFailover::ActiveRecord.create_tables!(connection: c, chats: "old_chats", messages: "old_messages",
                                               attempts: "old_attempts", force: true)
      c.remove_column(:old_chats, :cancel_requested_at)
    end
    old = Class.new(ActiveRecord::Base) do
      self.table_name = "old_chats"
      def self.name = "OldChat"
      acts_as_llm_chat message_class: "Message", foreign_key: "chat_id"
    end
    expect { old.create!(model: "gpt-4o", provider: "openai").cancel! }
      .to raise_error(LlmFailover::ConfigurationError, /cancel_requested_at/)
  ensure
    ActiveRecord::Base.connection_pool.with_connection do |c|
      %w[old_message_tool_calls old_messages old_chats old_attempts].each { |t| c.drop_table(t, if_exists: true) }
    end
  end
end

ArSpec.describe "a cancelled attempt in the report" do
  include_context "with fake providers"

  it "is neither a failure nor a lost call" do
    LlmFailover.configuration.max_retries = 0
    LlmFailover.configuration.usage_log = attempt_log
    chat = Chat.create!(model: "gpt-4o", provider: "openai")
    primary.enqueue({ chunks: ["a ", "b"], stall_after: 1 })
    job = Thread.new do
      ActiveRecord::Base.connection_pool.with_connection { Chat.find(chat.id).ask("Go") { |_c| chat.cancel! } }
    end
    expect(job.value).to be_cancelled
    primary.enqueue({ error: :unavailable })
    expect { chat.ask("Again") }.to raise_error(LlmFailover::ServiceUnavailableError)

    summary = LlmFailover::Report.new.summary
    expect(summary.values_at(:attempts, :requests, :failures, :lost)).to eq([2, 2, 1, 1])
  end
end
