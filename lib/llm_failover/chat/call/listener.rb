# frozen_string_literal: true

module LlmFailover
  class Call
    # Call's side as the engine's listener (included in Call): the engine's events,
    # each handed to the answer's Delivery or the call's Records, the circuit changes
    # its attempts made announced, and the Cancellation's flag read after every one
    # (Chat#cancel!: its Signal, an Engine::Cancel, makes the engine end the call
    # cancelled). The engine names targets by their Engine::Target.
    module Listener
      # Engine listener: a streamed content delta from +target+.
      def on_chunk(text, target)
        @cancellation.raise_if_requested
        @delivery.delta(text, Target.of(@targets, target))
        @cancellation.raise_if_requested
      end

      # Engine listener: +target+ is about to answer, after an earlier attempt streamed
      # content. The stored partial goes before its first chunk.
      def on_reset(target)
        @cancellation.raise_if_requested
        @delivery.reset(Target.of(@targets, target))
        @cancellation.raise_if_requested
      end

      # Engine listener: one attempt record (an Engine::Attempt), at one host of a target.
      def on_attempt(attempt)
        @last_target = Target.of(@targets, attempt.target)
        @records.engine_attempt(attempt, @last_target, Target.host_of(@targets, attempt.target))
        # The attempt an exception cut comes while that exception unwinds; a cancelled
        # one is the cancel's own.
        @cancellation.raise_if_requested unless attempt.stopped || attempt.cancelled
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

      # Engine listener (with the in-process state store): an attempt of this call
      # changed +target+'s circuit (a pool's host has its own).
      def on_circuit_change(target, from, to, reason, error_class)
        CircuitBreaker.announce(@config, Target.host_of(@targets, target), [from, to, reason], error_class)
      end
    end
  end
end
