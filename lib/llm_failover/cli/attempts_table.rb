# frozen_string_literal: true

require_relative "../report/table"
require_relative "style"

module LlmFailover
  class CLI
    # The attempts of one call as an aligned plain-text table (Report::Table's layout,
    # without its rule), success and error colored when colors are on.
    class AttemptsTable
      HEADERS = ["request_id", "attempt", "provider", "model", "success", "error", "latency ms"].freeze
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

      def initialize(records, color: false)
        @records = records
        @color = color
      end

      # @return [Array<String>] the header line and one line per attempt
      def lines
        Report::Table.new(HEADERS, @records.map { |r| row(r) }).lines(rule: false) do |text, row, column|
          Style.paint(text, style(row, column), @color)
        end
      end

      private

      def row(record)
        [record.request_id.to_s[0, ID_LENGTH], record.attempt, record.provider, record.model,
         record.success ? "yes" : "no", self.class.error_text(record), record.latency_ms&.round]
      end

      # row: nil for the header
      def style(row, column)
        return :bold if row.nil?
        return nil unless column == 4 || column == 5

        @records[row].success ? :green : :red
      end
    end
  end
end
