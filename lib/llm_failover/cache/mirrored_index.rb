# frozen_string_literal: true

require_relative "memory_index"

module LlmFailover
  # How a shared index answers from a store that cannot search: each process mirrors
  # the partitions it is asked about in a MemoryIndex, fetching only the entries after
  # its cursor before each lookup. A subclass supplies the store: #fetch_after,
  # #append, #clear_store, #store_size.
  #
  # #clear moves the store's epoch on; a process that sees it move drops its mirror,
  # so no lookup anywhere answers an entry added before the clear. While the store
  # fails, the mirror answers as it is (an add stays local): one warning per outage.
  #
  # @api private: made by SharedIndex, which checks the partition and value first
  # @abstract
  class MirroredIndex
    MAX_CURSORS = 100_000
    MEANWHILE = "lookups use this process's mirror as it is until it answers"

    # @return [MemoryIndex] this process's copy
    attr_reader :mirror

    # @param mirror [MemoryIndex] where this process keeps the vectors
    # @param outage [StoreOutage] the index's outage rule
    def initialize(mirror:, outage:)
      @mirror = mirror
      @outage = outage
      @cursors = {} # partition => the last id mirrored; insertion order is recency
      @lock = Mutex.new
      @epoch = :unknown # the store's epoch this mirror follows (nil: never cleared)
    end

    # @return [Symbol] :mirror
    def search
      :mirror
    end

    # Adds an entry to the shared store and to this process's mirror.
    # @param partition [String]
    # @param vector [Array<Float>]
    # @param value [String]
    # @return [nil]
    # @raise [ArgumentError] another dimension than the partition's, a bad vector
    # @raise [TypeError] a partition or value that is not a String
    def add(partition:, vector:, value:)
      sync(partition)
      @mirror.add(partition: partition, vector: vector, value: value) # validates before the store sees it
      shared { append(partition, vector.pack("e*"), vector.size, value) }
      nil
    end

    # @return [Array(String, Float), nil] see MemoryIndex#nearest; the partition's new
    #   entries in the store are mirrored first
    def nearest(partition:, vector:, threshold:)
      sync(partition)
      @mirror.nearest(partition: partition, vector: vector, threshold: threshold)
    end

    # Empties the shared store and this process's mirror; every other process drops
    # its mirror at its next lookup (one that cannot reach the store keeps answering
    # from its mirror, and drops it at its first lookup once the store answers).
    # @return [nil]
    def clear
      shared { clear_store }
      @lock.synchronize { @cursors.clear }
      @mirror.clear
      nil
    end

    # @return [Integer] entries in the shared store (this process's mirror when it is down)
    def size
      shared(fallback: @mirror.size) { store_size }
    end

    private

    # Mirrors the partition's entries after its cursor.
    def sync(partition)
      cursor = @lock.synchronize do
        c = @cursors.delete(partition)
        @cursors[partition] = c # most recent last
        c
      end
      shared do
        last = fetch_after(partition, cursor) do |vector, value|
          @mirror.add(partition: partition, vector: vector, value: value)
        rescue ArgumentError
          # An entry of another dimension than the mirror's (another writer's bug):
          # not this lookup's to fail.
          nil
        end
        remember(partition, last) if last
      end
    end

    # Called by #fetch_after with the store's epoch as it read it with the entries.
    # The first epoch a mirror sees is its own; another one means a process cleared
    # the store since: the mirror and every cursor go.
    # @return [Boolean] whether the mirror was dropped (the partition is then read
    #   again from the start)
    def follow_epoch(epoch)
      @lock.synchronize do
        return false if epoch == @epoch

        known = @epoch != :unknown
        @epoch = epoch
        return false unless known

        @cursors.clear
      end
      @mirror.clear
      true
    end

    # The epoch this process's own #clear_store moved the store to.
    def cleared_to(epoch)
      @lock.synchronize { @epoch = epoch }
    end

    def remember(partition, last)
      @lock.synchronize do
        @cursors[partition] = last if newer?(last, @cursors[partition])
        @cursors.delete(@cursors.first[0]) while @cursors.size > MAX_CURSORS
      end
    end

    # Runs the block against the store; a failure is one warning per outage and the
    # fallback's answer.
    def shared(fallback: nil, &block)
      @outage.guard(meanwhile: MEANWHILE, fallback: fallback, &block)
    end

    # Whether cursor a is after b (nil: none yet).
    def newer?(a, b)
      b.nil? || a > b
    end
  end
end
