# frozen_string_literal: true

require_relative "../../active_record/generator_helper"
require "generators/llm_failover/install/install_generator"

# Schema::TABLES is the one description of the gem's tables: Schema.define
# (create_tables!), the install migration and the upgrade migration are all made from
# it. These check that the three end at the same tables: the install migration run on
# a fresh database, and the upgrade run on every earlier install (the first release's,
# and each one since that had part of Schema::ADDED).
RSpec.describe LlmFailover::ActiveRecord::Schema do
  include GeneratorSpec
  include_context "generator app"

  let(:code) { LlmFailover::Generators::MigrationCode }

  # The install migration of the version that had Schema::ADDED's first +count+ entries.
  def earlier_install(count)
    later = described_class::ADDED.drop(count)
    tables = described_class.tables(described_class.names).reject { |table| later.include?([table.role]) }
    body = tables.map do |table|
      gone = later.filter_map { |role, column| column if role == table.role }
      earlier = table.dup
      earlier.columns = table.columns.reject { |c| gone.include?(c.name) }
      earlier.indexes = table.indexes.reject { |i| i.columns.intersect?(gone) }
      code.create_table(earlier).map { |line| "    #{line}".rstrip }.join("\n")
    end
    "class CreateLlmFailoverTables < ActiveRecord::Migration[7.2]\n  def change\n#{body.join("\n\n")}\n  end\nend\n"
  end

  def upgrade_from(source, db)
    FileUtils.rm_rf(File.join(dir, "db"))
    GeneratorSpec::App.establish_connection(fresh_database(db, "app#{rand(1 << 30)}"))
    install_first_version(source)
    before = shape(GeneratorSpec::App)
    generate(generator: LlmFailover::Generators::UpgradeGenerator)
    upgrade = upgrade_sources.sole
    migrate(upgrade, "UpgradeLlmFailoverTables")
    after = shape(GeneratorSpec::App)
    migrate(upgrade, "UpgradeLlmFailoverTables", :down)
    [before, after, shape(GeneratorSpec::App)]
  ensure
    GeneratorSpec::App.remove_connection
  end

  ArSpec::DATABASES.each do |db|
    it "makes the same tables on #{db} through Schema.define and through the install migration",
       skip: (db == :postgresql ? PostgresServer.missing_reason : nil) do
      generate(generator: LlmFailover::Generators::InstallGenerator)
      GeneratorSpec::App.establish_connection(fresh_database(db, "installed"))
      migrate(install_source, "CreateLlmFailoverTables")
      expect(dump(GeneratorSpec::App)).to eq(dump(create_tables(db)))
    end
  end

  it "names in ADDED everything the first release's install lacked" do
    GeneratorSpec::App.establish_connection(fresh_database(:sqlite, "first"))
    migrate(File.read(GeneratorSpec::FIRST_VERSION), "CreateLlmFailoverTables")
    first = shape(GeneratorSpec::App)
    GeneratorSpec::App.remove_connection
    GeneratorSpec::App.establish_connection(fresh_database(:sqlite, "rebuilt"))
    migrate(earlier_install(0), "CreateLlmFailoverTables")
    expect(shape(GeneratorSpec::App)).to eq(first)
  end

  ArSpec::DATABASES.each do |db|
    it "upgrades every earlier install to the tables Schema.define makes on #{db}, and back",
       skip: (db == :postgresql ? PostgresServer.missing_reason : nil) do
      current = created_shape(db)
      (0...described_class::ADDED.size).each do |count|
        before, after, down = upgrade_from(earlier_install(count), db)
        # SQLite has no part of the vector search (PostgreSQL's): such an install lacks nothing there.
        postgresql_only = described_class::ADDED.drop(count) == [[:vectors, described_class::VectorSearch::COLUMN]]
        expect(before).not_to eq(current) unless db == :sqlite && postgresql_only
        expect(after).to eq(current), "upgrading the install that had ADDED's first #{count} entries"
        expect(down).to eq(before), "the down of the upgrade from ADDED's first #{count} entries"
      end
    end
  end
end
