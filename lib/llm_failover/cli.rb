# frozen_string_literal: true

require "optparse"
require_relative "version"
require_relative "chat/model_name"
require_relative "cli/usage_error"
require_relative "cli/attempts_table"
require_relative "cli/stream_printer"

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
      when "demo" then demo(argv)
      when "chat" then chat(argv)
      when "report" then report(argv)
      when "health" then health(argv)
      else
        raise UsageError, "unknown command #{@command.inspect} (commands: #{COMMANDS.join(', ')})"
      end
    end

    def help(argv)
      topic = argv.first
      case topic
      when nil then @out.print(USAGE_TEXT)
      when "demo" then @out.puts(demo_parser({}).help)
      when "chat" then @out.puts(chat_parser({}).help)
      when "report" then return report(["--help"])
      when "health" then @out.puts(health_parser({}).help)
      else raise UsageError, "no help for #{topic.inspect} (commands: #{COMMANDS.join(', ')})"
      end
      OK
    end

    # --- demo ----------------------------------------------------------------------

    def demo_parser(opts)
      OptionParser.new do |o|
        o.banner = "Usage: llm_failover demo [--[no-]color]"
        o.separator ""
        o.separator "Starts two fake providers on loopback: the primary (OpenAI protocol) answers 503,"
        o.separator "then cuts its stream halfway; the backup (Anthropic protocol) is healthy. Streams"
        o.separator "the answer, shows the reset, and prints every attempt. No keys, no network."
        o.separator ""
        o.on("--[no-]color", "ANSI colors (default: when stdout is a terminal and NO_COLOR is unset)") do |v|
          opts[:color] = v
        end
        o.on("-h", "--help", "print this text") { opts[:help] = true }
      end
    end

    def demo(argv)
      opts = {}
      rest = demo_parser(opts).parse(argv)
      return print_help(demo_parser(opts)) if opts[:help]
      raise UsageError, "demo takes no arguments, got #{rest.first.inspect}" unless rest.empty?

      load_gem
      require_relative "cli/demo"
      Demo.new(out: @out, color: opts.fetch(:color) { color?(@out) }).run
    end

    # --- chat ----------------------------------------------------------------------

    def chat_parser(opts)
      OptionParser.new do |o|
        o.banner = 'Usage: llm_failover chat --model M --provider P [options] "prompt"'
        o.separator ""
        o.separator "Asks a real provider, failing over to the backup when given. Keys come from"
        o.separator "OPENAI_API_KEY and ANTHROPIC_API_KEY (or --api-key-env). The prompt may also be"
        o.separator "piped on stdin. Exit 0 answered, 1 the provider call failed, 2 usage error."
        o.separator ""
        o.on("--model MODEL", "the primary model, e.g. gpt-4o") { |v| opts[:model] = v }
        o.on("--provider NAME", "openai, anthropic, or any name together with --base-url") { |v| opts[:provider] = v }
        o.on("--backup-model MODEL", "the model to fail over to") { |v| opts[:backup_model] = v }
        o.on("--backup-provider NAME", "its provider") { |v| opts[:backup_provider] = v }
        o.on("--system TEXT", "system instructions") { |v| opts[:system] = v }
        o.on("--[no-]stream", "stream the answer as it comes (default), or print it when complete") do |v|
          opts[:stream] = v
        end
        o.on("--temperature T", Float, "sampling temperature") { |v| opts[:temperature] = v }
        o.on("--max-tokens N", Integer, "longest answer, in tokens") { |v| opts[:max_tokens] = v }
        o.on("--max-retries N", Integer, "retries of the same target before failing over (default 3)") do |v|
          opts[:max_retries] = v
        end
        o.separator ""
        o.separator "Other endpoints (OpenAI-compatible servers, proxies, local models):"
        o.on("--base-url URL", "the primary's base URL, e.g. https://api.groq.com/openai/v1") do |v|
          opts[:base_url] = v
        end
        o.on("--api API", %w[openai anthropic], "protocol spoken there: openai (default) or anthropic") do |v|
          opts[:api] = v
        end
        o.on("--api-key-env NAME", "variable holding the primary's key (default: PROVIDER_API_KEY)") do |v|
          opts[:api_key_env] = v
        end
        o.on("--backup-base-url URL", "the backup's base URL") { |v| opts[:backup_base_url] = v }
        o.on("--backup-api API", %w[openai anthropic], "protocol spoken there") { |v| opts[:backup_api] = v }
        o.on("--backup-api-key-env NAME", "variable holding the backup's key") { |v| opts[:backup_api_key_env] = v }
        o.separator ""
        o.on("--verbose", "print the targets and the attempts table on stderr") { opts[:verbose] = true }
        o.on("--[no-]color", "ANSI colors on a terminal (NO_COLOR is honoured)") { |v| opts[:color] = v }
        o.on("-h", "--help", "print this text") { opts[:help] = true }
      end
    end

    def chat(argv)
      opts = { stream: true }
      parser = chat_parser(opts)
      words = parser.parse(argv)
      return print_help(parser) if opts[:help]

      backup_wanted = backup_given?(opts) # the shape of the command line before the environment
      primary = target(opts, :primary)
      backup = backup_wanted ? target(opts, :backup) : nil
      prompt = read_prompt(words)
      load_gem
      run_chat(opts, primary, backup, prompt)
    end

    # The provider a role (:primary, :backup) names, with its key read from the
    # environment. The key's value goes to the gem, nowhere else (the core redacts what a
    # provider quotes back).
    def target(opts, role)
      prefix = role == :backup ? "backup_" : ""
      flag = role == :backup ? "--backup-" : "--"
      model = opts[:"#{prefix}model"]
      name = opts[:"#{prefix}provider"]
      raise UsageError, "missing #{flag}model" if ModelName.blank?(model)
      raise UsageError, "missing #{flag}provider" if name.nil? || name.strip.empty?

      base_url = opts[:"#{prefix}base_url"]
      api_name = opts[:"#{prefix}api"]
      if base_url.nil? && !KNOWN_PROVIDERS.key?(name)
        raise UsageError, "unknown provider #{name.inspect}: without #{flag}base-url only openai and anthropic " \
                          "are known"
      end
      api = api_name ? api_name.to_sym : KNOWN_PROVIDERS.fetch(name, :openai)
      key_env = opts[:"#{prefix}api_key_env"] || "#{name.upcase.gsub(/[^A-Z0-9]/, '_')}_API_KEY"
      raise UsageError, "#{flag}api-key-env: #{key_env.inspect} is not a variable name" unless key_env.match?(ENV_NAME)

      key = @env[key_env]
      if key.nil? || key.strip.empty?
        raise UsageError.new("set #{key_env} to the API key for provider #{name}", hint: false)
      end

      { role: role, name: name.to_sym, api: api, base_url: base_url, key: key, key_env: key_env, model: model }
    end

    def backup_given?(opts)
      given = %i[backup_model backup_provider].select { |k| opts[k] }
      extras = %i[backup_base_url backup_api backup_api_key_env].select { |k| opts[k] }
      if given.empty?
        return false if extras.empty?

        raise UsageError, "--#{extras.first.to_s.tr('_', '-')} needs --backup-model and --backup-provider"
      end
      if given.size == 1
        missing = given.first == :backup_model ? "--backup-provider" : "--backup-model"
        raise UsageError, "#{missing} is missing: a backup needs both a model and a provider"
      end
      true
    end

    def read_prompt(words)
      text = if words.empty? || words == ["-"]
               raise UsageError, 'give a prompt: llm_failover chat ... "prompt" (or pipe it on stdin)' if tty?(@input)

               @input.read.to_s
             else
               words.join(" ")
             end
      raise UsageError, "the prompt is empty" if text.strip.empty?

      text
    end

    def run_chat(opts, primary, backup, prompt)
      providers = configure_providers([primary, backup].compact)
      color = opts.fetch(:color) { color?(@err) }
      show_targets(primary, backup, providers) if opts[:verbose]

      chat = build_chat(opts, primary, backup)
      printer = opts[:stream] ? StreamPrinter.new(@out, err: @err, color: color) : nil
      reply = printer ? chat.ask(prompt) { |chunk| printer.call(chunk) } : chat.ask(prompt)
      printer ? printer.finish : @out.puts(reply.content)
      report_attempts(reply.attempts, color: color, summary: summary(reply)) if opts[:verbose]
      OK
    rescue LlmFailover::Error => e
      printer&.finish
      error_line("#{e.class.name}: #{e.message}")
      report_attempts(e.attempts, color: color)
      FAILED
    end

    # Both roles may name one provider; it must then be declared the same way twice.
    def configure_providers(targets)
      providers = {}
      targets.each do |t|
        declared = t.slice(:api, :base_url, :key)
        if providers.key?(t[:name]) && providers[t[:name]] != declared
          raise UsageError, "provider #{t[:name]} is given two different endpoints or keys; name the backup differently"
        end

        providers[t[:name]] = declared
      end
      LlmFailover.configure do |c|
        providers.each do |name, p|
          c.provider name, api: p[:api], api_key: p[:key], base_url: p[:base_url]
        end
      end
      LlmFailover.configuration.providers
    rescue LlmFailover::ConfigurationError => e
      raise UsageError, e.message
    end

    def build_chat(opts, primary, backup)
      overrides = opts.slice(:max_retries, :temperature, :max_tokens, :system)
      LlmFailover.chat(model: primary[:model], provider: primary[:name],
                       backup_model: backup&.fetch(:model), backup_provider: backup&.fetch(:name),
                       feature: "cli", **overrides)
    rescue LlmFailover::ConfigurationError, LlmFailover::ModelNotFoundError, ArgumentError => e
      raise UsageError, e.message
    end

    # Names the key's variable, never its value.
    def show_targets(primary, backup, providers)
      [primary, backup].compact.each do |t|
        config = providers.fetch(t[:name])
        @err.puts("llm_failover: #{t[:role]} #{t[:name]}/#{t[:model]} (#{config.api} protocol) at " \
                  "#{config.base_url}, key from $#{t[:key_env]}")
      end
    end

    def summary(reply)
      "answered by #{reply.provider}/#{reply.model} after #{plural(reply.attempts.size, 'attempt')}, " \
        "failover: #{reply.failover? ? 'yes' : 'no'} " \
        "(tokens: #{reply.input_tokens || '?'} in, #{reply.output_tokens || '?'} out)"
    end

    def report_attempts(records, color:, summary: nil)
      records = Array(records)
      unless records.empty?
        @err.puts
        AttemptsTable.new(records, color: color).lines.each { |line| @err.puts(line) }
      end
      @err.puts(summary) if summary
    end

    # --- report --------------------------------------------------------------------

    def report(argv)
      begin
        require_relative "report/cli"
      rescue LoadError => e
        error_line("report needs the ActiveRecord integration (#{e.message})")
        return USAGE
      end
      code = LlmFailover::Report::CLI.run(argv, out: @out, err: @err)
      code.is_a?(Integer) ? code : OK
    end

    # --- helpers -------------------------------------------------------------------

    # The C extension is the one thing `require "llm_failover"` can miss on a checkout.
    def health_parser(opts)
      OptionParser.new do |o|
        o.banner = "Usage: llm_failover health [--redis-url URL] [--namespace NAME]\n\n" \
                   "Each target's circuit (state, consecutive failures, opened at, cooldown until, last error)\n" \
                   "from a RedisStateStore. A MemoryStateStore lives inside each process: ask it there\n" \
                   "with LlmFailover.health.\n\n"
        o.on("--redis-url URL", "the store's Redis (default: $REDIS_URL)") { |v| opts[:url] = v }
        o.on("--namespace NAME", "the store's namespace (default: llm_failover)") { |v| opts[:namespace] = v }
      end
    end

    def health(argv)
      opts = {}
      health_parser(opts).parse!(argv)
      raise UsageError, "unexpected argument #{argv.first.inspect}" unless argv.empty?

      url = opts[:url] || @env["REDIS_URL"]
      raise UsageError, "no Redis to read: pass --redis-url or set REDIS_URL" if url.nil? || url.empty?

      load_gem
      require "logger"
      require_relative "report/table"
      store = LlmFailover::RedisStateStore.new(url: url, namespace: opts[:namespace] || "llm_failover",
                                               logger: Logger.new(@err, formatter: ->(*, msg) { "#{msg}\n" }))
      targets = store.health
      return FAILED unless store.connected? # the store's warning said why, on stderr
      at = ->(t) { t&.utc&.strftime("%Y-%m-%d %H:%M:%S") }
      @out.puts(LlmFailover::Report::Table.new(
        %w[provider model state failures opened_at cooldown_until last_error],
        targets.map { |h|
          [h[:provider], h[:model], h[:state], h[:failures], at.call(h[:opened_at]), at.call(h[:cooldown_until]),
           h[:last_error]&.delete_prefix("LlmFailover::")]
        }
      ).to_s)
      OK
    end

    def load_gem
      require_relative "../llm_failover"
    rescue LoadError => e
      raise unless e.path.to_s.include?("llm_failover/llm_failover")

      raise UsageError, "the C extension is not built (run `bundle exec rake compile`): #{e.message}"
    end

    def help_command
      COMMANDS.include?(@command) && @command != "help" ? "llm_failover help #{@command}" : "llm_failover help"
    end

    def print_help(parser)
      @out.puts(parser.help)
      OK
    end

    def error_line(message)
      prefix = COMMANDS.include?(@command) && @command != "help" ? "llm_failover #{@command}" : "llm_failover"
      @err.puts("#{prefix}: #{message}")
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
