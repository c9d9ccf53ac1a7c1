# frozen_string_literal: true

require "rails/generators"
require "rails/generators/active_record"
require "llm_failover/active_record/schema"

module LlmFailover
  module Generators
    # `bin/rails generate llm_failover:install` writes a migration creating the chats,
    # messages and llm_failover_attempts tables: the schema
    # LlmFailover::ActiveRecord.create_tables! creates.
    #
    # Loaded only by Rails' generator lookup; nothing in lib/llm_failover requires it.
    class InstallGenerator < ::Rails::Generators::Base
      include ::ActiveRecord::Generators::Migration

      source_root File.expand_path("templates", __dir__)
      desc "Creates a migration for the chats, messages and llm_failover_attempts tables."

      class_option :chats_table, type: :string, default: "chats", desc: "Table of the acts_as_llm_chat model"
      class_option :messages_table, type: :string, default: "messages", desc: "Table of the acts_as_llm_message model"
      class_option :attempts_table, type: :string, default: "llm_failover_attempts",
                                    desc: "Table AttemptLog writes and the report reads"

      def create_migration_file
        migration_template "create_llm_failover_tables.rb", File.join(db_migrate_path, "create_llm_failover_tables.rb")
      end

      private

      def chats_table
        options[:chats_table]
      end

      def messages_table
        options[:messages_table]
      end

      def attempts_table
        options[:attempts_table]
      end

      # The messages' reference to their chat: chat_id for the chats table.
      def chat_reference
        chats_table.singularize
      end

      # Index names within PostgreSQL's 63 characters, as create_tables! names them.
      def index_name(table, what)
        LlmFailover::ActiveRecord::Schema.index_name(table, what)
      end

      def migration_version
        "[#{::ActiveRecord::VERSION::MAJOR}.#{::ActiveRecord::VERSION::MINOR}]"
      end
    end
  end
end
