# frozen_string_literal: true

require_relative "ar_spec_helper"
require "erb"

# Railties is not a dependency, so the generator class itself is not loaded here; its
# template is rendered the way Thor renders it and run as a migration against a fresh
# SQLite file, and its schema compared with create_tables!'s.
RSpec.describe "llm_failover:install generator" do
  GENERATOR_DIR = File.expand_path("../../lib/generators/llm_failover/install", __dir__)
  TEMPLATE = File.join(GENERATOR_DIR, "templates", "create_llm_failover_tables.rb.tt")

  # The names the template uses, as InstallGenerator (and Rails' migration_template)
  # defines them.
  class TemplateContext
    attr_reader :migration_class_name, :chats_table, :messages_table, :attempts_table

    def initialize(chats_table: "chats", messages_table: "messages", attempts_table: "llm_failover_attempts")
      @migration_class_name = "CreateLlmFailoverTables"
      @chats_table = chats_table
      @messages_table = messages_table
      @attempts_table = attempts_table
    end

    def chat_reference
      chats_table.singularize
    end

    def index_name(table, what)
      LlmFailover::ActiveRecord::Schema.index_name(table, what)
    end

    def migration_version
      "[#{ActiveRecord::VERSION::MAJOR}.#{ActiveRecord::VERSION::MINOR}]"
    end

    def render
      ERB.new(File.binread(TEMPLATE), trim_mode: "-").result(binding)
    end
  end

  class GeneratorSpecCreated < ActiveRecord::Base
    self.abstract_class = true
  end

  class GeneratorSpecMigrated < ActiveRecord::Base
    self.abstract_class = true
  end

  let(:dir) { Dir.mktmpdir("llm_failover_generator") }

  after do
    [GeneratorSpecCreated, GeneratorSpecMigrated].each { |k| k.remove_connection if k.connected? }
    FileUtils.remove_entry(dir)
  end

  def dump(klass)
    io = StringIO.new
    ActiveRecord::SchemaDumper.dump(klass.connection_pool, io)
    io.string.sub(/ActiveRecord::Schema\[[\d.]+\]\.define\(version: [^)]*\)/, "SCHEMA")
  end

  def schema_from_create_tables(**tables)
    GeneratorSpecCreated.establish_connection(adapter: "sqlite3", database: File.join(dir, "created.sqlite3"))
    GeneratorSpecCreated.connection_pool.with_connection do |c|
      LlmFailover::ActiveRecord.create_tables!(connection: c, **tables)
    end
    dump(GeneratorSpecCreated)
  end

  def schema_from_migration(source)
    GeneratorSpecMigrated.establish_connection(adapter: "sqlite3", database: File.join(dir, "migrated.sqlite3"))
    migration = Module.new.module_eval(source + "\nCreateLlmFailoverTables", TEMPLATE)
    GeneratorSpecMigrated.connection_pool.with_connection { |c| migration.new.exec_migration(c, :up) }
    dump(GeneratorSpecMigrated)
  end

  it "renders a migration creating exactly the schema create_tables! creates" do
    source = TemplateContext.new.render
    expect(source).to include("class CreateLlmFailoverTables < ActiveRecord::Migration[7.2]")
    migrated = schema_from_migration(source)
    created = schema_from_create_tables

    expect(migrated).to eq(created)
    expect(migrated).to include('create_table "llm_failover_attempts"', 'create_table "chats"',
                                'add_foreign_key "messages", "chats"',
                                't.index ["request_id", "attempt"], name: "index_llm_failover_attempts_on_request_id_and_attempt", unique: true')
    LlmFailover::ActiveRecord::Attempt::COLUMNS.each { |c| expect(migrated).to include("\"#{c}\"") }
  end

  it "renders the same schema with other table names" do
    names = { chats_table: "conversations", messages_table: "utterances", attempts_table: "llm_attempts" }
    migrated = schema_from_migration(TemplateContext.new(**names).render)
    created = schema_from_create_tables(chats: "conversations", messages: "utterances", attempts: "llm_attempts")
    expect(migrated).to eq(created)
    expect(migrated).to include('t.integer "conversation_id", null: false', 'add_foreign_key "utterances", "conversations"')
  end

  it "is valid Ruby, points at its template, and loads nothing unless Rails generators load it" do
    generator = File.join(GENERATOR_DIR, "install_generator.rb")
    syntax = IO.popen([RbConfig.ruby, "-c", generator], err: %i[child out], &:read)
    expect(syntax).to include("Syntax OK")
    expect(File.read(generator)).to include('migration_template "create_llm_failover_tables.rb"')
    expect($LOADED_FEATURES.grep(%r{generators/llm_failover})).to be_empty
  end
end
