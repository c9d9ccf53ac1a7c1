# frozen_string_literal: true

module LlmFailover
  class Call
    # Call's side as the engine's listener (included in Call): the engine's events,
    # each handed to the answer's Delivery, the call's Records or its CircuitBreaker,
    # and the Cancellation's flag read after every one (Chat#cancel!).
    module Listener
      # Engine listener: a streamed content delta from target index +target+.
      def on_chunk(text, target)
        @cancellation.raise_if_requested
        @answering = target
        @partial << text
        @delivery.delta(text, target)
        @cancellation.raise_if_requested
      end

      # Engine listener: the backup is about to answer, after an earlier attempt
      # streamed content. The stored partial goes before the backup's first chunk.
      def on_reset
        @cancellation.raise_if_requested
        @partial = +""
        @answering = 1
        @delivery.reset(1)
        @cancellation.raise_if_requested
      end

      # Engine listener: one HTTP attempt finished (see Engine#run for the Hash's keys).
      def on_attempt(attempt)
        @attempts_seen += 1
        attempt_started
        @last_target = attempt[:target]
        @records.engine_attempt(attempt, @targets[@last_target])
        # The attempt a Signal (or anything else) cut comes while that exception unwinds.
        @cancellation.raise_if_requested unless attempt.key?(:stopped_by)
      end

      # Engine listener: the engine's wait was cut short (#cancel! wakes the thread).
      def on_interrupt
        @cancellation.raise_if_requested
      end

      # Engine listener, under a Fiber scheduler: the engine watches this IO beside the
      # transfer, and Cancellation#cancel! writes to it.
      def wake_io
        @cancellation.wake_io
      end

      # Engine listener: wake_io became readable.
      def on_wake
        @cancellation.woken
      end

      # Engine listener (with :circuit): the circuit state of each target, before the
      # first attempt.
      def circuit_health(count)
        health = @breaker.health(count)
        @cancellation.raise_if_requested
        health
      end

      # Engine listener (with :circuit): a target's circuit state again, before a request
      # that is not the call's first.
      def circuit_admit(target_index)
        health = @breaker.admit(target_index)
        @cancellation.raise_if_requested
        health
      end

      # Engine listener (with :circuit): an attempt that bears on its target's circuit.
      # @return [Boolean] whether the circuit is open now
      def circuit_report(target_index, success, error_class, hold)
        open = @breaker.report(target_index, success, error_class, hold)
        @cancellation.raise_if_requested
        open
      end
    end
  end
end
