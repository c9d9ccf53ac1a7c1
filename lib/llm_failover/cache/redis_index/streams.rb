# frozen_string_literal: true

require "digest/sha2"
require_relative "../mirrored_index"

module LlmFailover
  class RedisIndex
    # The vectors in Redis streams, mirrored in each process (MirroredIndex), for a
    # Redis without vector sets. Keys:
    #   NS:vindex:<sha256 of the partition>  a stream, one entry per add: v (float32 LE),
    #                                        x (the value); trimmed to ~max_per_partition
    #   NS:vindex-epoch                      moves on at each #clear
    # A lookup is one round trip (the epoch and the entries after the cursor).
    #
    # @api private: RedisIndex's engine when it mirrors
    class Streams < MirroredIndex
      BATCH = 500

      # @param redis [RedisIndex] the connections, the namespace and the bounds
      def initialize(redis:, mirror:, outage:)
        super(mirror: mirror, outage: outage)
        @redis = redis
        @namespace = redis.namespace
      end

      private

      def key(partition)
        "#{@namespace}:vindex:#{Digest::SHA256.hexdigest(partition)[0, 32]}"
      end

      def epoch_key
        "#{@namespace}:vindex-epoch"
      end

      # Yields each entry after +cursor+ (a stream id) as (vector, value); the last id.
      def fetch_after(partition, cursor)
        key = key(partition)
        last = cursor
        loop do
          epoch, entries = @redis.pool.with do |r|
            r.pipelined do |p|
              p.call("GET", epoch_key)
              p.call("XRANGE", key, last ? "(#{last}" : "-", "+", "COUNT", BATCH)
            end
          end
          # Cleared since this mirror began: it was dropped; read the partition again.
          if follow_epoch(epoch) && last
            last = nil
            next
          end
          entries.each do |id, fields|
            h = fields.each_slice(2).to_h
            yield h["v"].unpack("e*"), h["x"].force_encoding(Encoding::UTF_8)
            last = id
          end
          return last if entries.size < BATCH
        end
      end

      def append(partition, packed, _dim, value)
        key = key(partition)
        @redis.pool.with do |r|
          r.pipelined do |p|
            p.call("XADD", key, "MAXLEN", "~", @redis.max_per_partition, "*", "v", packed, "x", value)
            p.call("EXPIRE", key, @redis.ttl)
          end
        end
      end

      # The streams go first, the epoch moves last: a process that reads the new
      # epoch (GET before XRANGE, in one pipeline) can no longer read an old entry,
      # and one that read an old entry meanwhile drops it at its next lookup.
      def clear_store
        @redis.pool.with do |r|
          r.scan("MATCH", "#{@namespace}:vindex:*", "COUNT", 1000).each_slice(500) { |keys| r.call("UNLINK", *keys) }
          cleared_to(r.call("INCR", epoch_key).to_s) # GET answers the same String
        end
      end

      def store_size
        @redis.pool.with do |r|
          r.scan("MATCH", "#{@namespace}:vindex:*", "COUNT", 1000).sum { |k| r.call("XLEN", k) }
        end
      end

      # Stream ids ("ms-seq") in order.
      def newer?(a, b)
        b.nil? || (a.split("-").map(&:to_i) <=> b.split("-").map(&:to_i)).positive?
      end
    end
  end
end
