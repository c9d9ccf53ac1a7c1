# frozen_string_literal: true

require_relative "values"
require_relative "circuit_windows"

module LlmFailover
  class Report
    # What the report says of circuits: the calls routed around each open one (from the
    # attempts table) and each incident's open -> closed span (from the circuit events
    # table, when the app has it). Uses Report's rows and query.
    #
    # @api private: included by Report
    module Circuits
      # @return [Array<OpenCircuit>] per provider and model, most calls first
      def open_circuits
        @open_circuits ||= query do
          t = rows.table
          rows.scan.where(rows.skipped).group(:provider, :model)
              .pluck(:provider, :model, t[:request_id].count(true), t[:started_at].minimum, t[:started_at].maximum)
              .map do |provider, model, calls, first, last|
                OpenCircuit.new(provider: provider, model: model, calls: calls.to_i, first_skip: rows.time(first),
                                last_skip: rows.time(last))
              end.sort_by { |c| [-c.calls, c.provider.to_s, c.model.to_s] }
        end
      end

      # Open -> closed spans of every target's circuit that overlap the period, in the order
      # they opened (an incident already open when the period began included); empty when
      # the circuit events table does not exist (an app that migrated before it).
      # @return [Array<CircuitWindow>]
      def circuit_windows
        @circuit_windows ||= @circuit_model.connection_pool.with_connection do
          next [] unless circuit_log?

          windows = CircuitWindows.new(events: @circuit_model, from: @from, to: @to).to_a
          windows.each do |w|
            span = w.opened_at...(w.closed_at || @to || Time.now)
            w.routed_around = query do
              rows.scope.where(rows.skipped).where(provider: w.provider, model: w.model, started_at: span).count
            end
          end
        end
      end

      # @return [Boolean] whether the circuit events table exists (apps that migrated
      #   before it have none)
      def circuit_log?
        @circuit_log = @circuit_model.connection_pool.with_connection { @circuit_model.table_exists? } if @circuit_log.nil?
        @circuit_log
      end

      # @return [String] the circuit events table's name
      def circuit_table_name
        @circuit_model.table_name
      end
    end
  end
end
