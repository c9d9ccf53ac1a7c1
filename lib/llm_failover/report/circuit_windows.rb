# frozen_string_literal: true

require_relative "values"

module LlmFailover
  class Report
    # A period's circuit incidents, read from the persisted transitions (CircuitLog's
    # table): one CircuitWindow per closed -> open -> closed span of a target's circuit
    # that overlaps the period, an incident already open when the period began included.
    # Report#circuit_windows adds the calls each window routed around.
    class CircuitWindows
      # @param events [Class] the CircuitTransition model (or a subclass)
      # @param from [Time, nil] the period's start (nil: from the beginning)
      # @param to [Time, nil] the period's end (nil: up to now)
      def initialize(events:, from:, to:)
        @events = events
        @from = from
        @to = to
      end

      # @return [Array<CircuitWindow>] in the order they opened, without routed_around
      def to_a
        spans(circuit_rows).reject { |w| @from && w.closed_at && w.closed_at < @from }
      end

      private

      # The transitions that make the period's windows, in time order: from the opening of
      # the earliest incident still open when the period began.
      def circuit_rows
        events = @events.all
        t = @events.arel_table[:occurred_at]
        start = carried_in_opening
        events = events.where(t.gteq(start)) if start
        events = events.where(t.lt(@to)) if @to
        events.order(:occurred_at, :id).pluck(:provider, :model, :from_state, :to_state, :reason, :error_class, :occurred_at)
      end

      # When the earliest incident open at @from began (or @from itself, when none was).
      def carried_in_opening
        return nil unless @from

        before = @events.where(@events.arel_table[:occurred_at].lt(@from)).group(:provider, :model)
        opened = before.where(from_state: "closed").maximum(:occurred_at)
        closed = before.where(to_state: "closed").maximum(:occurred_at)
        ([@from] + opened.filter_map { |key, at| at if closed[key].nil? || closed[key] < at }).min
      end

      # Transitions into windows: a target's window opens on closed -> open and ends on
      # the change back to closed. While a fleet's Redis was unreachable each process kept
      # its own circuit: an opening inside an open window is part of that window.
      def spans(events)
        open = {}
        events.each_with_object([]) do |(provider, model, from_state, to_state, reason, error_class, at), windows|
          key = [provider, model]
          window = open[key]
          if window.nil? && to_state != "closed"
            window = open[key] = CircuitWindow.new(provider: provider, model: model, opened_at: at, reason: reason,
                                                   error_class: error_class, reopens: 0)
            windows << window
          elsif window && to_state == "closed"
            window.closed_at = at
            open.delete(key)
          elsif window && reason == "probe_failed"
            window.reopens += 1
          end
        end
      end
    end
  end
end
