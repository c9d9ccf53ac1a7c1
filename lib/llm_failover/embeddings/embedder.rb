# frozen_string_literal: true

require_relative "../errors"
require "llm_failover/llm_failover" # the compiled extension: Engine
require_relative "../chat/call/failure"
require_relative "../chat/call/records"
require_relative "../chat/model_name"
require_relative "../chat/text"
require_relative "../scrubber/session"
require_relative "embeddings"

module LlmFailover
  # Embeddings of texts through the engine's attempt loop: the OpenAI-compatible
  # /embeddings endpoint, with a chat call's classification, retries, deadlines,
  # redaction and attempt records. The backup is the same model on another provider,
  # never another model: vectors of two models do not compare.
  #
  # Scrubbing follows a chat's rule: with a configured scrubber the texts leave the
  # process scrubbed unless +scrub: false+. Each text is scrubbed on its own (a
  # session per text), so a text's vector never depends on the texts embedded beside
  # it: a card number is [CARD_1] in every text it appears in, alone or in a batch.
  # There is nothing to restore: the answer is vectors.
  #
  #   LlmFailover.embed(["a text", "another"], model: "text-embedding-3-small", provider: :openai)
  #
  # Also the engine's listener for one call (there is nothing to stream).
  class Embedder
    # @return [String]
    attr_reader :model

    # @param config [Configuration]
    # @param budget [Numeric, nil] seconds the whole call may take, split between the
    #   targets, with no retry (the semantic cache's lookup); nil: the configured policy
    # @param scrub [Boolean] false: the texts go out as given even with a scrubber
    #   configured (the semantic cache passes text its chat already scrubbed, or chose
    #   not to)
    # @raise [ConfigurationError] unknown provider, a provider that is not OpenAI-compatible,
    #   a scrub that is not true or false
    def initialize(config:, model:, provider:, backup_provider: nil, feature: nil, budget: nil, engine: nil,
                   scrub: true)
      raise ConfigurationError, "scrub must be true or false, got #{scrub.inspect}" unless [true, false].include?(scrub)

      @config = config
      @scrubber = scrub ? config.scrubber : nil
      @model = ModelName.check(model, "model")
      @targets = [provider, backup_provider].compact.map { |name| target(name) }.freeze
      @feature = feature
      @engine = engine
      @policy = budget ? budget_policy(budget) : config.engine_policy
    end

    # @param texts [String, Array<String>] each non-empty
    # @return [Embeddings]
    # @raise [Error] the provider call failed (of the class the engine classified)
    # @raise [ArgumentError] no text, an empty text, bytes that are not text
    def embed(texts)
      texts = Array(texts).each_with_index.map { |t, i| Text.given(t, "text #{i}") }
      raise ArgumentError, "nothing to embed: give one text or more" if texts.empty?
      raise ArgumentError, "text #{texts.index(&:empty?)} to embed is empty" if texts.any?(&:empty?)

      @request_id = Engine.uuid
      @records = Call::Records.new(request_id: @request_id, feature: @feature, usage_log: @config.usage_log_emitter,
                                   pricing: @config.pricing)
      texts = scrubbed(texts) if @scrubber
      request = Engine::Request.new(targets: @targets.map(&:engine), inputs: texts, policy: @policy)
      result = (@engine || LlmFailover.engine).run(request, self)
      return failed(result) unless result.status == :ok

      Embeddings.new(vectors: result.vectors, model: @model, provider: Target.of(@targets, result.target).name,
                     tokens: result.input_tokens, attempts: @records.to_a, request_id: @request_id)
    end

    # Engine listener: embeddings are not streamed.
    def on_chunk(_text, _target); end

    # Engine listener.
    def on_reset(_target); end

    # Engine listener: one HTTP attempt finished.
    def on_attempt(attempt)
      @records.engine_attempt(attempt, Target.of(@targets, attempt.target), Target.host_of(@targets, attempt.target))
    end

    def inspect
      "#<#{self.class.name} #{@targets.map(&:label).join(' -> ')}>"
    end

    private

    # A provider, or a pool, every host of which serves embeddings (Host#embeddings_refusal:
    # OpenAI-compatible /embeddings, Azure's too, and Gemini's batchEmbedContents).
    def target(name)
      target = @config.provider_config(name).target(@model)
      target.hosts.each do |host|
        why = host.provider.host.embeddings_refusal(host.protocol)
        next unless why

        raise ConfigurationError, "embeddings need a provider that serves them (OpenAI-compatible, Azure, Gemini): " \
                                  "#{host.name.inspect}: #{why}"
      end
      target
    end

    # One try per target, each within its share of the budget.
    def budget_policy(budget)
      unless budget.is_a?(Numeric) && budget.positive?
        raise ArgumentError, "budget must be a positive number of seconds, got #{budget.inspect}"
      end

      share = budget.to_f / @targets.size
      Engine::Policy.new(**@config.engine_policy.to_h.merge(max_retries: 0, hedge_after: nil, connect_timeout: share,
                                                            request_timeout: share, first_token_timeout: share,
                                                            idle_timeout: share)).freeze
    end

    # What leaves the process; the records count what was replaced, as a chat's do.
    def scrubbed(texts)
      counts = Hash.new(0)
      texts = texts.map do |text|
        session = Scrubber::Session.new(@scrubber)
        out = session.scrub(text)
        session.counts.each { |kind, n| counts[kind] += n }
        out
      end
      @records.scrubbed = counts.to_h.freeze
      texts
    end

    def failed(result)
      failure = Call::Failure.new(result: result, targets: @targets, records: @records, request_id: @request_id,
                                  restore: ->(text) { text })
      error = failure.error
      cause = error.is_a?(Error) && failure.cause # a ConfigurationError keeps its source's
      cause ? raise(error, cause: cause) : raise(error)
    end
  end
end
