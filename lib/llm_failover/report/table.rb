# frozen_string_literal: true

module LlmFailover
  class Report
    # A plain-text table with aligned columns: numbers to the right, text to the left.
    class Table
      # @param headers [Array<String>]
      # @param rows [Array<Array>] cells are printed with #to_s (nil as "-")
      def initialize(headers, rows)
        @headers = headers.map(&:to_s)
        @rows = rows.map { |row| row.map { |cell| cell.nil? ? "-" : cell.to_s } }
        @numeric = @headers.each_index.map do |i|
          @rows.any? && @rows.all? { |row| row[i] == "-" || row[i].match?(/\A-?[\d.,]+%?\z/) }
        end
      end

      # @return [String] header, rule, rows; "(none)" under the rule when empty
      def to_s
        widths = @headers.each_index.map { |i| ([@headers[i]] + @rows.map { |r| r[i] }).map(&:length).max }
        lines = [line(@headers, widths), widths.map { |w| "-" * w }.join("  ")]
        lines.concat(@rows.map { |row| line(row, widths) })
        lines << "(none)" if @rows.empty?
        lines.join("\n")
      end

      private

      def line(cells, widths)
        cells.each_with_index.map { |cell, i| @numeric[i] ? cell.rjust(widths[i]) : cell.ljust(widths[i]) }
             .join("  ").rstrip
      end
    end
  end
end
