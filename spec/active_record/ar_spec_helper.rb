# frozen_string_literal: true

require "spec_helper"
require "fileutils"
require "tmpdir"
require "sqlite3"
require "llm_failover/active_record"

# The ActiveRecord specs run on a real SQLite file (never :memory:), in WAL mode as
# ActiveRecord configures it, with IMMEDIATE transactions so concurrent writers
# queue for the lock instead of failing to upgrade a read lock.
#
# ActiveRecord 7.2's `timeout:` is SQLite's busy_timeout, which sleeps holding the
# GVL: a thread waiting for the write lock then stops the thread holding it, and six
# writer threads deadlock until the timeout. The sqlite3 gem's busy_handler_timeout
# waits with the GVL released (Rails 8 switched to it); set it on every checkout.
module ArSpec
  DIR = Dir.mktmpdir("llm_failover_ar")
  PATH = File.join(DIR, "test.sqlite3")
  at_exit { FileUtils.remove_entry(DIR) }

  CONFIG = { adapter: "sqlite3", database: PATH, pool: 16, default_transaction_mode: :immediate }.freeze

  require "active_record/connection_adapters/sqlite3_adapter"
  ActiveRecord::ConnectionAdapters::SQLite3Adapter.set_callback(:checkout, :after) do |connection|
    connection.raw_connection.busy_handler_timeout = 10_000
  end

  # Other specs fork (the engine's fork safety); the child never uses these
  # connections, and sqlite3 closes them there with a warning that says nothing here.
  SQLite3::ForkSafety.suppress_warnings!

  ActiveRecord::Base.logger = nil
  ActiveRecord::Migration.verbose = false
  ActiveRecord::Base.establish_connection(CONFIG)
  LlmFailover::ActiveRecord.create_tables!(force: true)

  TABLES = %w[messages chats llm_failover_attempts].freeze

  module Helpers
    def clean_tables
      ActiveRecord::Base.connection_pool.with_connection do |c|
        ArSpec::TABLES.each { |t| c.execute("DELETE FROM #{t}") }
      end
    end

    # Reads the database file through its own SQLite connection: what another process
    # (a page polling the row) would see, committed data only.
    def raw_rows(sql, *binds)
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
  config.before(:each, :active_record) { clean_tables }
end
