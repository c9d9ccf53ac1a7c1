# frozen_string_literal: true

require_relative "../quota"

module LlmFailover
  module QuotaCounters
    # MemoryStateStore's counters: this process's own, under the store's lock. A
    # RedisStateStore falls back to them while Redis cannot be reached.
    module InMemory
      PRUNE_AT = 1000 # counters kept before the expired ones are dropped
      private_constant :PRUNE_AT

      def reserve_quota(key, period, amount, limit, ttl)
        synchronize do
          counter = quota_counter(key, period, ttl)
          next [false, counter[0]] if Quota.new(limit: limit, used: counter[0]).exceeded?

          counter[0] += amount
          [true, counter[0]]
        end
      end

      def adjust_quota(key, period, delta, ttl)
        synchronize do
          counter = quota_counter(key, period, ttl)
          counter[0] = [counter[0] + delta, 0].max
        end
      end

      def quota_used(key, period)
        synchronize do
          counter = quota_counters[[key, period]]
          counter && counter[1] > monotonic_now ? counter[0] : 0
        end
      end

      private

      # [count, expiry on the monotonic clock], a fresh one once expired.
      def quota_counter(key, period, ttl)
        now = monotonic_now
        counters = quota_counters
        counter = counters[[key, period]]
        return counter if counter && counter[1] > now

        counters.delete_if { |_, (_, expiry)| expiry <= now } if counters.size >= PRUNE_AT
        counters[[key, period]] = [0, now + ttl]
      end

      def quota_counters
        @quota_counters ||= {}
      end

      def monotonic_now
        Process.clock_gettime(Process::CLOCK_MONOTONIC)
      end
    end
  end
end
