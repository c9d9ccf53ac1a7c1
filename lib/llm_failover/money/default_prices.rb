# frozen_string_literal: true

module LlmFailover
  class Prices
    # The table Prices.default is made of: the common models of every host the gem
    # speaks to, USD per million tokens, standard (pay-as-you-go) tier. Read on
    # AS_OF from LiteLLM's model_prices_and_context_window.json (BerriAI/litellm,
    # commit 00035b69f416be24e2e323c13198d9b7d2d1bdf9), each figure checked against
    # the host's own pricing page, which is each group's source below (and each
    # Price#source). Batch, flex and priority tiers, 1-hour cache writes and regional
    # surcharges are not here: set them with c.price when you use them.
    #
    # Keys are the model ids each host is asked for. With a provider's models: map, a
    # logical name missing here falls back to the host's id (Pricing#for).
    module Defaults
      AS_OF = "2026-12-07"

      OPENAI = "https://developers.openai.com/api/docs/pricing"
      ANTHROPIC = "https://platform.claude.com/docs/en/about-claude/pricing"
      GEMINI = "https://ai.google.dev/gemini-api/docs/pricing"
      VERTEX = "https://cloud.google.com/vertex-ai/generative-ai/pricing"
      BEDROCK = "https://aws.amazon.com/bedrock/pricing/"
      AZURE = "https://azure.microsoft.com/en-us/pricing/details/cognitive-services/openai-service/"

      # OpenAI (Chat Completions and Responses alike). GPT-5.4 and later bill every
      # token of a request past 272k input tokens at the long-context rates.
      OPENAI_MODELS = {
        "gpt-5.6" => { input: "5", output: "30", cached_input: "0.50", cache_write: "6.25", max_output: 128_000,
                       long_context: { above: 272_000, input: "10", output: "45", cached_input: "1",
                                       cache_write: "12.50" } },
        "gpt-5.5" => { input: "5", output: "30", cached_input: "0.50", max_output: 128_000,
                       long_context: { above: 272_000, input: "10", output: "45", cached_input: "1" } },
        "gpt-5.4" => { input: "2.50", output: "15", cached_input: "0.25", max_output: 128_000,
                       long_context: { above: 272_000, input: "5", output: "22.50", cached_input: "0.50" } },
        "gpt-5.4-mini" => { input: "0.75", output: "4.50", cached_input: "0.075", max_output: 128_000 },
        "gpt-5.4-nano" => { input: "0.20", output: "1.25", cached_input: "0.02", max_output: 128_000 },
        "gpt-5" => { input: "1.25", output: "10", cached_input: "0.125", max_output: 128_000 },
        "gpt-5-mini" => { input: "0.25", output: "2", cached_input: "0.025", max_output: 128_000 },
        "gpt-5-nano" => { input: "0.05", output: "0.40", cached_input: "0.005", max_output: 128_000 },
        "gpt-4.1" => { input: "2", output: "8", cached_input: "0.50", max_output: 32_768 },
        "gpt-4.1-mini" => { input: "0.40", output: "1.60", cached_input: "0.10", max_output: 32_768 },
        "gpt-4.1-nano" => { input: "0.10", output: "0.40", cached_input: "0.025", max_output: 32_768 },
        "gpt-4o" => { input: "2.50", output: "10", cached_input: "1.25", max_output: 16_384 },
        "gpt-4o-mini" => { input: "0.15", output: "0.60", cached_input: "0.075", max_output: 16_384 },
        # Embeddings: input only (LlmFailover.embed).
        "text-embedding-3-small" => { input: "0.02", output: "0" },
        "text-embedding-3-large" => { input: "0.13", output: "0" }
      }.freeze

      # Anthropic's Messages API. cache_write is the 5-minute write (1.25x input), the
      # default; a 1-hour write costs 2x input (set it with c.price if you use it).
      # Sonnet 4.5 and 4 bill a request past 200k input tokens at the long-context rates.
      SONNET_4_LONG = { above: 200_000, input: "6", output: "22.50", cached_input: "0.60", cache_write: "7.50" }.freeze
      OPUS = { input: "5", output: "25", cached_input: "0.50", cache_write: "6.25" }.freeze
      SONNET = { input: "3", output: "15", cached_input: "0.30", cache_write: "3.75", max_output: 64_000 }.freeze
      ANTHROPIC_MODELS = {
        "claude-fable-5" => { input: "10", output: "50", cached_input: "1", cache_write: "12.50", max_output: 128_000 },
        "claude-opus-4-7" => OPUS.merge(max_output: 128_000),
        "claude-opus-4-6" => OPUS.merge(max_output: 128_000),
        "claude-opus-4-5" => OPUS.merge(max_output: 64_000),
        "claude-opus-4-1" => { input: "15", output: "75", cached_input: "1.50", cache_write: "18.75",
                               max_output: 32_000 },
        "claude-sonnet-5" => { input: "2", output: "10", cached_input: "0.20", cache_write: "2.50", max_output: 128_000 },
        "claude-sonnet-4-6" => SONNET,
        "claude-sonnet-4-5" => SONNET.merge(long_context: SONNET_4_LONG),
        "claude-sonnet-4-0" => SONNET.merge(long_context: SONNET_4_LONG),
        "claude-haiku-4-5" => { input: "1", output: "5", cached_input: "0.10", cache_write: "1.25", max_output: 64_000 }
      }.freeze
      # The dated ids the aliases above point at.
      ANTHROPIC_SNAPSHOTS = {
        "claude-opus-4-5-20251101" => "claude-opus-4-5", "claude-opus-4-1-20250805" => "claude-opus-4-1",
        "claude-sonnet-4-5-20250929" => "claude-sonnet-4-5", "claude-sonnet-4-20250514" => "claude-sonnet-4-0",
        "claude-haiku-4-5-20251001" => "claude-haiku-4-5"
      }.freeze

      # The Gemini API (generateContent). Pro models bill a request past 200k input
      # tokens at the long-context rates. Context caching's storage (per hour) is not
      # a token price and is not counted.
      GEMINI_MODELS = {
        "gemini-3.5-flash" => { input: "1.50", output: "9", cached_input: "0.15", max_output: 65_535 },
        "gemini-3.1-pro-preview" => { input: "2", output: "12", cached_input: "0.20", max_output: 65_536,
                                      long_context: { above: 200_000, input: "4", output: "18", cached_input: "0.40" } },
        "gemini-3.1-flash-lite" => { input: "0.25", output: "1.50", cached_input: "0.025", max_output: 65_536 },
        "gemini-3-flash-preview" => { input: "0.50", output: "3", cached_input: "0.05", max_output: 65_535 },
        "gemini-2.5-pro" => { input: "1.25", output: "10", cached_input: "0.125", max_output: 65_535,
                              long_context: { above: 200_000, input: "2.50", output: "15", cached_input: "0.25" } },
        "gemini-2.5-flash" => { input: "0.30", output: "2.50", cached_input: "0.03", max_output: 65_535 },
        "gemini-2.5-flash-lite" => { input: "0.10", output: "0.40", cached_input: "0.01", max_output: 65_535 }
      }.freeze

      # Vertex AI: Gemini at the Gemini API's standard prices; Claude at Anthropic's list
      # prices, which are the global endpoint's (a regional endpoint costs 10% more for
      # Claude Sonnet 4.5 and later: set it with c.price).
      VERTEX_CLAUDE = {
        "claude-opus-4-6" => "claude-opus-4-6", "claude-sonnet-4-6" => "claude-sonnet-4-6",
        "claude-opus-4-5@20251101" => "claude-opus-4-5", "claude-opus-4-1@20250805" => "claude-opus-4-1",
        "claude-sonnet-4-5@20250929" => "claude-sonnet-4-5", "claude-sonnet-4@20250514" => "claude-sonnet-4-0",
        "claude-haiku-4-5@20251001" => "claude-haiku-4-5"
      }.freeze

      # Bedrock, by model id: the global cross-region inference profiles of Claude (at
      # Anthropic's list prices; the us./eu. profiles of Claude 4.5 and later cost 10%
      # more) and Amazon Nova 2 Lite (in-region and global).
      BEDROCK_MODELS = {
        "global.anthropic.claude-sonnet-4-5-20250929-v1:0" => "claude-sonnet-4-5",
        "global.anthropic.claude-haiku-4-5-20251001-v1:0" => "claude-haiku-4-5",
        "global.anthropic.claude-sonnet-4-20250514-v1:0" => "claude-sonnet-4-0"
      }.freeze
      NOVA_2_LITE = { input: "0.30", output: "2.50", cached_input: "0.075", max_output: 64_000 }.freeze

      # Azure OpenAI, Global Standard deployments: OpenAI's prices for the same models
      # (Data Zone and Regional deployments cost more: set them with c.price). Keys are
      # model names; a deployment named otherwise is priced through models: (its logical
      # name) or c.price.
      AZURE_MODELS = %w[gpt-5 gpt-5-mini gpt-5-nano gpt-4.1 gpt-4.1-mini gpt-4o gpt-4o-mini].freeze

      # @return [Hash{Symbol => Hash{String => Price}}]
      def self.table
        anthropic = ANTHROPIC_MODELS.merge(ANTHROPIC_SNAPSHOTS.transform_values { |id| ANTHROPIC_MODELS.fetch(id) })
        {
          openai: prices(OPENAI_MODELS, OPENAI),
          anthropic: prices(anthropic, ANTHROPIC),
          gemini: prices(GEMINI_MODELS, GEMINI),
          vertex: prices(GEMINI_MODELS.except("gemini-3.5-flash", "gemini-3.1-flash-lite")
                                      .merge(VERTEX_CLAUDE.transform_values { |id| anthropic.fetch(id) }), VERTEX),
          bedrock: prices(BEDROCK_MODELS.transform_values { |id| anthropic.fetch(id) }
                                        .merge("amazon.nova-2-lite-v1:0" => NOVA_2_LITE,
                                               "global.amazon.nova-2-lite-v1:0" => NOVA_2_LITE), BEDROCK),
          azure: prices(OPENAI_MODELS.slice(*AZURE_MODELS), AZURE)
        }
      end

      def self.prices(rows, source)
        rows.to_h { |model, figures| [model.freeze, Price.new(**figures, source: source)] }
      end
      private_class_method :prices
    end
  end
end
