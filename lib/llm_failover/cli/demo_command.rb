# frozen_string_literal: true

require "optparse"
require_relative "command"
require_relative "usage_error"

module LlmFailover
  class CLI
    # `llm_failover demo`: one failover between two local fake providers (CLI::Demo);
    # `llm_failover demo --tools`: a tool loop across a failover (ToolsDemo).
    class DemoCommand < Command
      NAME = "demo"

      def parser(opts)
        OptionParser.new do |o|
          o.banner = "Usage: llm_failover demo [--tools] [--[no-]color]"
          o.separator ""
          o.separator "Starts two fake providers on loopback: the primary (OpenAI protocol) answers 503,"
          o.separator "then cuts its stream halfway; the backup (Anthropic protocol) is healthy. Streams"
          o.separator "the answer, shows the reset, and prints every attempt. No keys, no network."
          o.separator ""
          o.on("--tools", "the tool scene: the primary asks for a tool, the tool runs, the primary dies on the",
               "next turn, the backup (the other protocol) finishes the loop; the tool runs once") do
            opts[:tools] = true
          end
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
        color = opts.fetch(:color) { color?(@out) }
        if opts[:tools]
          require_relative "tools_demo"
          return ToolsDemo.new(out: @out, color: color).run
        end

        require_relative "demo"
        Demo.new(out: @out, color: color).run
      end
    end
  end
end
