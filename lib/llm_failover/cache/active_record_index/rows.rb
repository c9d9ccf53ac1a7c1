# frozen_string_literal: true

require_relative "../mirrored_index"

module LlmFailover
  class ActiveRecordIndex
    # The table's rows mirrored in each process (MirroredIndex), for a database that
    # cannot search vectors. A lookup is one indexed query: the partition's rows after
    # this process's cursor, and the CLEARED row whose value is the epoch (deleted rows
    # leave nothing such a query would see).
    #
    # @api private: ActiveRecordIndex's engine when it mirrors
    class Rows < MirroredIndex
      BATCH = 500

      # @param table [ActiveRecordIndex] the model, the keys, the inserts and the clear
      def initialize(table:, mirror:, outage:)
        super(mirror: mirror, outage: outage)
        @table = table
      end

      private

      # Yields each row after +cursor+ (an id) as (vector, value); the last id. The
      # clear row comes with the partition's rows in every batch whose id range holds
      # it, and surely in the last one (fewer than BATCH rows: all that is left).
      def fetch_after(partition, cursor)
        model = @table.model
        key = @table.key(partition)
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
        @table.model.connection_pool.with_connection do
          @table.insert(@table.key(partition), dimensions: dim, vector: packed, value: value)
        end
      end

      def clear_store
        cleared_to(@table.clear_rows)
      end

      def store_size
        @table.row_count
      end
    end
  end
end
