# frozen_string_literal: true

require_relative "../../records/warnings"

module LlmFailover
  module Idempotency
    # One thread per process keeps every claim the process holds fresh: every BEAT
    # seconds it writes each claim's time again (the store's #refresh_turn). A claim
    # whose time is older than STALE is a dead owner's, whatever host it is on: its
    # process was killed, its host lost, or it stopped beating (a claim leaked by a
    # live process goes stale too). Neither depends on how long a call may last.
    #
    # The thread starts with the first claim and ends one beat after the last one
    # was let go; a forked child starts its own (the parent's claims are not its own).
    #
    # @api private: used by Idempotency
    class Heartbeat
      # Seconds between two writes of a held claim.
      BEAT = 3
      # Seconds without a write after which a claim is a dead owner's: five beats
      # missed, room for a busy database (SQLite's busy timeout is 5 s) and a GC pause.
      STALE = 15

      # One held claim. #stop lets it go (its call has ended).
      Entry = Struct.new(:heartbeat, :store, :key, :owner) do
        def stop
          heartbeat.remove(self)
        end
      end

      LOCK = Mutex.new
      private_constant :LOCK

      # This process's heartbeat (a forked child gets a new one).
      # @return [Heartbeat]
      def self.current
        LOCK.synchronize do
          @current = nil unless @current&.pid == Process.pid
          @current ||= new
        end
      end

      attr_reader :pid

      def initialize
        @pid = Process.pid
        @lock = Mutex.new
        @entries = []
        @thread = nil
      end

      # Keeps the claim +owner+ (Owner.claim_name) holds on +store+'s turn of +key+
      # fresh until Entry#stop.
      # @return [Entry]
      def add(store, key, owner)
        entry = Entry.new(self, store, key, owner)
        @lock.synchronize do
          @entries << entry
          start unless @thread&.alive?
        end
        entry
      end

      def remove(entry)
        @lock.synchronize { @entries.delete_if { |e| e.equal?(entry) } }
        nil
      end

      # @return [Thread, nil] the beating thread, nil while no claim is held
      def thread
        @lock.synchronize { @thread }
      end

      private

      def start
        @thread = Thread.new do
          while (entries = next_beat)
            entries.each { |entry| beat(entry) }
          end
        end
        @thread.name = "llm_failover claim heartbeat"
        @thread.report_on_exception = false
      end

      # Waits one beat; the claims held then, or nil (the thread ends) when none is.
      def next_beat
        @lock.synchronize do
          unless @entries.empty?
            @lock.sleep(BEAT)
            return @entries.dup unless @entries.empty?
          end
          @thread = nil
          nil
        end
      end

      # A claim that another process took over (this one stopped beating for longer
      # than STALE: a frozen process, a database out of reach) is not written again.
      # One let go meanwhile is not either: its call stops the entry before it
      # releases the claim, so a refresh that finds it released finds it stopped.
      def beat(entry)
        return if entry.store.refresh_turn(entry.key, owner: entry.owner)
        return unless @lock.synchronize { @entries.delete(entry) }

        Warnings.warn("the claim on idempotency_key #{entry.key.inspect} was taken over by another call (none of " \
                      "this process's heartbeats reached the store for #{STALE} s): the turn may be answered twice")
      rescue StandardError => e
        Warnings.warn("could not refresh the claim on idempotency_key #{entry.key.inspect}: #{e.class}: #{e.message}")
      end
    end
  end
end
