# frozen_string_literal: true

require_relative "tables"

module LlmFailover
  class Report
    # The report as aligned text tables: the title, the summary, then one section per
    # table.
    class Text
      SECTIONS = %i[failure_rates hosts saves features incident_windows tokens spend_summary spend spend_by_feature
                    spend_by_day failover_premium cache_hits hedges open_circuits circuit_windows].freeze

      # @param report [Report]
      def initialize(report)
        @report = report
      end

      # @return [String]
      def to_s
        tables = Tables.new(@report)
        sections = SECTIONS.map { |name| "#{Tables::TITLES.fetch(name)}\n#{tables.public_send(name)}" }
        [@report.title, tables.summary.to_s, *sections].join("\n\n") + "\n"
      end
    end
  end
end
