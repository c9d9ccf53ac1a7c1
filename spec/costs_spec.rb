# frozen_string_literal: true

require "spec_helper"
require "support/engine_helpers"

# What attempts cost: record.cost and reply.cost from the tokens each protocol
# reports, cached and cache-written ones at their own prices. Every figure below is
# worked out by hand from the recording (or the scripted usage) and the prices named
# beside it: USD per million tokens, the default table's as of 2026-12-07 unless the
# example sets its own.
RSpec.describe "The cost of a call" do
  include_context "with fake providers"

  RECORDED = File.expand_path("fixtures/recorded", __dir__)

  let(:engine) { LlmFailover::Engine.new }
  let(:table) { LlmFailover::Prices.default }

  def cost(text)
    BigDecimal(text)
  end

  # The one element of +list+ (Array#sole is ActiveSupport's).
  def one(list)
    expect(list.size).to eq(1)
    list.first
  end

  # One recorded interaction through the whole C path; its Engine::Attempt.
  def recorded_attempt(fixture, interaction, api:, model:)
    fp = start_fake_provider
    fp.enqueue({ fixture: File.join(RECORDED, fixture), interaction: interaction })
    listener = EngineHelpers::RecordingListener.new
    result = engine.run(engine_request(engine_target(fp, api: api, model: model)), listener)
    expect(result.status).to eq(:ok)
    one(listener.attempts)
  end

  def priced(price, attempt)
    price.cost(input_tokens: attempt.input_tokens, output_tokens: attempt.output_tokens,
               cached_input_tokens: attempt.cached_input_tokens, cache_write_tokens: attempt.cache_write_tokens)
  end

  describe "on recorded usage, for each protocol the core speaks" do
    it "chat completions: DeepSeek's 547 prompt tokens, 384 of them cached, and 69 completion tokens" do
      attempt = recorded_attempt("function_calling/chat_function_calling_deepseek_deepseek-chat_can_use_parallel_" \
                                 "tool_calls.json", 1, api: :openai, model: "deepseek-chat")
      expect(attempt.to_h.slice(:input_tokens, :cached_input_tokens, :output_tokens))
        .to eq(input_tokens: 547, cached_input_tokens: 384, output_tokens: 69)
      price = LlmFailover::Price.new(input: 0.27, cached_input: 0.07, output: 1.10)
      # 163 x 0.27 + 384 x 0.07 + 69 x 1.10 = 44.01 + 26.88 + 75.90 = 146.79 per million
      expect(priced(price, attempt)).to eq(cost("0.00014679"))
    end

    it "Anthropic messages: claude-haiku-4-5, 16 input and 13 output tokens" do
      attempt = recorded_attempt("chat_basic_chat_functionality_anthropic_claude-haiku-4-5_can_have_a_basic_" \
                                 "conversation.json", 0, api: :anthropic, model: "claude-haiku-4-5")
      expect(attempt.to_h.slice(:input_tokens, :cached_input_tokens, :cache_write_tokens))
        .to eq(input_tokens: 16, cached_input_tokens: 0, cache_write_tokens: 0)
      # 16 x 1.00 + 13 x 5.00 = 81 per million
      expect(priced(table[:anthropic, "claude-haiku-4-5"], attempt)).to eq(cost("0.000081"))
    end

    # The binding takes :openai and :anthropic targets only until the Responses and
    # Gemini hosts land in the configuration (issue 35); their parsers' token counts,
    # cached ones included, are the core's C tests' (test_wire_responses.c,
    # test_wire_gemini.c). Here the recorded usage itself, at the table's prices.
    def recorded_usage(fixture, interaction)
      body = JSON.parse(File.read(File.join(RECORDED, fixture)))["interactions"][interaction]["response"]["body"]
      JSON.parse(body).then { |json| json["usage"] || json["usageMetadata"] }
    end

    it "the Responses API: gpt-5-nano, 13 input and 157 output tokens (128 of them reasoning)" do
      usage = recorded_usage("responses/chat_basic_chat_functionality_openai_gpt-5-nano_can_have_a_basic_" \
                             "conversation.json", 0)
      expect(usage.values_at("input_tokens", "output_tokens")).to eq([13, 157])
      figure = table[:openai, "gpt-5-nano"].cost(input_tokens: usage["input_tokens"],
                                                 output_tokens: usage["output_tokens"],
                                                 cached_input_tokens: usage.dig("input_tokens_details", "cached_tokens"))
      # 13 x 0.05 + 157 x 0.40 = 0.65 + 62.80 = 63.45 per million
      expect(figure).to eq(cost("0.00006345"))
    end

    it "Gemini: gemini-2.5-flash, 10 prompt tokens, 8 candidate and 23 thought tokens" do
      usage = recorded_usage("gemini/chat_basic_chat_functionality_gemini_gemini-2_5-flash_can_have_a_basic_" \
                             "conversation.json", 0)
      # Output is candidatesTokenCount + thoughtsTokenCount (the core's rule).
      output = usage["candidatesTokenCount"] + usage["thoughtsTokenCount"]
      figure = table[:gemini, "gemini-2.5-flash"].cost(input_tokens: usage["promptTokenCount"], output_tokens: output)
      # 10 x 0.30 + 31 x 2.50 = 3.00 + 77.50 = 80.50 per million
      expect(figure).to eq(cost("0.0000805"))
    end

    it "Bedrock Converse: the recorded usage of Nova 2 Lite (its parser is not in this core yet)" do
      # shared/fixtures/recorded/chat_basic_chat_functionality_bedrock_amazon_nova-2-lite-v1_0_can_have_a_basic_
      # conversation.json: "usage":{"inputTokens":53,"outputTokens":39,...}, Converse's input counting every
      # input token (cacheReadInputTokens apart when there are any).
      price = table[:bedrock, "amazon.nova-2-lite-v1:0"]
      # 53 x 0.30 + 39 x 2.50 = 15.90 + 97.50 = 113.40 per million
      expect(price.cost(input_tokens: 53, output_tokens: 39)).to eq(cost("0.0001134"))
    end
  end

  describe "on every attempt record and the reply" do
    before do
      LlmFailover.configure { |c| c.max_retries = 0 }
    end

    it "prices a recorded chat completion with cached tokens at the provider's own price (c.price)" do
      LlmFailover.configure do |c|
        c.provider :deepseek, api: :openai, api_key: "sk-test", base_url: primary.base_url(:openai)
        c.price :deepseek, "deepseek-chat", input: 0.27, cached_input: 0.07, output: 1.10
      end
      primary.enqueue({ fixture: File.join(RECORDED, "function_calling/chat_function_calling_deepseek_deepseek-chat_" \
                                                     "can_use_parallel_tool_calls.json"), interaction: 1 })
      reply = LlmFailover.chat(model: "deepseek-chat", provider: :deepseek).ask("Weather in Berlin and Paris?")
      record = one(reply.attempts)
      expect(record).to have_attributes(input_tokens: 547, cached_input_tokens: 384, output_tokens: 69,
                                        cost: cost("0.00014679"))
      expect(reply.cost).to eq(cost("0.00014679"))
      expect(record.to_h[:cost]).to eq("0.00014679")
    end

    it "prices a recorded Anthropic stream at the default table's price" do
      LlmFailover.configure do |c|
        c.provider :anthropic, api: :anthropic, api_key: "sk-ant", base_url: backup.base_url(:anthropic)
      end
      backup.enqueue({ fixture: File.join(RECORDED, "chat_streaming_responses_anthropic_claude-haiku-4-5_supports_" \
                                                    "streaming_responses.json"), interaction: 0 })
      reply = LlmFailover.chat(model: "claude-haiku-4-5", provider: :anthropic).ask("Count to three") { |_| }
      # 15 x 1.00 + 9 x 5.00 = 60 per million
      expect(one(reply.attempts).cost).to eq(cost("0.00006"))
      expect(reply.cost).to eq(cost("0.00006"))
    end

    it "prices cached and cache-written tokens apart, as each protocol reports them" do
      primary.enqueue({ text: "ok", usage: { input: 1_000, output: 200, cached: 400 } })
      backup.enqueue({ text: "ok", usage: { input: 1_000, output: 200, cached: 400, cache_write: 100 } })
      openai = LlmFailover.chat(model: "gpt-4o", provider: :openai).ask("hi")
      anthropic = LlmFailover.chat(model: "claude-haiku-4-5", provider: :anthropic).ask("hi") { |_| }
      # gpt-4o: 600 x 2.50 + 400 x 1.25 + 200 x 10 = 1500 + 500 + 2000 = 4000 per million
      expect(one(openai.attempts)).to have_attributes(input_tokens: 1_000, cached_input_tokens: 400,
                                                      cost: cost("0.004"))
      # claude-haiku-4-5: 500 x 1 + 400 x 0.10 + 100 x 1.25 + 200 x 5 = 500 + 40 + 125 + 1000 per million
      expect(one(anthropic.attempts)).to have_attributes(input_tokens: 1_000, cached_input_tokens: 400,
                                                         cache_write_tokens: 100, cost: cost("0.001665"))
    end

    it "keeps a failed billed attempt's cost, and sums every attempt into reply.cost" do
      LlmFailover.configure do |c|
        c.provider :anthropic, api: :anthropic, api_key: "sk-ant", base_url: primary.base_url(:anthropic)
        c.provider :openai, api: :openai, api_key: "sk-test", base_url: backup.base_url(:openai)
      end
      # Anthropic names its input tokens as the stream starts: a stream cut after two
      # chunks was billed its 2,000 input tokens.
      primary.enqueue({ chunks: %w[a b c d], cut_after: 2, usage: { input: 2_000, output: 4 } })
      backup.enqueue({ text: "done", usage: { input: 100, output: 10 } })
      reply = LlmFailover.chat(model: "claude-haiku-4-5", provider: :anthropic,
                               backup_model: "gpt-4o-mini", backup_provider: :openai).ask("hi") { |_| }
      failed, answered = reply.attempts
      expect(failed).to have_attributes(success?: false, input_tokens: 2_000)
      # 2,000 x 1.00 + (the output the stream had reported) x 5.00
      expect(failed.cost).to eq(cost("0.002") + (BigDecimal(failed.output_tokens.to_i) * 5 / 1_000_000))
      # gpt-4o-mini: 100 x 0.15 + 10 x 0.60 = 21 per million
      expect(answered.cost).to eq(cost("0.000021"))
      expect(reply.cost).to eq(failed.cost + answered.cost)
    end

    it "sums every tool-loop turn into reply.cost" do
      weather = Class.new(LlmFailover::Tool) do
        tool_name "weather"
        description "Weather"
        param :city, type: :string, desc: "City"
        def execute(city:) = { city: city, temp: 21 }
      end
      primary.enqueue({ tool_calls: [{ name: "weather", arguments: { city: "Paris" } }], usage: { input: 300, output: 20 } })
      primary.enqueue({ text: "21 degrees", usage: { input: 400, output: 10 } })
      reply = LlmFailover.chat(model: "gpt-4o", provider: :openai).with_tool(weather).ask("Weather in Paris?")
      expect(reply.attempts.size).to eq(2)
      # (300 + 400) x 2.50 + (20 + 10) x 10 = 1750 + 300 = 2050 per million
      expect(reply.cost).to eq(cost("0.00205"))
    end

    it "makes a model without a price cost nil, never 0, with one warning per model" do
      log = StringIO.new
      LlmFailover.configure { |c| c.logger = Logger.new(log) }
      primary.default = { text: "ok", usage: { input: 10, output: 5 } }
      2.times { expect(LlmFailover.chat(model: "unpriced-model-#{object_id}", provider: :openai).ask("hi").cost).to be_nil }
      expect(log.string.scan(/no price for openai\/unpriced-model/).size).to eq(1)
    end

    it "costs nothing for a cache hit, which records what it saved" do
      LlmFailover.configure { |c| c.cache = LlmFailover::MemoryCache.new }
      primary.default = { text: "cached answer", usage: { input: 1_000, output: 100 } }
      first = LlmFailover.chat(model: "gpt-4o", provider: :openai).ask("same")
      hit = LlmFailover.chat(model: "gpt-4o", provider: :openai).ask("same")
      # 1,000 x 2.50 + 100 x 10 = 3500 per million
      expect(first.cost).to eq(cost("0.0035"))
      expect(hit).to be_cached
      expect(one(hit.attempts)).to have_attributes(cost: 0, cost_saved: cost("0.0035"))
      expect(hit.cost).to eq(0)
    end

    it "finds a host's price by the provider's api and address, whatever the provider is named" do
      price = LlmFailover::Prices.default[:openai, "gpt-4o-mini"]
      LlmFailover.configure do |c|
        c.provider :main_openai, api: :openai, api_key: "sk-test"
        c.provider :proxy, api: :openai, api_key: "sk-test", base_url: primary.base_url(:openai)
      end
      config = LlmFailover.configuration
      expect(config.pricing.for(config.provider_config(:main_openai).target("gpt-4o-mini"))).to eq(price)
      # A compatible server elsewhere is another host: OpenAI's prices are not its own.
      expect(config.pricing.for(config.provider_config(:proxy).target("gpt-4o-mini"))).to be_nil
    end

    it "turns costs off with c.prices = nil" do
      LlmFailover.configure { |c| c.prices = nil }
      primary.enqueue({ text: "ok", usage: { input: 10, output: 5 } })
      reply = LlmFailover.chat(model: "gpt-4o", provider: :openai).ask("hi")
      expect([reply.cost, one(reply.attempts).cost]).to eq([nil, nil])
    end
  end
end
