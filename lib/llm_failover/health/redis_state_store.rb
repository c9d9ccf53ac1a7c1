# frozen_string_literal: true

require "digest/sha1"
require "llm_failover/llm_failover" # Circuit's route codes (the C core's)
require "set"
require_relative "../errors"
require_relative "../quota/quota_counters/in_redis"
require_relative "first_token_times/in_redis"
require_relative "memory_state_store"
require_relative "../config/provider_config" # ProviderConfig.shown_url
require_relative "../records/warnings"

begin
  require "redis-client"
rescue LoadError
  raise LoadError, "LlmFailover::RedisStateStore needs the redis-client gem: add `gem \"redis-client\"` to your Gemfile"
end

module LlmFailover
  # Provider health shared by every process (and host) pointed at one Redis: circuit
  # state and counts, Retry-After cooldowns, the half-open probe lock and the alert
  # dedupe. Speaks MemoryStateStore's protocol.
  #
  # Keys (every one with a TTL; the keys of one target share a hash tag, so each
  # script touches one slot and works on Redis Cluster):
  #   NS:{provider:model}:circuit  hash: state, failures, opened_at, until (epoch s),
  #                                last_error, updated_at. TTL: a day past its last
  #                                write (longer when a cooldown is longer).
  #   NS:{provider:model}:probe    the half-open probe lock: SET NX PX, holding the
  #                                token (request_id) of the call that probes, for
  #                                the probe request's deadline; that call asking
  #                                again renews it, its own outcome's circuit change
  #                                (or any success) deletes it, and the call deletes
  #                                it when it ends (if still its own).
  #   NS:{alert:feature:class}     one on_chain_exhausted per window: SET NX PX.
  # The scripts below run lf_circuit.c's transitions inside Redis, on Redis's clock
  # (TIME), so that hosts whose clocks differ agree; spec/state_store_spec.rb holds
  # both stores to the same contract.
  #
  # A call costs one round trip on the happy path: one pipelined EVALSHA per target,
  # read-only while the circuit is closed (a success is written only when the target
  # had failures). When Redis is down or slower than the budget (50 ms), the call goes
  # on with this process's own MemoryStateStore: one warning per outage, nothing
  # raised, sharing resumes when Redis answers again (retried at most once a second).
  # That own state is not blank: every answer from Redis about a target that is not
  # plainly healthy is copied into it (open, and for how long), so that a process
  # cut off from Redis keeps away from a target the fleet knew to be down.
  class RedisStateStore
    include QuotaCounters::InRedis # reserve_quota, adjust_quota, quota_used
    include FirstTokenTimes::InRedis # record_first_tokens, first_token_times (hedge_after: :auto)
    BUDGET = 0.05 # seconds: connect, read and write timeouts
    RETRY_AFTER = 1.0 # seconds between attempts to reach a Redis that failed
    DAY_MS = 86_400_000
    POOL_WAIT = 1.0 # seconds a thread waits for a free connection of this process

    # Mirrors lf_circuit_admit and lf_circuit_renew_probe. KEYS: circuit, probe.
    # ARGV: probe ttl (ms), the caller's token. Returns {route, failures, changed,
    # open_for}: route one of Circuit::SEND, SKIP, PROBE (the C core's codes, written
    # into the script); open_for the milliseconds the target stays out of bounds for
    # this caller's process (0 when closed).
    ADMIT = <<~LUA
      local SEND, SKIP, PROBE = #{Circuit::SEND}, #{Circuit::SKIP}, #{Circuit::PROBE}
      local st = redis.call('HMGET', KEYS[1], 'state', 'failures', 'until')
      local state, failures = st[1], tonumber(st[2]) or 0
      if not state or state == 'closed' then return {SEND, failures, 0, 0} end
      local t = redis.call('TIME')
      local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
      local changed = 0
      if state == 'open' then
        local untl = tonumber(st[3]) or 0
        if now < untl then return {SKIP, failures, 0, math.ceil((untl - now) * 1000)} end
        redis.call('HSET', KEYS[1], 'state', 'half_open')
        redis.call('DEL', KEYS[2])
        changed = 1
      end
      if ARGV[2] ~= '' and redis.call('GET', KEYS[2]) == ARGV[2] then
        redis.call('PEXPIRE', KEYS[2], ARGV[1])
        return {PROBE, failures, changed, tonumber(ARGV[1])}
      end
      -- a Retry-After that came in while half-open holds the next probe back
      local untl = tonumber(st[3]) or 0
      if now < untl then return {SKIP, failures, changed, math.ceil((untl - now) * 1000)} end
      if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[1]) then
        return {PROBE, failures, changed, tonumber(ARGV[1])}
      end
      return {SKIP, failures, changed, math.max(redis.call('PTTL', KEYS[2]), 1)}
    LUA

    # Mirrors lf_circuit_peek: ADMIT's answer, read-only (route PROBE: the probe is
    # free, or the caller's token holds it). KEYS: circuit, probe. ARGV: the caller's
    # token. Returns {route, failures, open_for}.
    PEEK = <<~LUA
      local SEND, SKIP, PROBE = #{Circuit::SEND}, #{Circuit::SKIP}, #{Circuit::PROBE}
      local st = redis.call('HMGET', KEYS[1], 'state', 'failures', 'until')
      local state, failures = st[1], tonumber(st[2]) or 0
      if not state or state == 'closed' then return {SEND, failures, 0} end
      local t = redis.call('TIME')
      local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
      local untl = tonumber(st[3]) or 0
      if state == 'open' then
        if now < untl then return {SKIP, failures, math.ceil((untl - now) * 1000)} end
        return {PROBE, failures, 0}
      end
      local holder = redis.call('GET', KEYS[2])
      if holder and ARGV[1] ~= '' and holder == ARGV[1] then return {PROBE, failures, 0} end
      if now < untl then return {SKIP, failures, math.ceil((untl - now) * 1000)} end
      if holder then return {SKIP, failures, math.max(redis.call('PTTL', KEYS[2]), 1)} end
      return {PROBE, failures, 0}
    LUA

    # The probe lock of a call that ended, when it is still its own. KEYS: probe.
    # ARGV: token.
    RELEASE = <<~LUA
      if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
      return 0
    LUA

    # Mirrors lf_circuit_record. KEYS: circuit, probe. ARGV: threshold, cooldown (s),
    # success (0/1), hold (s), error class, key ttl (ms), the caller's token, the first
    # probe's wait (s). The wait before the next probe is lf_circuit_interval's: SHARE
    # (Circuit::RECOVERY_SHARE, from the C core) of the incident's age, at least the
    # first wait, at most the cooldown; the hash's `probes` counts failed probes. Returns
    # {from, to, reason, failures, open_for (ms: while open, or while another call's
    # probe is out; else 0)}. While half-open only
    # the probe lock's holder's failure reopens; another call's is counted and leaves
    # the lock alone.
    # SHARE: lf_circuit.h's, so that the schedule's numbers have one owner.
    RECORD = <<~LUA.sub("SHARE", format("%.17g", Circuit::RECOVERY_SHARE)).freeze
      local st = redis.call('HMGET', KEYS[1], 'state', 'failures', 'until', 'opened_at', 'probes')
      local state = st[1] or 'closed'
      local failures = tonumber(st[2]) or 0
      local probes = tonumber(st[5]) or 0
      if ARGV[3] == '1' then
        if state == 'closed' then
          if failures > 0 then redis.call('HSET', KEYS[1], 'failures', 0) end
          return {state, state, '', 0, 0}
        end
        redis.call('HSET', KEYS[1], 'state', 'closed', 'failures', 0, 'opened_at', 0, 'until', 0, 'probes', 0)
        redis.call('DEL', KEYS[2])
        redis.call('PEXPIRE', KEYS[1], ARGV[6])
        return {state, 'closed', 'success', 0, 0}
      end
      local t = redis.call('TIME')
      local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
      local threshold, cooldown, hold = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
      local first = tonumber(ARGV[8]) or cooldown
      local function interval(elapsed) -- lf_circuit_interval
        local wait = elapsed * SHARE
        if not (wait > first) then wait = first end
        return math.min(wait, cooldown)
      end
      local to, reason = state, ''
      local untl, opened = tonumber(st[3]) or 0, tonumber(st[4]) or 0
      failures = failures + 1
      if state == 'half_open' then
        if ARGV[7] ~= '' and redis.call('GET', KEYS[2]) == ARGV[7] then
          probes = probes + 1
          to, reason, untl = 'open', 'probe_failed', math.max(untl, now + math.max(hold, interval(now - opened)))
          redis.call('DEL', KEYS[2])
        elseif hold > 0 and now + hold > untl then
          untl = now + hold -- another call's Retry-After: no next probe before it is over
        end
      elseif state == 'open' then
        if hold > 0 and now + hold > untl then untl = now + hold end
      elseif threshold > 0 and failures >= threshold then
        to, reason, untl, opened, probes = 'open', 'threshold', now + math.max(hold, interval(0)), now, 0
        redis.call('DEL', KEYS[2])
      elseif hold > 0 then
        to, reason, untl, opened, probes = 'open', 'retry_after', now + hold, now, 0
        redis.call('DEL', KEYS[2])
      end
      redis.call('HSET', KEYS[1], 'state', to, 'failures', failures, 'until', string.format('%.6f', untl),
                 'opened_at', string.format('%.6f', opened), 'last_error', ARGV[5],
                 'updated_at', string.format('%.6f', now), 'probes', probes)
      redis.call('PEXPIRE', KEYS[1], ARGV[6])
      local open_for = 0
      if to == 'open' then open_for = math.max(math.ceil((untl - now) * 1000), 1) end
      if to == 'half_open' then -- another's probe is out, or a Retry-After holds the next back
        open_for = math.max(redis.call('PTTL', KEYS[2]), math.ceil((untl - now) * 1000), 0)
      end
      return {state, to, reason, failures, open_for}
    LUA

    SCRIPTS = { admit: ADMIT, peek: PEEK, record: RECORD, release: RELEASE }.freeze
    SHAS = SCRIPTS.transform_values { |src| Digest::SHA1.hexdigest(src) }.freeze

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
        replies = per_key(redis, keys) { |key| ["EVALSHA", SHAS[:admit], 2, circuit_key(key), probe_key(key), ttl_ms, token] }
        replies.each_with_index.map do |(route, failures, changed, open_for), i|
          @fallback.adopt(keys[i], failures, open_for / 1000.0)
          [route, failures, changed == 1 ? %i[open half_open cooldown_elapsed] : nil]
        end
      end
    end

    # ADMIT's answer without taking a probe or moving a circuit (read-only).
    def peek(keys, token = nil)
      token = token.to_s
      shared(:peek, keys, token) do |redis|
        replies = per_key(redis, keys) { |key| ["EVALSHA", SHAS[:peek], 2, circuit_key(key), probe_key(key), token] }
        replies.each_with_index.map do |(route, failures, open_for), i|
          @fallback.adopt(keys[i], failures, open_for / 1000.0)
          [route, failures, nil]
        end
      end
    end

    # @param first_probe [Numeric, nil] the recovery schedule's first wait (see RECORD)
    def record(key, threshold, cooldown, success, hold, error_class, token = nil, first_probe = nil)
      key_ttl = [DAY_MS, ms(2 * (cooldown + hold))].max
      shared(:record, key, threshold, cooldown, success, hold, error_class, token, first_probe,
             repair: [circuit_key(key), probe_key(key)]) do |redis|
        from, to, reason, failures, open_for = redis.call("EVALSHA", SHAS[:record], 2, circuit_key(key), probe_key(key),
                                                          threshold, cooldown.to_f, success ? 1 : 0, hold.to_f,
                                                          error_class.to_s, key_ttl, token.to_s,
                                                          (first_probe || cooldown).to_f)
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

    # Every target with a circuit in this namespace, read from Redis (the process's own
    # state when Redis cannot be reached).
    def health
      shared(:health) do |redis|
        now = redis.call("TIME").then { |s, us| s.to_i + us.to_i / 1e6 }
        keys = redis.scan("MATCH", "#{@namespace}:{*}:circuit", "COUNT", 1000).to_a
        keys.sort.map do |k|
          h = repairing(redis, [k]) { redis.call("HGETALL", k) }
          provider, model = k.delete_prefix("#{@namespace}:{").delete_suffix("}:circuit").split(":", 2)
          state = (h["state"] || "closed").to_sym
          state = :half_open if state == :open && h["until"].to_f <= now
          { provider: provider.to_sym, model: model, state: state, failures: h["failures"].to_i,
            probes_failed: h["probes"].to_i,
            opened_at: time_or_nil(h["opened_at"]), cooldown_until: state == :closed ? nil : time_or_nil(h["until"]),
            last_error: h["last_error"].to_s.empty? ? nil : h["last_error"] }
        end
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

    # Runs the block with a connection, or the fallback's method of the same name when
    # Redis is down or failed within the last RETRY_AFTER seconds. Only a connection
    # that fails makes an outage: a value the scripts cannot read is its key's problem
    # (+repair+: the keys to reset, then once more), and a command Redis refuses
    # (out of memory, a read-only replica) sends this operation alone to the fallback.
    #
    # An outage is one warning and its end one notice, however many threads are in
    # flight: each operation carries the epoch it began in, and only one that began
    # while Redis was up declares it down, only one that began while it was down (a
    # retry once the second is over) declares it back. An answer to a request sent
    # before the outage does not end it; a failure of one sent before the recovery
    # does not start another.
    def shared(name, *args, repair: nil)
      return @fallback.public_send(name, *args) if @down_until && monotonic < @down_until

      epoch = @epoch
      result = pool.with { |redis| on_live_connection(redis) { with_scripts(redis) { repairing(redis, repair) { yield redis } } } }
      back_up(epoch) if @down
      result
    rescue ConnectionPool::TimeoutError
      # More threads than connections, all busy: this call only, Redis is not down.
      @fallback.public_send(name, *args)
    rescue RedisClient::CommandError => e
      refused(e)
      @fallback.public_send(name, *args)
    rescue RedisClient::Error, SystemCallError, IOError => e
      went_down(e, epoch)
      @fallback.public_send(name, *args)
    end

    # A pooled connection that Redis closed while it sat idle (a restart, Redis's own
    # idle timeout) fails at its first use although Redis is up: once more, on a new
    # connection (redis-client reconnects a client whose connection failed). Not after
    # a timeout (the command may have run) nor when connecting failed (Redis is down).
    def on_live_connection(redis)
      yield
    rescue RedisClient::TimeoutError, RedisClient::CannotConnectError
      raise
    rescue RedisClient::ConnectionError
      yield
    end

    # EVALSHA until the scripts are loaded (a new or restarted Redis).
    def with_scripts(redis)
      yield
    rescue RedisClient::CommandError => e
      raise unless e.message.start_with?("NOSCRIPT")

      SCRIPTS.each_value { |src| redis.call("SCRIPT", "LOAD", src) }
      yield
    end

    # A value the gem cannot read (garbage in a counter, a key of the wrong type) fails
    # the script over that key alone: the key is reset, said once, and the operation
    # runs again. Nothing else is touched, and Redis is not "down".
    def repairing(redis, keys)
      yield
    rescue RedisClient::CommandError => e
      raise if keys.nil? || keys.empty? || e.message.start_with?("NOSCRIPT")

      reset(redis, keys, e)
      yield
    end

    def reset(redis, keys, error)
      redis.call("DEL", *keys)
      once(keys.first, "llm_failover: Redis key #{keys.first} held a value the gem cannot read " \
                       "(#{error.message.lines.first.strip}); reset it, sharing goes on")
    end

    # One pipelined script per key, each key's error its own: a NOSCRIPT goes to
    # with_scripts, another error resets that key (#repairing) and runs its script again.
    def per_key(redis, keys, &command)
      replies = redis.pipelined(exception: false) { |p| keys.each { |key| p.call(*command.call(key)) } }
      replies.each_with_index.map do |reply, i|
        next reply unless reply.is_a?(RedisClient::CommandError)
        raise reply if reply.message.start_with?("NOSCRIPT")

        reset(redis, [circuit_key(keys[i]), probe_key(keys[i])], reply)
        redis.call(*command.call(keys[i]))
      end
    end

    # Redis refused a command (not a connection failure): this operation goes to the
    # fallback, said once per kind of refusal.
    def refused(error)
      kind = error.message[/\A\S+/].to_s
      once("refused:#{kind}", "llm_failover: Redis refused a command (#{error.message.lines.first.strip}); " \
                              "this operation used this process's own state")
    end

    def once(topic, message)
      first = @lock.synchronize do
        next false if @said.include?(topic) || @said.size >= 1000

        @said << topic
      end
      say(:warn, message) if first
    end

    def pool
      return @pool if @pid == Process.pid

      @lock.synchronize do
        unless @pid == Process.pid
          # A forked child never uses its parent's sockets.
          @pool = @config.new_pool(size: @pool_size, timeout: POOL_WAIT)
          @pid = Process.pid
        end
      end
      @pool
    end

    # +epoch+: the one the failed operation began in. One that began while Redis was up
    # declares the outage (the first of them only); one that began during it (a retry)
    # keeps it for another RETRY_AFTER; one that began before a recovery changes nothing.
    def went_down(error, epoch)
      first = @lock.synchronize do
        next false unless epoch == @epoch

        @down_until = monotonic + RETRY_AFTER
        next false if @down

        @down = true
        @epoch += 1
      end
      return unless first

      say(:warn, "llm_failover: Redis state store unreachable (#{error.class}: #{error.message}); " \
                 "going on with this process's own state until it is back")
    end

    # Only an operation that began during the outage (a retry) ends it.
    def back_up(epoch)
      was_down = @lock.synchronize do
        next false unless @down && epoch == @epoch

        @down = false
        @down_until = nil
        @epoch += 1
      end
      say(:info, "llm_failover: Redis state store reachable again; sharing resumed") if was_down
    end

    # Warnings go through Warnings.warn: the store's own logger, else c.logger (the
    # generated initializer builds the store without one: an outage belongs in the
    # app's log), else stderr. The all-clear only to a logger.
    def say(level, message)
      return Warnings.warn(message.delete_prefix("llm_failover: "), logger: @logger || LlmFailover.configuration.logger) if level == :warn

      @logger&.public_send(level, message)
    rescue StandardError
      nil
    end

    def monotonic
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end
