# frozen_string_literal: true

require "optparse"
require_relative "command"
require_relative "usage_error"

module LlmFailover
  class CLI
    # `llm_failover demo`: one failover between two local fake providers (CLI::Demo).
    class DemoCommand < Command
      NAME = "demo"

      def parser(opts)
        OptionParser.new do |o|
          o.banner = "Usage: llm_failover demo [--tools] [--[no-]color]"
          o.separator ""
          o.separator "Starts two fake providers on loopback: the primary (OpenAI protocol) answers 503,"
          o.separator "then cuts its stream halfway; the backup (Anthropic protocol) is healthy. Streams"
          o.separator "the answer, shows the reset, and prints every attempt. No keys, no network."
          o.separator "With --tools: the primary asks for a tool, the tool runs, the primary dies on the"
          o.separator "next turn, and the backup finishes the loop in its own protocol; the tool ran once."
          o.separator ""
          o.on("--tools", "the tool loop scene") { opts[:tools] = true }
          o.on("--[no-]color", "ANSI colors (default: when stdout is a terminal and NO_COLOR is unset)") do |v|
            opts[:color] = v
          end
          o.on("-h", "--help", "print this text") { opts[:help] = true }
        end
      end

      def run(argv)
        opts = {}
        rest = parser(opts).parse(argv)
        return print_help(parser(opts)) if opts[:help]
        raise UsageError, "demo takes no arguments, got #{rest.first.inspect}" unless rest.empty?

        load_gem
        require_relative(opts[:tools] ? "tools_demo" : "demo")
        (opts[:tools] ? ToolsDemo : Demo).new(out: @out, color: opts.fetch(:color) { color?(@out) }).run
      end
    end
  end
end
