# frozen_string_literal: true

module LlmFailover
  module Generators
    # What makes the generators safe to run again: a file that exists is left as the
    # app has it (the developer may have changed it), never overwritten nor asked about,
    # and a migration is written once whatever its timestamp. The including generator
    # includes ActiveRecord::Generators::Migration for the migrations.
    module CreateOnce
      # The Rails guide, shipped with the gem (the gemspec packages doc/*.md).
      GUIDE = File.expand_path("../../../doc/rails.md", __dir__)

      private

      # Writes templates/NAME.rb.tt as db/migrate/<timestamp>_NAME.rb, unless a
      # migration of that name exists.
      def create_migration_once(name)
        if self.class.migration_exists?(File.expand_path(db_migrate_path, destination_root), name)
          say_status :exist, File.join(db_migrate_path, "..._#{name}.rb"), :blue
          return
        end
        migration_template "#{name}.rb", File.join(db_migrate_path, "#{name}.rb")
      end

      def migration_version
        "[#{::ActiveRecord::VERSION::MAJOR}.#{::ActiveRecord::VERSION::MINOR}]"
      end

      def create_once(source, path)
        if File.exist?(File.join(destination_root, path))
          say_status :skip, "#{path} (exists; #{GUIDE} says what it needs)", :yellow
        else
          template "#{source}.tt", path
        end
      end
    end
  end
end
