# frozen_string_literal: true

require_relative "../cli" # the exit codes and what the commands share
require_relative "usage_error"

module LlmFailover
  class CLI
    # What every command of the `llm_failover` executable shares: its streams and
    # environment, loading the gem (only the commands that call a provider do), the
    # terminal checks. A command has a NAME, #parser(opts) and #run(argv), which
    # returns the exit code.
    class Command
      def initialize(out:, err:, input:, env:)
        @out = out
        @err = err
        @input = input
        @env = env
      end

      # @return [String] the command's `--help` text
      def help
        parser({}).help
      end

      private

      # The C extension is the one thing `require "llm_failover"` can miss on a checkout.
      def load_gem
        require_relative "../../llm_failover"
      rescue LoadError => e
        raise unless e.path.to_s.include?("llm_failover/llm_failover")

        raise UsageError, "the C extension is not built (run `bundle exec rake compile`): #{e.message}"
      end

      def print_help(parser)
        @out.puts(parser.help)
        OK
      end

      def error_line(message)
        @err.puts("llm_failover #{self.class::NAME}: #{message}")
      end

      def plural(count, word)
        "#{count} #{word}#{'s' unless count == 1}"
      end

      def tty?(io)
        io.respond_to?(:tty?) && io.tty?
      end

      # no-color.org: any non-empty NO_COLOR turns colors off.
      def color?(io)
        tty?(io) && @env["NO_COLOR"].to_s.empty? && @env["TERM"] != "dumb"
      end
    end
  end
end
