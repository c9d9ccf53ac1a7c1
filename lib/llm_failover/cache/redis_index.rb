# frozen_string_literal: true

require_relative "shared_index"

begin
  require "redis-client"
  require "connection_pool" # redis-client's own dependency, for its pools
rescue LoadError
  raise LoadError, "LlmFailover::RedisIndex needs the redis-client gem: add `gem \"redis-client\"` to your Gemfile"
end

module LlmFailover
  # The semantic cache's vectors shared by every process pointed at one Redis.
  #
  #   LlmFailover::SemanticCache.new(..., index: LlmFailover::RedisIndex.new(url: ENV["REDIS_URL"]))
  #
  # Redis 8 searches them itself: a vector set per partition, no copy in any process
  # (RedisIndex::VectorSets). An older Redis (no VADD) keeps them in a stream per
  # partition that each process mirrors and scans (RedisIndex::Streams). Which one is
  # asked once (COMMAND INFO VADD) at the first use, or given with search:.
  # Either way a partition keeps about its newest max_per_partition entries and
  # expires ttl seconds after its last add.
  class RedisIndex < SharedIndex
    DAY = 86_400

    # @return [String] the prefix of every key
    attr_reader :namespace
    # @return [Integer] entries a partition keeps (about, for streams)
    attr_reader :max_per_partition
    # @return [Integer] seconds a partition lives after its last add
    attr_reader :ttl

    # @param url [String] redis://, rediss:// or unix://
    # @param namespace [String] the prefix of every key
    # @param max_per_partition [Integer] entries a partition keeps
    # @param ttl [Integer] seconds a partition lives after its last add
    # @param search [Symbol] :auto (ask Redis), :server (vector sets) or :mirror (streams)
    # @param mirror [MemoryIndex, nil] this process's copy when it mirrors (its own bounds)
    # @param timeout [Float] seconds for connecting, reading and writing
    # @param logger [#warn, nil] where outage warnings go (c.logger when nil)
    def initialize(url: ENV.fetch("REDIS_URL", "redis://127.0.0.1:6379"), namespace: "llm_failover",
                   max_per_partition: 10_000, ttl: 30 * DAY, search: :auto, mirror: nil, timeout: 1.0,
                   pool_size: 5, logger: nil)
      super(search: search, mirror: mirror, logger: logger)
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
      copy = @engine&.mirror ? " mirror=#{@engine.mirror.size} entries" : ""
      "#<#{self.class.name} namespace=#{@namespace} search=#{@engine&.search || 'unknown'}#{copy}>"
    end

    # @api private: this process's connections (a forked child makes its own)
    # @return [ConnectionPool]
    def pool
      return @pool if @pid == Process.pid

      @pool_lock.synchronize do
        unless @pid == Process.pid
          @pool = @config.new_pool(size: @pool_size, timeout: 1.0)
          @pid = Process.pid
        end
      end
      @pool
    end

    private

    def store_errors
      [RedisClient::Error, ConnectionPool::TimeoutError, SystemCallError, IOError]
    end

    # Redis 8 has vector sets (and Redis 7 with the vectorset module loaded).
    def server_searches?
      !pool.with { |r| r.call("COMMAND", "INFO", "VADD") }.first.nil?
    end

    def server_engine(outage)
      VectorSets.new(redis: self, outage: outage)
    end

    def mirror_engine(mirror, outage)
      Streams.new(redis: self, mirror: mirror, outage: outage)
    end
  end
end

require_relative "redis_index/vector_sets"
require_relative "redis_index/streams"
