# frozen_string_literal: true

require "llm_failover/llm_failover" # the compiled extension: Circuit and its route codes
require_relative "../quota/quota_counters"
require_relative "first_token_times"

module LlmFailover
  # Provider health kept in this process: one Circuit per target (its rules are the
  # C core's), Retry-After cooldowns, the half-open probe and alert windows. Thread
  # safe (one Mutex; nothing slow runs under it).
  #
  # Fork safe: a forked child (a Puma or Sidekiq worker) starts with a copy of the
  # parent's circuits as they were at the fork (an outage the parent saw is still an
  # outage), without the parent's probe (the parent will report on it, the child never
  # will) and with a lock of its own. From then on parent and child learn apart: use a
  # RedisStateStore to share.
  #
  # The state-store protocol (RedisStateStore speaks it too; any object that does may
  # be a c.state_store):
  #   admit(keys, probe_ttl, token = nil) -> [[route, failures, change], ...] one per
  #                              key; route Circuit::SEND, SKIP or PROBE (the caller holds
  #                              it for probe_ttl s; the same token asking again gets
  #                              it again, for probe_ttl more)
  #   peek(keys, token = nil)    optional: admit's answer without taking anything (2:
  #                              the probe is free); a call asks so for its targets
  #                              when it starts, and admits one when it sends to it
  #   record(key, threshold:, cooldown:, success:, hold:, error_class:, token: nil,
  #          first_probe: nil)   -> [open, change]; token: the reporting call's own, so
  #                              that while half-open only the probe's holder's failure
  #                              reopens (another call's is counted, and the probe
  #                              stays out); any success closes; every success is
  #                              reported, whenever its call began (a store answers
  #                              at once when it knows nothing to reset); first_probe:
  #                              the recovery schedule's first wait (later ones grow
  #                              with the incident's age up to cooldown,
  #                              Circuit.interval). A store whose record takes 6, 7
  #                              or 8 positional arguments (before keywords) is
  #                              still called so (CircuitBreaker.record_style)
  #   health -> [Hash, ...]       claim(name, ttl) -> true once per ttl
  #   release(key, token)         optional: the probe +token+ holds is free again
  #   reopens_at(keys) (optional) -> [epoch seconds or nil, ...]: when each open
  #                              circuit lets a request through again (nil: closed)
  # A key is "provider:model"; a change is [from, to, reason] or nil.
  class MemoryStateStore
    include QuotaCounters::InMemory # reserve_quota, adjust_quota, quota_used
    include FirstTokenTimes::InMemory # record_first_tokens, first_token_times (hedge_after: :auto)
    def initialize
      @lock = Mutex.new
      @pid = Process.pid
      @circuits = {}    # key => Circuit
      @probes = {}      # key => token of the caller holding its probe
      @last_errors = {} # key => error class name
      @claims = {}      # name => monotonic expiry
    end

    # @return [Array<Array(Integer, Integer, Array, nil)>]
    def admit(keys, probe_ttl, token = nil)
      each_circuit(keys) do |key, circuit, now|
        route = circuit.admit(now, probe_ttl)
        if route == Circuit::PROBE
          @probes[key] = token
        elsif route == Circuit::SKIP && token && @probes[key] == token && circuit.renew_probe(now, probe_ttl)
          route = Circuit::PROBE # its holder asking again
        end
        [route, circuit.failures, circuit.last_change]
      end
    end

    # What #admit would answer for each key, changing nothing: Circuit::PROBE means the probe
    # is free (the call takes it with #admit when it sends to that target), or that
    # +token+ holds it already.
    # @return [Array<Array(Integer, Integer, nil)>]
    def peek(keys, token = nil)
      each_circuit(keys) do |key, circuit, now|
        route = circuit.peek(now)
        route = Circuit::PROBE if route == Circuit::SKIP && token && @probes[key] == token && circuit.state == :half_open
        [route, circuit.failures, nil]
      end
    end

    # Whether a success on +key+ has anything to reset: a failure counted, or a circuit
    # not closed. Read without the lock (a Hash read and two integers under the GVL): a
    # failure recorded meanwhile is counted as if the success had come just before it.
    def unsettled?(key)
      circuit = @circuits[key]
      !circuit.nil? && (circuit.failures.positive? || circuit.state != :closed)
    end

    # Frees the probe of +key+ when +token+ holds it.
    def release(key, token)
      synchronize do
        next unless token && @probes[key] == token

        @probes.delete(key)
        @circuits[key]&.release_probe
      end
      nil
    end

    # Takes on what a shared store said of +key+ (RedisStateStore keeps its fallback
    # so): open for +open_for+ more seconds when positive, else closed.
    def adopt(key, failures, open_for)
      return if @circuits.empty? && failures.zero? && open_for <= 0 # healthy, and nothing to forget

      now = Process.clock_gettime(Process::CLOCK_REALTIME)
      synchronize do
        circuit = @circuits[key]
        next if circuit.nil? && failures.zero? && open_for <= 0

        (circuit || (@circuits[key] = Circuit.new)).adopt(now, failures, open_for)
        @probes.delete(key)
      end
      nil
    end

    # @param threshold [Integer] counted failures that open the circuit
    # @param cooldown [Numeric] seconds open before a half-open probe (the longest wait)
    # @param success [Boolean] whether the attempt succeeded
    # @param hold [Numeric] a Retry-After's seconds (0: none)
    # @param error_class [String, nil] the failure's error class name
    # @param token [String, nil] the reporting call's: the outcome is the probe's when
    #   that call holds +key+'s probe (the core checks it has not expired)
    # @param first_probe [Numeric, nil] seconds before the first half-open probe, the
    #   next ones growing with the incident to +cooldown+ (lf_circuit_interval); nil:
    #   every wait +cooldown+
    # @return [Array(Boolean, Array)] whether the circuit is open afterwards, the change
    def record(key, threshold:, cooldown:, success:, hold:, error_class:, token: nil, first_probe: nil)
      # Every success is reported (whenever its call began); one on a target with
      # nothing counted has nothing to reset.
      return NO_CHANGE if success && !unsettled?(key)

      now = Process.clock_gettime(Process::CLOCK_REALTIME) # Time.now.to_f, without a Time
      synchronize do
        circuit = @circuits[key]
        return NO_CHANGE if circuit.nil? && success

        circuit ||= (@circuits[key] = Circuit.new)
        @last_errors[key] = error_class unless success
        circuit.record(now: now, threshold: threshold, cooldown: cooldown, success: success, hold: hold,
                       probe: !token.nil? && @probes[key] == token, first: first_probe)
        state = circuit.state
        @probes.delete(key) unless state == :half_open # the probe ended with the circuit's change
        [state != :closed, circuit.last_change]
      end
    end

    # When each key's circuit lets a request through again: its cooldown's end (epoch
    # seconds, maybe past: half-open) while it is not closed, nil when closed. Read on a
    # call's failure, to tell when trying again may help (Error#retry_at).
    # @return [Array<Float, nil>]
    def reopens_at(keys)
      return keys.map { nil } if @circuits.empty?

      synchronize do
        keys.map do |key|
          circuit = @circuits[key]
          circuit && circuit.state != :closed ? circuit.cooldown_until : nil
        end
      end
    end

    # Each known target's circuit.
    # @return [Array<Hash>] :provider, :model, :state, :failures, :probes_failed, :opened_at,
    #   :cooldown_until, :last_error
    def health
      synchronize do
        @circuits.map do |key, c|
          provider, model = key.split(":", 2)
          { provider: provider.to_sym, model: model, state: c.state, failures: c.failures,
            probes_failed: c.probes_failed,
            opened_at: c.opened_at && Time.at(c.opened_at), cooldown_until: c.cooldown_until && Time.at(c.cooldown_until),
            last_error: @last_errors[key] }
        end
      end
    end

    # True for the first caller of +name+ within +ttl+ seconds (alert dedupe).
    def claim(name, ttl)
      now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      synchronize do
        expiry = @claims[name]
        return false if expiry && now < expiry

        @claims.delete_if { |_, t| t <= now } if @claims.size > 1000
        @claims[name] = now + ttl
        true
      end
    end

    # Forgets everything (specs).
    def clear
      synchronize do
        @circuits.clear
        @probes.clear
        @last_errors.clear
        @claims.clear
        @first_tokens&.clear
      end
      nil
    end

    # Shared with other processes: false, each process has its own.
    def shared?
      false
    end

    def inspect
      "#<#{self.class.name} targets=#{@circuits.size}>"
    end

    CLOSED = [Circuit::SEND, 0, nil].freeze
    NO_CHANGE = [false, nil].freeze
    private_constant :CLOSED, :NO_CHANGE

    private

    # Each key's answer: the block's (under the lock, with the clock) for a key with a
    # circuit, CLOSED for one without. While no attempt has failed in this process (the
    # usual case) there is nothing to look up, so no lock and no clock: a Hash read
    # under the GVL sees it empty or not, and a failure recorded meanwhile counts from
    # the next call on, as it would had it landed just after the lock.
    def each_circuit(keys)
      return keys.map { CLOSED } if @circuits.empty?

      now = Process.clock_gettime(Process::CLOCK_REALTIME)
      synchronize do
        keys.map do |key|
          circuit = @circuits[key]
          circuit ? yield(key, circuit, now) : CLOSED
        end
      end
    end

    def synchronize(&block)
      after_fork if Process.pid != @pid
      @lock.synchronize(&block)
    end

    def after_fork
      @lock = Mutex.new
      @pid = Process.pid
      @circuits.each_value(&:release_probe)
      @probes.clear
    end
  end
end
