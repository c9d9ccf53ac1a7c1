# frozen_string_literal: true

require "digest/sha2"
require_relative "mirrored_index"

begin
  require "redis-client"
  require "connection_pool" # redis-client's own dependency, for its pools
rescue LoadError
  raise LoadError, "LlmFailover::RedisIndex needs the redis-client gem: add `gem \"redis-client\"` to your Gemfile"
end

module LlmFailover
  # The semantic cache's vectors shared by every process pointed at one Redis, each
  # process scanning its own mirror (a MemoryIndex: see MirroredIndex).
  #
  #   LlmFailover::SemanticCache.new(..., index: LlmFailover::RedisIndex.new(url: ENV["REDIS_URL"]))
  #
  # Keys:
  #   NS:vindex:<sha256 of the partition, 32 hex>  a stream, one entry per add: v (the
  #        vector as little-endian float32), x (the value). Trimmed to about
  #        max_per_partition entries (XADD MAXLEN ~); expires ttl seconds after its
  #        last add.
  #   NS:vindex-epoch  moves on at each #clear, after the streams are gone: a process
  #        that sees it move drops its mirror and mirrors again from the start.
  # A lookup costs one round trip (the epoch and the partition's stream entries after
  # the cursor, pipelined); the first lookup of a partition in a process reads the
  # whole stream, in BATCH entries a round trip.
  class RedisIndex < MirroredIndex
    BATCH = 500
    DAY = 86_400

    attr_reader :namespace

    # @param url [String] redis://, rediss:// or unix://
    # @param namespace [String] the prefix of every key
    # @param max_per_partition [Integer] entries a partition's stream keeps (about)
    # @param ttl [Integer] seconds a partition's stream lives after its last add
    # @param mirror [MemoryIndex] this process's copy (its own bounds)
    # @param timeout [Float] seconds for connecting, reading and writing
    # @param logger [#warn, nil] where outage warnings go (c.logger when nil)
    def initialize(url: ENV.fetch("REDIS_URL", "redis://127.0.0.1:6379"), namespace: "llm_failover",
                   max_per_partition: 10_000, ttl: 30 * DAY, mirror: MemoryIndex.new, timeout: 1.0,
                   pool_size: 5, logger: nil)
      super(mirror: mirror, logger: logger)
      raise ConfigurationError, "namespace must be a non-empty String" unless namespace.is_a?(String) && !namespace.empty?
      unless max_per_partition.is_a?(Integer) && max_per_partition.positive?
        raise ConfigurationError, "max_per_partition must be a positive Integer, got #{max_per_partition.inspect}"
      end
      raise ConfigurationError, "ttl must be a positive Integer, got #{ttl.inspect}" unless ttl.is_a?(Integer) && ttl.positive?

      @config = RedisClient.config(url: url, connect_timeout: timeout, read_timeout: timeout,
                                   write_timeout: timeout, reconnect_attempts: 1)
      @namespace = namespace
      @max_per_partition = max_per_partition
      @ttl = ttl
      @pool_size = pool_size
      @pool_lock = Mutex.new
      @pool = nil
      @pid = nil
    end

    def inspect
      "#<#{self.class.name} namespace=#{@namespace} mirror=#{mirror.size} entries>"
    end

    private

    def store_errors
      [RedisClient::Error, ConnectionPool::TimeoutError, SystemCallError, IOError]
    end

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
        epoch, entries = pool.with do |r|
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
      pool.with do |r|
        r.pipelined do |p|
          p.call("XADD", key, "MAXLEN", "~", @max_per_partition, "*", "v", packed, "x", value)
          p.call("EXPIRE", key, @ttl)
        end
      end
    end

    # The streams go first, the epoch moves last: a process that reads the new
    # epoch (GET before XRANGE, in one pipeline) can no longer read an old entry,
    # and one that read an old entry meanwhile drops it at its next lookup.
    def clear_store
      pool.with do |r|
        r.scan("MATCH", "#{@namespace}:vindex:*", "COUNT", 1000).each_slice(500) { |keys| r.call("UNLINK", *keys) }
        cleared_to(r.call("INCR", epoch_key).to_s) # GET answers the same String
      end
    end

    def store_size
      pool.with do |r|
        r.scan("MATCH", "#{@namespace}:vindex:*", "COUNT", 1000).sum { |k| r.call("XLEN", k) }
      end
    end

    # Stream ids ("ms-seq") in order.
    def newer?(a, b)
      b.nil? || (a.split("-").map(&:to_i) <=> b.split("-").map(&:to_i)).positive?
    end

    def pool
      return @pool if @pid == Process.pid

      @pool_lock.synchronize do
        unless @pid == Process.pid
          # A forked child never uses its parent's sockets.
          @pool = @config.new_pool(size: @pool_size, timeout: 1.0)
          @pid = Process.pid
        end
      end
      @pool
    end
  end
end
