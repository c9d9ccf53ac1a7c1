# frozen_string_literal: true

require_relative "generator_helper"
require "generators/llm_failover/upgrade/upgrade_generator"

# `rails g llm_failover:upgrade` against an app installed by the first release: its
# migration migrated on a fresh SQLite or PostgreSQL database, the upgrade written and
# run, and the result compared with what create_tables! (the current install) makes.
RSpec.describe LlmFailover::Generators::UpgradeGenerator do
  include GeneratorSpec
  include_context "generator app"

  let(:first_version) { GeneratorSpec::FIRST_VERSION }

  def upgrades
    written("*_upgrade_llm_failover_tables*.rb")
  end

  ArSpec::DATABASES.each do |db|
    context "on #{db}", skip: (db == :postgresql ? PostgresServer.missing_reason : nil) do
      before { GeneratorSpec::App.establish_connection(fresh_database(db, "app")) }

      it "brings a first-release app to the current install's tables, and adds nothing when run again" do
        install_first_version
        old = shape(GeneratorSpec::App)

        expect(generate).to match(%r{create  db/migrate/\d+_upgrade_llm_failover_tables\.rb})
        upgrade = File.read(upgrades.sole)
        expect(upgrade).to include("class UpgradeLlmFailoverTables < ActiveRecord::Migration[7.2]")
        migrate(upgrade, "UpgradeLlmFailoverTables")
        expect(shape(GeneratorSpec::App)).to eq(created_shape(db))

        # The migration it wrote counts (run or not): nothing more to add.
        expect(generate).to include("identical  llm_failover tables (nothing to add)")
        expect(upgrades.size).to eq(1)
        # Run twice, its steps find what they add and change nothing.
        migrate(upgrade, "UpgradeLlmFailoverTables")
        expect(shape(GeneratorSpec::App)).to eq(created_shape(db))
        # and its down takes the app back to the first release's tables.
        migrate(upgrade, "UpgradeLlmFailoverTables", :down)
        expect(shape(GeneratorSpec::App)).to eq(old)
      end

      it "reads db/schema.rb where the app's old migrations are gone" do
        install_first_version
        schema = StringIO.new
        ActiveRecord::SchemaDumper.dump(GeneratorSpec::App.connection_pool, schema)
        FileUtils.rm(Dir[File.join(dir, "db/migrate/*.rb")])
        File.write(File.join(dir, "db/schema.rb"), schema.string)

        generate
        migrate(File.read(upgrades.sole), "UpgradeLlmFailoverTables")
        expect(shape(GeneratorSpec::App)).to eq(created_shape(db))
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
        expect(upgrade).not_to match(/:cached\b/) # :cached_input_tokens is another column
        expect(upgrade).to include("add_column :conversations, :cancel_requested_at",
                                   "%i[conversation_id idempotency_key]", "create_table :audit_circuit_events",
                                   "add_column :utterances, :tool_call_id",
                                   "create_table :utterance_tool_calls", "foreign_key: { to_table: :utterances }")
        migrate(upgrade, "UpgradeLlmFailoverTables")
        expect(shape(GeneratorSpec::App)).to eq(created_shape(db, **names))
      end

      # The extension point: a feature that adds a table writes it in Schema::TABLES and
      # names it in Schema::ADDED; create_tables! and the upgrade both follow.
      it "writes a table another feature adds to Schema::TABLES and ADDED" do
        install_first_version
        schema = LlmFailover::ActiveRecord::Schema
        widgets = schema::Table.new(:widgets, "llm_failover_widgets") do |t, names|
          t.references names.reference, null: false
          t.string :name, null: false
          t.index :name, what: "name", unique: true
        end
        stub_const("#{schema}::TABLES", [*schema::TABLES, widgets])
        stub_const("#{schema}::ADDED", [*schema::ADDED, %i[widgets]])
        generate
        migrate(File.read(upgrades.sole), "UpgradeLlmFailoverTables")
        widget_shape = shape(GeneratorSpec::App).fetch("llm_failover_widgets")
        expect(widget_shape[:columns].map(&:first)).to eq(%w[chat_id id name])
        expect(widget_shape[:indexes]).to eq([[["chat_id"], false], [["name"], true]])
        expect(shape(GeneratorSpec::App)).to eq(created_shape(db))
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
    expect(upgrade).not_to match(/:cached\b/)
    expect(upgrade).not_to include("cancel_requested_at")
    expect(upgrade).to include(":cancelled", ":skipped", "idempotency_key")
  end

  it "writes nothing for an app without the install's tables, and says so" do
    FileUtils.mkdir_p(File.join(dir, "db/migrate"))
    output = generate
    expect(output).to match(/error  no chats, messages, llm_failover_attempts table .*run llm_failover:install/)
    expect(upgrades).to be_empty
  end
end
