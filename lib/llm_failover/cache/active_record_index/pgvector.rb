# frozen_string_literal: true

require_relative "../memory_index"
require_relative "../../active_record/schema"

module LlmFailover
  class ActiveRecordIndex
    # The table's rows searched by PostgreSQL with pgvector: no process keeps a copy.
    # Each row's normalised vector is in its embedding column (float4[]), under an HNSW
    # index per common dimension. Every candidate's similarity is computed exactly and
    # checked here, so a hit is never below the threshold; a partition up to EXACT_UP_TO
    # rows is ranked exactly, a larger one through HNSW (which may miss).
    #
    # @api private: ActiveRecordIndex's engine when PostgreSQL searches
    class Pgvector
      MEANWHILE = "lookups miss and adds are dropped until it answers"
      # RedisIndex::VectorSets' rule and breadth (its comments say why).
      EXACT_UP_TO = 500
      EF = 200
      CANDIDATES = 8
      # For the large partition's query only. Sorting is ruled out because PostgreSQL's
      # costs ignore what reading and casting an embedding takes: it would rank a few
      # thousand rows by a seq scan and a sort (200 ms at 2,000 rows of 1,536
      # dimensions) rather than walk the HNSW index. With no index for the dimension it
      # sorts all the same.
      HNSW_SETTINGS = "SET LOCAL hnsw.ef_search = #{EF}; SET LOCAL hnsw.iterative_scan = strict_order; " \
                      "SET LOCAL enable_sort = off"

      # @param table [ActiveRecordIndex] the model, the keys, the inserts and the clear
      # @param outage [StoreOutage] the index's outage rule
      def initialize(table:, outage:)
        @table = table
        @outage = outage
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
        floats = MemoryIndex.normalise(vector).unpack("f*")
        key = @table.key(partition)
        @outage.guard(meanwhile: MEANWHILE) do
          model.connection_pool.with_connection do
            check_dimension(key, floats.size)
            # The array as PostgreSQL's literal: ActiveRecord casting 1,536 Floats itself
            # costs about 20 ms of Ruby (with the GVL) an add.
            @table.insert(key, dimensions: floats.size, vector: "".b, value: value, embedding: "{#{floats.join(',')}}")
          end
        end
        nil
      end

      # @see SharedIndex#nearest
      def nearest(partition:, vector:, threshold:)
        floats = MemoryIndex.normalise(vector).unpack("f*")
        key = @table.key(partition)
        rows = @outage.guard(meanwhile: MEANWHILE) do
          model.connection_pool.with_connection { |c| candidates(c, key, floats) }
        end
        return nil unless rows

        rows.map { |value, similarity| [value, Float(similarity)] }
            .select { |_, similarity| similarity >= threshold }.max_by(&:last)
      end

      # @see SharedIndex#clear
      def clear
        @outage.guard(meanwhile: MEANWHILE) { @table.clear_rows }
        nil
      end

      # @see SharedIndex#size
      def size
        @outage.guard(meanwhile: MEANWHILE, fallback: 0) { @table.row_count }
      end

      private

      def model
        @table.model
      end

      # [value, similarity] of the partition's best rows: all of them ranked exactly
      # when it holds up to EXACT_UP_TO rows, else the HNSW index's.
      def candidates(connection, key, floats)
        dim = floats.size
        query = "[#{floats.join(',')}]"
        rows = connection.select_rows(exact_sql(connection, dim), "#{self.class.name} exact", binds(key, query))
        check_dimension(key, dim) if rows.empty?
        return rows.map { |value, similarity, _| [value, similarity] } if rows.empty? || rows.first[2].to_i <= EXACT_UP_TO

        model.transaction(requires_new: true) do
          connection.execute(HNSW_SETTINGS)
          connection.select_rows(hnsw_sql(connection, dim), "#{self.class.name} HNSW", binds(key, query))
        end
      end

      # The partition's rows ranked exactly when it holds up to EXACT_UP_TO of them; the
      # third column says how many it holds (past EXACT_UP_TO: EXACT_UP_TO + 1, and no
      # similarity computed, so no embedding read).
      def exact_sql(connection, dim)
        table = connection.quote_table_name(model.table_name)
        <<~SQL
          WITH partition_rows AS (
            SELECT id FROM #{table}
            WHERE partition_key = $1 AND dimensions = #{dim} AND embedding IS NOT NULL LIMIT #{EXACT_UP_TO + 1}
          ), counted AS (SELECT count(*) AS n FROM partition_rows)
          SELECT value, CASE WHEN n <= #{EXACT_UP_TO} THEN 1 - (embedding::vector(#{dim}) <=> $2::vector(#{dim})) END
                 AS similarity, n
          FROM partition_rows JOIN #{table} USING (id) CROSS JOIN counted
          ORDER BY similarity DESC NULLS LAST LIMIT #{CANDIDATES}
        SQL
      end

      # The HNSW index's expression (Schema::VectorSearch) in ORDER BY, so the planner
      # may use it; the similarity itself from the float32 embedding.
      def hnsw_sql(connection, dim)
        search = ::LlmFailover::ActiveRecord::Schema::VectorSearch
        query = "$2::vector(#{dim})" # one type for the parameter; halfvec's is cast from it
        <<~SQL
          SELECT value, 1 - (embedding::vector(#{dim}) <=> #{query}) AS similarity
          FROM #{connection.quote_table_name(model.table_name)}
          WHERE partition_key = $1 AND dimensions = #{dim} AND embedding IS NOT NULL
          ORDER BY #{search.cast(search::COLUMN, dim)} <=> #{search.cast("(#{query})", dim)} LIMIT #{CANDIDATES}
        SQL
      end

      def binds(key, query)
        [::ActiveRecord::Relation::QueryAttribute.new("partition_key", key, ::ActiveRecord::Type::String.new),
         ::ActiveRecord::Relation::QueryAttribute.new("vector", query, ::ActiveRecord::Type::String.new)]
      end

      # A partition's rows share one dimension: its first row's (the (partition_key, id)
      # index finds it) if another is the caller's ArgumentError.
      def check_dimension(key, dim)
        first = model.where(partition_key: key).order(:id).limit(1).pick(:dimensions)
        raise ArgumentError, "the partition holds vectors of another dimension (#{first}, not #{dim})" if first && first != dim
      end
    end
  end
end
