# frozen_string_literal: true

require "spec_helper"
require "support/redis_server"

# CircuitBreaker: one call's side of the breaker when its state store is asked from
# Ruby, here a RedisStateStore on a real redis-server. (The in-process store's circuits
# are the engine's own: spec/circuit_breaker_spec.rb drives them through calls.)
RSpec.describe LlmFailover::CircuitBreaker do
  let(:send_route) { LlmFailover::Circuit::SEND }
  let(:skip_route) { LlmFailover::Circuit::SKIP }
  let(:probe) { LlmFailover::Circuit::PROBE }

  before(:all) do
    skip "redis-server is not installed (bin/setup installs it)" unless RedisServer.available?
    @redis = RedisServer.new.start
  end

  after(:all) { @redis&.destroy }

  let(:events) { [] }
  let(:log) { StringIO.new }
  let(:store) do
    LlmFailover::RedisStateStore.new(url: @redis.url, namespace: "breaker#{rand(1 << 30)}", budget: 1.0)
  end

  before do
    LlmFailover.configure do |c|
      c.provider :openai, api: :openai, api_key: "sk-test", base_url: "http://127.0.0.1:9/v1"
      c.provider :anthropic, api: :anthropic, api_key: "sk-ant-test", base_url: "http://127.0.0.1:9/v1"
      c.circuit_threshold = 2
      c.circuit_cooldown = 0.2
      c.circuit_first_probe = 0.2
      c.state_store = store
      c.on_circuit_change = ->(event) { events << event }
      c.logger = Logger.new(log)
    end
  end

  let(:config) { LlmFailover.configuration }
  let(:primary) { config.providers.fetch(:openai).target("gpt-4o") }
  let(:backup) { config.providers.fetch(:anthropic).target("claude-sonnet-4-6") }

  def breaker(token = "call-#{rand(1 << 30)}")
    described_class.for(config, [primary, backup], token)
  end

  def fail_on(call, target)
    call.report(target.engine, false, LlmFailover::ServiceUnavailableError, 0)
  end

  # Polls the store (a fresh call's #health: a peek, which takes no probe) until
  # +route+ comes up for the primary.
  def wait_for_route(route)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + SpecTime.scaled(5)
    loop do
      return if breaker.health(2).first.route == route
      raise "no route #{route} in time" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.02
    end
  end

  describe ".for" do
    it "is a breaker over a store asked from Ruby, the table of the in-process store, nil when off" do
      expect(breaker).to be_a(described_class)

      config.state_store = LlmFailover::MemoryStateStore.new
      expect(breaker).to be_a(LlmFailover::CircuitTable)

      config.circuit_threshold = 0
      expect(breaker).to be_nil
    end
  end

  it "reads healthy targets as send, one Engine::Health per target" do
    health = breaker.health(2)

    expect(health.map(&:class)).to eq([LlmFailover::Engine::Health] * 2)
    expect(health.map { |h| [h.route, h.failures] }).to eq([[send_route, 0], [send_route, 0]])
  end

  it "opens a target at the threshold, tells on_circuit_change, and later calls skip it" do
    call = breaker
    expect(fail_on(call, primary)).to be(false)
    expect(fail_on(call, primary)).to be(true)

    expect(events.map { |e| [e.provider, e.model, e.from, e.to, e.reason] })
      .to eq([[:openai, "gpt-4o", :closed, :open, :threshold]])
    expect(log.string).to include("circuit openai/gpt-4o closed -> open (threshold)")
    expect(breaker.health(2).map(&:route)).to eq([skip_route, send_route])
  end

  it "hands one call the probe of a half-open target, and frees it when that call finishes" do
    2.times { fail_on(breaker, primary) }
    wait_for_route(probe)

    prober = breaker
    expect(prober.admit(primary.engine).route).to eq(probe)
    expect(breaker.admit(primary.engine).route).to eq(skip_route) # another call meanwhile

    prober.finish
    expect(breaker.admit(primary.engine).route).to eq(probe)
  end

  it "closes a half-open target on its probe's success" do
    2.times { fail_on(breaker, primary) }
    wait_for_route(probe)
    prober = breaker
    prober.admit(primary.engine)
    prober.report(primary.engine, true, nil, 0)

    expect(events.map(&:to).last).to eq(:closed)
    expect(breaker.health(2).map(&:route)).to eq([send_route, send_route])
  end

  context "with a state store that raises" do
    let(:broken) do
      Class.new do
        %i[admit peek record release health claim].each do |name|
          define_method(name) { |*, **| raise IOError, "store is down" }
        end
      end.new
    end

    it "calls as if every circuit were closed, logging why, never raising" do
      config.state_store = broken
      call = breaker

      expect(call.health(2).map(&:route)).to eq([send_route, send_route])
      expect(call.admit(primary.engine).route).to eq(send_route)
      expect(fail_on(call, primary)).to be(false)
      expect { call.finish }.not_to raise_error
      expect(log.string).to include("state store failed (IOError: store is down)")
    end
  end

  it "survives an on_circuit_change that raises, logging it" do
    config.on_circuit_change = ->(_event) { raise "boom" }
    call = breaker
    fail_on(call, primary)

    expect(fail_on(call, primary)).to be(true)
    expect(log.string).to include("on_circuit_change raised RuntimeError: boom")
  end
end
