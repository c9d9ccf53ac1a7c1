# frozen_string_literal: true

require_relative "../../llm_failover"
require_relative "../testing"
require_relative "../cli"
require_relative "attempts_table"
require_relative "style"
require_relative "../chat/target"

module LlmFailover
  # `llm_failover demo`: one failover, end to end, with no keys and no network.
  #
  # Two FakeProviders on loopback stand in for OpenAI and Anthropic. The primary answers
  # 503 (the gem retries it), then starts streaming and drops the connection halfway
  # (the gem resets the partial answer and fails over); the backup answers. The demo
  # streams all of it, then prints every attempt the gem recorded.
  #
  # It configures the gem process-wide (LlmFailover.configure), so it belongs in a
  # process of its own, as the command runs it.
  class Demo
    PROMPT = "Why keep a backup LLM provider?"
    PRIMARY = { provider: :openai, model: "gpt-4o", protocol: "OpenAI" }.freeze
    BACKUP = { provider: :anthropic, model: "claude-sonnet-4-6", protocol: "Anthropic" }.freeze
    PRIMARY_TEXT = "Every provider has bad minutes: rate limits, overloads and outages " \
                   "reach all of them sooner or later, so an app that depends on one provider " \
                   "goes down with it."
    # Words the primary streams before its connection drops.
    CUT_AFTER = 8
    BACKUP_TEXT = "Because every provider has bad minutes. With a backup your app keeps answering: " \
                  "the gem retries where that helps, fails over where it does not, and records " \
                  "every attempt so the failover never hides what went wrong."

    # @param out [IO] where the demo writes
    # @param color [Boolean] ANSI colors
    # @param chunk_delay [Float] seconds between streamed words, so a reader sees them come
    # @param retry_interval [Float] seconds before the retry of the 503
    def initialize(out:, color: false, chunk_delay: 0.02, retry_interval: 0.15)
      @out = out
      @color = color
      @chunk_delay = chunk_delay
      @retry_interval = retry_interval
    end

    # @return [Integer] the exit code: 0 answered, 1 the call failed
    def run
      @primary = Testing::FakeProvider.start(**primary_server)
      @backup = Testing::FakeProvider.start
      script
      configure
      intro
      reply = ask
      outcome(reply)
      CLI::OK
    rescue Error => e
      @out.puts
      @out.puts(paint("the call failed: #{e.class.name}: #{e.message}", :red))
      table(e.attempts)
      CLI::FAILED
    ensure
      [@primary, @backup].compact.each(&:stop)
    end

    private

    # The primary FakeProvider's options (HostsDemo: the AWS credentials it checks).
    def primary_server
      {}
    end

    def script
      @primary.enqueue({ error: :unavailable },
                       { text: PRIMARY_TEXT, cut_after: CUT_AFTER, chunk_delay: @chunk_delay,
                         headers: { "x-request-id" => "req_demo_primary" } })
      @backup.default = { text: BACKUP_TEXT, chunk_delay: @chunk_delay, usage: { input: 14, output: 38 },
                          headers: { "request-id" => "req_demo_backup" } }
    end

    def configure
      LlmFailover.configure do |c|
        providers(c)
        c.max_retries = 3
        c.retry_interval = @retry_interval
        c.retry_interval_randomness = 0
        c.connect_timeout = 2
        c.first_token_timeout = 5
        c.idle_timeout = 5
        c.request_timeout = 30
        c.usage_log = ->(record) { live_note(record) }
      end
    end

    def providers(config)
      # FakeProviders take any key; these are not secrets.
      config.provider PRIMARY[:provider], api: :openai, api_key: "demo-key", base_url: @primary.base_url(:openai)
      config.provider BACKUP[:provider], api: :anthropic, api_key: "demo-key", base_url: @backup.base_url(:anthropic)
    end

    def intro
      @out.puts(paint(title, :bold))
      rows = provider_rows
      widths = rows.transpose.map { |column| column.map(&:length).max }
      rows.each do |row|
        @out.puts("  #{row.each_with_index.map { |cell, i| cell.ljust(widths[i]) }.join('  ').rstrip}")
      end
      @out.puts
      @out.puts(paint("> #{self.class::PROMPT}", :cyan))
      @out.puts
      @out.flush
    end

    def title
      "llm_failover demo: two fake providers on loopback (no keys, no network)"
    end

    # One row per provider: role, label, protocol, what it is scripted to do.
    def provider_rows
      [["primary", label(PRIMARY), "#{PRIMARY[:protocol]} protocol", @primary.base_url(:openai),
        "scripted: 503, then a stream cut after #{CUT_AFTER} words"],
       ["backup", label(BACKUP), "#{BACKUP[:protocol]} protocol", @backup.base_url(:anthropic), "healthy"]]
    end

    def ask
      @answer_started = false
      primary = self.class::PRIMARY
      backup = self.class::BACKUP
      chat = LlmFailover.chat(model: primary[:model], provider: primary[:provider],
                              backup_model: backup[:model], backup_provider: backup[:provider], feature: "demo")
      reply = prepare(chat).ask(self.class::PROMPT) { |chunk| show(chunk) }
      @out.puts
      reply
    end

    # What a demo adds to the chat before it asks (ToolsDemo: its tool).
    def prepare(chat)
      chat
    end

    def show(chunk)
      if chunk.reset?
        @out.print("\n#{paint(CLI::RESET_MARKER, :yellow)}\n")
      else
        @answer_started = true
        @out.print(chunk.content)
      end
      @out.flush
    end

    # A failure before any word of the answer shows up would otherwise be silent:
    # show it as it happens. Later ones are in the table.
    def live_note(record)
      return if record.success || @answer_started

      error = CLI::AttemptsTable.error_text(record)
      @out.puts(paint("[attempt #{record.attempt}: #{Target.label(record.provider, record.model)} failed with #{error}]", :dim))
      @out.flush
    rescue Errno::EPIPE, IOError
      nil # the reader went away; the next chunk's write ends the demo
    end

    def outcome(reply)
      @out.puts
      table(reply.attempts)
      @out.puts
      @out.puts(paint("answered by #{Target.label(reply.provider, reply.model)} after #{reply.attempts.size} attempts, " \
                      "failover: #{reply.failover? ? 'yes' : 'no'} " \
                      "(tokens: #{reply.input_tokens} in, #{reply.output_tokens} out)", :bold))
      @out.puts(paint(for_real, :dim))
    end

    def for_real
      "For real: llm_failover chat --model gpt-4o --provider openai " \
        "--backup-model claude-sonnet-4-6 --backup-provider anthropic \"Hello\""
    end

    def table(records)
      CLI::AttemptsTable.new(Array(records), color: @color, **table_columns).lines.each { |line| @out.puts(line) }
    end

    # AttemptsTable's optional columns (HostsDemo: protocols and costs).
    def table_columns
      {}
    end

    def label(target)
      Target.label(target[:provider], target[:model])
    end

    def paint(text, style)
      CLI::Style.paint(text, style, @color)
    end
  end
end
