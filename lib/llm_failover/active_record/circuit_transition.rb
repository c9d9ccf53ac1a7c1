# frozen_string_literal: true

require "active_record"
require_relative "../chat/target"

module LlmFailover
  module ActiveRecord
    # One row of llm_failover_circuit_events: a target's circuit changed state (see
    # CircuitEvent). Written by CircuitLog, read by Report#circuit_windows. Subclass it
    # to use another table or database, as with Attempt.
    class CircuitTransition < ::ActiveRecord::Base
      self.table_name = "llm_failover_circuit_events"

      # @return [String] "provider/model"
      def target
        Target.label(provider, model)
      end
    end
  end
end
