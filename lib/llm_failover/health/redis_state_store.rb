# frozen_string_literal: true

require "set"
require_relative "../errors"
require_relative "../quota/quota_counters/in_redis"
require_relative "first_token_times/in_redis"
require_relative "memory_state_store"
require_relative "headroom"
require_relative "../config/provider_config" # ProviderConfig.shown_url

begin
  require "redis-client"
rescue LoadError
  raise LoadError, "LlmFailover::RedisStateStore needs the redis-client gem: add `gem \"redis-client\"` to your Gemfile"
end
require_relative "redis_state_store/scripts"
require_relative "redis_state_store/sharing"

module LlmFailover
  # Provider health shared by every process pointed at one Redis: circuits, Retry-After
  # cooldowns, the half-open probe lock and the alert dedupe, in MemoryStateStore's
  # protocol. The Lua (Scripts) runs lf_circuit.c's transitions on Redis's clock;
  # spec/circuit_transitions_spec.rb drives both through one list.
  #
  # Keys (each with a TTL; one hash tag per target, so Redis Cluster works):
  #   NS:{provider:model}:circuit  hash: state, failures, opened_at, until, last_error, updated_at
  #   NS:{provider:model}:probe    the probe lock (SET NX PX): the probing call's token
  #   NS:{provider:model}:requests a dry pool host's requests / tokens left, until its
  #   NS:{provider:model}:tokens   window refills, so the fleet passes it over
  #   NS:{alert:feature:class}     one on_chain_exhausted per window
  #
  # A healthy call costs one read-only round trip. When Redis is down or slower than
  # the budget, calls use this process's own MemoryStateStore (which keeps what Redis
  # last said of unhealthy targets): one warning per outage, never an exception.
  class RedisStateStore
    include QuotaCounters::InRedis # reserve_quota, adjust_quota, quota_used
    include FirstTokenTimes::InRedis # record_first_tokens, first_token_times (hedge_after: :auto)
    include Scripts # the Lua that runs lf_circuit.c's transitions in Redis
    include Sharing # Redis or, while it is out, this process's own state

    BUDGET = 0.05 # seconds: connect, read and write timeouts
    RETRY_AFTER = 1.0 # seconds between attempts to reach a Redis that failed
    DAY_MS = 86_400_000
    POOL_WAIT = 1.0 # seconds a thread waits for a free connection of this process

    NO_CHANGE = [false, nil].freeze
    private_constant :NO_CHANGE

    attr_reader :namespace

    # @param url [String] redis://, rediss:// or unix:// (redis-client's own URL
    #   handling: TLS, passwords, database numbers)
    # @param namespace [String] the prefix of every key
    # @param logger [#warn, nil] where outage warnings go (c.logger when nil, else Kernel#warn)
    # @param pool_size [Integer] connections per process (per fork); a thread waits up to
    #   a second for a free one (each is held for one round trip)
    def initialize(url: ENV.fetch("REDIS_URL", "redis://127.0.0.1:6379"), namespace: "llm_failover",
                   logger: nil, pool_size: 10, budget: BUDGET)
      raise ConfigurationError, "namespace must be a non-empty String" unless namespace.is_a?(String) && !namespace.empty?

      @config = RedisClient.config(url: url, connect_timeout: budget, read_timeout: budget, write_timeout: budget,
                                   reconnect_attempts: 0)
      @namespace = namespace
      @logger = logger
      @pool_size = pool_size
      @fallback = MemoryStateStore.new
      @lock = Mutex.new
      @pid = nil
      @pool = nil
      @down_until = nil # monotonic: Redis failed, not asked again before then
      @down = false
      @epoch = 0 # moves on at each outage and each recovery (#went_down, #back_up)
      @said = Set.new # topics warned about once (#once)
    end

    def admit(keys, probe_ttl, token = nil)
      ttl_ms = ms(probe_ttl)
      token = token.to_s
      shared(:admit, keys, probe_ttl, token) do |redis|
        replies = per_key(redis, keys) { |key| ["EVALSHA", SHAS[:admit], 4, *target_keys(key), ttl_ms, token] }
        replies.each_with_index.map do |(route, failures, changed, open_for, *room), i|
          entry(keys[i], route, failures, changed == 1 ? %i[open half_open cooldown_elapsed] : nil, open_for, room)
        end
      end
    end

    # ADMIT's answer without taking a probe or moving a circuit (read-only).
    def peek(keys, token = nil)
      token = token.to_s
      shared(:peek, keys, token) do |redis|
        replies = per_key(redis, keys) { |key| ["EVALSHA", SHAS[:peek], 4, *target_keys(key), token] }
        replies.each_with_index.map do |(route, failures, open_for, *room), i|
          entry(keys[i], route, failures, nil, open_for, room)
        end
      end
    end

    # MemoryStateStore#record's contract, shared by the fleet. A success with nothing
    # to reset (as Redis last told this process) costs no round trip.
    # @param first_probe [Numeric, nil] the recovery schedule's first wait (see RECORD)
    # @param headroom [Engine::Headroom, nil] what a pool host's answer said: kept by this
    #   process, and shared with the fleet when it is dry
    def record(key, threshold:, cooldown:, success:, hold:, error_class:, token: nil, first_probe: nil,
               headroom: nil)
      @fallback.note_headroom(key, headroom) if headroom
      circuit = !success || @fallback.unsettled?(key)
      share = headroom_writes(key, headroom)
      return NO_CHANGE unless circuit || share

      key_ttl = [DAY_MS, ms(2 * (cooldown + hold))].max
      shared(:record, key, threshold: threshold, cooldown: cooldown, success: success, hold: hold,
                           error_class: error_class, token: token, first_probe: first_probe, headroom: headroom,
                           repair: target_keys(key)) do |redis|
        replies = redis.pipelined do |p|
          share&.each { |command| p.call(*command) }
          if circuit
            p.call("EVALSHA", SHAS[:record], 2, circuit_key(key), probe_key(key), threshold, cooldown.to_f,
                   success ? 1 : 0, hold.to_f, error_class.to_s, key_ttl, token.to_s, (first_probe || cooldown).to_f)
          end
        end
        next NO_CHANGE unless circuit

        from, to, reason, failures, open_for = replies.last
        @fallback.adopt(key, failures, open_for / 1000.0)
        [to != "closed", reason.empty? ? nil : [from.to_sym, to.to_sym, reason.to_sym]]
      end
    end

    # When each key's circuit lets a request through again (MemoryStateStore#reopens_at),
    # from Redis: one pipelined HMGET per key.
    def reopens_at(keys)
      shared(:reopens_at, keys) do |redis|
        replies = redis.pipelined { |p| keys.each { |key| p.call("HMGET", circuit_key(key), "state", "until") } }
        replies.map { |state, untl| state.nil? || state == "closed" ? nil : untl.to_f }
      end
    end

    # Frees the probe lock of +key+ when +token+'s call still holds it.
    def release(key, token)
      shared(:release, key, token) do |redis|
        redis.call("EVALSHA", SHAS[:release], 1, probe_key(key), token.to_s)
      end
      nil
    end

    # Every target with a circuit, or a pool host with a shared headroom, in this
    # namespace, read from Redis (the process's own state when Redis cannot be reached).
    def health
      shared(:health) do |redis|
        now = redis.call("TIME").then { |s, us| s.to_i + us.to_i / 1e6 }
        targets = %w[circuit requests tokens].flat_map do |kind|
          redis.scan("MATCH", "#{@namespace}:{*}:#{kind}", "COUNT", 1000).map do |k|
            k.delete_prefix("#{@namespace}:{").delete_suffix("}:#{kind}")
          end
        end
        targets.uniq.sort.map { |target| health_row(redis, target, now) }
      end
    end

    # SET NX PX: true for the first process of the fleet to claim +name+ within +ttl+.
    def claim(name, ttl)
      shared(:claim, name, ttl) do |redis|
        redis.call("SET", "#{@namespace}:{#{name}}", "1", "NX", "PX", ms(ttl)) == "OK"
      end
    end

    def shared?
      true
    end

    # Whether the last operation reached Redis.
    def connected?
      !@down
    end

    # Deletes every key of this namespace (specs, a manual reset).
    def clear
      shared(:clear) do |redis|
        keys = redis.scan("MATCH", "#{@namespace}:{*}*", "COUNT", 1000).to_a.uniq
        redis.call("DEL", *keys) unless keys.empty?
      end
      @fallback.clear
      nil
    end

    def inspect
      "#<#{self.class.name} #{ProviderConfig.shown_url(@config.server_url)} namespace=#{@namespace.inspect}>"
    end

    private

    def circuit_key(key)
      "#{@namespace}:{#{key}}:circuit"
    end

    # Every key of one target (one hash tag): circuit, probe, requests, tokens.
    def target_keys(key)
      %w[circuit probe requests tokens].map { |kind| "#{@namespace}:{#{key}}:#{kind}" }
    end

    # One key's answer to admit and peek, the process's own state taking it on.
    def entry(key, route, failures, change, open_for, room)
      headroom = shared_headroom(*room)
      @fallback.adopt(key, failures, open_for / 1000.0)
      @fallback.note_headroom(key, headroom)
      [route, failures, change, open_for.positive? ? open_for / 1000.0 : nil, headroom]
    end

    # HEADROOM_TAIL's four (-1: nothing shared) as an Engine::Headroom, or nil.
    def shared_headroom(requests, requests_ms, tokens, tokens_ms)
      return nil if requests.negative? && tokens.negative?

      Engine::Headroom.new(requests: requests.negative? ? nil : requests,
                           requests_for: requests.negative? ? nil : requests_ms / 1000.0,
                           tokens: tokens.negative? ? nil : tokens,
                           tokens_for: tokens.negative? ? nil : tokens_ms / 1000.0, dry: true)
    end

    # The SETs that tell the fleet a pool host is dry: what it said is left, until each
    # window refills. nil when it is not dry (nothing to share).
    def headroom_writes(key, headroom)
      return nil unless headroom&.dry

      _, _, requests, tokens = target_keys(key)
      writes = []
      writes << ["SET", requests, headroom.requests.to_s, "PX", ms(headroom.requests_for)] if headroom.requests && headroom.requests_for&.positive?
      writes << ["SET", tokens, headroom.tokens.to_s, "PX", ms(headroom.tokens_for)] if headroom.tokens && headroom.tokens_for&.positive?
      writes.empty? ? nil : writes
    end

    def health_row(redis, target, now)
      circuit, _, requests, tokens = target_keys(target)
      h = repairing(redis, [circuit]) { redis.call("HGETALL", circuit) }
      room = redis.pipelined do |p|
        [requests, tokens].each do |k|
          p.call("GET", k)
          p.call("PTTL", k)
        end
      end
      provider, model = target.split(":", 2)
      state = (h["state"] || "closed").to_sym
      state = :half_open if state == :open && h["until"].to_f <= now
      { provider: provider.to_sym, model: model, state: state, failures: h["failures"].to_i,
        probes_failed: h["probes"].to_i,
        opened_at: time_or_nil(h["opened_at"]), cooldown_until: state == :closed ? nil : time_or_nil(h["until"]),
        last_error: h["last_error"].to_s.empty? ? nil : h["last_error"],
        headroom: Headroom.shown(shared_headroom(*room.each_slice(2).flat_map { |v, ttl| [v ? v.to_i : -1, ttl] })) }
    end

    def probe_key(key)
      "#{@namespace}:{#{key}}:probe"
    end

    def ms(seconds)
      (seconds * 1000).ceil.clamp(1, nil)
    end

    def time_or_nil(value)
      v = value.to_f
      v.positive? ? Time.at(v) : nil
    end
  end
end
