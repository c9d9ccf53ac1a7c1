# frozen_string_literal: true

$LOAD_PATH.unshift File.expand_path("../../../lib", __dir__)
require "llm_failover/tools/runner"
require "llm_failover/testing"
require "support/tool_wire"

# Tool calls as a FakeProvider sends them over HTTP, in both protocols, streamed and
# not, checked and run by the Runner; their results go back in the next request to a
# FakeProvider that refuses, as Anthropic does, a transcript with an unpaired call.
module ToolRunnerSpecTools
  class Weather < LlmFailover::Tool
    param :city, type: :string
    param :unit, type: :string, enum: %w[c f], required: false
    def execute(city:, unit: "c") = { "city" => city, "temp" => 21, "unit" => unit }
  end

  class Schedule < LlmFailover::Tool
    params type: "object",
           properties: {
             window: { type: "object", properties: { start: { type: "string" }, end: { type: "string" } },
                       required: %w[start end], additionalProperties: false },
             tags: { type: "array", items: { type: "string" } },
             status: { anyOf: [{ type: "string", enum: %w[pending done] }, { type: "null" }] }
           },
           required: %w[window], additionalProperties: false
    def execute(window:, tags: [], status: nil) = "#{window['start']}..#{window['end']} #{tags.join(',')} #{status}"
  end

  class Boom < LlmFailover::Tool
    def execute = raise(IOError, "database down")
  end

  class Clock < LlmFailover::Tool
    def execute = "12:00"
  end

  # Not a StandardError: a tool that raises it stops everything, as Interrupt would.
  class Halt < Exception; end

  class Halting < LlmFailover::Tool
    def execute = raise(Halt, "stop now")
  end

  USER = { openai: { "role" => "user", "content" => "Go" },
           anthropic: { "role" => "user", "content" => [{ "type" => "text", "text" => "Go" }] } }.freeze

  SCRIPT = [
    { name: "weather", arguments: { "city" => "Oslo" } },
    { name: "weather", arguments: '{"city": "Os' },
    { name: "weather", arguments: '["Oslo"]' },
    { name: "weather", arguments: {} },
    { name: "weather", arguments: { "city" => 5 } },
    { name: "weather", arguments: { "city" => "Oslo", "unit" => "k" } },
    { name: "teleport", arguments: { "to" => "Mars" } },
    { name: "boom" },
    { name: "schedule", arguments: { "window" => { "start" => "9" }, "tags" => ["a", 1], "status" => "later", "x" => 1 } },
    { name: "schedule", arguments: { "window" => { "start" => "9", "end" => "10" }, "tags" => ["a"], "status" => nil } },
    { name: "clock" }
  ].freeze
end

RSpec.describe LlmFailover::Tools::Runner do
  let(:fp) { LlmFailover::Testing::FakeProvider.start(strict_transcript: true) }
  let(:toolbox) do
    LlmFailover::Tools::Toolbox.new.add(ToolRunnerSpecTools::Weather, ToolRunnerSpecTools::Schedule,
                                        ToolRunnerSpecTools::Boom, ToolRunnerSpecTools::Clock,
                                        ToolRunnerSpecTools::Halting)
  end
  let(:runner) { described_class.new(toolbox) }

  after { fp.stop }

  def post(api, messages, stream: false)
    body = { "model" => "m", "messages" => messages, "stream" => stream }
    body["max_tokens"] = 100 if api == :anthropic
    ToolWire.post(fp.port, ToolWire::PATHS.fetch(api), body)
  end

  # One turn: the calls the model asked for, as ToolCall records.
  def turn(api, stream:)
    res = post(api, [ToolRunnerSpecTools::USER[api]], stream: stream)
    expect(res.status).to eq(200)
    ToolWire.read_answer(api, res.body, stream)["calls"].map do |c|
      LlmFailover::ToolCall.new(id: c["id"], name: c["name"], arguments: c["arguments"], provider: api)
    end
  end

  # The next request's transcript: the calls, then one result each, in the protocol.
  def transcript(api, calls)
    if api == :anthropic
      uses = calls.map do |c|
        { "type" => "tool_use", "id" => c.id, "name" => c.name, "input" => c.arguments || {} }
      end
      results = calls.map do |c|
        block = { "type" => "tool_result", "tool_use_id" => c.id, "content" => c.content }
        block["is_error"] = true if c.error?
        block
      end
      [ToolRunnerSpecTools::USER[api], { "role" => "assistant", "content" => uses }, { "role" => "user", "content" => results }]
    else
      tool_calls = calls.map do |c|
        { "id" => c.id, "type" => "function", "function" => { "name" => c.name, "arguments" => c.arguments_json } }
      end
      [ToolRunnerSpecTools::USER[api], { "role" => "assistant", "content" => nil, "tool_calls" => tool_calls },
       *calls.map { |c| { "role" => "tool", "tool_call_id" => c.id, "content" => c.content } }]
    end
  end

  %i[openai anthropic].each do |api|
    [false, true].each do |stream|
      it "runs the good calls and answers the bad ones with why, #{api} #{stream ? 'streamed' : 'unstreamed'}" do
        fp.enqueue({ tool_calls: ToolRunnerSpecTools::SCRIPT }, { text: "Done." })
        calls = turn(api, stream: stream)
        expect(calls.map(&:name)).to eq(ToolRunnerSpecTools::SCRIPT.map { |s| s[:name] })
        calls.each { |c| runner.run(c) }

        expect(calls.map(&:status)).to eq(%i[succeeded rejected rejected rejected rejected rejected rejected failed
                                              rejected succeeded succeeded])
        expect(calls.map(&:final?)).to all(be(true))
        contents = calls.map(&:content)
        expect(JSON.parse(contents[0])).to eq("city" => "Oslo", "temp" => 21, "unit" => "c")
        expect(contents[1]).to start_with("The arguments of weather must be a JSON object, got text that is not JSON (")
        expect(contents[2]).to eq("The arguments of weather must be a JSON object, got an array. Call it again with a JSON object.")
        expect(contents[3]).to eq("The arguments of weather do not match its parameters: $.city: missing required " \
                                  "property. Call it again with arguments that do.")
        expect(contents[4]).to include("city: expected string, got integer 5")
        expect(contents[5]).to include('unit: "k" is not one of "c", "f"')
        expect(contents[6]).to eq('There is no tool named "teleport" (the tools are: weather, schedule, boom, clock, ' \
                                  "halting). Call one of those, or answer without it.")
        expect(calls[6].error.kind).to eq(:unknown_tool)
        expect(contents[7]).to eq("IOError: database down")
        expect(calls[7].error).to have_attributes(kind: :raised, class_name: "IOError", message: "database down")
        expect(contents[8]).to include("window.end: missing required property", "tags[1]: expected string, got integer 1",
                                       "status: matches none of the 2 allowed shapes (anyOf)", "x: unknown property")
        expect(contents[9]).to eq("9..10 a ")
        expect(contents[10]).to eq("12:00")
        expect(calls.map(&:provider).uniq).to eq([api])

        # Every call has its one result: the strict provider takes the next turn.
        res = post(api, transcript(api, calls), stream: stream)
        expect(res.status).to eq(200)
        expect(ToolWire.read_answer(api, res.body, stream)["text"]).to eq("Done.")
        sent = fp.requests.last.tool_results
        expect(sent.map(&:id)).to eq(calls.map(&:id))
        expect(sent.map(&:error)).to eq(calls.map { |c| api == :anthropic && c.error? }) # is_error is Anthropic's
      end
    end

    it "refuses to answer, #{api}, when a call's result is left out" do
      fp.enqueue({ tool_calls: [{ name: "clock" }, { name: "clock" }] })
      calls = turn(api, stream: false)
      runner.run(calls.first)
      res = post(api, transcript(api, calls.take(1)).tap { |t| t[1] = transcript(api, calls)[1] })
      expect(res.status).to eq(400)
      expect(JSON.parse(res.body)["error"]["message"]).to include(calls.last.id)
    end
  end

  it "lets an exception that is not a StandardError go up, leaving the call running" do
    call = LlmFailover::ToolCall.new(id: "call_1", name: "halting", arguments: "{}")
    expect { runner.run(call) }.to raise_error(ToolRunnerSpecTools::Halt, "stop now")
    expect(call.status).to eq(:running)
    expect(call.final?).to be(false)
  end

  it "prepares and performs in two steps, so the loop can store the call as running between them" do
    call = LlmFailover::ToolCall.new(id: "call_1", name: "weather", arguments: '{"city":"Oslo","unit":"f"}')
    tool = runner.prepare(call)
    expect(tool).to be_a(ToolRunnerSpecTools::Weather)
    expect(call.status).to eq(:pending)
    runner.perform(call, tool)
    expect(call.result).to eq("city" => "Oslo", "temp" => 21, "unit" => "f")
    expect(runner.prepare(LlmFailover::ToolCall.new(id: "c2", name: "nope", arguments: "{}"))).to be_nil
  end

  it "keeps a tool's own ArgumentError (a parameter execute does not take) as the call's error" do
    mismatched = Class.new(LlmFailover::Tool) do
      tool_name "mismatched"
      param :a, type: :string
      def execute = "never"
    end
    call = described_class.new(LlmFailover::Tools::Toolbox.new.add(mismatched))
                          .run(LlmFailover::ToolCall.new(id: "c", name: "mismatched", arguments: '{"a":"x"}'))
    expect(call.status).to eq(:failed)
    expect(call.content).to eq("ArgumentError: wrong number of arguments (given 1, expected 0)")
  end

  it "fails a call whose value cannot be JSON, and sends valid UTF-8 for any String" do
    odd = Class.new(LlmFailover::Tool) do
      tool_name "odd"
      param :what, type: :string
      def execute(what:)
        case what
        when "nan" then { "x" => Float::NAN }
        when "bytes" then "caf\xC3".b
        when "nil" then nil
        else [1, "two"]
        end
      end
    end
    run = lambda do |what|
      described_class.new(LlmFailover::Tools::Toolbox.new.add(odd))
                     .run(LlmFailover::ToolCall.new(id: "c", name: "odd", arguments: JSON.generate("what" => what)))
    end
    expect(run.call("nan")).to have_attributes(status: :failed, content: start_with("JSON::GeneratorError: "))
    bytes = run.call("bytes")
    expect(bytes.content).to eq("caf\uFFFD")
    expect(bytes.content.encoding).to eq(Encoding::UTF_8)
    expect(run.call("nil").content).to eq("null")
    expect(run.call("list").content).to eq('[1,"two"]')
  end
end
