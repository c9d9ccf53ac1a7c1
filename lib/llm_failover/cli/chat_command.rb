# frozen_string_literal: true

require "optparse"
require_relative "command"
require_relative "usage_error"
require_relative "attempts_table"
require_relative "stream_printer"
require_relative "../chat/model_name"
require_relative "../chat/target"

module LlmFailover
  class CLI
    # `llm_failover chat`: asks a real provider, failing over to a backup when given.
    class ChatCommand < Command
      NAME = "chat"

      def parser(opts)
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

      def run(argv)
        opts = { stream: true }
        words = parser(opts).parse(argv)
        return print_help(parser(opts)) if opts[:help]

        backup_wanted = backup_given?(opts) # the shape of the command line before the environment
        primary = target(opts, :primary)
        backup = backup_wanted ? target(opts, :backup) : nil
        prompt = read_prompt(words)
        load_gem
        run_chat(opts, primary, backup, prompt)
      end

      private

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
          # A chat from a terminal keeps no accounts: no prices, and no warning about a
          # local model's missing one on stderr.
          c.prices = nil
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
        "answered by #{Target.label(reply.provider, reply.model)} after #{plural(reply.attempts.size, 'attempt')}, " \
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
    end
  end
end
