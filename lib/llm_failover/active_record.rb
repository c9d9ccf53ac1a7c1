# frozen_string_literal: true

# The ActiveRecord integration: chats and messages in the app's database, the
# attempt log table and its sink. Plain scripts never load this file, nor ActiveRecord.
#
#   require "llm_failover/active_record"   # Rails apps: the Railtie requires it
#   class Chat < ApplicationRecord
#     acts_as_llm_chat
#   end
#   Chat.create!(model: "gpt-4o", provider: "openai").ask("Hello") { |chunk| print chunk }
#
# Writes. The user row once per #ask. The assistant row is inserted "streaming" with
# empty content, its streamed text is written at most every flush_interval seconds
# (acts_as_llm_chat option, default 0.5; 0 writes every delta, nil only the end), a
# reset is written at once (content emptied, the backup named) before the backup's
# first delta, and the row ends "complete" with the winning text or "failed".
#
# Threads. Every database call checks out the calling thread's connection from the
# pool (connection_pool.with_connection), so jobs on several threads never share a
# connection; give each thread its own record. One more thread per process, while
# calls run, looks for cancel! from other processes (CancelWatcher): one query per
# interval on a connection it gives back at once, so the pool needs one beyond the
# job threads. With SQLite on ActiveRecord 7.2, use
# `default_transaction_mode: :immediate` and the sqlite3 gem's busy_handler_timeout:
# the `timeout:` option waits holding the GVL and stalls the thread that holds the lock.
#
# The app's transactions. Inside one, every row of the turn joins it: other
# connections see nothing (not the reset either) until it commits, and if it rolls
# back the turn's rows are gone as if never asked, though the provider was called
# and billed. AttemptLog rows are written again after such a rollback, so the attempt
# log still shows the call. An LLM call inside a transaction holds its locks for the
# whole call (on SQLite, the database's write lock): better to call outside one.

require "active_record"
require_relative "../llm_failover"
require_relative "active_record/schema"
require_relative "active_record/surviving_write"
require_relative "active_record/attempt_log"
require_relative "active_record/circuit_log"
require_relative "active_record/tool_call_row"
require_relative "active_record/message_store"
require_relative "active_record/quota_counter"
require_relative "active_record/message_record"
require_relative "active_record/cancel_watcher"
require_relative "active_record/cancel_request"
require_relative "active_record/chat_record"
require_relative "active_record/acts_as"
require_relative "active_record/not_secret"

module LlmFailover
  # Named after the integration; inside LlmFailover, the gem itself is ::ActiveRecord.
  module ActiveRecord
    # A model (ActiveRecord::Base subclass): defined on first use, so that requiring
    # this file never loads ActiveRecord::Base (a Rails app's later initializers could
    # no longer set its framework defaults).
    autoload :Attempt, "llm_failover/active_record/attempt"
    autoload :CircuitTransition, "llm_failover/active_record/circuit_transition"
    autoload :VectorEntry, "llm_failover/active_record/vector_entry"

    class << self
      # Creates the chats, messages, llm_failover_attempts, llm_failover_circuit_events
      # and llm_failover_vectors tables (for scripts and tests; Rails apps run the `llm_failover:install`
      # migration instead). Tables that exist are left alone unless force: true.
      # @param connection [ActiveRecord::ConnectionAdapters::AbstractAdapter, nil] the
      #   calling thread's connection of ActiveRecord::Base when nil
      # @param tables [Hash] chats:, messages:, attempts:, circuit_events:, vectors:, foreign_key:,
      #   force:, if_not_exists:
      # @return [nil]
      def create_tables!(connection: nil, **tables)
        if connection
          Schema.define(connection, **tables)
        else
          ::ActiveRecord::Base.connection_pool.with_connection { |c| Schema.define(c, **tables) }
        end
      end

      # @api private: messages in the order they were written (the primary key when it
      # is a sequence, creation time otherwise)
      def insertion_order(relation)
        klass = relation.klass
        pk = klass.primary_key
        if pk && klass.columns_hash[pk]&.type == :integer
          relation.reorder(pk => :asc)
        else
          relation.reorder(:created_at, pk)
        end
      end

      # @api private: defaults merged with the caller's names, checked
      def column_names(names, given, where)
        given = given.to_h { |k, v| [k.to_sym, v.to_s] }
        unknown = given.keys - names
        raise ConfigurationError, "#{where}: unknown column(s) #{unknown.map(&:inspect).join(', ')}" if unknown.any?

        names.to_h { |n| [n, n.to_s] }.merge(given).freeze
      end
    end
  end
end

ActiveSupport.on_load(:active_record) { extend LlmFailover::ActiveRecord::ActsAs }
