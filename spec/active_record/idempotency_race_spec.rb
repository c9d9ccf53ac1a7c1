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

  # The dead process's claim is made old by writing its time back, not by waiting: the
  # ask must leave a claim younger than the longest call alone (it waits, then gives
  # up without a request), and take one older than that over.
  it "takes over the claim a killed process left, once it is older than the longest call" do
    LlmFailover.configure { |c| c.idempotency_wait = 0.2 }
    store = chat.llm_store
    store.add_user_once("Hi", "job-2")
    expect(store.claim_turn("job-2", stale_after: 60)).to be(true) # the dead process's claim, never released
    primary.enqueue({ text: "Answered." })
    longest = LlmFailover.configuration.longest_call
    claim = Message.where(chat_id: chat.id, role: "user")
    claim.update_all(updated_at: Time.current - (longest / 2))
    expect { Chat.find(chat.id).ask("Hi", idempotency_key: "job-2") }.to raise_error(LlmFailover::IdempotencyConflict)
    expect(primary.request_count).to eq(0)
    claim.update_all(updated_at: Time.current - (longest + 1))
    reply = Chat.find(chat.id).ask("Hi", idempotency_key: "job-2")
    expect([reply.content, primary.request_count]).to eq(["Answered.", 1])
    expect(rows).to eq([%w[user complete Hi], %w[assistant complete Answered.]])
  end
end
