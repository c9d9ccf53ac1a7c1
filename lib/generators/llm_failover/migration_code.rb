# frozen_string_literal: true

require "llm_failover/active_record/schema"

module LlmFailover
  module Generators
    # The tables of LlmFailover::ActiveRecord::Schema::TABLES written as the code of a
    # migration a developer reads and may edit: create_table blocks and add_index
    # calls for llm_failover:install, guarded add_column and create_table steps for
    # llm_failover:upgrade. Every method returns lines without the method's indent.
    module MigrationCode
      Schema = LlmFailover::ActiveRecord::Schema
      # Longer add_index calls put their name on a second line.
      LINE = 120

      module_function

      # @param table [Schema::Created]
      # @param if_not_exists [Boolean] an upgrade's: skipped where the database has it
      # @return [Array<String>] the table's create_table block and its indexes
      def create_table(table, if_not_exists: false)
        lines = comment(table.above)
        lines << "create_table :#{table.name}#{', if_not_exists: true' if if_not_exists} do |t|"
        lines.concat(table.columns.flat_map { |column| column_code(column) }.map { |line| "  #{line}" })
        lines << "end"
        lines + table.indexes.flat_map { |index| add_index(table.name, index, if_not_exists: if_not_exists) }
      end

      # @param column [Schema::Column]
      # @return [Array<String>] t.<type> :<name>, <options> # <note>, its comment above
      def column_code(column)
        call = ["t.#{column.type}", (":#{column.name}" if column.name)].compact.join(" ")
        call = [call, options(column.options)].reject(&:empty?).join(", ")
        comment(column.above) + [column.note ? "#{call} # #{column.note}" : call]
      end

      # @return [Array<String>] an add_index call (its name on a second line when long)
      def add_index(table, index, if_not_exists: false)
        columns = index.columns.size == 1 ? ":#{index.columns.first}" : "%i[#{index.columns.join(' ')}]"
        head = "add_index :#{table}, #{columns}#{', unique: true' if index.unique},"
        tail = "name: \"#{Schema.index_name(table, index.what)}\"#{', if_not_exists: true' if if_not_exists}"
        lines = "#{head} #{tail}".length + 4 > LINE ? [head, "#{' ' * 'add_index '.length}#{tail}"] : ["#{head} #{tail}"]
        comment(index.above) + lines
      end

      # An upgrade's step adding +column+ of +table+, with the indexes that cover it.
      # @return [Array<String>]
      def add_column(table, column)
        add = ["add_column :#{table.name}, :#{column.name}, :#{column.type}", options(column.options)]
        comment(column.note || column.above) +
          ["unless column_exists?(:#{table.name}, :#{column.name})", "  #{add.reject(&:empty?).join(', ')}", "end"] +
          covering(table, column).flat_map { |index| add_index(table.name, index, if_not_exists: true) }
      end

      # What takes add_column's step away.
      # @return [Array<String>]
      def remove_column(table, column)
        covering(table, column).map do |index|
          "remove_index :#{table.name}, name: \"#{Schema.index_name(table.name, index.what)}\", if_exists: true"
        end + ["remove_column :#{table.name}, :#{column.name} if column_exists?(:#{table.name}, :#{column.name})"]
      end

      # Schema::VectorSearch on PostgreSQL: the embedding column, and where pgvector is
      # there its extension and indexes. An install's (in change: the extension stays
      # on the way down, other tables may use it) or, with +upgrade+, an upgrade's up.
      # @return [Array<String>]
      def vector_search(table, upgrade: false)
        search = Schema::VectorSearch
        add = "add_column :#{table}, :#{search::COLUMN}, :float, array: true"
        add = "#{add} unless column_exists?(:#{table}, :#{search::COLUMN})" if upgrade
        indexes = search.indexes(table).flat_map do |expression, options|
          options = options.merge(if_not_exists: true) if upgrade
          ["add_index :#{table}, #{expression.inspect},", "          #{options(options)}"]
        end
        enable = upgrade ? 'enable_extension "vector"' : 'reversible { |dir| dir.up { enable_extension "vector" } }'
        comment(search::ABOVE) +
          ["if connection.adapter_name.match?(/postg/i)", "  #{add}",
           "  pgvector = select_value(#{search::AVAILABLE.inspect})",
           "  if pgvector && Gem::Version.new(pgvector) >= Gem::Version.new(#{search::MIN_VERSION.inspect})",
           "    #{enable}", *indexes.map { |line| "    #{line}" }, "  end", "end"]
      end

      # What takes an upgrade's vector_search away (the extension stays).
      # @return [Array<String>]
      def remove_vector_search(table)
        column = Schema::VectorSearch::COLUMN
        removals = Schema::VectorSearch.indexes(table).map do |_, options|
          "  remove_index :#{table}, name: #{options[:name].inspect}, if_exists: true"
        end
        ["if connection.adapter_name.match?(/postg/i)", *removals,
         "  remove_column :#{table}, :#{column} if column_exists?(:#{table}, :#{column})", "end"]
      end

      def covering(table, column)
        table.indexes.select { |index| index.columns.include?(column.name) }
      end

      # Keyword options as written in a call: null: false, foreign_key: { to_table: :chats }
      # @return [String]
      def options(hash)
        hash.map { |key, value| "#{key}: #{literal(value)}" }.join(", ")
      end

      def literal(value)
        case value
        when Hash then "{ #{options(value)} }"
        when Symbol then ":#{value}"
        else value.inspect
        end
      end

      def comment(text)
        text ? text.lines.map { |line| "# #{line.chomp}" } : []
      end
    end
  end
end
