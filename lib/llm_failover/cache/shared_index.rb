# frozen_string_literal: true

require_relative "memory_index"
require_relative "store_outage"
require_relative "../errors"

module LlmFailover
  # What RedisIndex and ActiveRecordIndex share: the semantic cache's vectors in a
  # store every process reaches, searched either by the store (:server: Redis 8,
  # pgvector 0.8+) or in each process's mirror (:mirror: MirroredIndex). search: :auto
  # asks the store at the first use; until it answers, lookups miss and adds are
  # dropped, with the outage warning. A subclass supplies #server_searches?,
  # #server_engine, #mirror_engine and #store_errors.
  #
  # @abstract
  class SharedIndex
    SEARCHES = %i[auto server mirror].freeze

    # @param search [Symbol] :auto, :server or :mirror
    # @param mirror [MemoryIndex, nil] the copy a mirroring process keeps (nil: a
    #   MemoryIndex with its default bounds, made when the index mirrors)
    # @param logger [#warn, nil] where outage warnings go (c.logger when nil)
    def initialize(search:, mirror:, logger:)
      unless SEARCHES.include?(search)
        raise ConfigurationError, "search must be one of #{SEARCHES.map(&:inspect).join(', ')}, got #{search.inspect}"
      end
      unless mirror.nil? || mirror.is_a?(MemoryIndex)
        raise ConfigurationError, "mirror must be a MemoryIndex, got #{mirror.inspect}"
      end

      @wanted = search
      @given_mirror = mirror
      @engine = nil
      @engine_lock = Mutex.new
      @outage = StoreOutage.new(owner: self.class.name, errors: store_errors, logger: logger)
    end

    # How lookups are answered, asking the store at the first call.
    # @return [Symbol, nil] :server or :mirror; nil while the store has not answered yet
    def search
      engine&.search
    end

    # @return [MemoryIndex, nil] this process's copy of the vectors when it mirrors them
    def mirror
      engine&.mirror
    end

    # Adds an entry for every process.
    # @param partition [String]
    # @param vector [Array<Float>]
    # @param value [String]
    # @return [nil]
    # @raise [ArgumentError] another dimension than the partition's, a bad vector
    # @raise [TypeError] a partition or value that is not a String
    def add(partition:, vector:, value:)
      check_strings(partition, value)
      current = engine
      return current.add(partition: partition, vector: vector, value: value) if current

      MemoryIndex.normalise(vector)
      nil
    end

    # @param threshold [Float] the least cosine similarity that counts
    # @return [Array(String, Float), nil] the value and similarity of the partition's
    #   most similar entry at or above threshold, or nil (see MemoryIndex#nearest)
    # @raise [ArgumentError] another dimension than the partition's, a bad vector
    def nearest(partition:, vector:, threshold:)
      check_strings(partition)
      check_threshold(threshold)
      current = engine
      return current.nearest(partition: partition, vector: vector, threshold: threshold) if current

      MemoryIndex.normalise(vector)
      nil
    end

    # Empties the store: once it returns, no lookup in any process answers an entry
    # added before the clear began (doc/semantic-index.md, "What clear promises").
    # @return [nil]
    def clear
      engine&.clear
      nil
    end

    # @return [Integer] entries in the store (a mirroring process's own copy while the
    #   store is down; 0 before it first answered)
    def size
      engine&.size || 0
    end

    private

    # The engine, chosen when the store first answers (or at once when search: says).
    def engine
      @engine || @engine_lock.synchronize do
        @engine ||= @outage.guard(meanwhile: "lookups miss until it answers") do
          server = @wanted != :mirror && server_searches?
          if @wanted == :server && !server
            raise ConfigurationError, "#{self.class.name}: search: :server, but the store cannot search " \
                                      "(doc/semantic-index.md says which can)"
          end
          server ? server_engine(@outage) : mirror_engine(@given_mirror || MemoryIndex.new, @outage)
        end
      end
    end

    def check_strings(*strings)
      strings.each { |s| raise TypeError, "expected a String, got #{s.class}" unless s.is_a?(String) }
    end

    # MemoryIndex#nearest's rule, for the stores that search.
    def check_threshold(threshold)
      raise TypeError, "threshold must be a number, got #{threshold.class}" unless threshold.is_a?(Float) || threshold.is_a?(Integer)
      raise ArgumentError, "threshold must not be NaN" if threshold.to_f.nan?
    end
  end
end
