# frozen_string_literal: true

module LlmFailover
  class Report
    # A plain-text table with aligned columns: numbers to the right, text to the left.
    class Table
      # @param headers [Array<String>]
      # @param rows [Array<Array>] cells are printed with #to_s (nil as "-"); a column of
      #   Numerics, percentages ("12.5%") and dollars ("$0.0042") is a number column. Other Strings are text
      #   even when they look like numbers: a request id's prefix may be all digits.
      def initialize(headers, rows)
        @headers = headers.map(&:to_s)
        @numeric = @headers.each_index.map do |i|
          rows.any? && rows.all? { |row| number?(row[i]) }
        end
        @rows = rows.map { |row| row.map { |cell| cell.nil? ? "-" : cell.to_s } }
      end

      # @return [Array<String>]
      attr_reader :headers

      # @return [Array<Array<String>>] the cells as printed
      attr_reader :rows

      # @return [Boolean] whether column +index+ holds numbers (printed to the right)
      def numeric?(index)
        @numeric[index]
      end

      # @return [String] header, rule, rows; "(none)" under the rule when empty
      def to_s
        lines.join("\n")
      end

      # @param rule [Boolean] a rule under the header, and "(none)" under it when empty
      # @yield [text, row, column] each cell padded to its column (row nil for the
      #   header); what the block returns is printed instead (to color it)
      # @return [Array<String>]
      def lines(rule: true, &paint)
        widths = @headers.each_index.map { |i| ([@headers[i]] + @rows.map { |r| r[i] }).map(&:length).max }
        out = [line(@headers, widths, nil, paint)]
        out << widths.map { |w| "-" * w }.join("  ") if rule
        @rows.each_with_index { |row, r| out << line(row, widths, r, paint) }
        out << "(none)" if rule && @rows.empty?
        out
      end

      private

      def line(cells, widths, row, paint)
        last = cells.size - 1
        cells.each_with_index.map do |cell, i|
          text = @numeric[i] ? cell.rjust(widths[i]) : cell.ljust(widths[i])
          text = text.rstrip if i == last
          paint ? paint.call(text, row, i) : text
        end.join("  ").rstrip
      end

      def number?(cell)
        cell.nil? || cell.is_a?(Numeric) || (cell.is_a?(String) && cell.match?(/\A(-?[\d.,]+%|-?\$[\d.,]+)\z/))
      end
    end
  end
end
