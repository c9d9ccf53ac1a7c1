# frozen_string_literal: true

require_relative "../records/warnings"

module LlmFailover
  module ActiveRecord
    # One thread per process that looks for cancel! from other processes on behalf of
    # every chat record's call running in it: each interval, one query per chats table
    # (`WHERE id IN (the chats answering) AND cancel_requested_at >= ...`), on a
    # connection taken from the pool for that query and given back at once.
    #
    # A thread and a poll per call cost a Sidekiq process with 25 jobs answering 25
    # threads, 125 queries a second, and up to 25 connections checked out at once from
    # a pool sized for the job threads (whose threads hold theirs): watchers then waited
    # checkout_timeout for a connection and cancels went unseen. This one needs one
    # connection beside the job threads', for the length of a query.
    #
    # It starts with the first call it watches and ends one interval after the last one
    # ended. A forked child starts its own: the parent's thread does not exist there.
    #
    # @api private: CancelRequest#watch registers each call
    class CancelWatcher
      # One watched call. #stop unregisters it (the call ended).
      Entry = Struct.new(:watcher, :table, :id, :since, :cancellation, :interval) do
        def stop
          watcher.unwatch(self)
        end
      end

      # A chats table as the watcher queries it: the model class, its column.
      Table = Struct.new(:klass, :column)

      LOCK = Mutex.new
      private_constant :LOCK

      class << self
        # This process's watcher (a forked child gets a new one).
        # @return [CancelWatcher]
        def current
          LOCK.synchronize do
            @current = nil unless @current&.pid == Process.pid
            @current ||= new
          end
        end
      end

      attr_reader :pid

      def initialize
        @pid = Process.pid
        @lock = Mutex.new
        @entries = []
        @thread = nil
        @warned = nil
      end

      # Cancels +cancellation+ once +klass+'s row +id+ has +column+ at or after +since+.
      # @return [Entry] its #stop ends the watch
      def watch(klass, id, column:, since:, cancellation:, interval:)
        table = Table.new(klass, column)
        entry = Entry.new(self, table, id, since, cancellation, interval)
        @lock.synchronize do
          @entries << entry
          start unless @thread&.alive?
        end
        entry
      end

      def unwatch(entry)
        @lock.synchronize { @entries.delete_if { |e| e.equal?(entry) } }
        nil
      end

      # @return [Thread, nil] the polling thread, nil while nothing is watched
      def thread
        @lock.synchronize { @thread }
      end

      private

      def start
        @thread = Thread.new do
          while (entries = next_round)
            poll(entries)
          end
        end
        # Named here, not in its body: the thread is known by its name by the time the
        # call that started it goes on.
        @thread.name = "llm_failover cancel watcher"
        @thread.report_on_exception = false
      end

      # Waits one interval (the shortest any watched call asked for); the calls to
      # look at then, or nil (the thread ends) when none is left.
      def next_round
        @lock.synchronize do
          interval = @entries.map(&:interval).min
          return stopping if interval.nil?

          @lock.sleep(interval)
          @entries.empty? ? stopping : @entries.dup
        end
      end

      def stopping
        @thread = nil
        nil
      end

      # One query per table (a table the app's models share, one pool).
      def poll(entries)
        entries.group_by { |e| [e.table.klass.connection_pool, e.table.klass.table_name, e.table.column] }
               .each_value { |group| poll_table(group) }
      end

      def poll_table(entries)
        table = entries.first.table
        requested = requested_at(table.klass, table.column, entries.map(&:id).uniq, entries.map(&:since).min)
        entries.each do |entry|
          at = requested[entry.id]
          next unless at && at >= entry.since

          unwatch(entry)
          entry.cancellation.cancel!
        end
        @warned = nil
      rescue StandardError => e
        warn_once(e)
      end

      # @return [Hash{Object => Time}] cancel_requested_at of the rows that have one
      #   at or after +since+
      def requested_at(klass, column, ids, since)
        klass.connection_pool.with_connection do
          klass.uncached do
            ids.each_slice(500).flat_map do |slice|
              klass.unscoped.where(klass.primary_key => slice).where(klass.arel_table[column].gteq(since))
                   .pluck(klass.primary_key, column)
            end.to_h
          end
        end
      end

      # Once per run of failures (a database that is down fails every interval).
      def warn_once(error)
        message = "#{error.class}: #{error.message}"
        return if @warned == message

        @warned = message
        Warnings.warn("looking for cancel! raised #{message} (the calls go on)")
      end
    end
  end
end
