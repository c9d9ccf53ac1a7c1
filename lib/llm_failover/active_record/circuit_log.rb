# frozen_string_literal: true

require_relative "surviving_write"

module LlmFailover
  module ActiveRecord
    # Writes one llm_failover_circuit_events row per circuit change, so that the report
    # shows real open -> closed spans:
    #
    #   LlmFailover.configure { |c| c.circuit_log = LlmFailover::ActiveRecord::CircuitLog.new }
    #
    # Each change is written by the one process that made it: with a RedisStateStore,
    # the process whose atomic script moved the shared circuit (while Redis is
    # unreachable, each process's own state changes, and each writes its own).
    class CircuitLog
      include SurvivingWrite

      # @param model [Class, nil] a CircuitTransition (sub)class; nil: CircuitTransition,
      #   looked up at the first write (an initializer must not load ActiveRecord::Base)
      # @param survive_rollback [Boolean] rewrite rows a caller's rollback took away
      def initialize(model: nil, survive_rollback: true)
        @model = model
        @survive_rollback = survive_rollback
      end

      # Writes +event+ (a CircuitEvent).
      # @return [nil]
      def call(event)
        write(provider: event.provider.to_s, model: event.model, from_state: event.from.to_s,
              to_state: event.to.to_s, reason: event.reason.to_s, error_class: event.error_class,
              occurred_at: event.at)
        nil
      end

      def inspect
        "#<#{self.class.name} #{@model ? @model.name : 'CircuitTransition'}>"
      end

      private

      def model
        @model ||= CircuitTransition
      end
    end
  end
end
