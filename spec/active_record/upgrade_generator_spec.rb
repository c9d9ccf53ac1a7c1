# frozen_string_literal: true

require_relative "ar_spec_helper"
require "rails/generators"
require "generators/llm_failover/upgrade/upgrade_generator"

# `rails g llm_failover:upgrade` against an app installed by the first release: its
# migration migrated on a fresh SQLite or PostgreSQL database, the upgrade written and
# run, and the result compared with what create_tables! (the current install) makes.
RSpec.describe LlmFailover::Generators::UpgradeGenerator do
  class UpgradeSpecCreated < ActiveRecord::Base
    self.abstract_class = true
  end

  class UpgradeSpecApp < ActiveRecord::Base
    self.abstract_class = true
  end

  let(:dir) { Dir.mktmpdir("llm_failover_upgrade") }
  let(:first_version) { File.expand_path("../fixtures/migrations/20251101000000_create_llm_failover_tables.rb", __dir__) }

  after do
    [UpgradeSpecCreated, UpgradeSpecApp].each { |k| k.remove_connection if k.connected? }
    FileUtils.remove_entry(dir)
  end

  def generate(*args)
    out = StringIO.new
    $stdout = out
    described_class.start(args, destination_root: dir)
    out.string
  ensure
    $stdout = STDOUT
  end

  def fresh_database(db, name)
    return { adapter: "sqlite3", database: File.join(dir, "#{name}.sqlite3") } if db == :sqlite

    database = "lf_upg_#{name}_#{Process.pid}_#{rand(1 << 30)}"
    conn = PG.connect(**PostgresServer.pg_params)
    conn.exec("CREATE DATABASE #{database}")
    conn.close
    PostgresServer.config.merge(database: database)
  end

  def migrate(klass, source, class_name, direction = :up)
    migration = Module.new.module_eval("#{source}\n#{class_name}", "migration.rb")
    klass.connection_pool.with_connection { |c| migration.new.exec_migration(c, direction) }
  end

  def upgrades
    Dir[File.join(dir, "db/migrate/*_upgrade_llm_failover_tables*.rb")].sort
  end

  # Each table's columns and indexes, whatever their order and index names.
  def shape(klass)
    klass.connection_pool.with_connection do |c|
      (c.tables - %w[schema_migrations ar_internal_metadata]).sort.to_h do |table|
        columns = c.columns(table).map { |col| [col.name, col.sql_type, col.null, col.default] }.sort
        indexes = c.indexes(table).map { |i| [Array(i.columns), i.unique] }.sort
        [table, { columns: columns, indexes: indexes }]
      end
    end
  end

  def created_shape(db, **tables)
    UpgradeSpecCreated.establish_connection(fresh_database(db, "created"))
    UpgradeSpecCreated.connection_pool.with_connection do |c|
      LlmFailover::ActiveRecord.create_tables!(connection: c, **tables)
    end
    shape(UpgradeSpecCreated)
  end

  def install_first_version(source = File.read(first_version))
    FileUtils.mkdir_p(File.join(dir, "db/migrate"))
    File.write(File.join(dir, "db/migrate", File.basename(first_version)), source)
    migrate(UpgradeSpecApp, source, "CreateLlmFailoverTables")
  end

  ArSpec::DATABASES.each do |db|
    context "on #{db}", skip: (db == :postgresql ? PostgresServer.missing_reason : nil) do
      before { UpgradeSpecApp.establish_connection(fresh_database(db, "app")) }

      it "brings a first-release app to the current install's tables, and adds nothing when run again" do
        install_first_version
        old = shape(UpgradeSpecApp)

        expect(generate).to match(%r{create  db/migrate/\d+_upgrade_llm_failover_tables\.rb})
        upgrade = File.read(upgrades.sole)
        expect(upgrade).to include("class UpgradeLlmFailoverTables < ActiveRecord::Migration[7.2]")
        migrate(UpgradeSpecApp, upgrade, "UpgradeLlmFailoverTables")
        expect(shape(UpgradeSpecApp)).to eq(created_shape(db))

        # The migration it wrote counts (run or not): nothing more to add.
        expect(generate).to include("identical  llm_failover tables (nothing to add)")
        expect(upgrades.size).to eq(1)
        # Run twice, its steps find what they add and change nothing.
        migrate(UpgradeSpecApp, upgrade, "UpgradeLlmFailoverTables")
        expect(shape(UpgradeSpecApp)).to eq(created_shape(db))
        # and its down takes the app back to the first release's tables.
        migrate(UpgradeSpecApp, upgrade, "UpgradeLlmFailoverTables", :down)
        expect(shape(UpgradeSpecApp)).to eq(old)
      end

      it "reads db/schema.rb where the app's old migrations are gone" do
        install_first_version
        schema = StringIO.new
        ActiveRecord::SchemaDumper.dump(UpgradeSpecApp.connection_pool, schema)
        FileUtils.rm(Dir[File.join(dir, "db/migrate/*.rb")])
        File.write(File.join(dir, "db/schema.rb"), schema.string)

        generate
        migrate(UpgradeSpecApp, File.read(upgrades.sole), "UpgradeLlmFailoverTables")
        expect(shape(UpgradeSpecApp)).to eq(created_shape(db))
      end

      it "adds only what the app lacks, under the table names the install was given" do
        names = { chats: "conversations", messages: "utterances", attempts: "audit_attempts",
                  circuit_events: "audit_circuit_events" }
        source = File.read(first_version)
                     .gsub(":chats", ":conversations").gsub("t.references :chat,", "t.references :conversation,")
                     .gsub(":messages", ":utterances").gsub("index_messages_", "index_utterances_")
                     .gsub("llm_failover_attempts", "audit_attempts")
                     .sub("      t.string :provider_request_id\n",
                          "      t.string :provider_request_id\n      t.boolean :cached, null: false, default: false\n")
        install_first_version(source)

        generate("--chat-model=Conversation", "--message-model=Utterance", "--attempts-table=audit_attempts",
                 "--circuit-events-table=audit_circuit_events")
        upgrade = File.read(upgrades.sole)
        expect(upgrade).not_to include(":cached")
        expect(upgrade).to include("add_column :conversations, :cancel_requested_at",
                                   "%i[conversation_id idempotency_key]", "create_table :audit_circuit_events",
                                   "add_column :utterances, :tool_call_id",
                                   "create_table :utterance_tool_calls", "foreign_key: { to_table: :utterances }")
        migrate(UpgradeSpecApp, upgrade, "UpgradeLlmFailoverTables")
        expect(shape(UpgradeSpecApp)).to eq(created_shape(db, **names))
      end

      # The extension point: a feature that adds a table appends it to the list.
      it "writes a table another feature appends to the list" do
        install_first_version
        widgets = LlmFailover::Generators::Additions::Table.new(
          :widgets, "llm_failover_widgets",
          body: ->(t) { "t.references :#{t.reference}, null: false\nt.string :name, null: false\n" },
          indexes: [LlmFailover::Generators::Additions::Index.new(columns: %i[name], what: "name", unique: true)]
        )
        stub_const("LlmFailover::Generators::Additions::LIST", [*LlmFailover::Generators::Additions::LIST, widgets])
        generate
        migrate(UpgradeSpecApp, File.read(upgrades.sole), "UpgradeLlmFailoverTables")
        widget_shape = shape(UpgradeSpecApp).fetch("llm_failover_widgets")
        expect(widget_shape[:columns].map(&:first)).to eq(%w[chat_id id name])
        expect(widget_shape[:indexes]).to eq([[["chat_id"], false], [["name"], true]])
        expect(generate).to include("nothing to add")
      end
    end
  end

  it "counts what the app's own migrations added, in change_table blocks and add_column" do
    FileUtils.mkdir_p(File.join(dir, "db/migrate"))
    FileUtils.cp(first_version, File.join(dir, "db/migrate"))
    File.write(File.join(dir, "db/migrate/20251201000000_app_changes.rb"), <<~RUBY)
      class AppChanges < ActiveRecord::Migration[7.2]
        def change
          change_table :llm_failover_attempts do |t|
            t.boolean :cached, null: false, default: false
            t.remove :skipped
          end
          add_column :chats, :cancel_requested_at, :datetime
        end
      end
    RUBY
    generate
    upgrade = File.read(upgrades.sole)
    expect(upgrade).not_to include(":cached", "cancel_requested_at")
    expect(upgrade).to include(":cancelled", ":skipped", "idempotency_key")
  end

  it "writes nothing for an app without the install's tables, and says so" do
    FileUtils.mkdir_p(File.join(dir, "db/migrate"))
    output = generate
    expect(output).to match(/error  no chats, messages, llm_failover_attempts table .*run llm_failover:install/)
    expect(upgrades).to be_empty
  end
end
