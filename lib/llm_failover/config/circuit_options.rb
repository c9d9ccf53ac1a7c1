# frozen_string_literal: true

require_relative "../errors"

module LlmFailover
  class Configuration
    # The circuit breaker's options: when a circuit opens and probes, where its state
    # lives, who hears of its changes.
    #
    # @api private: included by Configuration
    module CircuitOptions
      # Consecutive counted failed attempts of one target that open its circuit; 0
      # turns the breaker off.
      def circuit_threshold=(value)
        @circuit_threshold = integer(:circuit_threshold, value, min: 0)
        @engine_policy = nil
      end

      # Seconds a circuit stays open before one request probes it (fractions allowed).
      def circuit_cooldown=(value)
        @circuit_cooldown = number(:circuit_cooldown, value, positive: true)
        @engine_policy = nil
      end

      # Seconds an opened circuit waits before its first half-open probe. Later waits
      # grow with the outage (a sixth of its age so far, at least this, at most
      # circuit_cooldown: lf_circuit_interval, in the C core), so that a target is back
      # in use within a sixth of its outage. A value at or above circuit_cooldown keeps
      # the fixed schedule of one probe per cooldown.
      def circuit_first_probe=(value)
        @circuit_first_probe = number(:circuit_first_probe, value, positive: true)
        @engine_policy = nil
      end

      # Where circuit state lives: a MemoryStateStore (per process, the default), a
      # RedisStateStore (a fleet), or any object speaking their protocol.
      def state_store=(value)
        missing = %i[admit record health claim].reject { |m| value.respond_to?(m) }
        unless missing.empty?
          raise ConfigurationError, "state_store must respond to #{missing.join(', ')} " \
                                    "(a LlmFailover::MemoryStateStore or RedisStateStore), got #{value.class}"
        end

        @state_store = value
      end

      # A callable given a CircuitEvent whenever a target's circuit changes state.
      def on_circuit_change=(value)
        @on_circuit_change = callable_or_nil(:on_circuit_change, value)
      end

      # Where circuit changes are persisted (LlmFailover::ActiveRecord::CircuitLog, or any
      # #call(CircuitEvent)); a failing log is logged, never raised.
      def circuit_log=(value)
        @circuit_log = callable_or_nil(:circuit_log, value)
      end
    end
  end
end
