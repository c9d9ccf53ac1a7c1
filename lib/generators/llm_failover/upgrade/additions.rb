# frozen_string_literal: true

require "llm_failover/active_record/schema"
require_relative "../migration_code"

module LlmFailover
  module Generators
    # What `llm_failover:install` creates today that the first release's install did
    # not (Schema::ADDED, described in Schema::TABLES), each with the migration code
    # that adds it and takes it away. `llm_failover:upgrade` writes those an app's
    # migrations lack.
    module Additions
      # A column added to an existing table: skipped where the table has it.
      Column = Struct.new(:table, :column) do
        # Lacking when the app's migrations create its table without it. A table they
        # do not create at all is not this addition's to make.
        # @param known [Hash{String => Array<String>}] KnownSchema.read
        # @return [Boolean]
        def missing?(known)
          columns = known[table.name]
          !columns.nil? && !columns.include?(column.name.to_s)
        end

        # @return [Array<String>] lines of the migration's up
        def up
          MigrationCode.add_column(table, column)
        end

        # @return [Array<String>] lines of the migration's down
        def down
          MigrationCode.remove_column(table, column)
        end
      end

      # A table added since the first release: created unless it exists.
      Table = Struct.new(:table) do
        # @return [Boolean] whether the app's migrations never create it
        def missing?(known)
          !known.key?(table.name)
        end

        # @return [Array<String>] lines of the migration's up
        def up
          MigrationCode.create_table(table, if_not_exists: true)
        end

        # @return [Array<String>] lines of the migration's down
        def down
          ["drop_table :#{table.name}, if_exists: true"]
        end
      end

      # Schema::VectorSearch on an install that lacks it.
      VectorSearch = Struct.new(:table) do
        # @return [Boolean] whether the app's migrations never add the embedding column
        #   (an upgrade that creates the vectors table adds it after)
        def missing?(known)
          !Array(known[table.name]).include?(LlmFailover::ActiveRecord::Schema::VectorSearch::COLUMN.to_s)
        end

        # @return [Array<String>] lines of the migration's up
        def up
          MigrationCode.vector_search(table.name, upgrade: true)
        end

        # @return [Array<String>] lines of the migration's down
        def down
          MigrationCode.remove_vector_search(table.name)
        end
      end

      # Schema::ADDED under the app's table names, in its order (an upgrade applies
      # them in this order, and its down takes them away in the reverse order).
      # @param names [LlmFailover::ActiveRecord::Schema::Names]
      # @return [Array<Column, Table>]
      def self.under(names)
        tables = LlmFailover::ActiveRecord::Schema.tables(names).to_h { |table| [table.role, table] }
        LlmFailover::ActiveRecord::Schema::ADDED.map do |role, name|
          table = tables.fetch(role)
          next Table.new(table) unless name
          search = LlmFailover::ActiveRecord::Schema::VectorSearch
          next VectorSearch.new(table) if role == :vectors && name == search::COLUMN

          Column.new(table, table.columns.find { |column| column.name == name } ||
                            raise(KeyError, "Schema::ADDED names #{role}.#{name}, which Schema::TABLES lacks"))
        end
      end
    end
  end
end
