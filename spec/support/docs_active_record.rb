# frozen_string_literal: true

# What doc/rails.md's examples of chat records assume a Rails app has after
# `bin/rails generate llm_failover:install` and `db:migrate`: the tables (here in a
# SQLite file of its own) and the two models, with the attempt log as the usage log.
# Loaded by a `<!-- docs_spec: before ... -->` line of the page (spec/docs_spec.rb).
require "tmpdir"
require "llm_failover/active_record"

ActiveRecord::Base.establish_connection(adapter: "sqlite3", database: File.join(Dir.mktmpdir("docs_rails"), "app.sqlite3"))
ActiveRecord::Migration.verbose = false
LlmFailover::ActiveRecord.create_tables!

class Chat < ActiveRecord::Base
  acts_as_llm_chat
end

class Message < ActiveRecord::Base
  acts_as_llm_message
end

LlmFailover.configure { |c| c.usage_log = LlmFailover::ActiveRecord::AttemptLog.new }
