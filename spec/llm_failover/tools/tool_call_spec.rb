# frozen_string_literal: true

$LOAD_PATH.unshift File.expand_path("../../../lib", __dir__)
require "llm_failover/errors"
require "llm_failover/tools/tool_call"

RSpec.describe LlmFailover::ToolCall do
  def call(**opts)
    described_class.new(id: "toolu_01", name: "weather", arguments: '{"city":"Oslo"}', **opts)
  end

  it "keeps the call as the model wrote it: id, provider's id, name, arguments text and object" do
    c = call(provider: :anthropic, model: "claude-haiku-4-5")
    expect(c).to have_attributes(id: "toolu_01", provider_id: "toolu_01", name: "weather",
                                 arguments_json: '{"city":"Oslo"}', arguments: { "city" => "Oslo" },
                                 provider: :anthropic, model: "claude-haiku-4-5", status: :pending)
    mapped = described_class.new(id: "call_abc", provider_id: "call_00_abc!", name: "x", arguments: { "a" => 1 })
    expect(mapped.provider_id).to eq("call_00_abc!")
    expect(mapped.arguments_json).to eq('{"a":1}')
  end

  it "reads empty arguments as no arguments and anything but an object as none" do
    expect(call(arguments: "").arguments).to eq({})
    expect(call(arguments: "[1]").arguments).to be_nil
    expect(call(arguments: '{"a":').arguments).to be_nil
  end

  it "goes pending, running, succeeded, with the result and what the model is sent" do
    c = call.start!
    expect(c.status).to eq(:running)
    c.succeed!({ "temp" => 21 })
    expect(c).to have_attributes(status: :succeeded, result: { "temp" => 21 }, content: '{"temp":21}', error: nil)
    expect(c.final?).to be(true)
    expect(c.error?).to be(false)
  end

  it "fails with the class and message of what execute raised, never a backtrace" do
    error = begin
      raise ArgumentError, "no such city"
    rescue ArgumentError => e
      e
    end
    c = call.start!.fail!(error)
    expect(c.content).to eq("ArgumentError: no such city")
    expect(c.error).to have_attributes(kind: :raised, class_name: "ArgumentError", message: "no such city")
    expect(c.to_h.to_s).not_to include(__FILE__)
  end

  it "parks for approval, then runs or is denied" do
    c = call.await_approval!
    expect(c.awaiting_approval?).to be(true)
    c.approve!
    expect(c).to have_attributes(status: :approved, awaiting_approval?: false)
    c.start!
    expect(c.status).to eq(:running)

    d = call.await_approval!.deny!("not today")
    expect(d).to have_attributes(status: :denied, content: "The user denied this call: not today")
    expect(d.error.kind).to eq(:denied)
  end

  it "settles a call left running with a result or an error" do
    expect(call.start!.settle!(result: "sent")).to have_attributes(status: :succeeded, content: "sent")
    expect(call.start!.settle!(error: "unknown outcome")).to have_attributes(status: :failed, content: "unknown outcome")
    expect { call.start!.settle!(result: 1, error: "x") }.to raise_error(ArgumentError, /not both/)
  end

  it "refuses a step its status does not allow, naming the call" do
    expect { call.succeed!(1) }.to raise_error(ArgumentError, "tool call toolu_01 (weather) is pending, not running")
    done = call.start!.succeed!(1)
    expect { done.start! }.to raise_error(ArgumentError, /is succeeded, not pending or approved/)
    expect { done.reject!("x") }.to raise_error(ArgumentError)
    expect { call.start!.deny!("x") }.to raise_error(ArgumentError, /is running, not pending/)
    expect { call(status: :lost) }.to raise_error(ArgumentError, /status is one of/)
    expect { described_class.new(id: "", name: "x", arguments: "{}") }.to raise_error(ArgumentError, /id/)
  end

  it "round-trips through a store's Hash, every status" do
    calls = [call, call.await_approval!, call.start!, call.start!.succeed!([1, 2]), call.reject!("bad", kind: :unknown_tool),
             call.start!.fail!(IOError.new("gone")), call.deny!("no")]
    calls.each do |c|
      h = JSON.parse(JSON.generate(c.to_h))
      back = described_class.from_h(h)
      expect(back.to_h).to eq(c.to_h)
      expect(back).to have_attributes(status: c.status, content: c.content, awaiting_approval?: c.awaiting_approval?)
    end
    expect(described_class.from_h(calls[3].to_h).result).to eq("[1,2]") # the stored text, not the Ruby value
    expect(described_class.from_h(calls[5].to_h).error.to_s).to eq("IOError: gone")
  end

  it "serialises a String as it is and anything else as JSON" do
    expect(described_class.serialize("It is 21°C")).to eq("It is 21°C")
    expect(described_class.serialize({ a: [1, nil] })).to eq('{"a":[1,null]}')
    expect(described_class.serialize(nil)).to eq("null")
    expect(described_class.serialize(3.5)).to eq("3.5")
  end
end

RSpec.describe "The tool loop's errors" do
  it "are not LlmFailover::Error, so retry_on LlmFailover::Error does not retry them" do
    [LlmFailover::ToolLoopError, LlmFailover::ToolTranscriptError, LlmFailover::ToolInterruptedError].each do |klass|
      expect(klass.ancestors).not_to include(LlmFailover::Error)
      expect(klass.superclass).to eq(StandardError)
    end
  end

  it "carry what the app needs to act on" do
    calls = [LlmFailover::ToolCall.new(id: "c1", name: "weather", arguments: "{}")]
    loop_error = LlmFailover::ToolLoopError.new(rounds: 10, tool_calls: calls)
    expect(loop_error).to have_attributes(rounds: 10, tool_calls: calls)
    expect(loop_error.message).to eq("the model still asked for tools after 10 rounds (max_tool_rounds)")

    transcript = LlmFailover::ToolTranscriptError.new(call_id: "toolu_9")
    expect(transcript).to have_attributes(call_id: "toolu_9", message: 'tool call "toolu_9" has no result in the transcript')

    running = calls.first.start!
    interrupted = LlmFailover::ToolInterruptedError.new(tool_call: running)
    expect(interrupted.tool_call).to equal(running)
    expect(interrupted.message).to start_with('tool call "c1" (weather) was interrupted while running')
  end
end
