# frozen_string_literal: true

require "rails/generators"
require "rails/generators/active_record"
require_relative "../create_once"
require_relative "../table_names"
require_relative "additions"
require_relative "known_schema"

module LlmFailover
  module Generators
    # `bin/rails generate llm_failover:upgrade` (also run by `llm_failover:install` on an
    # app that has its tables): for an app installed by an earlier version, writes
    # db/migrate/..._upgrade_llm_failover_tables.rb with the columns and tables of
    # Additions::LIST that its migrations and db/schema.rb lack, each step skipped where
    # the database has it already. Run again, it finds them in that migration and writes
    # nothing. Give it the table options the install was given.
    #
    # Loaded only by Rails' generator lookup; nothing in lib/llm_failover requires it.
    class UpgradeGenerator < ::Rails::Generators::Base
      include ::ActiveRecord::Generators::Migration
      include CreateOnce
      include TableNames

      NAME = "upgrade_llm_failover_tables"
      # The tables an install creates, by role: an upgrade adds to them.
      BASE_ROLES = %i[chats messages attempts].freeze

      source_root File.expand_path("templates", __dir__)
      desc "Writes a migration adding the llm_failover columns and tables an earlier install lacks."

      def create_upgrade_migration
        dir = File.expand_path(db_migrate_path, destination_root)
        known = KnownSchema.read(sources(dir))
        found = BASE_ROLES.select { |role| known.key?(tables.fetch(role)) }
        if found.empty?
          say_status :error, "no #{BASE_ROLES.map { |r| tables.fetch(r) }.join(', ')} table in #{db_migrate_path} " \
                             "or db/schema.rb: run llm_failover:install (or pass the table options it was given)", :red
          return
        end
        (BASE_ROLES - found).each do |role|
          say_status :skip, "#{tables.fetch(role)} (no migration creates it; pass --#{role.to_s.tr('_', '-')}-table?)",
                     :yellow
        end
        @missing = Additions::LIST.select { |addition| addition.missing?(known, tables) }
        return say_status(:identical, "llm_failover tables (nothing to add)", :blue) if @missing.empty?

        # A second upgrade (a later version's) needs a name of its own.
        upgrades = self.class.migration_lookup_at(dir).grep(/\d+_#{NAME}(_\d+)?\.rb$/).size
        name = upgrades.zero? ? NAME : "#{NAME}_#{upgrades + 1}"
        migration_template "#{NAME}.rb", File.join(db_migrate_path, "#{name}.rb")
      end

      private

      def sources(dir)
        schema = File.join(destination_root, "db/schema.rb")
        Dir[File.join(dir, "*.rb")].sort + (File.exist?(schema) ? [schema] : [])
      end

      # Every role's table name: the options', else a new table's default.
      def tables
        @tables ||= begin
          names = { chats: chats_table, messages: messages_table, attempts: attempts_table,
                    circuit_events: circuit_events_table, tool_calls: tool_calls_table }
          Additions::LIST.each do |addition|
            next unless addition.respond_to?(:default_name)

            names[addition.role] ||= options["#{addition.role}_table"] || addition.default_name
          end
          Additions::Tables.new(names: names, reference: chat_reference)
        end
      end

      # The migration's up (additions in order, a blank line apart) or down (in reverse).
      def code(direction)
        additions = direction == :up ? @missing : @missing.reverse
        steps = additions.map { |a| a.public_send(direction, tables).map { |l| "    #{l}".rstrip }.join("\n") }
        steps.join(direction == :up ? "\n\n" : "\n")
      end
    end
  end
end
