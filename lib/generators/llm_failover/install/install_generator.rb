# frozen_string_literal: true

require "rails/generators"
require "rails/generators/active_record"
require "llm_failover/active_record/schema"
require_relative "../create_once"

module LlmFailover
  module Generators
    # `bin/rails generate llm_failover:install` sets an app up:
    # - db/migrate/..._create_llm_failover_tables.rb: the chats, messages,
    #   llm_failover_attempts and llm_failover_circuit_events tables (the schema
    #   LlmFailover::ActiveRecord.create_tables! creates; every index name within
    #   PostgreSQL's 63 characters);
    # - app/models/chat.rb and message.rb (acts_as_llm_chat / acts_as_llm_message);
    # - config/initializers/llm_failover.rb: providers from credentials or ENV, the
    #   attempt log and the circuit log, the options commented.
    # A file that exists is left alone. Run again on an app that migrated an older
    # version's tables, it writes db/migrate/..._upgrade_llm_failover_tables.rb with
    # what those migrations lack (columns, indexes, tables added since), each step
    # guarded so that it does nothing where the database has it already; on an app
    # that is up to date it changes nothing.
    #
    # Loaded only by Rails' generator lookup; nothing in lib/llm_failover requires it.
    class InstallGenerator < ::Rails::Generators::Base
      include ::ActiveRecord::Generators::Migration
      include CreateOnce

      MIGRATION = "create_llm_failover_tables"
      UPGRADE = "upgrade_llm_failover_tables"

      source_root File.expand_path("templates", __dir__)
      desc "Creates the llm_failover migration, the chat and message models, and config/initializers/llm_failover.rb."

      class_option :chat_model, type: :string, default: "Chat", desc: "Class of the acts_as_llm_chat model"
      class_option :message_model, type: :string, default: "Message", desc: "Class of the acts_as_llm_message model"
      class_option :chats_table, type: :string, desc: "Table of the chat model (default: from its name)"
      class_option :messages_table, type: :string, desc: "Table of the message model (default: from its name)"
      class_option :attempts_table, type: :string, default: "llm_failover_attempts",
                                    desc: "Table AttemptLog writes and the report reads"
      class_option :circuit_events_table, type: :string, default: "llm_failover_circuit_events",
                                          desc: "Table CircuitLog writes and the report reads"

      def create_migration_file
        dir = File.expand_path(db_migrate_path, destination_root)
        unless self.class.migration_exists?(dir, MIGRATION)
          migration_template "#{MIGRATION}.rb", File.join(db_migrate_path, "#{MIGRATION}.rb")
          return
        end
        say_status :exist, File.join(db_migrate_path, "..._#{MIGRATION}.rb"), :blue
        @missing = missing_from(dir)
        return if @missing.empty?

        # A second upgrade (a later version's) needs a name of its own.
        upgrades = self.class.migration_lookup_at(dir).grep(/\d+_#{UPGRADE}(_\d+)?\.rb$/).size
        name = upgrades.zero? ? UPGRADE : "#{UPGRADE}_#{upgrades + 1}"
        migration_template "#{UPGRADE}.rb", File.join(db_migrate_path, "#{name}.rb")
      end

      def create_models
        create_once "chat_model.rb", model_path(chat_model)
        create_once "message_model.rb", model_path(message_model)
      end

      def create_initializer
        create_once "initializer.rb", "config/initializers/llm_failover.rb"
      end

      private

      # What the app's llm_failover migrations (the first and any upgrades) lack.
      def missing_from(dir)
        sources = self.class.migration_lookup_at(dir).grep(/\d+_(#{MIGRATION}|#{UPGRADE}(_\d+)?)\.rb$/)
                      .map { |f| File.read(f) }.join("\n")
        later_additions.reject { |_, mark| sources.match?(mark) }.keys
      end

      # What later versions added to the first migration: name => its mark in a
      # migration's source. The upgrade template has a step for each.
      def later_additions
        { cancel_requested_at: /\bcancel_requested_at\b/, idempotency_key: /\bidempotency_key\b/,
          cached: /:cached\b/, cancelled: /:cancelled\b/, failure_reason: /:failure_reason\b/,
          scrubbed: /:scrubbed\b/, skipped: /:skipped\b/, hedged: /:hedged\b/,
          attachments_data: /:attachments_data\b/,
          circuit_events: /create_table :#{Regexp.escape(circuit_events_table)}\b/ }
      end

      def missing?(name)
        @missing.include?(name)
      end

      def model_path(class_name)
        File.join("app/models", "#{class_name.underscore}.rb")
      end

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

      # The messages' reference to their chat: chat_id for the chats table.
      def chat_reference
        chats_table.singularize
      end

      # The association names the models declare.
      def messages_association
        messages_table
      end

      def chat_association
        chat_reference
      end

      # Index names within PostgreSQL's 63 characters, as create_tables! names them.
      def index_name(table, what)
        LlmFailover::ActiveRecord::Schema.index_name(table, what)
      end
    end
  end
end
