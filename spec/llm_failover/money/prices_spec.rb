# frozen_string_literal: true

require "spec_helper"
require "tempfile"

# LlmFailover::Price, Prices (the default table and LiteLLM's price file) and how a
# target finds its price (Pricing).
RSpec.describe LlmFailover::Prices do
  let(:sample) { File.expand_path("../../fixtures/prices/litellm_sample.json", __dir__) }

  def usd(text)
    BigDecimal(text)
  end

  describe LlmFailover::Price do
    it "prices plain, cached and cache-written input apart, per million tokens, exactly" do
      price = described_class.new(input: 3, output: 15, cached_input: 0.30, cache_write: 3.75)
      # 600 x 3 + 300 x 0.30 + 100 x 3.75 + 50 x 15 = 1800 + 90 + 375 + 750 = 3015 per million
      expect(price.cost(input_tokens: 1_000, output_tokens: 50, cached_input_tokens: 300, cache_write_tokens: 100))
        .to eq(usd("0.003015"))
      expect(price.cost(input_tokens: nil, output_tokens: nil)).to eq(0)
    end

    it "bills a request past the long-context threshold wholly at the tier's prices" do
      price = described_class.new(input: "2.50", output: 15, cached_input: "0.25",
                                  long_context: { above: 272_000, input: 5, output: "22.50", cached_input: "0.50" })
      expect(price.cost(input_tokens: 272_000, output_tokens: 0)).to eq(usd("0.68"))
      # 272,001 x 5 + 1,000 x 22.50 per million
      expect(price.cost(input_tokens: 272_001, output_tokens: 1_000)).to eq(usd("1.382505"))
    end

    it "takes the input price for a cache price it is not given, and refuses what is not a price" do
      price = described_class.new(input: 1, output: 2)
      expect([price.cached_input, price.cache_write]).to eq([1, 1])
      expect { described_class.new(input: -1, output: 1) }.to raise_error(LlmFailover::ConfigurationError, /input/)
      expect { described_class.new(input: 1, output: Float::NAN) }.to raise_error(LlmFailover::ConfigurationError)
      expect { described_class.new(input: "abc", output: 1) }.to raise_error(LlmFailover::ConfigurationError)
    end
  end

  describe ".default" do
    let(:table) { described_class.default }

    it "is dated and prices the common models of every host, each with its source page" do
      expect(table.as_of).to eq("2026-12-07")
      expect(table.hosts).to contain_exactly(:openai, :anthropic, :gemini, :vertex, :bedrock, :azure)
      {
        [:openai, "gpt-4o"] => [2.50, 10.0, 1.25], [:openai, "gpt-5-nano"] => [0.05, 0.40, 0.005],
        [:anthropic, "claude-sonnet-4-5"] => [3.0, 15.0, 0.30], [:anthropic, "claude-haiku-4-5"] => [1.0, 5.0, 0.10],
        [:gemini, "gemini-2.5-flash"] => [0.30, 2.50, 0.03], [:vertex, "claude-sonnet-4-5@20250929"] => [3.0, 15.0, 0.30],
        [:bedrock, "global.anthropic.claude-haiku-4-5-20251001-v1:0"] => [1.0, 5.0, 0.10],
        [:azure, "gpt-4o-mini"] => [0.15, 0.60, 0.075]
      }.each do |(host, model), (input, output, cached)|
        expect(table[host, model].to_h.values_at(:input, :output, :cached_input)).to eq([input, output, cached]),
                                                                                     "#{host} #{model}"
      end
      expect(table.map { |_, _, price| price.source }.uniq).to all(start_with("https://"))
      expect(table[:anthropic, "claude-sonnet-4-5"].cache_write).to eq(usd("3.75"))
    end
  end

  describe ".from_file (LiteLLM's model_prices_and_context_window.json)" do
    let(:file) { described_class.from_file(sample) }

    it "reads the same prices the default table has for the same models" do
      {
        [:openai, "gpt-4o"] => [:openai, "gpt-4o"], [:openai, "gpt-5.4"] => [:openai, "gpt-5.4"],
        [:anthropic, "claude-sonnet-4-5"] => [:anthropic, "claude-sonnet-4-5"],
        [:gemini, "gemini-2.5-flash"] => [:gemini, "gemini-2.5-flash"],
        [:vertex, "claude-haiku-4-5@20251001"] => [:vertex, "claude-haiku-4-5@20251001"],
        [:bedrock, "global.amazon.nova-2-lite-v1:0"] => [:bedrock, "global.amazon.nova-2-lite-v1:0"],
        [:azure, "gpt-4o-mini"] => [:azure, "gpt-4o-mini"]
      }.each do |(host, model), key|
        expect(file[host, model]).to eq(described_class.default[*key]), "#{host} #{model}"
      end
    end

    it "keeps other hosts under their own name, and leaves out regional and image entries" do
      expect(file[:groq, "llama-3.3-70b-versatile"].to_h.values_at(:input, :output)).to eq([0.59, 0.79])
      expect(file[:bedrock, "us-east-1/amazon.nova-2-lite-v1:0"]).to be_nil
      expect(file[:openai, "dall-e-3"]).to be_nil
      expect(file.size).to eq(8)
    end

    it "gives a call the same cost as the built-in table" do
      fp = start_fake_provider
      LlmFailover.configure do |c|
        c.provider :openai, api: :openai, api_key: "sk-test", base_url: fp.base_url(:openai)
        c.provider :anthropic, api: :anthropic, api_key: "sk-ant", base_url: fp.base_url(:anthropic)
        c.max_retries = 0
      end
      fp.default = { text: "ok", usage: { input: 250_000, output: 300, cached: 1_000 } }
      costs = [described_class.default, file].map do |prices|
        LlmFailover.configure { |c| c.prices = prices }
        %w[gpt-4o claude-sonnet-4-5].map do |model|
          LlmFailover.chat(model: model, provider: model.start_with?("gpt") ? :openai : :anthropic).ask("hi").cost
        end
      end
      expect(costs[0]).to eq(costs[1])
      # gpt-4o: 249,000 x 2.50 + 1,000 x 1.25 + 300 x 10 = 622,500 + 1,250 + 3,000 per million;
      # claude-sonnet-4-5 past 200k: 249,000 x 6 + 1,000 x 0.60 + 300 x 22.50 = 1,494,000 + 600 + 6,750
      expect(costs[0]).to eq([usd("0.62675"), usd("1.50135")])
    end

    it "refuses a file that is not one" do
      Tempfile.create(["prices", ".json"]) do |f|
        f.write("[1, 2]")
        f.flush
        expect { described_class.from_file(f.path) }.to raise_error(LlmFailover::ConfigurationError, /JSON object/)
      end
      expect { described_class.from_file("/nonexistent/prices.json") }.to raise_error(LlmFailover::ConfigurationError)
    end
  end

  describe "a target's price (c.prices, c.price)" do
    let(:fp) { start_fake_provider }

    before do
      LlmFailover.configure do |c|
        c.provider :openai, api: :openai, api_key: "sk-test", base_url: fp.base_url(:openai)
        c.provider :azure_east, api: :openai, api_key: "sk-az", base_url: fp.base_url(:openai)
      end
    end

    def price_of(provider, model)
      config = LlmFailover.configuration
      config.pricing.for(config.provider_config(provider).target(model))
    end

    it "puts c.price in front of the table, for a provider entry or a host" do
      LlmFailover.configure { |c| c.price :openai, "gpt-4o", input: 5, output: 20 }
      expect(price_of(:openai, "gpt-4o").to_h.values_at(:input, :output)).to eq([5.0, 20.0])
      expect(price_of(:azure_east, "my-deployment")).to be_nil
      LlmFailover.configure { |c| c.price :azure_east, "my-deployment", input: 2.5, output: 10, cached_input: 1.25 }
      expect(price_of(:azure_east, "my-deployment").cached_input).to eq(usd("1.25"))
    end

    it "keeps c.price's overrides when the table is replaced" do
      LlmFailover.configure do |c|
        c.price :openai, "house-model", input: 1, output: 1
        c.prices = described_class.from_file(sample)
      end
      expect(price_of(:openai, "house-model")).not_to be_nil
      expect(price_of(:openai, "gpt-4o")).to eq(described_class.default[:openai, "gpt-4o"])
      expect(price_of(:openai, "gpt-5-nano")).to be_nil # not in that file
    end

    it "refuses a table that is not a Prices and a price with a bad model" do
      expect { LlmFailover.configure { |c| c.prices = {} } }.to raise_error(LlmFailover::ConfigurationError, /Prices/)
      expect { LlmFailover.configure { |c| c.price :openai, nil, input: 1, output: 1 } }
        .to raise_error(LlmFailover::ConfigurationError, /model/)
    end
  end
end
