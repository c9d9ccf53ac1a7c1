# frozen_string_literal: true

require "active_support/core_ext/string/inflections"
require_relative "schema/layout"

module LlmFailover
  module ActiveRecord
    # The tables of the ActiveRecord integration, as Schema::TABLES (schema/layout.rb)
    # describes them: create_tables! applies them to a connection; the
    # `llm_failover:install` and `llm_failover:upgrade` generators write them as
    # migrations.
    module Schema
      # PostgreSQL's limit on identifiers (MySQL's is 64): longer index names fail the migration.
      MAX_NAME = 63

      module_function

      # "index_<table>_on_<what>", or when that passes MAX_NAME, as much of it as fits
      # followed by a digest of the whole name, so that two long names stay apart.
      # @return [String]
      def index_name(table, what)
        name = "index_#{table}_on_#{what}"
        return name if name.length <= MAX_NAME

        require "digest"
        "#{name[0, MAX_NAME - 11]}_#{Digest::SHA256.hexdigest(name)[0, 10]}"
      end

      # The tool calls' table of a messages table: "tool_calls" beside "messages",
      # "<message>_tool_calls" beside any other (utterances: utterance_tool_calls), so
      # that two message tables never share one.
      # @return [String]
      def tool_calls_table(messages)
        messages = messages.to_s
        messages == "messages" ? "tool_calls" : "#{messages.singularize}_tool_calls"
      end

      # The app's names of the tables by role, filled in as an install names them.
      # @param foreign_key [String, nil] messages' reference to chats (chat_id for "chats")
      # @param tool_calls [String, nil] nil: tool_calls_table(messages)
      # @param tables [Hash{Symbol => String}] a role's table (chats:, messages:, attempts:, ...)
      # @return [Names]
      def names(foreign_key: nil, tool_calls: nil, **tables)
        unknown = tables.keys - TABLES.map(&:role)
        raise ArgumentError, "unknown table role: #{unknown.join(', ')}" if unknown.any?

        named = TABLES.to_h { |table| [table.role, (tables[table.role] || table.default_name).to_s] }
        named[:tool_calls] = (tool_calls || tool_calls_table(named.fetch(:messages))).to_s
        foreign_key ||= "#{named.fetch(:chats).singularize}_id"
        Names.new(tables: named, reference: foreign_key.to_s.delete_suffix("_id"))
      end

      # The tables of TABLES under +names+, in the order they are created.
      # @return [Array<Created>]
      def tables(names)
        TABLES.map { |table| table.under(names) }
      end

      # Creates the gem's tables (TABLES: chats, messages, tool calls, attempts, circuit
      # events, vectors) on +connection+ (anything with create_table/add_index: a
      # connection or a migration).
      # @param force [Boolean] drop and recreate the tables
      # @param if_not_exists [Boolean] leave existing tables alone (scripts rerun)
      # @param tables [Hash] the names: chats:, messages:, attempts:, circuit_events:,
      #   tool_calls:, vectors:, foreign_key: (see Schema.names)
      def define(connection, force: false, if_not_exists: true, **tables)
        created = tables(names(**tables))
        # Tool calls reference messages, messages chats: drop them first.
        created.reverse_each { |table| connection.drop_table(table.name, if_exists: true) } if force
        created.each { |table| create(connection, table, if_not_exists: if_not_exists && !force) }
        define_vector_search(connection, created.find { |table| table.role == :vectors }.name)
        nil
      end

      # VectorSearch on PostgreSQL: the embedding column, and with pgvector its indexes.
      def define_vector_search(connection, table)
        return unless connection.adapter_name.match?(/postg/i)

        column = VectorSearch::COLUMN
        connection.add_column(table, column, :float, array: true) unless connection.column_exists?(table, column)
        return unless VectorSearch.usable?(connection.select_value(VectorSearch::AVAILABLE))

        connection.enable_extension("vector")
        VectorSearch.indexes(table).each do |expression, options|
          connection.add_index(table, expression, **options, if_not_exists: true)
        end
      end

      # @param table [Created]
      def create(connection, table, if_not_exists:)
        connection.create_table(table.name, if_not_exists: if_not_exists) do |t|
          table.columns.each do |column|
            column.name ? t.public_send(column.type, column.name, **column.options) : t.public_send(column.type)
          end
        end
        table.indexes.each do |index|
          connection.add_index(table.name, index.columns, unique: index.unique,
                                                          name: index_name(table.name, index.what), if_not_exists: true)
        end
      end
    end
  end
end
