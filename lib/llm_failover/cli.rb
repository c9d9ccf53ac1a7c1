# frozen_string_literal: true

require "optparse"
require_relative "version"
require_relative "cli/usage_error"

module LlmFailover
  # The `llm_failover` command: `demo`, `chat`, `report`, `help`, `--version`.
  #
  # Exit codes: 0 ok, 1 a provider call failed, 2 a usage error (bad option, missing
  # key, unknown provider). User mistakes get one line on stderr, never a backtrace.
  # The gem itself (and its C extension) is loaded only by the commands that call a
  # provider, so `--version` and `help` work before `rake compile`.
  class CLI
    OK = 0
    FAILED = 1
    USAGE = 2
    INTERRUPTED = 130

    COMMANDS = %w[demo chat report health help].freeze
    # Each command's file under cli/, and its class (DemoCommand for demo_command).
    COMMAND_FILES = { "demo" => "demo_command", "chat" => "chat_command", "report" => "report_command",
                      "health" => "health_command" }.freeze

    # Printed where a backup's answer replaces a partial one that cannot be erased.
    RESET_MARKER = "[reset: primary failed mid-answer, backup answering]"

    # Providers the chat command knows without --base-url, and the variable holding each key.
    KNOWN_PROVIDERS = { "openai" => :openai, "anthropic" => :anthropic }.freeze

    ENV_NAME = /\A[A-Za-z_][A-Za-z0-9_]*\z/.freeze

    USAGE_TEXT = <<~TEXT
      Usage: llm_failover COMMAND [options]

      Commands:
        demo     fail over between two local fake providers (no keys, no network)
        chat     ask a real provider, with an optional backup
        report   usage and failover report from the ActiveRecord attempt log
        health   each target's circuit, as a fleet's Redis state store holds it
        help     this text, or `llm_failover help COMMAND`

      Options:
        -v, --version   print the version
        -h, --help      print this text

      Exit codes: 0 ok, 1 a provider call failed, 2 usage error.
    TEXT

    # Runs the command line and returns the exit code.
    # @param argv [Array<String>]
    # @return [Integer]
    def self.run(argv, out: $stdout, err: $stderr, input: $stdin, env: ENV)
      new(out: out, err: err, input: input, env: env).run(argv)
    end

    def initialize(out:, err:, input:, env:)
      @out = out
      @err = err
      @input = input
      @env = env
      @command = nil
    end

    # @return [Integer] the exit code
    def run(argv)
      argv = argv.dup
      @command = argv.shift
      dispatch(argv)
    rescue UsageError, OptionParser::ParseError => e
      hint = !e.respond_to?(:hint?) || e.hint?
      error_line(hint ? "#{e.message} (see `#{help_command}`)" : e.message)
      USAGE
    rescue Interrupt
      @err.puts
      INTERRUPTED
    rescue Errno::EPIPE
      OK # the reader went away (`llm_failover demo | head`): nothing left to say
    end

    private

    def dispatch(argv)
      case @command
      when nil
        @err.print(USAGE_TEXT)
        USAGE
      when "help", "-h", "--help" then help(argv)
      when "version", "-v", "--version"
        @out.puts("llm_failover #{VERSION}")
        OK
      else command(@command).run(argv)
      end
    end

    def help(argv)
      topic = argv.first
      if topic.nil?
        @out.print(USAGE_TEXT)
        return OK
      end
      raise UsageError, "no help for #{topic.inspect} (commands: #{COMMANDS.join(', ')})" unless COMMAND_FILES.key?(topic)
      return command(topic).run(["--help"]) if topic == "report" # Report::CLI prints its own

      @out.puts(command(topic).help)
      OK
    end

    # @return [Command] the command named +name+, its file loaded on first use
    def command(name)
      file = COMMAND_FILES.fetch(name) do
        raise UsageError, "unknown command #{name.inspect} (commands: #{COMMANDS.join(', ')})"
      end
      require_relative "cli/#{file}"
      CLI.const_get(file.split("_").map(&:capitalize).join).new(out: @out, err: @err, input: @input, env: @env)
    end

    def help_command
      COMMANDS.include?(@command) && @command != "help" ? "llm_failover help #{@command}" : "llm_failover help"
    end

    def error_line(message)
      prefix = COMMANDS.include?(@command) && @command != "help" ? "llm_failover #{@command}" : "llm_failover"
      @err.puts("#{prefix}: #{message}")
    end
  end
end
