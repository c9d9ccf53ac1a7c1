# frozen_string_literal: true

require "bigdecimal"
require "json"

require_relative "../errors"
require_relative "price"
require_relative "prices"

module LlmFailover
  class Prices
    # LiteLLM's price file (model_prices_and_context_window.json) read into a Prices:
    # one entry per model, USD per token, its host in "litellm_provider". Its hosts
    # become this gem's (vertex_ai-* :vertex, bedrock_converse :bedrock, ...; any
    # other keeps its own name, which a provider of that name finds), and its keys
    # lose the host's prefix ("gemini/gemini-2.5-flash" is "gemini-2.5-flash" on
    # :gemini). Entries priced per region ("bedrock/us-east-1/...") are left out: the
    # gem does not know a call's region.
    #
    # @api private: Prices.from_file
    module LiteLLMFile
      HOSTS = {
        "openai" => :openai, "anthropic" => :anthropic,
        "gemini" => :gemini, "vertex_ai" => :vertex, "vertex_ai-language-models" => :vertex,
        "vertex_ai-anthropic_models" => :vertex, "vertex_ai-embedding-models" => :vertex,
        "bedrock" => :bedrock, "bedrock_converse" => :bedrock, "azure" => :azure
      }.freeze
      # The prefixes a key may carry before the model id.
      PREFIXES = %w[vertex_ai bedrock_converse bedrock].freeze
      MODES = %w[chat responses embedding].freeze
      MILLION = BigDecimal("1000000")
      RATES = { input: "input_cost_per_token", output: "output_cost_per_token",
                cached_input: "cache_read_input_token_cost", cache_write: "cache_creation_input_token_cost" }.freeze
      # input_cost_per_token_above_200k_tokens and its kind: the long-context tier.
      TIER = /\A(?:input_cost_per_token|output_cost_per_token|cache_read_input_token_cost|
                 cache_creation_input_token_cost)_above_(\d+)k_tokens\z/x.freeze

      module_function

      # @return [Prices]
      # @raise [ConfigurationError]
      def read(path)
        parse(File.read(path), source: File.basename(path))
      rescue SystemCallError => e
        raise ConfigurationError, "price file #{path}: #{e.message}"
      end

      # @return [Prices]
      def parse(text, source: nil)
        # Decimals as written: 1.25e-06 per token is exactly 1.25 per million.
        entries = JSON.parse(text, decimal_class: BigDecimal)
        raise ConfigurationError, "price file #{source}: not a JSON object of models" unless entries.is_a?(Hash)

        table = Hash.new { |h, k| h[k] = {} }
        entries.each do |key, entry|
          host, model, price = entry(key, entry, source)
          table[host][model] = price if price
        end
        Prices.new(table)
      rescue JSON::ParserError => e
        raise ConfigurationError, "price file #{source}: #{e.message.lines.first&.strip}"
      end

      # @return [Array(Symbol, String, Price), nil]
      def entry(key, entry, source)
        return nil unless entry.is_a?(Hash) && MODES.include?(entry["mode"]) && entry["litellm_provider"].is_a?(String)
        return nil unless rate(entry, :input) && rate(entry, :output)

        provider = entry["litellm_provider"]
        model = model_id(key, provider)
        return nil if model.nil?

        figures = RATES.keys.to_h { |name| [name, rate(entry, name)] }.compact
        tier = long_context(entry)
        figures[:long_context] = tier if tier
        max_output = entry["max_output_tokens"]
        figures[:max_output] = max_output.to_i if max_output.is_a?(Numeric) && max_output.to_i.positive?
        [HOSTS.fetch(provider) { provider.to_sym }, model, Price.new(**figures, source: source)]
      rescue ConfigurationError
        nil # a figure this gem cannot use (negative, not a number): the model stays unpriced
      end

      # "gemini/gemini-2.5-flash" -> "gemini-2.5-flash"; nil for a regional entry.
      def model_id(key, provider)
        id = key.to_s
        prefix = ([provider] + PREFIXES).find { |p| id.start_with?("#{p}/") }
        id = id.delete_prefix("#{prefix}/") if prefix
        return nil if id.empty? || (prefix&.start_with?("bedrock") && id.include?("/"))

        id
      end

      # USD per million tokens, or nil when the entry has no such figure.
      def rate(entry, name, field = RATES.fetch(name))
        value = entry[field]
        value.is_a?(Numeric) ? BigDecimal(value.to_s) * MILLION : nil
      end

      # The lowest threshold's figures, e.g. { above: 200_000, input: 2.5, output: 15 }.
      def long_context(entry)
        tiers = entry.keys.filter_map { |field| (m = TIER.match(field)) && m[1].to_i }.uniq
        return nil if tiers.empty?

        thousands = tiers.min
        figures = RATES.to_h { |name, field| [name, rate(entry, name, "#{field}_above_#{thousands}k_tokens")] }.compact
        figures.merge(above: thousands * 1000)
      end
    end
  end
end
