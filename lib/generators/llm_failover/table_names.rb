# frozen_string_literal: true

require "llm_failover/active_record/schema"
require_relative "migration_code"

module LlmFailover
  module Generators
    # The table options llm_failover:install and llm_failover:upgrade share, and the
    # names they give: an upgrade is run with the options the install was.
    module TableNames
      def self.included(base)
        base.class_option :chat_model, type: :string, default: "Chat", desc: "Class of the acts_as_llm_chat model"
        base.class_option :message_model, type: :string, default: "Message", desc: "Class of the acts_as_llm_message model"
        base.class_option :chats_table, type: :string, desc: "Table of the chat model (default: from its name)"
        base.class_option :messages_table, type: :string, desc: "Table of the message model (default: from its name)"
        base.class_option :attempts_table, type: :string, default: "llm_failover_attempts",
                                           desc: "Table AttemptLog writes and the report reads"
        base.class_option :circuit_events_table, type: :string, default: "llm_failover_circuit_events",
                                                 desc: "Table CircuitLog writes and the report reads"
        base.class_option :vectors_table, type: :string, default: "llm_failover_vectors",
                                          desc: "Table ActiveRecordIndex (the semantic cache's vectors) keeps"
      end

      private

      def chat_model
        options[:chat_model].camelize
      end

      def message_model
        options[:message_model].camelize
      end

      def chats_table
        options[:chats_table] || chat_model.tableize.tr("/", "_")
      end

      def messages_table
        options[:messages_table] || message_model.tableize.tr("/", "_")
      end

      def attempts_table
        options[:attempts_table]
      end

      def circuit_events_table
        options[:circuit_events_table]
      end

      # Beside the messages table, named as create_tables! names it (tool_calls beside
      # messages, utterance_tool_calls beside utterances).
      def tool_calls_table
        LlmFailover::ActiveRecord::Schema.tool_calls_table(messages_table)
      end

      # The semantic cache's shared vectors (ActiveRecordIndex).
      def vectors_table
        options[:vectors_table]
      end

      # The messages' reference to their chat: chat_id for the chats table.
      def chat_reference
        chats_table.singularize
      end

      # The names every table is given, by role (Schema.names): the options', else an
      # install's defaults.
      # @return [LlmFailover::ActiveRecord::Schema::Names]
      def schema_names
        @schema_names ||= begin
          given = LlmFailover::ActiveRecord::Schema::TABLES.to_h { |t| [t.role, options["#{t.role}_table"]] }.compact
          LlmFailover::ActiveRecord::Schema.names(**given, chats: chats_table, messages: messages_table,
                                                           foreign_key: "#{chat_reference}_id")
        end
      end

      # The create_table blocks and indexes of the install's migration (its change).
      def create_tables_code
        steps = LlmFailover::ActiveRecord::Schema.tables(schema_names).map { |table| MigrationCode.create_table(table) }
        steps << MigrationCode.vector_search(schema_names.fetch(:vectors))
        steps.map { |lines| lines.map { |line| "    #{line}".rstrip }.join("\n") }.join("\n\n")
      end
    end
  end
end
