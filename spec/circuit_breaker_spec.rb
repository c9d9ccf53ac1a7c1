# frozen_string_literal: true

require "spec_helper"
require "support/half_open_examples"

# The breaker's transitions against real FakeProviders, with the default
# MemoryStateStore. Cooldowns are short (fractions of a second); nothing asserts a time.
RSpec.describe "Circuit breaker" do
  include_context "with fake providers"

  let(:events) { [] }

  before do
    LlmFailover.configure do |c|
      c.circuit_threshold = 3
      c.circuit_cooldown = 0.5
      c.max_retries = 1
      c.on_circuit_change = ->(event) { events << event }
    end
  end

  def health_of(model)
    LlmFailover.health.find { |h| h[:model] == model }
  end

  it "opens after threshold counted failures, stops retrying the target mid-call, then skips it" do
    primary.default = { error: :unavailable }
    backup.default = { text: "from the backup" }
    chat = failover_chat

    first = chat.ask("one")
    expect(first.attempts.map(&:http_status)).to eq([503, 503, 200])
    expect(primary.request_count).to eq(2)

    # the third counted failure opens the circuit: no retry, straight to the backup
    second = chat.ask("two")
    expect(second.attempts.map(&:http_status)).to eq([503, 200])
    expect(primary.request_count).to eq(3)
    expect(events.map { |e| [e.provider, e.model, e.from, e.to, e.reason] })
      .to eq([[:openai, "gpt-4o", :closed, :open, :threshold]])

    third = chat.ask("three")
    expect(primary.request_count).to eq(3) # no request, no retry sleep
    expect(third.content).to eq("from the backup")
    skipped, answered = third.attempts
    expect(skipped).to be_skipped
    expect(skipped).to have_attributes(attempt: 1, provider: :openai, model: "gpt-4o", success: false,
                                       error_class: "LlmFailover::CircuitOpenError", http_status: nil,
                                       latency_ms: 0.0, request_id: third.request_id)
    expect(answered).to have_attributes(attempt: 2, skipped: false, success: true, provider: :anthropic,
                                        request_id: third.request_id)
    expect(health_of("gpt-4o")).to include(provider: :openai, state: :open, failures: 3,
                                           last_error: "LlmFailover::ServiceUnavailableError")
  end

  # The engine admits, records and probes in the MemoryStateStore's CircuitTable
  # itself: between Engine#run's start and its end no Ruby method of the circuit or of
  # the in-process state store runs, even when the call fails over.
  it "runs no Ruby method of the circuit or the in-process state store inside the engine, failing over" do
    primary.default = { error: :unavailable }
    backup.default = { text: "from the backup" }
    LlmFailover.configure { |c| c.max_retries = 0 }
    chat = failover_chat
    watched = [LlmFailover::CircuitBreaker, LlmFailover::MemoryStateStore, LlmFailover::CircuitTable,
               LlmFailover::Circuit, LlmFailover::CircuitEvent]
    engine_runs = 0
    inside = false
    seen = []
    trace = TracePoint.new(:call, :c_call, :c_return) do |tp|
      if tp.method_id == :run && tp.self.is_a?(LlmFailover::Engine)
        engine_runs += 1 if tp.event == :c_call
        inside = tp.event == :c_call
      elsif inside && watched.any? { |k| tp.self.is_a?(k) || tp.self == k }
        seen << "#{tp.defined_class}##{tp.method_id}"
      end
    end
    reply = trace.enable { chat.ask("fails over") }

    expect(reply.attempts.map { |a| [a.provider, a.http_status] }).to eq([[:openai, 503], [:anthropic, 200]])
    expect(engine_runs).to eq(1) # the call into C is a method of LlmFailover::Engine
    expect(seen).to eq([])
    # The loop did ask and tell the store: the primary's failure is counted there.
    expect(health_of("gpt-4o")).to include(state: :closed, failures: 1)
  end

  # The recovery schedule scaled down 50 times: the first probe 0.1 s (5 s) after
  # opening, the cap 1.2 s (60 s), an outage of 0.9 s (45 s). With the old fixed
  # cooldown the next probe after the recovery was due up to 1.2 s (a minute) later.
  it "is back on a primary that recovers mid-run within a sixth of its outage (10 s after 45 s, scaled down)" do
    LlmFailover.configure do |c|
      c.circuit_cooldown = 1.2
      c.circuit_first_probe = 0.1
      c.max_retries = 0
    end
    primary.default = { error: :unavailable }
    backup.default = { text: "backup" }
    chat = failover_chat
    started = Time.now.to_f
    answers = []
    answers << chat.ask("during the outage").provider while Time.now.to_f < started + 0.9 && sleep(0.01)
    primary.default = { text: "primary" }
    recovered = Time.now.to_f
    h = health_of("gpt-4o")
    expect(h[:state]).to eq(:open).or eq(:half_open)
    outage = recovered - h[:opened_at].to_f
    expect(h[:probes_failed]).to be >= 3 # probed through the outage
    # the next probe is due within a sixth of the outage: 10 s after 45 s of outage, scaled down
    expect(h[:cooldown_until].to_f).to be <= recovered + [outage / 6, 0.1].max + 0.01
    expect(h[:cooldown_until].to_f).to be <= recovered + 0.2 + 0.01
    # the dead primary saw the threshold's requests and one per probe, no more
    expect(primary.request_count).to eq(3 + h[:probes_failed])
    expect(answers.count(:anthropic)).to eq(answers.size)
    sleep [h[:cooldown_until].to_f - Time.now.to_f, 0].max + 0.01
    back = chat.ask("after the recovery")
    expect(back.provider).to eq(:openai)
    expect(back.content).to eq("primary")
    expect(health_of("gpt-4o")).to include(state: :closed, probes_failed: 0)
  end

  it "after the cooldown sends one probe without retries; a failed probe reopens, a good one closes" do
    primary.default = { error: :unavailable }
    backup.default = { text: "backup" }
    chat = failover_chat
    2.times { chat.ask("fail") } # 4 counted failures: open after the third
    expect(primary.request_count).to eq(3)

    sleep 0.55
    probe = chat.ask("probe")
    expect(primary.request_count).to eq(4) # one request, no retry on the probe
    expect(probe.attempts.map(&:http_status)).to eq([503, 200])
    expect(events.map(&:reason)).to eq(%i[threshold cooldown_elapsed probe_failed])
    chat.ask("still open")
    expect(primary.request_count).to eq(4)

    sleep 0.55
    primary.default = { text: "primary is back" }
    expect(chat.ask("probe again").content).to eq("primary is back")
    expect(events.map(&:reason)).to eq(%i[threshold cooldown_elapsed probe_failed cooldown_elapsed success])
    expect(events.last).to have_attributes(from: :half_open, to: :closed)
    expect(chat.ask("closed").content).to eq("primary is back")
    expect(health_of("gpt-4o")).to include(state: :closed, failures: 0)
  end

  it "lets exactly one of many concurrent calls probe a half-open target" do
    LlmFailover.configure { |c| c.circuit_cooldown = 1.0 }
    primary.default = { error: :unavailable }
    backup.default = { text: "backup" }
    2.times { failover_chat.ask("fail") }
    count = primary.request_count
    sleep 1.05
    primary.default = { text: "slow but back", delay_headers: 0.5 }
    gate = Queue.new
    threads = Array.new(6) { Thread.new { gate.pop && failover_chat.ask("concurrent") } }
    6.times { gate << true }
    replies = threads.map(&:value)
    # every call that asked while the probe was out went to the backup
    expect(primary.request_count).to eq(count + 1)
    expect(replies.count { |r| r.provider == :openai }).to eq(1)
  end

  it_behaves_like "a half-open probe that a late failure leaves alone"
  it_behaves_like "a breaker that every success resets"

  it "goes to the backup during a Retry-After longer than retry_max_interval, shared until then" do
    LlmFailover.configure do |c|
      c.circuit_threshold = 5
      c.retry_max_interval = 0.1
    end
    primary.enqueue({ error: :rate_limit, retry_after: 1 })
    backup.default = { text: "backup" }
    failover_chat.ask("limited")
    expect(events.map(&:reason)).to eq(%i[retry_after])
    failover_chat.ask("cooling down")
    expect(primary.request_count).to eq(1)
    expect(health_of("gpt-4o")[:cooldown_until]).to be > Time.now
  end

  it "asks again before a retry: a circuit other calls opened meanwhile sends the call to the backup" do
    LlmFailover.configure { |c| c.circuit_cooldown = 5 }
    primary.default = { error: :unavailable }
    backup.default = { text: "backup" }
    waiting = Thread.new do
      failover_chat(max_retries: 2, retry_interval: 2, retry_interval_randomness: 0).ask("waits to retry")
    end
    sleep 0.05 until primary.request_count == 1 # its first attempt failed: one failure, closed
    2.times { failover_chat(max_retries: 0).ask("other calls") } # the third failure opens it
    reply = waiting.value
    expect(reply.attempts.map { |a| [a.provider, a.http_status] }).to eq([[:openai, 503], [:anthropic, 200]])
    expect(primary.request_count).to eq(3)
  end

  it "still tries the primary when every target is open" do
    LlmFailover.configure { |c| c.circuit_threshold = 1 }
    primary.default = { error: :unavailable }
    backup.default = { error: :overloaded }
    expect { failover_chat.ask("both down") }.to raise_error(LlmFailover::OverloadedError)
    expect(LlmFailover.health.map { |h| h[:state] }).to eq(%i[open open])
    primary.default = { text: "primary answers" }
    reply = failover_chat.ask("both open")
    expect(reply.content).to eq("primary answers")
    expect(reply.attempts.map(&:skipped?)).to eq([false])
    expect(health_of("gpt-4o")[:state]).to eq(:closed)
  end

  it "skips an open backup and keeps the primary's own error when the primary fails" do
    LlmFailover.configure { |c| c.circuit_threshold = 1 }
    backup.default = { error: :overloaded }
    LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic).ask("open the backup") rescue nil
    sent_to_backup = backup.request_count
    primary.default = { error: :server }
    error = begin
      failover_chat(max_retries: 0).ask("primary fails")
    rescue LlmFailover::Error => e
      e
    end
    expect(error).to be_a(LlmFailover::ServerError)
    expect(error.attempts.map { |a| [a.provider, a.skipped?] }).to eq([[:openai, false], [:anthropic, true]])
    expect(backup.request_count).to eq(sent_to_backup)
  end

  it "opens on an empty account, and a call with no backup left still raises its error" do
    primary.default = { error: :insufficient_quota }
    backup.default = { text: "backup" }
    3.times { expect(failover_chat.ask("out of credit").provider).to eq(:anthropic) } # no retry: one each
    expect(primary.request_count).to eq(3)
    expect(events.map { |e| [e.from, e.to, e.reason, e.error_class] })
      .to eq([[:closed, :open, :threshold, "LlmFailover::ProviderQuotaError"]])
    expect(failover_chat.ask("skips it").attempts.map(&:skipped?)).to eq([true, false])
    expect(primary.request_count).to eq(3)
    expect(health_of("gpt-4o")).to include(state: :open, last_error: "LlmFailover::ProviderQuotaError")
    expect { LlmFailover.chat(model: "gpt-4o", provider: :openai).ask("no backup") }
      .to raise_error(LlmFailover::ProviderQuotaError)
  end

  it "never opens on a storm of deterministic 4xx errors or refused connections" do
    primary.default = { error: :bad_request }
    10.times { expect { failover_chat.ask("bad") }.to raise_error(LlmFailover::BadRequestError) }
    LlmFailover.configure do |c|
      c.provider :refused, api: :openai, api_key: "sk-x", base_url: "http://127.0.0.1:#{closed_port}/v1"
    end
    10.times do
      expect { LlmFailover.chat(model: "m", provider: :refused).ask("x") }
        .to raise_error(LlmFailover::ConnectionRefusedError)
    end
    expect(LlmFailover.health).to eq([])
    expect(events).to eq([])
  end

  it "never counts a call killed mid-request (Thread#kill)" do
    primary.default = { text: "never", delay_headers: 5 }
    5.times do
      count = primary.request_count
      t = Thread.new { failover_chat.ask("killed") }
      sleep 0.01 until primary.request_count > count
      t.kill
      t.join
    end
    expect(LlmFailover.health).to eq([])
    primary.default = { text: "answers" }
    expect(failover_chat.ask("after").attempts.map(&:skipped?)).to eq([false])
  end

  it "is off with circuit_threshold 0, and per chat" do
    primary.default = { error: :unavailable }
    backup.default = { text: "backup" }
    4.times { failover_chat(circuit_threshold: 0).ask("off") }
    expect(primary.request_count).to eq(8)
    expect(LlmFailover.health).to eq([])
  end

  it "reports on_circuit_change to ActiveSupport::Notifications too, and survives a raising callback" do
    require "active_support"
    require "active_support/notifications"
    seen = []
    sub = ActiveSupport::Notifications.subscribe("circuit.llm_failover") { |*, payload| seen << payload }
    LlmFailover.configure do |c|
      c.circuit_threshold = 1
      c.on_circuit_change = ->(_) { raise "broken callback" }
      c.logger = Logger.new(log = StringIO.new)
      @log = log
    end
    primary.default = { error: :unavailable }
    backup.default = { text: "backup" }
    expect(failover_chat.ask("x").content).to eq("backup")
    expect(seen.map { |p| p.values_at(:provider, :model, :from, :to, :reason) })
      .to eq([[:openai, "gpt-4o", :closed, :open, :threshold]])
    expect(@log.string).to include("on_circuit_change raised RuntimeError")
  ensure
    ActiveSupport::Notifications.unsubscribe(sub) if sub
  end

  def closed_port
    s = TCPServer.new("127.0.0.1", 0)
    port = s.addr[1]
    s.close
    port
  end
end
