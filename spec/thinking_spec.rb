# frozen_string_literal: true

require "spec_helper"
require_relative "support/tool_wire"

# What a model thought before it answered: Anthropic's thinking and redacted_thinking
# blocks (streamed as thinking_delta and signature_delta), an OpenAI-compatible
# answer's reasoning_content (DeepSeek) or reasoning (Ollama, OpenRouter: the
# recordings). The FakeProvider scripts them (thinking:, redacted_thinking:,
# reasoning_field:); the gem never shows them as the answer, never stores them, and
# never sends them on, to either protocol (doc/tools.md, "Thinking and reasoning").
RSpec.describe "Thinking and reasoning in answers" do
  let(:primary) { start_fake_provider(strict_transcript: true) }
  let(:backup) { start_fake_provider(strict_transcript: true) }
  let(:thought) { "The user wants the weather, so I call the tool first." }
  let(:runs) { Queue.new }

  before do
    LlmFailover.configure do |c|
      c.provider :openai, api: :openai, api_key: FakeProviderHelpers::PRIMARY_KEY, base_url: primary.base_url(:openai)
      c.provider :anthropic, api: :anthropic, api_key: FakeProviderHelpers::BACKUP_KEY,
                             base_url: backup.base_url(:anthropic)
      fast_policy(c)
      c.max_retries = 0
    end
  end

  def weather(runs)
    Class.new(LlmFailover::Tool) do
      tool_name "weather"
      description "Current weather for a city"
      param :city, type: :string
      define_method(:execute) do |city:|
        runs << city
        "sunny in #{city}"
      end
    end
  end

  def raw(fake, api, stream)
    body = { "model" => "m", "messages" => [{ "role" => "user", "content" => "Weather?" }], "stream" => stream,
             "max_tokens" => 100 }
    res = ToolWire.post(fake.port, ToolWire::PATHS.fetch(api), body)
    expect(res.status).to eq(200)
    res.body
  end

  describe "the FakeProvider's shapes" do
    it "Anthropic, not streamed: thinking (with its signature) and redacted_thinking blocks before the text" do
      backup.enqueue({ thinking: thought, redacted_thinking: "opaque==", text: "Sunny." })
      content = JSON.parse(raw(backup, :anthropic, false))["content"]
      expect(content.map { |b| b["type"] }).to eq(%w[thinking redacted_thinking text])
      expect(content[0]["thinking"]).to eq(thought)
      expect(content[0]["signature"]).to match(/\Asig_/)
      expect(content[1]["data"]).to eq("opaque==")
    end

    it "Anthropic, streamed: thinking_delta pieces, then a signature_delta, then the text's deltas" do
      backup.enqueue({ thinking: thought, redacted_thinking: true, text: "Sunny." })
      events = ToolWire.sse(raw(backup, :anthropic, true)).map(&:json).compact
      starts = events.select { |e| e["type"] == "content_block_start" }
      expect(starts.map { |e| [e["index"], e["content_block"]["type"]] })
        .to eq([[0, "thinking"], [1, "redacted_thinking"], [2, "text"]])
      deltas = events.select { |e| e["type"] == "content_block_delta" }.map { |e| [e["index"], e["delta"]] }
      expect(deltas.select { |i, _| i.zero? }.map { |_, d| d["type"] }.uniq).to eq(%w[thinking_delta signature_delta])
      expect(deltas.select { |i, d| i.zero? && d["type"] == "thinking_delta" }.map { |_, d| d["thinking"] }.join).to eq(thought)
      expect(deltas.select { |i, _| i == 2 }.map { |_, d| d["text"] }.join).to eq("Sunny.")
      expect(events.count { |e| e["type"] == "content_block_stop" }).to eq(3)
    end

    it "OpenAI-compatible: reasoning_content, or reasoning, beside the content, whole and in deltas" do
      primary.enqueue({ thinking: thought, text: "Sunny." }, { thinking: thought, text: "Sunny.", reasoning_field: "reasoning" },
                      { thinking: thought, text: "Sunny." })
      message = JSON.parse(raw(primary, :openai, false))["choices"][0]["message"]
      expect([message["reasoning_content"], message["content"]]).to eq([thought, "Sunny."])
      expect(JSON.parse(raw(primary, :openai, false))["choices"][0]["message"]["reasoning"]).to eq(thought)
      deltas = ToolWire.sse(raw(primary, :openai, true)).map(&:json).compact.flat_map { |e| e["choices"] }.map { |c| c["delta"] }
      expect(deltas.filter_map { |d| d["reasoning_content"] }.join).to eq(thought)
      expect(deltas.filter_map { |d| d["content"] }.join).to eq("Sunny.")
    end
  end

  {
    "OpenAI-compatible reasoning_content (DeepSeek)" => [:openai, {}],
    "OpenAI-compatible reasoning (Ollama, OpenRouter)" => [:openai, { reasoning_field: "reasoning" }],
    "Anthropic thinking and redacted_thinking" => [:anthropic, { redacted_thinking: true }]
  }.each do |name, (provider, extra)|
    [false, true].each do |streamed|
      it "#{name}, #{streamed ? 'streamed' : 'not streamed'}: never the answer's text, a chunk of it, or stored" do
        fake = provider == :openai ? primary : backup
        fake.enqueue({ thinking: thought, chunks: ["Sunny ", "in Oslo."], **extra })
        chat = LlmFailover.chat(model: provider == :openai ? "gpt-4o" : "claude-sonnet-4-6", provider: provider)
        chunks = []
        reply = streamed ? chat.ask("Weather in Oslo?") { |c| chunks << c.content } : chat.ask("Weather in Oslo?")
        expect(reply.content).to eq("Sunny in Oslo.")
        expect(chunks.join).to eq("Sunny in Oslo.") if streamed
        expect(chat.messages.map(&:content)).to eq(["Weather in Oslo?", "Sunny in Oslo."])
        expect(chat.messages.last.to_h.to_s).not_to include("user wants", "sig_", "Encrypted")
      end
    end
  end

  it "a tool turn that thought on the OpenAI-compatible primary, then failed over: the backup gets a valid transcript without it" do
    primary.enqueue({ thinking: thought, tool_calls: [{ name: "weather", arguments: { "city" => "Oslo" } }] },
                    { error: :overloaded })
    backup.enqueue({ text: "Sunny in Oslo." })
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, backup_model: "claude-sonnet-4-6",
                            backup_provider: :anthropic).with_tool(weather(runs))
    chunks = []
    reply = chat.ask("Weather in Oslo?") { |c| chunks << c.content unless c.tool_call? || c.tool_result? }
    expect(reply.content).to eq("Sunny in Oslo.")
    expect(chunks.join).to eq("Sunny in Oslo.")
    expect(runs.size).to eq(1)
    sent = backup.requests.last
    expect(sent.json["messages"].map { |m| m["role"] }).to eq(%w[user assistant user])
    expect(sent.json["messages"][1]["content"].map { |b| b["type"] }).to eq(%w[tool_use])
    expect(sent.body).not_to include("user wants", "reasoning", "thinking")
  end

  it "a tool turn that thought on Anthropic, then failed over: the OpenAI-compatible backup gets a valid transcript without it" do
    backup.enqueue({ thinking: thought, redacted_thinking: true,
                     tool_calls: [{ name: "weather", arguments: { "city" => "Bergen" } }] },
                   { error: :overloaded })
    primary.enqueue({ text: "Sunny in Bergen." })
    chat = LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic, backup_model: "gpt-4o",
                            backup_provider: :openai).with_tool(weather(runs))
    expect(chat.ask("Weather in Bergen?") { |_c| }.content).to eq("Sunny in Bergen.")
    sent = primary.requests.last
    expect(sent.json["messages"].map { |m| m["role"] }).to eq(%w[user assistant tool])
    expect(sent.body).not_to include("user wants", "reasoning", "thinking", "signature", "Encrypted")
  end

  it "a tool turn that thought on Anthropic goes back to Anthropic without the block, in a request that never enables thinking" do
    backup.enqueue({ thinking: thought, tool_calls: [{ name: "weather", arguments: { "city" => "Oslo" } }] },
                   { thinking: "Now I answer.", text: "Sunny in Oslo." })
    chat = LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic).with_tool(weather(runs))
    expect(chat.ask("Weather in Oslo?").content).to eq("Sunny in Oslo.")
    first, second = backup.requests.last(2)
    # The rule the strict FakeProvider holds Anthropic to (a thinking block first in the
    # turn the tool results continue) binds a request with thinking enabled only: the
    # gem never enables it, so the turn goes back valid without the block.
    expect([first.json.key?("thinking"), second.json.key?("thinking")]).to eq([false, false])
    expect(second.json["messages"][1]["content"].map { |b| b["type"] }).to eq(%w[tool_use])
    expect(second.body).not_to include("user wants", "signature")
  end

  it "the strict FakeProvider refuses, as Anthropic does, a request with thinking enabled whose tool turn lost its block" do
    backup.strict_transcript = true
    body = { "model" => "m", "max_tokens" => 100, "thinking" => { "type" => "enabled", "budget_tokens" => 1024 },
             "messages" => [{ "role" => "user", "content" => "Weather?" },
                            { "role" => "assistant", "content" => [{ "type" => "tool_use", "id" => "toolu_1", "name" => "weather", "input" => {} }] },
                            { "role" => "user", "content" => [{ "type" => "tool_result", "tool_use_id" => "toolu_1", "content" => "sunny" }] }] }
    res = ToolWire.post(backup.port, ToolWire::PATHS.fetch(:anthropic), body)
    expect(res.status).to eq(400)
    expect(res.body).to include("Expected `thinking` or `redacted_thinking`, but found `tool_use`")
    body["messages"][1]["content"].unshift({ "type" => "thinking", "thinking" => "x", "signature" => "sig_x" })
    backup.enqueue({ text: "Sunny." })
    expect(ToolWire.post(backup.port, ToolWire::PATHS.fetch(:anthropic), body).status).to eq(200)
  end
end
