# frozen_string_literal: true

require "digest/sha1"
require "digest/sha2"
require_relative "../memory_index"

module LlmFailover
  class RedisIndex
    # The vectors in Redis 8's vector sets, searched by Redis: no process keeps a copy.
    #
    # Keys (one hash tag per partition; all expire ttl after the partition's last add):
    #   NS:vset:{<sha256 of the partition>}  the set: one float32 element per distinct vector
    #   NS:vset-values:{...}                 element => value
    #   NS:vset-order:{...}                  element => when added; past max_per_partition the oldest go
    #
    # An add is one script (the three keys move together); a lookup is VCARD, VSIM and
    # HMGET, called directly, so that VSIM runs off Redis's main thread.
    #
    # NOQUANT keeps VSIM's score an exact cosine, so the threshold is checked exactly
    # and an entry below it is never a hit; a partition up to EXACT_UP_TO is scanned
    # whole (TRUTH), a larger one through the graph, which may miss (a provider call).
    #
    # @api private: RedisIndex's engine when Redis searches
    class VectorSets
      MEANWHILE = "lookups miss and adds are dropped until it answers"
      # Entries up to which a partition is scanned exactly: a scan costs about 4 µs an
      # entry at 1,536 dimensions on a busy 2-core machine, about what the graph's
      # search costs at this size.
      EXACT_UP_TO = 500
      # The graph search's breadth (VSIM EF): at 50 the bench's graph missed 3 of 20 near
      # duplicates among 100,000 vectors; 200 costs more, but a miss is a provider call.
      EF = 200
      CANDIDATES = 8

      # KEYS: the set, its values, its order. ARGV: the vector (FP32), the element, the
      # value, max_per_partition, ttl. Returns VADD's answer, or its error (a dimension
      # other than the set's).
      ADD = <<~LUA
        local added = redis.pcall('VADD', KEYS[1], 'FP32', ARGV[1], ARGV[2], 'NOQUANT')
        if type(added) == 'table' and added.err then return added end
        redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
        local t = redis.call('TIME')
        redis.call('ZADD', KEYS[3], t[1] .. string.format('%06d', t[2]), ARGV[2])
        local over = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[4])
        if over > 0 then
          local gone = redis.call('ZPOPMIN', KEYS[3], over)
          for i = 1, #gone, 2 do
            redis.call('VREM', KEYS[1], gone[i])
            redis.call('HDEL', KEYS[2], gone[i])
          end
        end
        for i = 1, 3 do redis.call('EXPIRE', KEYS[i], ARGV[5]) end
        return added
      LUA

      SCRIPTS = { add: ADD }.freeze
      SHAS = SCRIPTS.transform_values { |src| Digest::SHA1.hexdigest(src) }.freeze

      # @param redis [RedisIndex] the connections, the namespace and the bounds
      # @param outage [StoreOutage] the index's outage rule
      def initialize(redis:, outage:)
        @redis = redis
        @outage = outage
        @namespace = redis.namespace
      end

      # @return [Symbol] :server
      def search
        :server
      end

      # @return [nil] no process keeps a copy
      def mirror
        nil
      end

      # @see SharedIndex#add
      def add(partition:, vector:, value:)
        blob = MemoryIndex.normalise(vector)
        element = Digest::SHA256.hexdigest(blob)[0, 32]
        @outage.guard(meanwhile: MEANWHILE) do
          script(:add, keys(partition), [blob, element, value, @redis.max_per_partition, @redis.ttl])
        end
        nil
      end

      # @see SharedIndex#nearest
      def nearest(partition:, vector:, threshold:)
        blob = MemoryIndex.normalise(vector)
        # A little below the threshold's score: the exact check is the one below.
        least = ((1 + threshold) / 2.0) - 1e-6
        found = @outage.guard(meanwhile: MEANWHILE) do
          @redis.pool.with { |r| look_up(r, keys(partition), blob, least) }
        end
        return nil unless found

        found.map { |value, score| [value.force_encoding(Encoding::UTF_8), (2 * score) - 1] }
             .select { |_, similarity| similarity >= threshold }.max_by(&:last)
      end

      # @see SharedIndex#clear
      def clear
        @outage.guard(meanwhile: MEANWHILE) do
          @redis.pool.with do |r|
            r.scan("MATCH", "#{@namespace}:vset*", "COUNT", 1000).each_slice(500) { |k| r.call("UNLINK", *k) }
          end
        end
        nil
      end

      # @see SharedIndex#size
      def size
        @outage.guard(meanwhile: MEANWHILE, fallback: 0) do
          @redis.pool.with do |r|
            r.scan("MATCH", "#{@namespace}:vset:*", "COUNT", 1000).sum { |k| r.call("VCARD", k) }
          end
        end
      end

      private

      def keys(partition)
        tag = "{#{Digest::SHA256.hexdigest(partition)[0, 32]}}"
        ["#{@namespace}:vset:#{tag}", "#{@namespace}:vset-values:#{tag}", "#{@namespace}:vset-order:#{tag}"]
      end

      # [[value, VSIM's score], ...] for the candidates scoring at least +least+. No
      # script: Redis runs VSIM on a thread of its own only when it is called directly (in
      # a script it holds the main thread, and every other client waits). So the values
      # come in a round trip of their own, and an element gone meanwhile (cleared,
      # trimmed, expired) has none: it is left out, never an error.
      def look_up(redis, (set, values), blob, least)
        size = redis.call("VCARD", set)
        return [] if size.zero?

        ask = ["VSIM", set, "FP32", blob, "WITHSCORES", "COUNT", CANDIDATES, "EF", EF]
        ask << "TRUTH" if size <= EXACT_UP_TO
        scores = checking_dimension { redis.call(*ask) }.select { |_, score| score >= least } # RESP3: a Hash
        return [] if scores.empty?

        redis.call("HMGET", values, *scores.keys).zip(scores.values).select(&:first)
      end

      # EVALSHA, loading the script when Redis lacks it (new or restarted).
      def script(name, keys, args)
        @redis.pool.with do |r|
          command = ["EVALSHA", SHAS.fetch(name), keys.size, *keys, *args]
          checking_dimension do
            r.call(*command)
          rescue RedisClient::CommandError => e
            raise unless e.message.start_with?("NOSCRIPT")

            r.call("SCRIPT", "LOAD", SCRIPTS.fetch(name))
            r.call(*command)
          end
        end
      end

      # A vector of another dimension than the set's is the caller's ArgumentError, not an outage.
      def checking_dimension
        yield
      rescue RedisClient::CommandError => e
        raise ArgumentError, "the partition holds vectors of another dimension (#{e.message})" if e.message.include?("dimension")

        raise
      end
    end
  end
end
