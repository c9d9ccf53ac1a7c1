# frozen_string_literal: true

require_relative "ar_spec_helper"

# Issue 23 item 10 across processes: the claim on a turn lives in the database, so
# asks with their own connections (threads here, each with its own record and
# connection, as two job processes would be) send one request between them.
ArSpec.describe "ask(text, idempotency_key:) submitted twice at once, on a chat record" do
  include_context "with fake providers"

  before { LlmFailover.configure { |c| c.max_retries = 0 } }

  let(:chat) { Chat.create!(model: "gpt-4o", provider: "openai") }

  def rows
    Message.where(chat_id: chat.id).order(:id).map { |m| [m.role, m.status, m.content] }
  end

  it "sends one request and stores one answer for six asks on their own connections" do
    primary.enqueue({ text: "Once." })
    primary.hold
    id = chat.id
    threads = Array.new(6) do
      Thread.new { ActiveRecord::Base.connection_pool.with_connection { Chat.find(id).ask("Hi", idempotency_key: "job-1") } }
    end
    sleep 0.01 until primary.request_count.positive?
    # Until every ask is parked (a short while at most: one that comes in after the
    # answer reads it, and must not send either).
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 2
    sleep 0.01 until threads.all? { |t| t.status == "sleep" } || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    primary.release

    expect(threads.map { |t| t.value.content }).to all(eq("Once."))
    expect(primary.request_count).to eq(1)
    expect(rows).to eq([%w[user complete Hi], %w[assistant complete Once.]])
  end
  # A claim a killed process left: spec/active_record/rerun_after_kill_spec.rb.
end
