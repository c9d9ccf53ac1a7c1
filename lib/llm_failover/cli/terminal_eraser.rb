# frozen_string_literal: true

module LlmFailover
  class CLI
    # Builds the ANSI sequence that erases text printed from column 0, counting the
    # rows it took (its newlines and the terminal's wraps). Wide characters count as
    # one column, and rows already scrolled off the top cannot be reached: both rare
    # enough for a partial answer.
    module TerminalEraser
      # @return [String] carriage return, cursor up, clear to the end of the screen
      def self.sequence(text, width:)
        rows = 0
        column = 0
        text.each_char do |ch|
          case ch
          when "\n"
            rows += 1
            column = 0
          when "\r"
            column = 0
          else
            if column >= width # the terminal wraps when the next character comes
              rows += 1
              column = 0
            end
            column = ch == "\t" ? [(column / 8 + 1) * 8, width].min : column + 1
          end
        end
        "\r#{rows.positive? ? "\e[#{rows}A" : ''}\e[J"
      end
    end
  end
end
