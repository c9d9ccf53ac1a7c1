# frozen_string_literal: true

require_relative "demo"
require_relative "../tools/tool"

module LlmFailover
  # `llm_failover demo --tools`: a tool loop that fails over between two turns.
  #
  # The primary (OpenAI protocol) asks for the weather tool; the tool runs; the primary
  # then answers 503 on the next turn, retried and failed over; the backup (Anthropic
  # protocol) gets the primary's call and its result in its own protocol and finishes
  # the loop. The tool ran once. Both FakeProviders refuse, as Anthropic does, a call
  # sent without its result.
  class ToolsDemo < Demo
    PROMPT = "What is the weather in Lisbon, and should I take a jacket?"
    PRIMARY_TEXT = "Let me check the weather in Lisbon."
    BACKUP_TEXT = "It is 17 °C and windy in Lisbon: take a light jacket."

    # The demo's tool; a real one would ask a weather service.
    class Weather < Tool
      tool_name "weather"
      description "Current weather for a city"
      param :city, type: :string, desc: "City name"

      class << self
        attr_accessor :runs
      end

      def execute(city:)
        self.class.runs += 1
        { city: city, temp_c: 17, wind: "strong" }
      end
    end

    private

    def script
      Weather.runs = 0
      @primary.strict_transcript = true
      @backup.strict_transcript = true
      @primary.enqueue({ text: PRIMARY_TEXT, chunk_delay: @chunk_delay,
                         tool_calls: [{ name: "weather", arguments: { "city" => "Lisbon" } }] })
      @primary.default = { error: :unavailable } # dies on the next turn
      @backup.default = { text: BACKUP_TEXT, chunk_delay: @chunk_delay, usage: { input: 52, output: 18 } }
    end

    def title
      "llm_failover demo --tools: a tool loop across two fake providers (no keys, no network)"
    end

    def provider_rows
      [["primary", label(PRIMARY), "OpenAI protocol", "asks for the weather tool, then answers 503"],
       ["backup", label(BACKUP), "Anthropic protocol", "healthy"]]
    end

    def prepare(chat)
      chat.with_tool(Weather)
    end

    def show(chunk)
      return super unless chunk.tool_call? || chunk.tool_result?

      if chunk.tool_call?
        @out.puts("\n#{paint("[running #{chunk.tool_call.name}(#{chunk.tool_call.arguments_json})]", :yellow)}")
      else
        @out.puts(paint("[#{chunk.tool_call.name} returned #{chunk.tool_call.content}]", :yellow))
        @answer_started = false # the next turn's failures are worth showing as they happen
      end
      @out.flush
    end

    def outcome(reply)
      super
      calls = reply.tool_calls.map { |c| "#{c.name} (asked by #{c.provider}, #{c.status})" }.join(", ")
      @out.puts(paint("tool calls: #{calls}; the weather tool ran #{Weather.runs} time(s)", :bold))
    end
  end
end
