# frozen_string_literal: true

module LlmFailover
  class SemanticCache
    # The semantic tier's writes, on a thread of their own: a shared index (Redis, a
    # table) costs a round trip the caller's answer must not wait for. Bounded: past
    # MAX_PENDING queued writes a new one is dropped (a cache may forget). Started on
    # first use, and again in a forked child, whose copy of the thread is gone.
    #
    # @api private
    class SemanticWriter
      MAX_PENDING = 1000

      def initialize(cache)
        @cache = cache
        @lock = Mutex.new
        @idle = ConditionVariable.new
        @queue = []
        @busy = false
        @thread = nil
        @pid = nil
      end

      def push(partition, vector, value, logger)
        @lock.synchronize do
          return false if @queue.size >= MAX_PENDING

          @queue << [partition, vector, value, logger]
          start_unlocked
          @idle.broadcast
        end
        true
      end

      # @return [Boolean] whether the queue emptied within +timeout+ seconds
      def flush(timeout)
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
        @lock.synchronize do
          while !@queue.empty? || @busy
            left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
            return false if left <= 0

            @idle.wait(@lock, left)
          end
        end
        true
      end

      private

      def start_unlocked
        return if @thread&.alive? && @pid == Process.pid

        @pid = Process.pid
        @busy = false
        @thread = Thread.new { run }
        @thread.name = "llm_failover semantic cache writer"
        @thread.report_on_exception = false
      end

      def run
        loop do
          job = @lock.synchronize do
            @busy = false
            @idle.broadcast
            @idle.wait(@lock) while @queue.empty?
            @busy = true
            @queue.shift
          end
          @cache.add_now(*job)
        end
      end
    end
  end
end
