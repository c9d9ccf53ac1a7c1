# frozen_string_literal: true

require "digest/sha2"
require "securerandom"
require_relative "shared_index"
require_relative "../active_record"
require_relative "../active_record/schema"

module LlmFailover
  # The semantic cache's vectors shared through the app's database (the
  # llm_failover_vectors table the install generator writes): searched by PostgreSQL
  # with pgvector 0.8+ (Pgvector), mirrored in each process elsewhere (Rows).
  #
  #   LlmFailover::SemanticCache.new(..., index: LlmFailover::ActiveRecordIndex.new)
  #
  # One row per add; every prune_every adds a partition's rows past max_per_partition
  # go, oldest first. #clear deletes every row and writes the CLEARED row, whose value
  # is the epoch mirroring processes follow.
  class ActiveRecordIndex < SharedIndex
    PRUNE_EVERY = 100
    # The partition_key of the clear row: never a SHA-256 in hex.
    CLEARED = "cleared"

    # @param model [Class] a VectorEntry (sub)class: its table and connection are used
    #   (nil: VectorEntry, looked up at first use)
    # @param max_per_partition [Integer] rows a partition keeps (about: pruned every
    #   prune_every adds in this process)
    # @param prune_every [Integer] adds to a partition (in this process) between prunes
    # @param search [Symbol] :auto (ask the database), :server (pgvector) or :mirror
    # @param mirror [MemoryIndex, nil] this process's copy when it mirrors (its own bounds)
    # @param logger [#warn, nil] where outage warnings go (c.logger when nil)
    def initialize(model: nil, max_per_partition: 10_000, prune_every: PRUNE_EVERY, search: :auto, mirror: nil,
                   logger: nil)
      super(search: search, mirror: mirror, logger: logger)
      unless max_per_partition.is_a?(Integer) && max_per_partition.positive?
        raise ConfigurationError, "max_per_partition must be a positive Integer, got #{max_per_partition.inspect}"
      end

      @model = model
      @max_per_partition = max_per_partition
      @prune_every = prune_every
      @adds = Hash.new(0) # partition_key => adds since its last prune, this process
      @adds_lock = Mutex.new
    end

    def inspect
      copy = @engine&.mirror ? " mirror=#{@engine.mirror.size} entries" : ""
      "#<#{self.class.name} table=#{@model ? @model.table_name : 'llm_failover_vectors'} " \
        "search=#{@engine&.search || 'unknown'}#{copy}>"
    end

    # @api private: the row model (VectorEntry unless given)
    def model
      @model ||= LlmFailover::ActiveRecord::VectorEntry
    end

    # @api private: the partition_key of +partition+
    def key(partition)
      Digest::SHA256.hexdigest(partition)
    end

    # @api private: one row, and every prune_every of them in a partition a prune.
    # Runs on a connection of the model's pool (the caller holds one).
    def insert(key, dimensions:, vector:, value:, **columns)
      model.insert_all!([{ partition_key: key, dimensions: dimensions, vector: vector, value: value,
                           created_at: Time.now.utc, **columns }])
      prune(key) if (@adds_lock.synchronize { @adds[key] += 1 } % @prune_every).zero?
      @adds_lock.synchronize { @adds.shift while @adds.size > MirroredIndex::MAX_CURSORS }
    end

    # @api private: deletes every row and writes the clear row
    # @return [String] the epoch it wrote
    def clear_rows
      epoch = SecureRandom.uuid
      model.connection_pool.with_connection do
        model.transaction do
          model.delete_all
          model.insert_all!([{ partition_key: CLEARED, dimensions: 0, vector: "".b, value: epoch,
                               created_at: Time.now.utc }])
        end
      end
      epoch
    end

    # @api private
    # @return [Integer] the rows but the clear row
    def row_count
      model.connection_pool.with_connection { model.where.not(partition_key: CLEARED).count }
    end

    private

    def store_errors
      [::ActiveRecord::ActiveRecordError]
    end

    # PostgreSQL with pgvector 0.8 or later installed in the database, and the table
    # with its embedding column (Schema::VectorSearch).
    def server_searches?
      model.connection_pool.with_connection do |c|
        next false unless c.adapter_name.match?(/postg/i) && c.column_exists?(model.table_name, :embedding)

        ::LlmFailover::ActiveRecord::Schema::VectorSearch.usable?(
          c.select_value("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        )
      end
    end

    def server_engine(outage)
      Pgvector.new(table: self, outage: outage)
    end

    def mirror_engine(mirror, outage)
      Rows.new(table: self, mirror: mirror, outage: outage)
    end

    # Deletes the partition's rows past the newest max_per_partition.
    def prune(key)
      rows = model.where(partition_key: key)
      cutoff = rows.order(id: :desc).offset(@max_per_partition).limit(1).pick(:id)
      rows.where(model.arel_table[:id].lteq(cutoff)).delete_all if cutoff
    end
  end
end

require_relative "active_record_index/pgvector"
require_relative "active_record_index/rows"
