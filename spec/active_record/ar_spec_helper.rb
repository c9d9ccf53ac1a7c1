# frozen_string_literal: true

require "spec_helper"
require "fileutils"
require "tmpdir"
require "sqlite3"
require "llm_failover/active_record"

require "pg"
require_relative "../support/postgres_server"

# The ActiveRecord specs run on a real SQLite file (never :memory:) and on a real
# PostgreSQL server (spec/support/postgres_server.rb starts a throwaway cluster the
# first time a PostgreSQL group runs). ArSpec.describe defines a spec's group once per
# database; each example connects ActiveRecord::Base to its group's database.
#
# SQLite runs in WAL mode as ActiveRecord configures it, with IMMEDIATE transactions so
# concurrent writers queue for the lock instead of failing to upgrade a read lock.
# ActiveRecord 7.2's `timeout:` is SQLite's busy_timeout, which sleeps holding the
# GVL: a thread waiting for the write lock then stops the thread holding it, and six
# writer threads deadlock until the timeout. The sqlite3 gem's busy_handler_timeout
# waits with the GVL released (Rails 8 switched to it); set it on every checkout.
module ArSpec
  DIR = Dir.mktmpdir("llm_failover_ar")
  PATH = File.join(DIR, "test.sqlite3")
  owner = Process.pid
  at_exit { FileUtils.remove_entry(DIR) if Process.pid == owner }

  SQLITE = { adapter: "sqlite3", database: PATH, pool: 16, default_transaction_mode: :immediate }.freeze
  CONFIG = SQLITE # the SQLite settings, for specs that open their own connection

  DATABASES = %i[sqlite postgresql].freeze

  require "active_record/connection_adapters/sqlite3_adapter"
  ActiveRecord::ConnectionAdapters::SQLite3Adapter.set_callback(:checkout, :after) do |connection|
    connection.raw_connection.busy_handler_timeout = 10_000
  end

  # Other specs fork (the engine's fork safety); the child never uses these
  # connections, and sqlite3 closes them there with a warning that says nothing here.
  SQLite3::ForkSafety.suppress_warnings!

  ActiveRecord::Base.logger = nil
  ActiveRecord::Migration.verbose = false

  TABLES = %w[tool_calls messages chats llm_failover_attempts llm_failover_circuit_events
              llm_failover_vectors].freeze

  @current = nil
  @created = {}

  class << self
    attr_reader :current

    # Defines the group once per database (metadata db: :sqlite / :postgresql). The
    # PostgreSQL group is skipped, loudly, only where the server's binaries are absent.
    # Tagged :ruby_only unless the spec says ruby_only: false (rake sanitize leaves it
    # out: rakelib/sanitize.rake says which specs it runs).
    def describe(subject, *args, **metadata, &block)
      DATABASES.each do |db|
        extra = { active_record: true, db: db }
        extra[:skip] = PostgresServer.missing_reason if db == :postgresql && !PostgresServer.available?
        RSpec.describe(subject, *args, "on #{db}", ruby_only: true, **metadata, **extra, &block)
      end
    end

    # Connects ActiveRecord::Base to +db+ (and creates the tables there once).
    def use(db)
      return if @current == db

      ActiveRecord::Base.establish_connection(config(db))
      # Column types differ a little between the two; read them again from this one.
      ActiveRecord::Base.descendants.select(&:name).each(&:reset_column_information)
      @current = db
      return if @created[db]

      LlmFailover::ActiveRecord.create_tables!(force: true)
      @created[db] = true
    end

    def config(db)
      db == :postgresql ? PostgresServer.config.merge(pool: 16) : SQLITE
    end
  end

  use(:sqlite)

  module Helpers
    def clean_tables
      ActiveRecord::Base.connection_pool.with_connection do |c|
        ArSpec::TABLES.each { |t| c.execute("DELETE FROM #{t}") }
      end
    end

    def postgresql?
      ArSpec.current == :postgresql
    end

    # Reads the database through its own connection (not ActiveRecord's): what another
    # process (a page polling the row) would see, committed data only. `?` marks the
    # binds; booleans come back as SQLite gives them (1/0) whatever the database.
    def raw_rows(sql, *binds)
      return raw_sqlite_rows(sql, binds) unless postgresql?

      n = 0
      conn = PG.connect(**PostgresServer.pg_params)
      conn.type_map_for_results = PG::BasicTypeMapForResults.new(conn)
      conn.exec_params(sql.gsub("?") { "$#{n += 1}" }, binds).map do |row|
        row.transform_values { |v| v == true || v == false ? (v ? 1 : 0) : v }
      end
    ensure
      conn&.close
    end

    def raw_sqlite_rows(sql, binds)
      db = SQLite3::Database.new(ArSpec::PATH, readonly: true)
      db.results_as_hash = true
      db.execute(sql, binds)
    ensure
      db&.close
    end

    def raw_message(id)
      raw_rows("SELECT * FROM messages WHERE id = ?", id).first
    end

    # SQL statements ActiveRecord ran while the block ran, on this thread.
    def sql_during
      statements = []
      subscriber = ActiveSupport::Notifications.subscribe("sql.active_record") do |*, payload|
        statements << payload[:sql] unless %w[SCHEMA TRANSACTION].include?(payload[:name])
      end
      yield
      statements
    ensure
      ActiveSupport::Notifications.unsubscribe(subscriber)
    end

    def attempt_log
      LlmFailover::ActiveRecord::AttemptLog.new
    end
  end
end

# The models an app would write, with the default names.
class Chat < ActiveRecord::Base
  acts_as_llm_chat
end

class Message < ActiveRecord::Base
  acts_as_llm_message
end

# The same chats, writing every streamed delta at once (flush_interval 0) ...
class EagerChat < ActiveRecord::Base
  self.table_name = "chats"
  acts_as_llm_chat message_class: "Message", foreign_key: "chat_id", flush_interval: 0
end

# ... or only when the answer ends (flush_interval nil).
class LazyChat < ActiveRecord::Base
  self.table_name = "chats"
  acts_as_llm_chat message_class: "Message", foreign_key: "chat_id", flush_interval: nil
end

RSpec.configure do |config|
  config.include ArSpec::Helpers, :active_record
  # A group's before(:all) (tables of its own) runs on its group's database too, not on
  # whichever database the previous example left connected.
  config.before(:all, :active_record) do
    ArSpec.use(self.class.metadata[:db] || :sqlite)
  end
  config.before(:each, :active_record) do |example|
    ArSpec.use(example.metadata[:db] || :sqlite)
    clean_tables
  end
end
