# frozen_string_literal: true

require "spec_helper"
require "support/redis_server"

# The state-store protocol, held to one contract for both stores: MemoryStateStore runs
# the C core's transitions (lf_circuit.c), RedisStateStore runs its Lua copy of them.
RSpec.shared_examples "a state store" do
  let(:key) { "openai:gpt-4o" }
  let(:other) { "anthropic:claude-sonnet-4-6" }

  # As the breaker reports an attempt: hold (a Retry-After) 0 unless given.
  def report(key, hold: 0, error_class: nil, **outcome)
    store.record(key, hold: hold, error_class: error_class, **outcome)
  end

  def routes(keys = [key])
    store.admit(keys, 0.5).map(&:first)
  end

  it "sends to an unknown target, with no failures" do
    expect(store.admit([key, other], 0.5)).to eq([[0, 0, nil, nil, nil], [0, 0, nil, nil, nil]])
  end

  it "answers with the route codes the C core owns (Circuit::SEND, SKIP, PROBE)" do
    expect(routes).to eq([LlmFailover::Circuit::SEND])
    report(key, threshold: 1, cooldown: 0.3, success: false, error_class: "LlmFailover::ServiceUnavailableError")
    expect(routes).to eq([LlmFailover::Circuit::SKIP])
    sleep 0.35
    expect(routes).to eq([LlmFailover::Circuit::PROBE])
  end

  it "opens after threshold consecutive counted failures, and a success in between starts over" do
    2.times { expect(report(key, threshold: 3, cooldown: 60, success: false, error_class: "LlmFailover::ServerError")).to eq([false, nil]) }
    expect(report(key, threshold: 3, cooldown: 60, success: true)).to eq([false, nil])
    2.times { report(key, threshold: 3, cooldown: 60, success: false, error_class: "LlmFailover::ServerError") }
    expect(store.admit([key], 0.5)).to eq([[0, 2, nil, nil, nil]])
    expect(report(key, threshold: 3, cooldown: 60, success: false, error_class: "LlmFailover::ServerError")).to eq([true, %i[closed open threshold]])
    expect(routes([key, other])).to eq([1, 0])
    h = store.health.find { |t| t[:model] == "gpt-4o" }
    expect(h).to include(provider: :openai, state: :open, failures: 3, last_error: "LlmFailover::ServerError")
    expect(h[:opened_at]).to be_a(Time)
    expect(h[:cooldown_until]).to be > h[:opened_at]
  end

  it "lets exactly one caller probe after the cooldown; its success closes the circuit" do
    report(key, threshold: 1, cooldown: 0.3, success: false, error_class: "LlmFailover::ServiceUnavailableError")
    expect(routes).to eq([1])
    sleep 0.35
    first = store.admit([key], 0.5).first
    expect(first[0]).to eq(2)
    expect(first[2]).to eq(%i[open half_open cooldown_elapsed])
    5.times { expect(routes).to eq([1]) }
    expect(report(key, threshold: 1, cooldown: 0.3, success: true)).to eq([false, %i[half_open closed success]])
    expect(routes).to eq([0])
    expect(store.health.first).to include(state: :closed, failures: 0, opened_at: nil, cooldown_until: nil)
  end

  # Each probe's failure is reported between two readings of the clock, t0 and t1: the
  # next probe is due at that report's time plus the wait for the outage's age then,
  # so between t0 + wait(t0) and t1 + wait(t1), however long the report took. The loop
  # ends on what it has seen, not on a time: a wait longer than the first, and a report
  # old enough into the outage that a sixth of its age is half as long again as the
  # cooldown (a store that did not stop at the cooldown is then past t1 + cooldown).
  it "waits a sixth of the outage's age before each probe, at least the first wait, at most the cooldown" do
    err = "LlmFailover::ServiceUnavailableError"
    first = 0.03 # circuit_first_probe and circuit_cooldown scaled down (5 s and 60 s by default)
    cooldown = 0.12
    report(key, threshold: 1, cooldown: cooldown, success: false, error_class: err, first_probe: first)
    opened = store.health.first[:opened_at].to_f
    expect(store.health.first[:cooldown_until].to_f - opened).to be_within(0.002).of(first)
    grown = capped = false
    probes = 0
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + SpecTime.scaled(60)
    until grown && capped
      raise "no grown wait after #{probes} probes" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      h = store.health.first
      sleep [h[:cooldown_until].to_f - Time.now.to_f, 0].max + 0.002
      expect(store.admit([key], 1, "probe").first[0]).to eq(2)
      t0 = Time.now.to_f
      expect(report(key, threshold: 1, cooldown: cooldown, success: false, error_class: err, token: "probe", first_probe: first))
        .to eq([true, %i[half_open open probe_failed]])
      t1 = Time.now.to_f
      h = store.health.first
      expect(h[:probes_failed]).to eq(probes += 1)
      due = h[:cooldown_until].to_f
      lo = t0 + LlmFailover::Circuit.interval(first, cooldown, t0 - opened)
      hi = t1 + LlmFailover::Circuit.interval(first, cooldown, t1 - opened)
      expect(due).to be_between(lo - 0.002, hi + 0.002)
      grown ||= due - t1 > 2 * first # at least this long after the report, wherever in [t0, t1] it ran
      capped ||= t0 - opened > 9 * cooldown
    end
    sleep [store.health.first[:cooldown_until].to_f - Time.now.to_f, 0].max + 0.002
    expect(store.admit([key], 1, "probe").first[0]).to eq(2)
    expect(report(key, threshold: 1, cooldown: cooldown, success: true, error_class: nil, token: "probe", first_probe: first)).to eq([false, %i[half_open closed success]])
    expect(store.health.first[:probes_failed]).to eq(0)
    report(key, threshold: 1, cooldown: cooldown, success: false, error_class: err, first_probe: first) # the next incident starts from the first wait
    h = store.health.first
    expect(h[:cooldown_until].to_f - h[:opened_at].to_f).to be_within(0.002).of(first)
  end

  it "gives the probe back to its holder asking again (with a new ttl), to nobody else, and frees it on release" do
    report(key, threshold: 1, cooldown: 0.3, success: false, error_class: "LlmFailover::ServerError")
    sleep 0.35
    expect(store.admit([key], 0.4, "call-a").first[0]).to eq(2)
    expect(store.admit([key], 0.4, "call-b").first[0]).to eq(1)
    sleep 0.25
    expect(store.admit([key], 0.4, "call-a").first[0]).to eq(2) # renewed for 0.4 s from now
    sleep 0.25
    expect(store.admit([key], 0.4, "call-b").first[0]).to eq(1) # 0.5 s after it was first taken
    store.release(key, "call-b") # not its own: nothing
    expect(store.admit([key], 0.4, "call-c").first[0]).to eq(1)
    store.release(key, "call-a")
    expect(store.admit([key], 0.4, "call-c").first[0]).to eq(2)
  end

  it "reopens for another cooldown when the probe fails" do
    report(key, threshold: 1, cooldown: 0.3, success: false, error_class: "LlmFailover::ServerError")
    sleep 0.35
    expect(store.admit([key], 5, "probe").first[0]).to eq(2)
    expect(report(key, threshold: 1, cooldown: 0.3, success: false, error_class: "LlmFailover::ServerError", token: "probe"))
      .to eq([true, %i[half_open open probe_failed]])
    expect(routes).to eq([1])
    sleep 0.35
    expect(routes).to eq([2])
  end

  # A call sent before the circuit opened, failing while another call's probe is out.
  it "counts another call's failure while half-open, and leaves the probe out to decide" do
    report(key, threshold: 1, cooldown: 0.3, success: false, error_class: "LlmFailover::ServerError")
    sleep 0.35
    expect(store.admit([key], 5, "probe").first[0]).to eq(2)
    expect(report(key, threshold: 1, cooldown: 0.3, success: false, error_class: "LlmFailover::ServiceUnavailableError", token: "late")).to eq([true, nil])
    expect(report(key, threshold: 1, cooldown: 0.3, success: false, error_class: "LlmFailover::ServerError")).to eq([true, nil]) # no token at all
    sleep 0.35 # a cooldown: a reopened circuit would hand out a second probe now
    expect(store.admit([key], 5, "other").first[0]).to eq(1)
    expect(store.health.first).to include(state: :half_open, failures: 3, last_error: "LlmFailover::ServerError")
    expect(store.admit([key], 5, "probe").first[0]).to eq(2) # still its holder's
    expect(report(key, threshold: 1, cooldown: 0.3, success: false, error_class: "LlmFailover::ServerError", token: "probe"))
      .to eq([true, %i[half_open open probe_failed]])
    expect(store.admit([key], 5, "other").first[0]).to eq(1)
  end

  it "closes on another call's success while half-open, as it would while open" do
    report(key, threshold: 1, cooldown: 0.3, success: false, error_class: "LlmFailover::ServerError")
    sleep 0.35
    expect(store.admit([key], 5, "probe").first[0]).to eq(2)
    expect(report(key, threshold: 1, cooldown: 0.3, success: true, error_class: nil, token: "late")).to eq([false, %i[half_open closed success]])
    expect(store.admit([key], 5, "other").first[0]).to eq(0)
    expect(report(key, threshold: 1, cooldown: 0.3, success: false, error_class: "LlmFailover::ServerError", token: "probe")) # the probe, reporting after
      .to eq([true, %i[closed open threshold]])
  end

  it "takes a probe that outlived its lock for a late call: counted, and the next caller probes" do
    report(key, threshold: 1, cooldown: 0.3, success: false, error_class: "LlmFailover::ServerError")
    sleep 0.35
    expect(store.admit([key], 0.2, "probe").first[0]).to eq(2)
    sleep 0.25
    expect(report(key, threshold: 1, cooldown: 0.3, success: false, error_class: "LlmFailover::ServerError", token: "probe")).to eq([true, nil])
    expect(store.admit([key], 5, "next").first[0]).to eq(2)
  end

  it "opens at once for a Retry-After cooldown, until then" do
    expect(report(key, threshold: 5, cooldown: 0.2, success: false, hold: 0.6, error_class: "LlmFailover::RateLimitError")).to eq([true, %i[closed open retry_after]])
    sleep 0.3
    expect(routes).to eq([1]) # the cooldown (0.2 s) is over, the Retry-After (0.6 s) is not
    sleep 0.4
    expect(routes).to eq([2])
  end

  it "keeps another call's Retry-After while half-open: no next probe before it is over" do
    report(key, threshold: 1, cooldown: 0.3, success: false, error_class: "LlmFailover::ServerError")
    sleep 0.35
    expect(store.admit([key], 0.2, "probe").first[0]).to eq(2)
    expect(report(key, threshold: 1, cooldown: 0.3, success: false, hold: 1.5, error_class: "LlmFailover::RateLimitError", token: "late")).to eq([true, nil])
    sleep 0.3 # the probe's lock expired (its process died), the Retry-After is not over
    expect(routes).to eq([1])
    expect(store.peek([key]).first[0]).to eq(1)
    sleep 1.3
    expect(routes).to eq([2])
  end

  it "peeks without taking the probe or moving the circuit" do
    expect(store.peek([key, other])).to eq([[0, 0, nil, nil, nil], [0, 0, nil, nil, nil]])
    report(key, threshold: 1, cooldown: 0.3, success: false, error_class: "LlmFailover::ServerError")
    expect(store.peek([key]).map(&:first)).to eq([1])
    sleep 0.35
    expect(store.peek([key, other], "a").map(&:first)).to eq([2, 0]) # free to take
    expect(store.peek([key], "b").map(&:first)).to eq([2])
    b = store.admit([key], 5, "b").first
    expect(b[0]).to eq(2) # the peeks took nothing
    expect(b[2]).to eq(%i[open half_open cooldown_elapsed]) # nor moved the circuit
    expect(store.peek([key], "a").map(&:first)).to eq([1])
    expect(store.peek([key], "b").map(&:first)).to eq([2]) # its holder's
  end

  it "claims a name once per ttl" do
    expect(store.claim("alert:f:E", 0.3)).to be(true)
    expect(store.claim("alert:f:E", 0.3)).to be(false)
    expect(store.claim("alert:g:E", 0.3)).to be(true)
    sleep 0.35
    expect(store.claim("alert:f:E", 0.3)).to be(true)
  end
end

RSpec.describe LlmFailover::MemoryStateStore do
  subject(:store) { described_class.new }

  it_behaves_like "a state store"

  it "gives a forked child the parent's circuits without the parent's probe" do
    store.record("openai:gpt-4o", threshold: 1, cooldown: 0.2, success: false, hold: 0, error_class: "LlmFailover::ServerError")
    store.record("openai:gpt-4o-mini", threshold: 1, cooldown: 60, success: false, hold: 0, error_class: "LlmFailover::ServerError")
    sleep 0.25
    expect(store.admit(["openai:gpt-4o"], 60).first[0]).to eq(2) # the parent probes
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      routes = store.admit(["openai:gpt-4o", "openai:gpt-4o-mini"], 60).map(&:first)
      writer.write(routes.join(","))
      writer.close
      exit!(0)
    end
    writer.close
    Process.wait(pid)
    expect(reader.read).to eq("2,1") # its own probe; the other circuit still open
    expect(store.admit(["openai:gpt-4o"], 60).first[0]).to eq(1) # the parent's probe is still out
  end
end

RSpec.describe "LlmFailover::RedisStateStore" do
  before(:all) do
    skip "redis-server is not installed (bin/setup installs it)" unless RedisServer.available?
    @redis = RedisServer.new.start
  end

  after(:all) { @redis&.destroy }

  # A budget well above the 50 ms default (as in fleet_spec): on a loaded machine (CI under
  # the sanitizers) Redis can take longer than 50 ms to answer, and the store then answers
  # from its own fallback, which these examples would read as a wrong route. A stopped
  # Redis refuses at once, whatever the budget.
  def redis_store(namespace, **options)
    LlmFailover::RedisStateStore.new(url: @redis.url, namespace: namespace, budget: 1.0, **options)
  end

  subject(:store) { redis_store("spec#{rand(1 << 30)}") }

  it_behaves_like "a state store"

  it "puts a TTL on every key and one hash tag per target" do
    store.record("openai:gpt-4o", threshold: 1, cooldown: 0.3, success: false, hold: 0, error_class: "LlmFailover::ServerError")
    sleep 0.35
    store.admit(["openai:gpt-4o"], 5) # takes the probe
    store.claim("alert:f:E", 10)
    client = RedisClient.new(url: @redis.url)
    keys = client.call("KEYS", "#{store.namespace}:*").sort
    expect(keys).to eq(["#{store.namespace}:{alert:f:E}", "#{store.namespace}:{openai:gpt-4o}:circuit",
                        "#{store.namespace}:{openai:gpt-4o}:probe"])
    keys.each { |k| expect(client.call("PTTL", k)).to be > 0 }
  ensure
    client&.close
  end

  it "shares state between two stores on one Redis (two processes' view)" do
    other = redis_store(store.namespace)
    store.record("openai:gpt-4o", threshold: 2, cooldown: 60, success: false, hold: 0, error_class: "LlmFailover::ServerError")
    expect(other.record("openai:gpt-4o", threshold: 2, cooldown: 60, success: false, hold: 0, error_class: "LlmFailover::ServerError")).to eq([true, %i[closed open threshold]])
    expect(store.admit(["openai:gpt-4o"], 1).first[0]).to eq(1)
  end

  it "keeps away from a target the fleet had open when Redis stops answering, until the cooldown Redis gave" do
    other = redis_store(store.namespace)
    other.record("openai:gpt-4o", threshold: 1, cooldown: 0.6, success: false, hold: 0, error_class: "LlmFailover::ServerError") # another process opened it
    expect(store.admit(["openai:gpt-4o", "anthropic:claude"], 1).map(&:first)).to eq([1, 0])
    @redis.stop
    begin
      expect(store.admit(["openai:gpt-4o", "anthropic:claude"], 1).map(&:first)).to eq([1, 0])
      expect(store.connected?).to be(false)
      sleep 0.65
      expect(store.admit(["openai:gpt-4o"], 1).map(&:first)).to eq([2]) # its own probe, once the cooldown is over
    ensure
      @redis.start
    end
  end

  it "goes on with its own state while Redis is down, warns once, and shares again when it is back" do
    log = StringIO.new
    store = redis_store("outage", logger: Logger.new(log))
    store.record("openai:gpt-4o", threshold: 1, cooldown: 60, success: false, hold: 0, error_class: "LlmFailover::ServerError")
    @redis.stop
    begin
      # the fallback's own view, which kept what Redis last said: open, one failure
      route, failures, change, open_for = store.admit(["openai:gpt-4o"], 1).first
      expect([route, failures, change]).to eq([1, 1, nil])
      expect(open_for).to be > 0 # seconds the skip holds
      3.times { store.record("openai:gpt-4o", threshold: 5, cooldown: 60, success: false, hold: 0, error_class: "LlmFailover::ServerError") }
      sleep 1.1 # past the retry interval: it tries Redis again, still down, no second warning
      store.admit(["openai:gpt-4o"], 1)
      expect(store.connected?).to be(false)
    ensure
      @redis.start
    end
    sleep 1.1
    expect(store.admit(["openai:gpt-4o"], 1)).to eq([[0, 0, nil, nil, nil]]) # a new Redis: empty, but reached
    expect(store.connected?).to be(true)
    expect(log.string.scan(/unreachable/).size).to eq(1)
    expect(log.string).to include("sharing resumed")
  end
end
