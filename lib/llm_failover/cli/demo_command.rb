# frozen_string_literal: true

require "optparse"
require_relative "command"
require_relative "usage_error"

module LlmFailover
  class CLI
    # `llm_failover demo`: one failover between two local fake providers (CLI::Demo).
    class DemoCommand < Command
      NAME = "demo"
      # Each scene's file and class; nil is the default one.
      SCENES = { nil => ["demo", :Demo], tools: ["tools_demo", :ToolsDemo], hosts: ["hosts_demo", :HostsDemo] }.freeze

      def parser(opts)
        OptionParser.new do |o|
          o.banner = "Usage: llm_failover demo [--tools | --hosts] [--[no-]color]"
          o.separator ""
          o.separator "Starts two fake providers on loopback: the primary (OpenAI protocol) answers 503,"
          o.separator "then cuts its stream halfway; the backup (Anthropic protocol) is healthy. Streams"
          o.separator "the answer, shows the reset, and prints every attempt. No keys, no network."
          o.separator "With --tools: the primary asks for a tool, the tool runs, the primary dies on the"
          o.separator "next turn, and the backup finishes the loop in its own protocol; the tool ran once."
          o.separator "With --hosts: the primary speaks Bedrock Converse, signed with SigV4, and cuts its"
          o.separator "stream; the backup answers on OpenAI's Responses API. The table shows each"
          o.separator "attempt's protocol and cost."
          o.separator ""
          o.on("--tools", "the tool loop scene") { scene(opts, :tools) }
          o.on("--hosts", "the cross-host scene: Bedrock to the Responses API") { scene(opts, :hosts) }
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
        file, name = SCENES.fetch(opts[:scene])
        require_relative(file)
        LlmFailover.const_get(name).new(out: @out, color: opts.fetch(:color) { color?(@out) }).run
      end

      private

      def scene(opts, name)
        raise UsageError, "demo plays one scene: --#{opts[:scene]} or --#{name}" if opts[:scene] && opts[:scene] != name

        opts[:scene] = name
      end
    end
  end
end
