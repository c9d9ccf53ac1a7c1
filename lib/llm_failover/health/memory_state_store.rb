# frozen_string_literal: true

require "llm_failover/llm_failover" # the compiled extension: Circuit and its route codes
require_relative "../quota/quota_counters"
require_relative "first_token_times"
require_relative "headroom"

module LlmFailover
  # Provider health kept in this process: a circuit per target in a CircuitTable (the
  # C core's, which the engine's attempt loop runs without Ruby), and the alert
  # windows. The methods below are that table for everyone else (RedisStateStore's
  # fallback, LlmFailover.health). A forked child starts with the parent's circuits,
  # without its probe; from then on they learn apart (RedisStateStore shares).
  #
  # The state-store protocol (RedisStateStore speaks it; so may any c.state_store, which
  # CircuitBreaker asks from Ruby). A key is "provider:model" (Target.key); a change is
  # [from, to, reason] or nil.
  #   admit(keys, probe_ttl, token = nil) -> [[route, failures, change, open_for, headroom], ...]
  #       route Circuit::SEND, SKIP or PROBE (held for probe_ttl s; the same token gets it
  #       again); open_for: seconds a SKIP holds; headroom: an Engine::Headroom or nil
  #   peek(keys, token = nil)     optional: admit's answer taking nothing (PROBE: it is free)
  #   record(key, threshold:, cooldown:, success:, hold:, error_class:, token: nil,
  #          first_probe: nil, headroom: nil) -> [open, change]
  #       while half-open only the probe holder's (token's) failure reopens; any success
  #       closes; first_probe: the recovery schedule's first wait (Circuit.interval)
  #   health -> [Hash, ...]       claim(name, ttl) -> true once per ttl
  #   release(key, token)         optional: frees the probe +token+ holds
  #   reopens_at(keys)            optional: -> [epoch seconds or nil, ...] per circuit
  class MemoryStateStore
    include QuotaCounters::InMemory # reserve_quota, adjust_quota, quota_used
    include FirstTokenTimes::InMemory # record_first_tokens, first_token_times (hedge_after: :auto)

    # @api private: what a call hands the engine (Engine::Request#circuits)
    # @return [CircuitTable]
    attr_reader :circuit_table

    def initialize
      @circuit_table = CircuitTable.new
      @lock = Mutex.new
      @pid = Process.pid
      @claims = {} # name => monotonic expiry
    end

    # @return [Array<Array(Integer, Integer, Array, nil)>]
    def admit(keys, probe_ttl, token = nil)
      @circuit_table.admit(keys, probe_ttl, token)
    end

    # What #admit would answer, changing nothing (PROBE: free, or +token+'s already).
    # @return [Array<Array(Integer, Integer, nil)>]
    def peek(keys, token = nil)
      @circuit_table.peek(keys, token)
    end

    # Whether a success on +key+ has anything to reset: a failure counted, or a circuit
    # not closed.
    def unsettled?(key)
      @circuit_table.unsettled?(key)
    end

    # Frees the probe of +key+ when +token+ holds it.
    def release(key, token)
      @circuit_table.release(key, token)
    end

    # Takes on what a shared store said of +key+ (RedisStateStore keeps its fallback
    # so): open for +open_for+ more seconds when positive, else closed.
    def adopt(key, failures, open_for)
      @circuit_table.adopt(key, failures, open_for)
    end

    # @param threshold [Integer] counted failures that open the circuit
    # @param cooldown [Numeric] seconds open before a half-open probe (the longest wait)
    # @param success [Boolean] whether the attempt succeeded
    # @param hold [Numeric] a Retry-After's seconds (0: none)
    # @param error_class [Class, String, nil] the failure's error class (or its name)
    # @param token [String, nil] the reporting call's: the outcome is the probe's when
    #   that call holds +key+'s probe (the core checks it has not expired)
    # @param first_probe [Numeric, nil] seconds before the first half-open probe, the
    #   next ones growing with the incident to +cooldown+ (lf_circuit_interval); nil:
    #   every wait +cooldown+
    # @param headroom [Engine::Headroom, nil] what a pool host's answer said is left
    # @return [Array(Boolean, Array)] whether the circuit is open afterwards, the change
    def record(key, threshold:, cooldown:, success:, hold:, error_class:, token: nil, first_probe: nil,
               headroom: nil)
      @circuit_table.record(key, threshold: threshold, cooldown: cooldown, success: success, hold: hold,
                                 error_class: error_class, token: token, first_probe: first_probe, headroom: headroom)
    end

    # Takes on what a shared store said of +key+'s headroom (an Engine::Headroom as of
    # now, or nil: nothing known).
    def note_headroom(key, headroom)
      @circuit_table.note_headroom(key, headroom)
    end

    # When each key's circuit lets a request through again (epoch seconds; nil:
    # closed), for Error#retry_at.
    # @return [Array<Float, nil>]
    def reopens_at(keys)
      @circuit_table.reopens_at(keys)
    end

    # Each known target's circuit (a pool's hosts each have one), and what a pool host
    # last said of its headroom.
    # @return [Array<Hash>] :provider, :model, :state, :failures, :probes_failed, :opened_at,
    #   :cooldown_until, :last_error, :headroom (Health.headroom's Hash, or nil)
    def health
      @circuit_table.rows.map do |key, state, failures, probes_failed, opened_at, cooldown_until, last_error, room|
        provider, model = key.split(":", 2)
        { provider: provider.to_sym, model: model, state: state, failures: failures, probes_failed: probes_failed,
          opened_at: opened_at && Time.at(opened_at), cooldown_until: cooldown_until && Time.at(cooldown_until),
          last_error: last_error&.name, headroom: Headroom.shown(room) }
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
      @circuit_table.clear
      synchronize do
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
      "#<#{self.class.name} targets=#{@circuit_table.size}>"
    end

    private

    def synchronize(&block)
      if Process.pid != @pid # a forked child: a lock of its own
        @lock = Mutex.new
        @pid = Process.pid
      end
      @lock.synchronize(&block)
    end
  end
end
