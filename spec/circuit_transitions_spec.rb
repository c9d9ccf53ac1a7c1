# frozen_string_literal: true

require "spec_helper"
require_relative "support/redis_server"

# The circuit's transitions have one owner, the C core's lf_circuit (run by the
# in-process CircuitTable); RedisStateStore's Lua restates them inside Redis, where a
# fleet needs them atomic. This list of every transition drives both through the same
# steps and holds each answer to the one written here, so the two cannot drift.
#
# A step is [operation, arguments, expected]:
#   [:admit, token, [route, failures, change]]      [:peek, token, [route, failures]]
#   [:fail, { token:, hold:, error: }, [open, change]]  [:succeed, token, [open, change]]
#   [:release, token]   [:wait]: until the circuit lets a request through again
#   [:health, { state:, failures:, probes_failed:, last_error: }]
module CircuitTransitions
  SEND = LlmFailover::Circuit::SEND
  SKIP = LlmFailover::Circuit::SKIP
  PROBE = LlmFailover::Circuit::PROBE
  KEY = "openai:gpt-4o"
  THRESHOLD = 2
  COOLDOWN = 0.3 # and the first probe's wait: one probe per cooldown
  SERVER = "LlmFailover::ServerError"
  UNAVAILABLE = "LlmFailover::ServiceUnavailableError"

  TRANSITIONS = {
    "closed: a failure below the threshold is counted, a success starts the count over" => [
      [:fail, {}, [false, nil]],
      [:health, { state: :closed, failures: 1, last_error: SERVER }],
      [:succeed, nil, [false, nil]],
      [:admit, "a", [SEND, 0, nil]]
    ],
    "closed -> open at the threshold; open skips until the cooldown" => [
      [:fail, {}, [false, nil]],
      [:fail, { error: UNAVAILABLE }, [true, %i[closed open threshold]]],
      [:admit, "a", [SKIP, 2, nil]],
      [:peek, "a", [SKIP, 2]],
      [:health, { state: :open, failures: 2, probes_failed: 0, last_error: UNAVAILABLE }]
    ],
    "closed -> open on a Retry-After longer than the policy would sleep, below the threshold" => [
      [:fail, { hold: COOLDOWN }, [true, %i[closed open retry_after]]],
      [:admit, "a", [SKIP, 1, nil]]
    ],
    "open -> half_open when the cooldown elapsed: one holder of the probe" => [
      [:fail, {}, [false, nil]],
      [:fail, {}, [true, %i[closed open threshold]]],
      [:wait],
      [:peek, "a", [PROBE, 2]], # free: nothing taken, nothing changed
      [:health, { state: :half_open }], # as a reader sees it once the cooldown is over
      [:admit, "a", [PROBE, 2, %i[open half_open cooldown_elapsed]]],
      [:admit, "b", [SKIP, 2, nil]],
      [:peek, "b", [SKIP, 2]],
      [:peek, "a", [PROBE, 2]],
      [:admit, "a", [PROBE, 2, nil]], # its holder asking again
      [:release, "b"], # not b's: nothing
      [:admit, "b", [SKIP, 2, nil]],
      [:release, "a"],
      [:admit, "b", [PROBE, 2, nil]]
    ],
    "half_open -> open when the probe fails; another call's failure is only counted" => [
      [:fail, {}, [false, nil]],
      [:fail, {}, [true, %i[closed open threshold]]],
      [:wait],
      [:admit, "probe", [PROBE, 2, %i[open half_open cooldown_elapsed]]],
      [:fail, { token: "late" }, [true, nil]],
      [:fail, { token: nil }, [true, nil]],
      [:health, { state: :half_open, failures: 4, probes_failed: 0 }],
      [:admit, "other", [SKIP, 4, nil]],
      [:fail, { token: "probe", error: UNAVAILABLE }, [true, %i[half_open open probe_failed]]],
      [:health, { state: :open, failures: 5, probes_failed: 1, last_error: UNAVAILABLE }],
      [:admit, "other", [SKIP, 5, nil]]
    ],
    "half_open -> closed when the probe succeeds" => [
      [:fail, {}, [false, nil]],
      [:fail, {}, [true, %i[closed open threshold]]],
      [:wait],
      [:admit, "probe", [PROBE, 2, %i[open half_open cooldown_elapsed]]],
      [:succeed, "probe", [false, %i[half_open closed success]]],
      [:health, { state: :closed, failures: 0, probes_failed: 0 }],
      [:admit, "a", [SEND, 0, nil]]
    ],
    "open -> closed on any success, a slow answer begun before it opened" => [
      [:fail, {}, [false, nil]],
      [:fail, {}, [true, %i[closed open threshold]]],
      [:succeed, "slow", [false, %i[open closed success]]],
      [:admit, "a", [SEND, 0, nil]]
    ],
    "open: a later failure is counted, and its Retry-After moves the cooldown's end" => [
      [:fail, {}, [false, nil]],
      [:fail, {}, [true, %i[closed open threshold]]],
      [:fail, { hold: 2 * COOLDOWN }, [true, nil]],
      [:health, { state: :open, failures: 3 }],
      [:wait], # the longer hold, not the cooldown
      [:admit, "a", [PROBE, 3, %i[open half_open cooldown_elapsed]]]
    ],
    "half_open: another call's Retry-After holds the next probe back" => [
      [:fail, {}, [false, nil]],
      [:fail, {}, [true, %i[closed open threshold]]],
      [:wait],
      [:admit, "probe", [PROBE, 2, %i[open half_open cooldown_elapsed]]],
      [:fail, { token: "late", hold: COOLDOWN }, [true, nil]],
      [:release, "probe"],
      [:admit, "other", [SKIP, 3, nil]],
      [:wait],
      [:admit, "other", [PROBE, 3, nil]]
    ]
  }.freeze

  module_function

  # Runs +steps+ on +store+, each answer next to what the list expects.
  def drive(store, steps)
    steps.map do |op, args, expected|
      [op, args, expected, answer(store, op, args)]
    end
  end

  def answer(store, op, args)
    case op
    when :admit then store.admit([KEY], 5, args).first.first(3)
    when :peek then store.peek([KEY], args).first.first(2)
    when :fail
      store.record(KEY, threshold: THRESHOLD, cooldown: COOLDOWN, first_probe: COOLDOWN, success: false,
                        hold: args.fetch(:hold, 0), error_class: args.fetch(:error, SERVER), token: args[:token])
    when :succeed
      store.record(KEY, threshold: THRESHOLD, cooldown: COOLDOWN, first_probe: COOLDOWN, success: true, hold: 0,
                        error_class: nil, token: args)
    when :release then store.release(KEY, args)
    when :wait then wait_until_due(store)
    when :health then store.health.find { |h| h[:model] == "gpt-4o" }.slice(*args.keys)
    end
  end

  # Until the circuit's cooldown (or hold) is over, as the store itself says.
  def wait_until_due(store)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + SpecTime.scaled(10)
    loop do
      due = store.reopens_at([KEY]).first
      return :due if due.nil? || Time.now.to_f > due + 0.01
      raise "the circuit never came due" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.02
    end
  end

  def expected_answer(op, args, expected)
    case op
    when :release then nil
    when :wait then :due
    when :health then args
    else expected
    end
  end
end

RSpec.describe "The circuit's transitions, in the C table and in RedisStateStore's Lua" do
  def check(name, store)
    steps = CircuitTransitions::TRANSITIONS.fetch(name)
    CircuitTransitions.drive(store, steps).each_with_index do |(op, args, expected, got), i|
      expect(got).to eq(CircuitTransitions.expected_answer(op, args, expected)),
                     "#{name}, step #{i + 1} (#{op} #{args.inspect})"
    end
  end

  describe "the C table (MemoryStateStore)" do
    CircuitTransitions::TRANSITIONS.each_key do |name|
      it(name) { check(name, LlmFailover::MemoryStateStore.new) }
    end
  end

  describe "the Lua (RedisStateStore)" do
    before(:all) do
      skip "redis-server is not installed (bin/setup installs it)" unless RedisServer.available?
      @redis = RedisServer.new.start
    end

    after(:all) { @redis&.destroy }

    CircuitTransitions::TRANSITIONS.each_key do |name|
      it(name) do
        store = LlmFailover::RedisStateStore.new(url: @redis.url, namespace: "transitions#{rand(1 << 30)}",
                                                 budget: 1.0)
        check(name, store)
        expect(store).to be_connected # answered by Redis, not by its in-process fallback
      end
    end
  end
end
