# frozen_string_literal: true

require_relative "style"
require_relative "terminal_eraser"

module LlmFailover
  class CLI
    # Prints streamed chunks. On a reset it erases the partial answer when the output
    # is a terminal, and otherwise marks where the backup's answer starts.
    class StreamPrinter
      def initialize(out, err:, color:)
        @out = out
        @err = err
        @color = color
        @tty = out.respond_to?(:tty?) && out.tty?
        @shown = +""
        @last = nil
      end

      def call(chunk)
        if chunk.reset?
          reset
        else
          @out.print(chunk.content)
          @out.flush
          @shown << chunk.content
          @last = chunk.content[-1] unless chunk.content.empty?
        end
      end

      # Ends the answer on its own line.
      def finish
        @out.print("\n") if @last && @last != "\n"
        @out.flush
        @last = nil
      end

      private

      def reset
        if @tty
          @out.print(TerminalEraser.sequence(@shown, width: terminal_width))
          @out.flush
          @err.puts(Style.paint(RESET_MARKER, :yellow, @color))
        else
          @out.print("\n#{RESET_MARKER}\n")
          @out.flush
        end
        @shown = +""
        @last = nil
      end

      def terminal_width
        require "io/console"
        width = @out.winsize[1]
        width.positive? ? width : 80
      rescue StandardError
        80
      end
    end
  end
end
