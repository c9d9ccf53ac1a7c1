# frozen_string_literal: true

require "spec_helper"

# Issue 23 item 10: one key in flight, one request and one stored answer.
RSpec.describe "ask(text, idempotency_key:) submitted twice at once, in memory" do
  include_context "with fake providers"

  before { LlmFailover.configure { |c| c.max_retries = 0 } }

  # Until every thread is parked (or a short while passes): the asks are all in.
  def settle(threads)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 2
    sleep 0.01 until threads.all? { |t| t.status == "sleep" } ||
                     Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
  end

  it "sends one request and stores one answer for six concurrent asks; the others return it" do
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
    primary.enqueue({ text: "Once." })
    primary.hold
    threads = Array.new(6) { Thread.new { chat.ask("Hi", idempotency_key: "job-1") } }
    sleep 0.01 until primary.request_count.positive?
    settle(threads)
    primary.release
    replies = threads.map(&:value)

    expect(replies.map(&:content)).to all(eq("Once."))
    expect(primary.request_count).to eq(1)
    expect(chat.messages.map { |m| [m.role, m.status] }).to eq([%w[user complete], %w[assistant complete]])
    expect(replies.count { |r| r.attempts.empty? }).to eq(5)
  end

  it "raises IdempotencyConflict, an LlmFailover::Error, when the other call outlasts idempotency_wait" do
    LlmFailover.configure { |c| c.idempotency_wait = 0.2 }
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
    primary.enqueue({ text: "Slow." })
    primary.hold
    first = Thread.new { chat.ask("Hi", idempotency_key: "job-2") }
    sleep 0.01 until primary.request_count.positive?
    expect { chat.ask("Hi", idempotency_key: "job-2") }
      .to raise_error(LlmFailover::IdempotencyConflict, /job-2.*idempotency_wait/) { |e|
        expect(e).to be_a(LlmFailover::RetryableError)
      }
    primary.release
    expect(first.value.content).to eq("Slow.")
    expect(chat.ask("Hi", idempotency_key: "job-2").content).to eq("Slow.")
    expect(primary.request_count).to eq(1)
  end

  it "answers the turn itself when the call it waited for failed" do
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
    primary.enqueue({ error: :unavailable }, { text: "Second try." })
    primary.hold
    first = Thread.new do
      Thread.current.report_on_exception = false # its ServiceUnavailableError is expected, from first.value
      chat.ask("Hi", idempotency_key: "job-3")
    end
    sleep 0.01 until primary.request_count.positive?
    second = Thread.new { chat.ask("Hi", idempotency_key: "job-3") }
    settle([second])
    expect(primary.request_count).to eq(1) # the second waits instead of sending
    primary.release
    expect { first.value }.to raise_error(LlmFailover::ServiceUnavailableError)
    expect(second.value.content).to eq("Second try.")
    expect(primary.request_count).to eq(2)
  end

  # Issue 33: a claim is a dead call's once its heartbeat stopped (15 s), not after the
  # longest call; one whose call lives on is written again every beat, so however
  # long that call runs, the second ask waits for its answer and sends nothing.
  # :ruby_only (its calls are the ones above), :timing (it waits out the window).
  it "never takes over a live call's claim, however long it outlasts the heartbeat's window", :ruby_only, :timing do
    heartbeat = LlmFailover::Idempotency::Heartbeat
    LlmFailover.configure do |c|
      LlmFailover::Configuration::DEFAULTS.slice(*LlmFailover::Configuration::ENGINE_POLICY)
                                          .each { |name, value| c.public_send(:"#{name}=", value) }
    end
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
    primary.enqueue({ text: "Slow, but alive." })
    primary.hold
    first = Thread.new { chat.ask("Hi", idempotency_key: "job-4") }
    sleep 0.01 until primary.request_count.positive?
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    releaser = Thread.new do
      sleep 0.1 until Process.clock_gettime(Process::CLOCK_MONOTONIC) - started > heartbeat::STALE + (2 * heartbeat::BEAT)
      primary.release
    end

    second = chat.ask("Hi", idempotency_key: "job-4")
    releaser.join
    expect([first.value.content, second.content, second.attempts, primary.request_count])
      .to eq(["Slow, but alive.", "Slow, but alive.", [], 1])
    expect(chat.messages.map { |m| [m.role, m.status] }).to eq([%w[user complete], %w[assistant complete]])
    # Its thread ends a beat after the last claim was let go.
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + SpecTime.scaled(3 * heartbeat::BEAT)
    sleep 0.05 until heartbeat.current.thread.nil? || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    expect(heartbeat.current.thread).to be_nil
  end
end
