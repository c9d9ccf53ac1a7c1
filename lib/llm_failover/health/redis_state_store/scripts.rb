# frozen_string_literal: true

require "digest/sha1"
require "llm_failover/llm_failover" # Circuit's route codes and RECOVERY_SHARE (the C core's)

module LlmFailover
  class RedisStateStore
    # The Lua that runs lf_circuit.c's transitions inside Redis on Redis's clock, one
    # script per operation, each on one target's keys. A restatement of the C rules,
    # kept because spec/circuit_transitions_spec.rb drives both through one list.
    #
    # @api private: included by RedisStateStore
    module Scripts
      # What ADMIT and PEEK add to their answer: a pool host's shared headroom, what it
      # said is left of its requests (KEYS[3]) and tokens (KEYS[4]) while that holds
      # (the key's PTTL): {requests, ms, tokens, ms}, -1 where nothing is shared.
      HEADROOM_TAIL = <<~LUA
        for i = 3, 4 do
          local left = tonumber(redis.call('GET', KEYS[i]))
          table.insert(answer, left or -1)
          table.insert(answer, left and redis.call('PTTL', KEYS[i]) or -1)
        end
        return answer
      LUA

      # Mirrors lf_circuit_admit and lf_circuit_renew_probe. KEYS: circuit, probe,
      # requests, tokens. ARGV: probe ttl (ms), the caller's token. Returns {route,
      # failures, changed, open_for} and HEADROOM_TAIL's four: route one of
      # Circuit::SEND, SKIP, PROBE (the C core's codes, written into the script); open_for
      # the milliseconds the target stays out of bounds for this caller's process (0
      # when closed).
      ADMIT = <<~LUA + "local answer = admit()\n" + HEADROOM_TAIL
        local function admit()
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
        end
      LUA

      # Mirrors lf_circuit_peek: ADMIT's answer, read-only (route PROBE: the probe is
      # free, or the caller's token holds it). KEYS: circuit, probe, requests, tokens.
      # ARGV: the caller's token. Returns {route, failures, open_for} and HEADROOM_TAIL's.
      PEEK = <<~LUA + "local answer = peek()\n" + HEADROOM_TAIL
        local function peek()
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
        end
      LUA

      # The probe lock of a call that ended, when it is still its own. KEYS: probe.
      # ARGV: token.
      RELEASE = <<~LUA
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
        return 0
      LUA

      # Mirrors lf_circuit_record. KEYS: circuit, probe. ARGV: threshold, cooldown (s),
      # success (0/1), hold (s), error class, key ttl (ms), the caller's token, the first
      # probe's wait (s). Returns {from, to, reason, failures, open_for (ms)}. SHARE is
      # Circuit::RECOVERY_SHARE, the C core's, so the probe schedule has one owner.
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
    end
  end
end
