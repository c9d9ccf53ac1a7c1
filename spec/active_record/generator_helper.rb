# frozen_string_literal: true

require_relative "ar_spec_helper"
require "rails/generators"
require "stringio"

# What the generator specs share: an app directory the generator is run into, fresh
# SQLite and PostgreSQL databases, migrations run on them, and the schema they end
# with compared with the one create_tables! (Schema.define) makes.
module GeneratorSpec
  # The database create_tables! builds.
  class Created < ActiveRecord::Base
    self.abstract_class = true
  end

  # The app's database: the written migrations run on it.
  class App < ActiveRecord::Base
    self.abstract_class = true
  end

  # The first release's install migration, as an app that installed then has it.
  FIRST_VERSION = File.expand_path("../fixtures/migrations/20251101000000_create_llm_failover_tables.rb", __dir__)

  RSpec.shared_context "generator app" do
    let(:dir) { Dir.mktmpdir("llm_failover_generator") }

    after do
      [Created, App].each { |k| k.remove_connection if k.connected? }
      FileUtils.remove_entry(dir)
    end
  end

  # @return [String] what the generator printed
  def generate(*args, generator: described_class)
    out = StringIO.new
    $stdout = out
    generator.start(args, destination_root: dir)
    out.string
  ensure
    $stdout = STDOUT
  end

  # A fresh, empty database of that kind.
  def fresh_database(db, name)
    return { adapter: "sqlite3", database: File.join(dir, "#{name}.sqlite3") } if db == :sqlite

    database = "lf_gen_#{name}_#{Process.pid}_#{rand(1 << 30)}"
    conn = PG.connect(**PostgresServer.pg_params)
    conn.exec("CREATE DATABASE #{database}")
    conn.close
    PostgresServer.config.merge(database: database)
  end

  # Runs a migration's source (class +class_name+) on +klass+'s database.
  def migrate(source, class_name, direction = :up, klass: App)
    migration = Module.new.module_eval("#{source}\n#{class_name}", "migration.rb")
    klass.connection_pool.with_connection { |c| migration.new.exec_migration(c, direction) }
    klass.descendants.each(&:reset_column_information)
  end

  def written(pattern)
    Dir[File.join(dir, "db/migrate", pattern)].sort
  end

  def install_source
    File.read(written("*_create_llm_failover_tables.rb").sole)
  end

  def upgrade_sources
    written("*_upgrade_llm_failover_tables*.rb").map { |f| File.read(f) }
  end

  # Writes +source+ as the app's install migration and runs it.
  def install_first_version(source = File.read(FIRST_VERSION))
    FileUtils.mkdir_p(File.join(dir, "db/migrate"))
    File.write(File.join(dir, "db/migrate", File.basename(FIRST_VERSION)), source)
    migrate(source, "CreateLlmFailoverTables")
  end

  # db/schema.rb as Rails writes it, without its version.
  def dump(klass)
    io = StringIO.new
    ActiveRecord::SchemaDumper.dump(klass.connection_pool, io)
    io.string.sub(/ActiveRecord::Schema\[[\d.]+\]\.define\(version: [^)]*\)/, "SCHEMA")
  end

  # Each table's columns, indexes and foreign keys, whatever their order and index
  # names (an upgrade appends columns; the first version named one index differently).
  def shape(klass)
    klass.connection_pool.with_connection do |c|
      (c.tables - %w[schema_migrations ar_internal_metadata]).sort.to_h do |table|
        columns = c.columns(table).map { |col| [col.name, col.sql_type, col.null, col.default] }.sort
        indexes = c.indexes(table).map { |i| [Array(i.columns), i.unique] }.sort
        [table, { columns: columns, indexes: indexes, foreign_keys: c.foreign_keys(table).map(&:to_table).sort }]
      end
    end
  end

  # Runs create_tables! on a fresh database of that kind.
  # @return [Class] Created, connected to it
  def create_tables(db, **tables)
    Created.establish_connection(fresh_database(db, "created"))
    Created.connection_pool.with_connection { |c| LlmFailover::ActiveRecord.create_tables!(connection: c, **tables) }
    Created
  end

  def created_shape(db, **tables)
    shape(create_tables(db, **tables))
  end
end
