# frozen_string_literal: true

module LlmFailover
  class CLI
    # ANSI styles, or nothing when colors are off.
    module Style
      CODES = { bold: 1, dim: 2, red: 31, green: 32, yellow: 33, cyan: 36 }.freeze

      # @return [String] +text+ wrapped in the style's escape codes when +color+ is true
      def self.paint(text, style, color)
        return text unless color && style

        "\e[#{CODES.fetch(style)}m#{text}\e[0m"
      end
    end
  end
end
