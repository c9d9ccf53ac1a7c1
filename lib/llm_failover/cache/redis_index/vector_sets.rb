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
    # Neither an add's neighbour search (VADD ... CAS) nor a lookup's (VSIM) runs in a
    # script: called directly, Redis runs them on a thread beside its main thread.
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

      # An add is three steps, so that the VADD that searches the graph is called directly
      # (CAS: Redis finds its neighbours on a thread, not on its main thread):
      #   WRITE   the value, its order (trimming the oldest) and the TTLs; a new set's first
      #           vector too (it links nothing). Returns 1 when the set still lacks the vector.
      #   VADD    ... CAS, directly.
      #   SETTLE  a vector whose value went meanwhile (a clear, a trim) is taken out again.
      # The value comes first: a lookup finds the vector with it, or (a clear or a trim came
      # between) without and passes over it. Every WRITE sets the TTL of a set that exists;
      # only a VADD after a clear makes one without, whose vectors' values are gone: SETTLE
      # takes them out, and the key with them.
      #
      # KEYS: the set, its values, its order. ARGV: the vector (FP32), the element, the
      # value, max_per_partition, ttl.
      WRITE = <<~LUA
        local fresh = 0
        if redis.call('EXISTS', KEYS[1]) == 0 then
          redis.call('VADD', KEYS[1], 'FP32', ARGV[1], ARGV[2], 'NOQUANT')
        else
          local dim, got = redis.call('VDIM', KEYS[1]), #ARGV[1] / 4
          if dim ~= got then
            return redis.error_reply('ERR Vector dimension mismatch - got ' .. got .. ' but set has ' .. dim)
          end
          fresh = redis.call('VISMEMBER', KEYS[1], ARGV[2]) == 0 and 1 or 0
        end
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
        return fresh
      LUA

      # KEYS: the set, its values. ARGV: the element.
      SETTLE = <<~LUA
        if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then redis.call('VREM', KEYS[1], ARGV[1]) end
        return 0
      LUA

      SCRIPTS = { write: WRITE, settle: SETTLE }.freeze
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
        set, values, order = keys(partition)
        @outage.guard(meanwhile: MEANWHILE) do
          @redis.pool.with do |r|
            bounds = [@redis.max_per_partition, @redis.ttl]
            fresh = script(r, :write, [set, values, order], [blob, element, value, *bounds])
            link(r, set, values, blob, element) if fresh == 1
          end
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

      # The vector into a set that WRITE found, its neighbours searched off the main thread.
      # A set made again since (after a clear) with another dimension: an ArgumentError,
      # as if the add came after the clear (the clear took the value).
      def link(redis, set, values, blob, element)
        checking_dimension { redis.call("VADD", set, "FP32", blob, element, "NOQUANT", "CAS") }
        script(redis, :settle, [set, values], [element])
      end

      # EVALSHA, loading the script when Redis lacks it (new or restarted).
      def script(redis, name, keys, args)
        command = ["EVALSHA", SHAS.fetch(name), keys.size, *keys, *args]
        checking_dimension do
          redis.call(*command)
        rescue RedisClient::CommandError => e
          raise unless e.message.start_with?("NOSCRIPT")

          redis.call("SCRIPT", "LOAD", SCRIPTS.fetch(name))
          redis.call(*command)
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
