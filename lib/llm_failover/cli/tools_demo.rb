# frozen_string_literal: true

require_relative "../../llm_failover"
require_relative "../testing"
require_relative "../cli"
require_relative "attempts_table"
require_relative "style"
require_relative "../chat/target"

module LlmFailover
  # `llm_failover demo --tools`: a tool loop that survives its primary, with no keys
  # and no network.
  #
  # The primary (OpenAI protocol) asks for a tool; the tool runs; on the next turn the
  # primary's connection is reset on every try; the backup (Anthropic protocol, which
  # refuses a transcript whose tool call has no result right after it) gets the whole
  # transcript, the call and its result rendered in its own protocol, and finishes the
  # loop. The tool ran once.
  #
  # Like Demo, it configures the gem process-wide: a process of its own.
  class ToolsDemo
    PROMPT = "Is it warm enough in Lisbon for a swim?"
    PRIMARY = { provider: :openai, model: "gpt-4o", protocol: "OpenAI" }.freeze
    BACKUP = { provider: :anthropic, model: "claude-sonnet-4-6", protocol: "Anthropic" }.freeze
    BACKUP_TEXT = "Yes: it is 24 C in Lisbon and sunny, warm enough for a swim (the Atlantic stays cool, " \
                  "so expect a bracing first minute)."

    # The scene's one tool: counts its runs, so the demo can say how often it ran.
    class Weather < Tool
      tool_name "weather"
      description "Current weather for a city"
      param :city, type: :string, desc: "City name"

      attr_reader :runs

      def initialize
        super
        @runs = 0
      end

      def execute(city:)
        @runs += 1
        { city: city, temp_c: 24, sky: "sunny" }
      end
    end

    # @param out [IO] where the demo writes
    # @param color [Boolean] ANSI colors
    # @param chunk_delay [Float] seconds between streamed words
    # @param retry_interval [Float] seconds before a retry of the primary
    def initialize(out:, color: false, chunk_delay: 0.02, retry_interval: 0.15)
      @out = out
      @color = color
      @chunk_delay = chunk_delay
      @retry_interval = retry_interval
      @tool = Weather.new
    end

    # @return [Integer] the exit code: 0 answered with the tool run once, 1 otherwise
    def run
      @primary = Testing::FakeProvider.start
      @backup = Testing::FakeProvider.start(strict_transcript: true)
      script
      configure
      intro
      reply = ask
      outcome(reply)
    rescue Error, ToolLoopError, ToolTranscriptError => e
      @out.puts
      @out.puts(paint("the call failed: #{e.class.name}: #{e.message}", :red))
      table(e.attempts) if e.respond_to?(:attempts)
      CLI::FAILED
    ensure
      [@primary, @backup].compact.each(&:stop)
    end

    private

    def script
      @primary.enqueue({ text: "Let me check the weather.", chunk_delay: @chunk_delay,
                         tool_calls: [{ name: "weather", arguments: { "city" => "Lisbon" } }] })
      @primary.default = { reset: true } # every later request: the connection is reset
      @backup.default = { text: BACKUP_TEXT, chunk_delay: @chunk_delay, usage: { input: 96, output: 31 } }
    end

    def configure
      LlmFailover.configure do |c|
        # FakeProviders take any key; these are not secrets.
        c.provider PRIMARY[:provider], api: :openai, api_key: "demo-key", base_url: @primary.base_url(:openai)
        c.provider BACKUP[:provider], api: :anthropic, api_key: "demo-key", base_url: @backup.base_url(:anthropic)
        c.max_retries = 1
        c.retry_interval = @retry_interval
        c.retry_interval_randomness = 0
        c.connect_timeout = 2
        c.first_token_timeout = 5
        c.idle_timeout = 5
        c.request_timeout = 30
        c.usage_log = ->(record) { live_note(record) }
      end
    end

    def intro
      @out.puts(paint("llm_failover demo --tools: a tool loop across a failover (no keys, no network)", :bold))
      rows = [
        ["primary", label(PRIMARY), "#{PRIMARY[:protocol]} protocol", @primary.base_url(:openai),
         "scripted: asks for the weather tool, then its connection resets"],
        ["backup", label(BACKUP), "#{BACKUP[:protocol]} protocol", @backup.base_url(:anthropic),
         "healthy; refuses a tool call without its result"]
      ]
      widths = rows.transpose.map { |column| column.map(&:length).max }
      rows.each do |row|
        @out.puts("  #{row.each_with_index.map { |cell, i| cell.ljust(widths[i]) }.join('  ').rstrip}")
      end
      @out.puts
      @out.puts(paint("> #{PROMPT}", :cyan))
      @out.puts
      @out.flush
    end

    def ask
      chat = LlmFailover.chat(model: PRIMARY[:model], provider: PRIMARY[:provider],
                              backup_model: BACKUP[:model], backup_provider: BACKUP[:provider], feature: "demo")
      chat.with_tool(@tool)
      reply = chat.ask(PROMPT) { |chunk| show(chunk) }
      @out.puts
      reply
    end

    def show(chunk)
      if chunk.tool_call?
        call = chunk.tool_call
        @out.print("\n#{paint("[tool call #{call.name}(#{call.arguments_json}) asked by " \
                              "#{Target.label(call.provider, call.model)}]", :yellow)}\n")
      elsif chunk.tool_result?
        @out.print("#{paint("[tool result #{chunk.tool_call.content}]", :yellow)}\n")
      elsif chunk.reset?
        @out.print("\n#{paint(CLI::RESET_MARKER, :yellow)}\n")
      else
        @out.print(chunk.content)
      end
      @out.flush
    end

    # Failures as they happen: the primary dying on the turn after the tool ran.
    def live_note(record)
      return if record.success

      error = CLI::AttemptsTable.error_text(record)
      @out.puts(paint("[attempt #{record.attempt}: #{Target.label(record.provider, record.model)} failed with #{error}]",
                      :dim))
      @out.flush
    rescue Errno::EPIPE, IOError
      nil
    end

    def outcome(reply)
      @out.puts
      table(reply.attempts)
      @out.puts
      calls = reply.tool_calls
      asked = calls.map { |c| "#{c.name} (asked by #{Target.label(c.provider, c.model)})" }.join(", ")
      @out.puts(paint("answered by #{Target.label(reply.provider, reply.model)}, failover: " \
                      "#{reply.failover? ? 'yes' : 'no'}; tool calls: #{asked}; " \
                      "the tool ran #{@tool.runs == 1 ? 'once' : "#{@tool.runs} times"}", :bold))
      @out.puts(paint("The transcript was rendered for the backup's protocol: the call made by " \
                      "#{PRIMARY[:protocol]} was answered by #{BACKUP[:protocol]}, not run again.", :dim))
      @tool.runs == 1 ? CLI::OK : CLI::FAILED
    end

    def table(records)
      CLI::AttemptsTable.new(Array(records), color: @color).lines.each { |line| @out.puts(line) }
    end

    def label(target)
      Target.label(target[:provider], target[:model])
    end

    def paint(text, style)
      CLI::Style.paint(text, style, @color)
    end
  end
end
