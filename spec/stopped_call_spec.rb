# frozen_string_literal: true

require "spec_helper"
require_relative "support/engine_helpers"
require "async"
require "timeout"

# A call ended by its caller (task.stop, with_timeout, Async::Stop, Thread#kill,
# Timeout.timeout, a raising block) mid-attempt: the exception goes on up, and the
# attempt it cut is still recorded, as a failure that is nobody's fault: error class
# LlmFailover::AbortedError, never counted against a circuit, the call's request_id.
RSpec.describe "a call stopped by its caller" do
  include_context "with fake providers"

  let(:records) { Queue.new }

  before do
    sink = records
    LlmFailover.configure do |c|
      c.usage_log = ->(r) { sink << r }
      c.first_token_timeout = 60
      c.idle_timeout = 60
      c.request_timeout = 60
      c.circuit_threshold = 1 # one counted failure would open the circuit
    end
  end

  def all_records
    Array.new(records.size) { records.pop }
  end

  def openai_chat
    LlmFailover.chat(model: "gpt-4o", provider: :openai)
  end

  # The record of the cut attempt, and what every stopped call must show.
  def expect_stopped_record(list, provider: :openai, model: "gpt-4o", attempt: 1, stopped_by: nil)
    rec = list.last
    expect(rec.attempt).to eq(attempt)
    expect([rec.provider, rec.model, rec.success?, rec.error_class])
      .to eq([provider, model, false, "LlmFailover::AbortedError"])
    expect(rec.error_message).to include(stopped_by) if stopped_by
    expect(rec.latency_ms).to be > 0
    expect(rec.started_at).to be_a(Time)
    expect(rec.failover_eligible?).to be(false)
    expect(list.map(&:request_id).uniq).to eq([rec.request_id])
    expect(rec.request_id).to match(/\A\h{8}-\h{4}-4\h{3}-\h{4}-\h{12}\z/)
    expect(LlmFailover.health).to eq([]) # nothing counted against a circuit
    rec
  end

  it "records the attempt task.stop cut mid-stream, keeps the partial text in the failed message", :fiber_scheduler do
    primary.enqueue({ text: Array.new(200) { |i| "w#{i}" }.join(" "), chunk_delay: 0.02 })
    chat = openai_chat
    seen = []
    stopped_at = nil
    Async do |task|
      call = task.async { chat.ask("Hi") { |chunk| seen << chunk.content } }
      wait_for(limit: 30, task: task) { seen.size >= 3 }
      call.stop
      stopped_at = seen.size
    end.wait
    list = all_records
    expect(list.size).to eq(1)
    rec = expect_stopped_record(list, stopped_by: "Async::Stop")
    expect(rec.first_token_ms).to be > 0
    expect(chat.messages.map { |m| [m.role, m.status, m.content, m.provider] })
      .to eq([["user", "complete", "Hi", nil], ["assistant", "failed", seen.join, "openai"]])
    expect(seen.size).to eq(stopped_at)
  end

  it "records the attempt with_timeout cut on a silent provider, after the failed attempts before it", :fiber_scheduler do
    primary.enqueue({ error: :unavailable }, { delay_headers: 30 })
    LlmFailover.configure do |c|
      c.max_retries = 1
      c.retry_interval = 0.01
      c.circuit_threshold = 5 # the 503 counts, once
    end
    chat = openai_chat
    raised = nil
    Async do |task|
      task.with_timeout(0.5) { chat.ask("Hi") }
    rescue Async::TimeoutError => e
      raised = e
    end.wait
    expect(raised).to be_a(Async::TimeoutError)
    list = all_records
    expect(list.map { |r| [r.attempt, r.error_class] })
      .to eq([[1, "LlmFailover::ServiceUnavailableError"], [2, "LlmFailover::AbortedError"]])
    rec = list.last
    expect([rec.success?, rec.request_id, rec.first_token_ms]).to eq([false, list.first.request_id, nil])
    expect(rec.error_message).to include("Async::TimeoutError")
    expect(rec.latency_ms).to be > 0
    # Only the 503 counted.
    expect(LlmFailover.health.map { |h| [h[:provider], h[:failures]] }).to eq([[:openai, 1]])
    expect(chat.messages.map { |m| [m.role, m.status] }).to eq([%w[user complete], %w[assistant failed]])
  end

  it "records the attempt an Async::Stop raised by the caller cut", :fiber_scheduler do
    primary.enqueue({ delay_first_token: 30 })
    chat = openai_chat
    Async do |task|
      call = task.async { chat.ask("Hi") { |_| nil } }
      wait_for(limit: 30, task: task) { primary.request_count == 1 }
      Fiber.scheduler.raise(call.fiber, Async::Stop)
      call.wait
    end.wait
    expect_stopped_record(all_records, stopped_by: "Async::Stop")
    expect(chat.messages.last.status).to eq("failed")
  end

  it "records the attempt of a thread killed inside a reactor", :fiber_scheduler do
    primary.default = { text: "one two three four", stall_after: 2 } # neither call can finish
    chat = openai_chat
    seen = Queue.new
    thread = Thread.new do
      Async do |task|
        task.async { chat.ask("first") { |c| seen << c.content } }
        task.async { chat.ask("second") { |c| seen << c.content } }
      end.wait
    end
    sleep 0.01 until seen.size >= 4
    thread.kill
    expect(thread.join(10)).to eq(thread)
    list = all_records
    expect(list.size).to eq(2)
    expect(list.map(&:request_id).uniq.size).to eq(2) # two calls, one record each
    list.each do |rec|
      expect([rec.success?, rec.error_class]).to eq([false, "LlmFailover::AbortedError"])
      # The kill unwinds the reactor, which stops each task with Async::Stop.
      expect(rec.error_message).to eq("stopped by its caller: Async::Stop")
      expect(rec.latency_ms).to be > 0
    end
    expect(LlmFailover.health).to eq([])
    expect(chat.messages.map { |m| [m.role, m.status] }.sort)
      .to eq([%w[assistant failed], %w[assistant failed], %w[user complete], %w[user complete]])
  end

  it "records the attempt of a call whose thread is killed (no scheduler)" do
    primary.enqueue({ delay_headers: 30 })
    chat = failover_chat
    thread = Thread.new { chat.ask("Hi") }
    sleep 0.01 until primary.request_count == 1
    thread.kill
    expect(thread.join(10)).to eq(thread)
    expect_stopped_record(all_records, stopped_by: "killed")
    expect(backup.request_count).to eq(0)
    expect(chat.messages.map { |m| [m.role, m.status, m.provider] })
      .to eq([["user", "complete", nil], ["assistant", "failed", "openai"]])
  end

  it "records the attempt Timeout.timeout cut (no scheduler)" do
    primary.enqueue({ text: "a b c", stall_after: 1 })
    chat = openai_chat
    expect { Timeout.timeout(0.5) { chat.ask("Hi") { |_| nil } } }.to raise_error(Timeout::Error)
    rec = expect_stopped_record(all_records, stopped_by: "Timeout")
    expect(rec.first_token_ms).to be > 0
    expect(chat.messages.last.content).to eq("a ")
  end

  it "records the attempt a raising block cut, on the backup after a failover" do
    primary.enqueue({ error: :unavailable })
    LlmFailover.configure { |c| c.max_retries = 0 }
    backup.enqueue({ chunks: %w[x y z] })
    chat = failover_chat(circuit_threshold: 0)
    expect { chat.ask("Hi") { |c| raise ArgumentError, "enough" if c.content == "y" } }
      .to raise_error(ArgumentError, "enough")
    list = all_records
    expect(list.map(&:error_class)).to eq(%w[LlmFailover::ServiceUnavailableError LlmFailover::AbortedError])
    expect_stopped_record(list, provider: :anthropic, model: "claude-sonnet-4-6", attempt: 2,
                                stopped_by: "ArgumentError")
    expect(chat.messages.last.to_h.values_at(:status, :content, :provider)).to eq(["failed", "xy", "anthropic"])
  end
end
