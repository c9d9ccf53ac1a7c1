# frozen_string_literal: true

require "rails/generators"
require "rails/generators/active_record"
require_relative "../create_once"
require_relative "../table_names"
require_relative "../upgrade/upgrade_generator"

module LlmFailover
  module Generators
    # `bin/rails generate llm_failover:install` sets an app up:
    # - db/migrate/..._create_llm_failover_tables.rb: the chats, messages,
    #   llm_failover_attempts and llm_failover_circuit_events tables (the schema
    #   LlmFailover::ActiveRecord.create_tables! creates; every index name within
    #   PostgreSQL's 63 characters);
    # - app/models/chat.rb and message.rb (acts_as_llm_chat / acts_as_llm_message;
    #   has_many_attached :attachments when the app loads ActiveStorage, else the
    #   attachments_data column keeps the files of ask(text, with:));
    # - config/initializers/llm_failover.rb: providers from credentials or ENV (a
    #   placeholder key in the test environment), the attempt log and the circuit log,
    #   the options commented;
    # - test/models/chat_test.rb, when the app has test/test_helper.rb (Minitest, as
    #   `rails new` makes it): the chat answered and failed over by the FakeProvider.
    # A file that exists is left alone. Run again on an app that has the migration, it
    # runs llm_failover:upgrade (UpgradeGenerator): an upgrade migration with what the
    # app's migrations lack, or nothing when they lack nothing.
    #
    # Loaded only by Rails' generator lookup; nothing in lib/llm_failover requires it.
    class InstallGenerator < ::Rails::Generators::Base
      include ::ActiveRecord::Generators::Migration
      include CreateOnce
      include TableNames

      MIGRATION = "create_llm_failover_tables"
      # A message model's line that keeps its files with ActiveStorage (not a comment).
      ATTACHED = /^\s*has_many_attached :attachments\b/.freeze
      # What an upgrade is told: the install's table names.
      TABLE_OPTIONS = %w[chat_model message_model chats_table messages_table attempts_table circuit_events_table
                         vectors_table].freeze

      source_root File.expand_path("templates", __dir__)
      desc "Creates the llm_failover migration, the chat and message models, and config/initializers/llm_failover.rb."

      def create_migration_file
        dir = File.expand_path(db_migrate_path, destination_root)
        unless self.class.migration_exists?(dir, MIGRATION)
          migration_template "#{MIGRATION}.rb", File.join(db_migrate_path, "#{MIGRATION}.rb")
          return
        end
        say_status :exist, File.join(db_migrate_path, "..._#{MIGRATION}.rb"), :blue
        invoke UpgradeGenerator, [], options.slice(*TABLE_OPTIONS)
      end

      def create_models
        create_once "chat_model.rb", model_path(chat_model)
        create_once "message_model.rb", model_path(message_model)
      end

      def create_initializer
        create_once "initializer.rb", "config/initializers/llm_failover.rb"
      end

      # A first test of the chat, where `rails new` put the app's tests.
      def create_test
        return unless File.exist?(File.join(destination_root, "test/test_helper.rb"))

        create_once "chat_test.rb", File.join("test/models", "#{chat_model.underscore}_test.rb")
      end

      # Says where the files of chat.ask(text, with:) are kept: the message model's
      # has_many_attached (as written now, or as an earlier run left it), or the
      # attachments_data column.
      def say_attachments
        model = File.join(destination_root, model_path(message_model))
        attached = File.exist?(model) ? File.read(model).match?(ATTACHED) : active_storage?
        if !attached
          say_status :attachments, "in #{messages_table}.attachments_data (no ActiveStorage in this app)", :blue
        elsif active_storage_installed?
          say_status :attachments, "ActiveStorage: #{message_model} has_many_attached :attachments", :blue
        else
          say_status :attachments, "ActiveStorage: #{message_model} has_many_attached :attachments; " \
                                   "run bin/rails active_storage:install (its tables are not there yet)", :yellow
        end
      end

      private

      def model_path(class_name)
        File.join("app/models", "#{class_name.underscore}.rb")
      end

      # Whether the app loads ActiveStorage: the message model keeps its files there.
      def active_storage?
        defined?(::ActiveStorage::Engine) ? true : false
      end

      def active_storage_installed?
        dir = File.expand_path(db_migrate_path, destination_root)
        Dir.glob(File.join(dir, "*_create_active_storage_tables*.rb")).any?
      end

      # The association names the models declare.
      def messages_association
        messages_table
      end

      def chat_association
        chat_reference
      end
    end
  end
end
