# frozen_string_literal: true

require "spec_helper"

RSpec.describe "JSON answers and schemas" do
  include_context "with fake providers"

  let(:schema) do
    { type: "object", additionalProperties: false, required: %w[city days note],
      properties: { city: { type: "string" }, days: { type: "array", items: { type: "integer" } },
                    note: { type: %w[string null] } } }
  end
  let(:paris) { { "city" => "Paris", "days" => [1, 2], "note" => nil } }

  def openai_chat(**options)
    LlmFailover.chat(model: "gpt-4o", provider: :openai, **options)
  end

  def anthropic_chat(**options)
    LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic, **options)
  end

  describe "JSON mode" do
    it "asks OpenAI for a json_object and says so in the instructions" do
      primary.enqueue({ text: '{"answer": 42}' })
      reply = openai_chat(system: "Be exact.").with_json_mode.ask("The answer?")
      expect(reply.json).to eq("answer" => 42)
      expect(reply.content).to eq('{"answer": 42}')
      body = primary.requests.last.json
      expect(body["response_format"]).to eq("type" => "json_object")
      expect(body["messages"].map { |m| m["role"] }).to eq(%w[system system user])
      expect(body["messages"][0]["content"]).to eq("Be exact.")
      expect(body["messages"][1]["content"]).to include("one JSON object")
    end

    it "tells Anthropic in the system prompt, with no prefill" do
      backup.enqueue({ text: '{"answer": 42}' })
      chat = anthropic_chat.with_json_mode
      reply = chat.ask("The answer?")
      expect(reply.json).to eq("answer" => 42)
      body = backup.requests.last.json
      expect(body["system"]).to include("one JSON object")
      expect(body).not_to include("response_format", "tools")
      expect(body["messages"].map { |m| m["role"] }).to eq(%w[user])
      expect(chat.messages.map { |m| [m.role, m.content] }).to eq([["user", "The answer?"], ["assistant", '{"answer": 42}']])
    end

    it "tolerates a Markdown code fence around the object" do
      primary.enqueue({ text: "```json\n{\"a\": [1, 2]}\n```\n" })
      reply = openai_chat.ask("x", json: true)
      expect(reply.json).to eq("a" => [1, 2])
      expect(reply.content).to eq("```json\n{\"a\": [1, 2]}\n```\n")
    end

    it "retries an answer that is not one JSON object, keeping the failed attempt's tokens" do
      primary.enqueue({ text: "Sure! Here it is: {\"a\": 1}", usage: { input: 9, output: 12 } }, { text: '{"a": 1}' })
      reply = openai_chat.with_json_mode.ask("x")
      expect(reply.json).to eq("a" => 1)
      expect(primary.request_count).to eq(2)
      failed = reply.attempts.first
      expect([failed.success?, failed.error_class]).to eq([false, "LlmFailover::InvalidResponseError"])
      expect(failed.error_message).to include("not JSON", "Sure! Here it is")
      expect([failed.input_tokens, failed.output_tokens]).to eq([9, 12])
    end

    it "fails over when the primary keeps answering prose, and raises when nobody answers JSON" do
      LlmFailover.configuration.max_retries = 1
      primary.default = { text: "I think the answer is 42." }
      backup.enqueue({ text: '{"answer": 42}' })
      reply = failover_chat.with_json_mode.ask("x")
      expect([reply.provider, reply.json, reply.failover?]).to eq([:anthropic, { "answer" => 42 }, true])
      expect(primary.request_count).to eq(2)

      backup.default = { text: "[1, 2, 3]" }
      chat = failover_chat.with_json_mode
      expect { chat.ask("y") }.to raise_error(LlmFailover::InvalidResponseError, /JSON array, not an object/)
      expect(chat.messages.last.status).to eq("failed")
    end

    it "never quotes a key in the reason, even cut at its start" do
      LlmFailover.configuration.max_retries = 0
      key = FakeProviderHelpers::PRIMARY_KEY
      primary.enqueue({ text: "#{'x' * 50}#{key} is your key" })
      expect { openai_chat.with_json_mode.ask("x") }.to raise_error(LlmFailover::InvalidResponseError) { |e|
        expect(e.message).to include("the answer begins: #{'x' * 50}[REDA")
        expect(e.message).not_to include("sk-t")
        expect(e.attempts.first.error_message).not_to include("sk-t")
      }
    end

    it "is per call with json: true / json: false" do
      primary.enqueue({ text: "plain words" }, { text: '{"k": "v"}' })
      chat = openai_chat.with_json_mode
      reply = chat.ask("words please", json: false)
      expect([reply.content, reply.json]).to eq(["plain words", nil])
      expect(primary.requests.last.json).not_to include("response_format")
      expect(openai_chat.ask("json please", json: true).json).to eq("k" => "v")
      expect { chat.ask("x", json: "yes") }.to raise_error(ArgumentError, /json must be true or false/)
    end

    it "streams the JSON as it comes, with reply.json at the end" do
      primary.enqueue({ chunks: ['{"a"', ': [1,', " 2]}"] })
      chunks, sink = collect_chunks
      reply = openai_chat.with_json_mode.ask("x", &sink)
      expect(chunks.map(&:content)).to eq(['{"a"', ": [1,", " 2]}"])
      expect(reply.json).to eq("a" => [1, 2])
    end
  end

  describe "schemas" do
    it "sends OpenAI a strict json_schema response format" do
      primary.enqueue({ json: paris })
      reply = openai_chat.with_schema(schema, name: "trip").ask("Plan")
      expect(reply.json).to eq(paris)
      format = primary.requests.last.json["response_format"]
      expect(format["type"]).to eq("json_schema")
      expect(format["json_schema"]).to include("name" => "trip", "strict" => true)
      expect(format["json_schema"]["schema"]).to eq(JSON.parse(JSON.generate(schema)))
      expect(primary.requests.last.json["messages"].map { |m| m["role"] }).to eq(%w[user])
    end

    it "forces an Anthropic tool call whose input is the answer, unstreamed and streamed" do
      backup.enqueue({ json: paris }, { json: paris })
      chat = anthropic_chat.with_schema(schema)
      reply = chat.ask("Plan")
      expect(reply.json).to eq(paris)
      expect(JSON.parse(reply.content)).to eq(paris)
      body = backup.requests.last.json
      expect(body["tools"].size).to eq(1)
      expect(body["tools"][0]).to include("name" => "answer", "input_schema" => JSON.parse(JSON.generate(schema)))
      expect(body["tool_choice"]).to eq("type" => "tool", "name" => "answer")
      expect(body).not_to include("response_format")

      chunks, sink = collect_chunks
      streamed = chat.ask("Again", &sink)
      expect(chunks.size).to be > 2 # the tool input's partial JSON, as it came
      expect(chunks.map(&:content).join).to eq(streamed.content)
      expect(streamed.json).to eq(paris)
      expect(chat.messages.last.content).to eq(streamed.content)
    end

    it "treats an answer that breaks the schema as a failed attempt, and fails over" do
      LlmFailover.configuration.max_retries = 0
      primary.enqueue({ json: { "city" => 7, "days" => [], "note" => nil }, usage: { input: 3, output: 4 } })
      backup.enqueue({ json: paris })
      reply = failover_chat.with_schema(schema).ask("Plan")
      expect([reply.provider, reply.json]).to eq([:anthropic, paris])
      failed = reply.attempts.first
      expect(failed.error_class).to eq("LlmFailover::InvalidResponseError")
      expect(failed.error_message).to include("does not match the schema: $.city: expected string, got integer")
      expect([failed.input_tokens, failed.output_tokens]).to eq([3, 4])
    end

    it "gives the same reply.json when OpenAI fails mid-stream and Anthropic answers by tool call" do
      primary.enqueue({ json: paris, cut_after: 2 })
      backup.enqueue({ json: paris })
      chunks, sink = collect_chunks
      chat = failover_chat.with_schema(schema)
      reply = chat.ask("Plan", &sink)
      expect(reply.provider).to eq(:anthropic)
      expect(reply.json).to eq(paris)
      reset = chunks.index(&:reset?)
      expect(reset).to eq(2)
      expect(chunks[(reset + 1)..].map(&:content).join).to eq(reply.content)
      expect(backup.requests.last.json["tool_choice"]).to eq("type" => "tool", "name" => "answer")
      expect(chat.messages.last.content).to eq(reply.content)

      primary.enqueue({ json: paris })
      expect(failover_chat.with_schema(schema).ask("Plan again").json).to eq(reply.json)
    end

    it "refuses schemas OpenAI's strict mode would refuse, before any request" do
      chat = openai_chat
      expect { chat.with_schema([1]) }.to raise_error(ArgumentError, /Hash/)
      expect { chat.with_schema(schema, name: "has space") }.to raise_error(ArgumentError, /name/)
      loose = schema.merge(additionalProperties: true)
      expect { chat.with_schema(loose) }.to raise_error(ArgumentError, /\$: .*additionalProperties/)
      optional = schema.merge(required: %w[city days])
      expect { chat.with_schema(optional) }.to raise_error(ArgumentError, /missing note/)
      nested = schema.merge(properties: schema[:properties].merge(stop: { type: "object", properties: { a: {} } }),
                            required: %w[city days note stop])
      expect { chat.with_schema(nested) }.to raise_error(ArgumentError, /\$\.properties\.stop: /)
      expect(chat.with_schema(schema).with_schema(nil).answer_format).to be_nil
      expect(primary.request_count).to eq(0)
    end
  end

  describe "with a scrubber" do
    it "restores placeholders inside reply.json's strings, whatever the original holds" do
      LlmFailover.configuration.scrubber = LlmFailover::Scrubber.default
      card = "4111 1111 1111 1111"
      # The provider sees the placeholder and repeats it inside a JSON string.
      primary.enqueue({ text: '{"card": "[CARD_1]", "note": "pay with [CARD_1] \\"now\\""}' })
      reply = openai_chat.with_json_mode.ask("Which card? #{card}")
      expect(sent_messages(primary.requests.last).last[1]).to include("[CARD_1]").and(satisfy { |t| !t.include?(card) })
      expect(reply.json).to eq("card" => card, "note" => "pay with #{card} \"now\"")
    end
  end

  describe "with the response cache" do
    before { LlmFailover.configuration.cache = LlmFailover::MemoryCache.new }

    it "serves reply.json from a hit, and keeps text, JSON mode and each schema apart" do
      primary.enqueue({ json: paris })
      openai_chat.with_schema(schema).ask("Plan")
      hit = openai_chat.with_schema(schema).ask("Plan")
      expect([hit.cached?, hit.json]).to eq([true, paris])

      primary.enqueue({ text: '{"other": true}' }, { text: "text" },
                      { json: { "city" => "Rome", "days" => [], "note" => nil } })
      expect(openai_chat.with_json_mode.ask("Plan").cached?).to be(false)
      expect(openai_chat.ask("Plan").cached?).to be(false)
      expect(openai_chat.with_schema(schema, name: "other").ask("Plan").cached?).to be(false)
      expect(openai_chat.with_json_mode.ask("Plan").json).to eq("other" => true)
      expect(primary.request_count).to eq(4)
    end
  end
end
