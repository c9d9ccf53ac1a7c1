# frozen_string_literal: true

require "digest/sha2"
require "securerandom"
require_relative "mirrored_index"
require_relative "../active_record"

module LlmFailover
  # The semantic cache's vectors shared through the app's database (the
  # llm_failover_vectors table `rails g llm_failover:install` writes, or
  # `llm_failover:upgrade` on an older install; PostgreSQL, SQLite, MySQL), each
  # process scanning its own mirror (a MemoryIndex: see MirroredIndex).
  #
  #   LlmFailover::SemanticCache.new(..., index: LlmFailover::ActiveRecordIndex.new)
  #
  # One row per add (partition_key: SHA-256 of the partition; the vector as
  # little-endian float32; the value). A lookup costs one indexed query: the
  # partition's rows after the last id this process mirrored (none, mostly). An add
  # is an insert, and every prune_every adds to a partition a delete of its rows past
  # max_per_partition (oldest first).
  #
  # #clear deletes every row and writes, in the same transaction, one row of its own
  # (partition_key CLEARED, a random value: the epoch); the lookup's query also
  # reads that row, so a process that sees another value drops its mirror and reads
  # the partition again (MirroredIndex). Deleted rows leave nothing a query for the
  # rows after a cursor would see, hence the row.
  class ActiveRecordIndex < MirroredIndex
    BATCH = 500
    PRUNE_EVERY = 100
    # The partition_key of the clear row: never a SHA-256 in hex.
    CLEARED = "cleared"

    # @param model [Class] a VectorEntry (sub)class: its table and connection are used
    #   (nil: VectorEntry, looked up at first use)
    # @param max_per_partition [Integer] rows a partition keeps (about: pruned every
    #   prune_every adds in this process)
    # @param prune_every [Integer] adds to a partition (in this process) between prunes
    # @param mirror [MemoryIndex] this process's copy (its own bounds)
    # @param logger [#warn, nil] where outage warnings go (c.logger when nil)
    def initialize(model: nil, max_per_partition: 10_000, prune_every: PRUNE_EVERY, mirror: MemoryIndex.new,
                   logger: nil)
      super(mirror: mirror, logger: logger)
      unless max_per_partition.is_a?(Integer) && max_per_partition.positive?
        raise ConfigurationError, "max_per_partition must be a positive Integer, got #{max_per_partition.inspect}"
      end

      @model = model
      @max_per_partition = max_per_partition
      @prune_every = prune_every
      @adds = Hash.new(0) # partition_key => adds since its last prune, this process
    end

    def inspect
      "#<#{self.class.name} table=#{@model ? @model.table_name : 'llm_failover_vectors'} mirror=#{mirror.size} entries>"
    end

    private

    def model
      @model ||= LlmFailover::ActiveRecord::VectorEntry
    end

    def store_errors
      [::ActiveRecord::ActiveRecordError]
    end

    def key(partition)
      Digest::SHA256.hexdigest(partition)
    end

    # Yields each row after +cursor+ (an id) as (vector, value); the last id. The
    # clear row comes with the partition's rows in every batch whose id range holds
    # it, and surely in the last one (fewer than BATCH rows: all that is left).
    def fetch_after(partition, cursor)
      key = key(partition)
      last = cursor
      table = model.arel_table
      model.connection_pool.with_connection do
        loop do
          rows = model.where(table[:partition_key].eq(key).and(table[:id].gt(last || 0))
                               .or(table[:partition_key].eq(CLEARED)))
                      .order(:id).limit(BATCH).pluck(:id, :partition_key, :vector, :value)
          done = rows.size < BATCH
          # Cleared since this mirror began: it was dropped; read the partition again.
          if done && follow_epoch(rows.reverse_each.find { |row| row[1] == CLEARED }&.last) && last
            last = nil
            next
          end
          rows.each do |id, row_key, vector, value|
            next if row_key == CLEARED

            yield vector.unpack("e*"), value
            last = id
          end
          return last if done
        end
      end
    end

    def append(partition, packed, dim, value)
      key = key(partition)
      model.connection_pool.with_connection do
        model.insert_all!([{ partition_key: key, dimensions: dim, vector: packed, value: value,
                             created_at: Time.now.utc }])
        prune(key) if (@lock.synchronize { @adds[key] += 1 } % @prune_every).zero?
      end
      @lock.synchronize { @adds.shift while @adds.size > MAX_CURSORS }
    end

    # Deletes the partition's rows past the newest max_per_partition.
    def prune(key)
      rows = model.where(partition_key: key)
      cutoff = rows.order(id: :desc).offset(@max_per_partition).limit(1).pick(:id)
      rows.where(model.arel_table[:id].lteq(cutoff)).delete_all if cutoff
    end

    def clear_store
      epoch = SecureRandom.uuid
      model.connection_pool.with_connection do
        model.transaction do
          model.delete_all
          model.insert_all!([{ partition_key: CLEARED, dimensions: 0, vector: "".b, value: epoch,
                               created_at: Time.now.utc }])
        end
      end
      cleared_to(epoch)
    end

    def store_size
      model.connection_pool.with_connection { model.where.not(partition_key: CLEARED).count }
    end
  end
end
