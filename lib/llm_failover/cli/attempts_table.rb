# frozen_string_literal: true

require_relative "../report/table"
require_relative "../report/tables"
require_relative "style"

module LlmFailover
  class CLI
    # The attempts of one call as an aligned plain-text table (Report::Table's layout,
    # without its rule), success and error colored when colors are on. Optional columns:
    # the protocol each attempt's host speaks, and its cost ("-" where no price is known).
    class AttemptsTable
      HEADERS = ["request_id", "attempt", "provider", "model", "success", "error", "latency ms"].freeze
      # The protocol column's place: after the model.
      PROTOCOL_AT = HEADERS.index("model") + 1
      ID_LENGTH = 8

      # The short class name, and the status when it says something (a stream that
      # broke after 200 OK is not a "200 error"). "" for a success.
      # @return [String]
      def self.error_text(record)
        return "" if record.success

        name = record.error_class.to_s.sub(/\ALlmFailover::/, "")
        name = "error" if name.empty?
        status = record.http_status
        status && status.to_i >= 400 ? "#{name} #{status}" : name
      end

      # @param records [Array<AttemptRecord>]
      # @param protocols [Hash{Symbol => #to_s}, nil] provider entry => the protocol it
      #   speaks (its api); a protocol column after the model when given
      # @param costs [Boolean] a cost column (USD) at the end
      def initialize(records, color: false, protocols: nil, costs: false)
        @records = records
        @color = color
        @protocols = protocols
        @costs = costs
      end

      # @return [Array<String>] the header line and one line per attempt
      def lines
        headers = HEADERS.dup
        headers.insert(PROTOCOL_AT, "protocol") if @protocols
        headers << "cost" if @costs
        colored = [headers.index("success"), headers.index("error")]
        Report::Table.new(headers, @records.map { |r| row(r) }).lines(rule: false) do |text, row, column|
          Style.paint(text, style(row, colored.include?(column)), @color)
        end
      end

      private

      def row(record)
        cells = [record.request_id.to_s[0, ID_LENGTH], record.attempt, record.provider, record.model,
                 record.success ? "yes" : "no", self.class.error_text(record), record.latency_ms&.round]
        cells.insert(PROTOCOL_AT, @protocols[record.host || record.provider]) if @protocols
        cells << (record.cost && Report::Tables.usd(record.cost)) if @costs
        cells
      end

      # row: nil for the header
      def style(row, colored)
        return :bold if row.nil?
        return nil unless colored

        @records[row].success ? :green : :red
      end
    end
  end
end
