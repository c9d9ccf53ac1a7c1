# frozen_string_literal: true

require_relative "../errors"

module LlmFailover
  # The response cache the gem ships: an in-process LRU with per-entry expiry, safe to
  # share between threads. Any object with #read(key) and #write(key, value, expires_in:)
  # works in its place (Rails.cache, ActiveSupport's Redis cache store, Solid Cache).
  #
  #   LlmFailover.configure { |c| c.cache = LlmFailover::MemoryCache.new(max_entries: 10_000) }
  class MemoryCache
    Entry = Struct.new(:value, :expires_at)
    private_constant :Entry

    attr_reader :max_entries

    # @param max_entries [Integer] past this many entries the least recently read goes
    # @param clock [#call] monotonic seconds (tests pass their own to move time)
    def initialize(max_entries: 10_000, clock: nil)
      unless max_entries.is_a?(Integer) && max_entries.positive?
        raise ConfigurationError, "max_entries must be a positive Integer, got #{max_entries.inspect}"
      end

      @max_entries = max_entries
      @clock = clock || -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }
      @entries = {} # insertion order is recency order: a read moves the entry to the end
      @lock = Mutex.new
    end

    # @return [Object, nil] the value, or nil when absent or expired
    def read(key)
      @lock.synchronize do
        entry = @entries.delete(key)
        return nil unless entry
        return nil if entry.expires_at && entry.expires_at <= @clock.call

        @entries[key] = entry
        entry.value
      end
    end

    # @param expires_in [Numeric, nil] seconds; nil keeps the entry until it is evicted
    # @return [true]
    def write(key, value, expires_in: nil)
      expires_at = expires_in && (@clock.call + expires_in)
      @lock.synchronize do
        @entries.delete(key)
        @entries[key] = Entry.new(value, expires_at)
        @entries.shift while @entries.size > @max_entries # Hash#shift: the oldest
      end
      true
    end

    # @return [Boolean] whether an entry was there
    def delete(key)
      @lock.synchronize { !@entries.delete(key).nil? }
    end

    def clear
      @lock.synchronize { @entries.clear }
      nil
    end

    # @return [Integer] entries held, expired ones not yet dropped included
    def size
      @lock.synchronize { @entries.size }
    end

    def inspect
      "#<#{self.class.name} #{size}/#{@max_entries} entries>"
    end
    alias to_s inspect
  end
end
