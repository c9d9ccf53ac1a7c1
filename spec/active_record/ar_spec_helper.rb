# frozen_string_literal: true

require "spec_helper"
require "fileutils"
require "tmpdir"
require "sqlite3"
require "llm_failover/active_record"

# The ActiveRecord specs run on a real SQLite file (never :memory:), in WAL mode as
# ActiveRecord configures it, with IMMEDIATE transactions so concurrent writers
# queue on the busy timeout instead of failing to upgrade a read lock.
module ArSpec
  DIR = Dir.mktmpdir("llm_failover_ar")
  PATH = File.join(DIR, "test.sqlite3")
  at_exit { FileUtils.remove_entry(DIR) }

  CONFIG = { adapter: "sqlite3", database: PATH, pool: 16, timeout: 10_000,
             default_transaction_mode: :immediate }.freeze

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
