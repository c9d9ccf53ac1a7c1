# frozen_string_literal: true

require_relative "generator_helper"
require "generators/llm_failover/install/install_generator"

# The generator itself, run into a temp dir; its migration run against fresh SQLite
# and PostgreSQL databases and its schema compared with create_tables!'s.
# spec/rails_app_spec.rb runs it through bin/rails in an app.
RSpec.describe LlmFailover::Generators::InstallGenerator do
  include GeneratorSpec
  include_context "generator app"

  def read(path)
    File.read(File.join(dir, path))
  end

  def schema_from_create_tables(db, **tables)
    dump(create_tables(db, **tables))
  end

  def schema_from_migration(db, source)
    GeneratorSpec::App.establish_connection(fresh_database(db, "migrated"))
    migrate(source, "CreateLlmFailoverTables")
    dump(GeneratorSpec::App)
  end

  ArSpec::DATABASES.each do |db|
    context "on #{db}", skip: (db == :postgresql ? PostgresServer.missing_reason : nil) do
      it "writes a migration creating exactly the schema create_tables! creates" do
        generate
        source = install_source
        expect(source).to include("class CreateLlmFailoverTables < ActiveRecord::Migration[7.2]")
        migrated = schema_from_migration(db, source)
        expect(migrated).to eq(schema_from_create_tables(db))
        expect(migrated).to include('create_table "llm_failover_attempts"', 'create_table "chats"',
                                    'add_foreign_key "messages", "chats"', '"idempotency_key"', '"cancel_requested_at"',
                                    'create_table "llm_failover_circuit_events"',
                                    't.index ["chat_id", "idempotency_key"], name: "index_messages_on_idempotency_key", ' \
                                    "unique: true")
        LlmFailover::ActiveRecord::Attempt::COLUMNS.each { |c| expect(migrated).to include("\"#{c}\"") }
      end

      it "keeps every index name within 63 characters, with long table names too" do
        names = { chats_table: "customer_support_conversations", messages_table: "customer_support_utterances",
                  attempts_table: "customer_support_llm_failover_attempts_log",
                  circuit_events_table: "customer_support_llm_failover_circuit_events_log",
                  vectors_table: "customer_support_llm_failover_semantic_cache_vectors" }
        generate(*names.map { |k, v| "--#{k.to_s.tr('_', '-')}=#{v}" })
        migrated = schema_from_migration(db, install_source)
        created = schema_from_create_tables(db, chats: names[:chats_table], messages: names[:messages_table],
                                                attempts: names[:attempts_table],
                                                circuit_events: names[:circuit_events_table],
                                                vectors: names[:vectors_table])
        expect(migrated).to eq(created)
        index_names = migrated.scan(/name: "([^"]+)"/).flatten
        # And the vector search's HNSW indexes where PostgreSQL has pgvector.
        searched = db == :postgresql && PostgresServer.pgvector_missing_reason.nil?
        count = 12 + (searched ? LlmFailover::ActiveRecord::Schema::VectorSearch::DIMENSIONS.size : 0)
        expect(index_names.size).to eq(count)
        expect(index_names.map(&:length).max).to be <= 63
        expect(index_names.uniq.size).to eq(count)
        expect(migrated).to match(/t\.(integer|bigint) "customer_support_conversation_id", null: false/)
      end
    end
  end

  ArSpec::DATABASES.each do |db|
    context "on #{db}, run again on an app that migrated the first version's tables",
            skip: (db == :postgresql ? PostgresServer.missing_reason : nil) do
      before { GeneratorSpec::App.establish_connection(fresh_database(db, "upgraded")) }

      def chat_model
        stub_const("UpgradeMessage", Class.new(GeneratorSpec::App) { self.table_name = "messages" })
        stub_const("UpgradeChat", Class.new(GeneratorSpec::App) { self.table_name = "chats" })
        UpgradeChat.acts_as_llm_chat(messages: :upgrade_messages, message_class: "UpgradeMessage", foreign_key: "chat_id")
        UpgradeMessage.acts_as_llm_message(chat: :upgrade_chat, chat_class: "UpgradeChat", foreign_key: "chat_id")
        UpgradeChat
      end

      it "writes an upgrade migration that adds what the app lacks, and nothing more when run once more" do
        install_first_version
        chats = chat_model
        chat = chats.create!(model: "gpt-4o", provider: "openai")
        expect { chat.cancel! }.to raise_error(LlmFailover::ConfigurationError, /no cancel_requested_at column.*llm_failover:install/)

        output = generate
        expect(output).to match(/exist .*create_llm_failover_tables/)
        expect(output).to match(%r{create  db/migrate/\d+_upgrade_llm_failover_tables\.rb})
        upgrade = upgrade_sources.sole
        expect(upgrade).to include("class UpgradeLlmFailoverTables < ActiveRecord::Migration[7.2]", "cancel_requested_at",
                                   "idempotency_key", ":cached", ":cancelled", ":scrubbed", ":skipped", ":cache_tier",
                                   "create_table :llm_failover_circuit_events")
        migrate(upgrade, "UpgradeLlmFailoverTables")
        expect(shape(GeneratorSpec::App)).to eq(created_shape(db))
        chat = chats.find(chat.id) # the app restarted after db:migrate
        chat.cancel!
        expect(chat.reload.cancel_requested_at).not_to be_nil

        # Up to date now: a third run writes no migration.
        expect(generate).not_to include("upgrade_llm_failover_tables")
        expect(upgrade_sources.size).to eq(1)
        # and the upgrade's steps are skipped where the database has them already
        migrate(upgrade, "UpgradeLlmFailoverTables")
        expect(shape(GeneratorSpec::App)).to eq(created_shape(db))
      end

      it "adds only what a later first migration lacked" do
        # An app that installed when the attempts table had cached but nothing else new.
        source = File.read(GeneratorSpec::FIRST_VERSION)
                     .sub("      t.string :provider_request_id\n",
                          "      t.string :provider_request_id\n      t.boolean :cached, null: false, default: false\n")
        install_first_version(source)
        generate
        upgrade = upgrade_sources.sole
        expect(upgrade).not_to match(/:cached\b/) # :cached_input_tokens is another column
        expect(upgrade).to include(":cancelled", "cancel_requested_at")
        migrate(upgrade, "UpgradeLlmFailoverTables")
        expect(shape(GeneratorSpec::App)).to eq(created_shape(db))
      end
    end
  end

  it "writes the models and the initializer, then leaves every file alone when run again" do
    output = generate
    expect(output).to include("create  app/models/chat.rb", "create  app/models/message.rb",
                              "create  config/initializers/llm_failover.rb")
    expect(read("app/models/chat.rb")).to include("class Chat < ApplicationRecord\n  acts_as_llm_chat\nend")
    # This process loads no ActiveStorage: the files of ask(text, with:) go to the column.
    expect(read("app/models/message.rb")).to include("class Message < ApplicationRecord\n  acts_as_llm_message\n")
      .and match(/kept in the attachments_data column/)
    expect(read("app/models/message.rb")).not_to match(/^\s*has_many_attached/)
    expect(output).to match(/attachments\s+in messages\.attachments_data \(no ActiveStorage in this app\)/)
    initializer = read("config/initializers/llm_failover.rb")
    expect(initializer).to include('credentials.dig(:openai, :api_key) || ENV["OPENAI_API_KEY"].presence || placeholder',
                                   'placeholder = "test-key" if Rails.env.test?',
                                   "c.usage_log = LlmFailover::ActiveRecord::AttemptLog.new",
                                   "c.circuit_log = LlmFailover::ActiveRecord::CircuitLog.new", "# c.max_retries = 3")
    File.write(File.join(dir, "app/models/chat.rb"), "# the app's own\n")

    files = Dir[File.join(dir, "**/*")].sort.to_h { |f| [f, File.file?(f) ? File.read(f) : nil] }
    again = generate
    expect(again).to match(/exist .*create_llm_failover_tables/)
    expect(again.scan(/skip/).size).to eq(3)
    # What it points at for what a skipped file needs is the gem's Rails guide.
    guide = again[%r{skip .*app/models/chat\.rb \(exists; (\S+) says what it needs\)}, 1]
    expect(guide).to eq(File.expand_path("../../doc/rails.md", __dir__))
    expect(Dir[File.join(dir, "**/*")].sort.to_h { |f| [f, File.file?(f) ? File.read(f) : nil] }).to eq(files)
  end

  # The guide the skip message names ships with the gem. doc/rails.md is written on the
  # docs branch: until it is merged this says so instead of failing.
  it "points at a guide that exists and is packaged" do
    guide = LlmFailover::Generators::CreateOnce::GUIDE
    skip "doc/rails.md has not been merged yet (the docs branch writes it)" unless File.exist?(guide)

    root = File.expand_path("../..", __dir__)
    packaged = Dir.chdir(root) { Gem::Specification.load(File.join(root, "llm_failover.gemspec")).files }
    expect(packaged).to include("doc/rails.md")
  end

  # Issue 27, item 7: every option is in the initializer, those commented at their defaults.
  it "writes an initializer naming every configuration option, the commented ones at their defaults" do
    generate
    initializer = read("config/initializers/llm_failover.rb")
    LlmFailover::Configuration::OPTIONS.each do |name|
      expect(initializer).to match(/^\s*(# )?c\.#{name} = /), "the initializer lacks c.#{name}"
    end
    commented = initializer.scan(/^\s*# c\.(\w+) = (\S+)/).to_h
    literals = commented.select { |_, v| v.match?(/\A(\d[\d.]*|true|false|nil)\z/) }
    expect(literals.size).to be >= 15
    literals.each do |name, value|
      expect(Kernel.eval(value)).to eq(LlmFailover::Configuration::DEFAULTS.fetch(name.to_sym)), "c.#{name}"
    end
    # The gem's own Redis first: the job queue's (REDIS_URL) may be another.
    expect(initializer).to include('ENV["LLM_FAILOVER_REDIS_URL"].presence || ENV["REDIS_URL"].presence')
    expect(initializer).not_to match(/^\s*c\.logger = /) # Rails.logger is the default in an app
  end

  it "writes a first test where the app keeps its tests (test/test_helper.rb), named after the chat model" do
    expect(generate).not_to include("test/models")
    FileUtils.mkdir_p(File.join(dir, "test"))
    File.write(File.join(dir, "test/test_helper.rb"), "# the app's own\n")
    expect(generate).to include("create  test/models/chat_test.rb")
    expect(read("test/models/chat_test.rb")).to include("class ChatTest < ActiveSupport::TestCase",
                                                        "include LlmFailover::Testing::Helpers", "Chat.create!(",
                                                        "chat.messages.map")
    named = generate("--chat-model=Conversation", "--message-model=Utterance")
    expect(named).to include("create  test/models/conversation_test.rb")
    expect(read("test/models/conversation_test.rb")).to include("class ConversationTest", "Conversation.create!(",
                                                                "chat.utterances.map")
    expect(generate).to include("skip  test/models/chat_test.rb")
  end

  it "names the models and their associations after --chat-model and --message-model" do
    generate("--chat-model=Conversation", "--message-model=Utterance")
    expect(read("app/models/conversation.rb"))
      .to include('acts_as_llm_chat messages: :utterances, message_class: "Utterance"', 'foreign_key: "conversation_id"')
    expect(read("app/models/utterance.rb"))
      .to include('acts_as_llm_message chat: :conversation, chat_class: "Conversation"')
    expect(install_source).to include("create_table :conversations", "create_table :utterances",
                                        "t.references :conversation")

    # The models as written work against the migrated tables.
    GeneratorSpec::App.establish_connection(fresh_database(:sqlite, "named"))
    schema_from_migration(:sqlite, install_source)
    stub_const("ApplicationRecord", Class.new(GeneratorSpec::App) { self.abstract_class = true })
    %w[conversation utterance].each { |m| load File.join(dir, "app/models/#{m}.rb") }
    conversation = Conversation.create!(model: "gpt-4o", provider: "openai")
    conversation.utterances.create!(role: "user", content: "Hi")
    expect(Utterance.sole.conversation).to eq(conversation)
  ensure
    %i[Conversation Utterance].each { |c| Object.send(:remove_const, c) if Object.const_defined?(c) }
  end

  it "is not loaded by the gem itself" do
    lib = File.expand_path("../../lib", __dir__)
    requires = Dir[File.join(lib, "llm_failover/**/*.rb"), File.join(lib, "llm_failover.rb")]
               .select { |f| File.read(f).match?(%r{require ["']generators/}) }
    expect(requires).to be_empty
  end
end
