# frozen_string_literal: true

module LlmFailover
  module QuotaCounters
    # RedisStateStore's counters: one key per quota key and period,
    # NS:{quota:KEY}:PERIOD, expiring when the period ends. Each operation is one Lua
    # script, so the check and the increment of a reservation are one atomic step for
    # the whole fleet (and the key's hash tag keeps it on one Redis Cluster slot).
    # While Redis cannot be reached, the store's in-process fallback counts.
    module InRedis
      # KEYS: counter. ARGV: amount, limit, ttl (ms). Returns {reserved 0/1, used}.
      # "used >= limit" is Quota#exceeded? (lf_quota_exceeded), the rule's owner; it is
      # repeated here only because the check and the increment must be one step in Redis.
      RESERVE = <<~LUA
        local used = tonumber(redis.call('GET', KEYS[1]) or '0')
        if used >= tonumber(ARGV[2]) then return {0, used} end
        used = redis.call('INCRBY', KEYS[1], ARGV[1])
        if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
        return {1, used}
      LUA

      # KEYS: counter. ARGV: delta, ttl (ms). Returns the counter, never below 0.
      ADJUST = <<~LUA
        local used = tonumber(redis.call('GET', KEYS[1]) or '0') + tonumber(ARGV[1])
        if used < 0 then used = 0 end
        local ttl = redis.call('PTTL', KEYS[1])
        if ttl < 0 then ttl = tonumber(ARGV[2]) end
        redis.call('SET', KEYS[1], used, 'PX', ttl)
        return used
      LUA

      def reserve_quota(key, period, amount, limit, ttl)
        shared(:reserve_quota, key, period, amount, limit, ttl, repair: [quota_key(key, period)]) do |redis|
          reserved, used = redis.call("EVAL", RESERVE, 1, quota_key(key, period), amount, limit, ttl_ms(ttl))
          [reserved == 1, used]
        end
      end

      def adjust_quota(key, period, delta, ttl)
        shared(:adjust_quota, key, period, delta, ttl, repair: [quota_key(key, period)]) do |redis|
          redis.call("EVAL", ADJUST, 1, quota_key(key, period), delta, ttl_ms(ttl))
        end
      end

      def quota_used(key, period)
        shared(:quota_used, key, period, repair: [quota_key(key, period)]) do |redis|
          redis.call("GET", quota_key(key, period)).to_i
        end
      end

      private

      def quota_key(key, period)
        "#{namespace}:{quota:#{key}}:#{period}"
      end

      def ttl_ms(seconds)
        (seconds * 1000).ceil.clamp(1, nil)
      end
    end
  end
end
