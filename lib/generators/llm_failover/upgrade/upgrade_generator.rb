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
    # Additions (Schema::ADDED) that its migrations and db/schema.rb lack, each step skipped where
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
        found = BASE_ROLES.select { |role| known.key?(schema_names.fetch(role)) }
        if found.empty?
          say_status :error, "no #{BASE_ROLES.map { |r| schema_names.fetch(r) }.join(', ')} table in #{db_migrate_path} " \
                             "or db/schema.rb: run llm_failover:install (or pass the table options it was given)", :red
          return
        end
        (BASE_ROLES - found).each do |role|
          say_status :skip, "#{schema_names.fetch(role)} (no migration creates it; pass --#{role.to_s.tr('_', '-')}-table?)",
                     :yellow
        end
        @missing = Additions.under(schema_names).select { |addition| addition.missing?(known) }
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

      # The migration's up (additions in order, a blank line apart) or down (in reverse).
      def code(direction)
        additions = direction == :up ? @missing : @missing.reverse
        steps = additions.map { |a| a.public_send(direction).map { |l| "    #{l}".rstrip }.join("\n") }
        steps.join(direction == :up ? "\n\n" : "\n")
      end
    end
  end
end
