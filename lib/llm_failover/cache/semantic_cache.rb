# frozen_string_literal: true

require_relative "../errors"
require_relative "../embeddings/embedder"
require_relative "../records/warnings"
require_relative "semantic_lookup"
require_relative "semantic_writer"

module LlmFailover
  # The semantic tier of the response cache, behind the exact one: a question worded
  # differently gets a stored answer when their embeddings are at least +threshold+
  # similar and the rest of the request is equal (SemanticLookup).
  #
  #   c.semantic_cache = LlmFailover::SemanticCache.new(
  #     embed_model: "text-embedding-3-small", provider: :openai, threshold: 0.92,
  #     index: LlmFailover::MemoryIndex.new)
  #
  # An embedder slower than +budget+ or failing skips the tier for that call (one
  # warning per outage); writes go on a thread of their own.
  class SemanticCache
    # @return [String] the embedding model: an index never holds vectors of two models
    attr_reader :embed_model
    # @return [Symbol] where embeddings are made, and the same model's other provider
    attr_reader :provider, :backup_provider
    # @return [Float] the least cosine similarity that is a hit
    attr_reader :threshold
    # @return [Numeric] seconds an embedding may take before the tier is skipped
    attr_reader :budget
    attr_reader :index

    # @param embed_model [String]
    # @param provider [Symbol] a configured OpenAI-compatible provider
    # @param backup_provider [Symbol, nil] the same embedding model elsewhere
    # @param threshold [Float] in (0, 1]
    # @param index [#add, #nearest, #clear, #size]
    # @param budget [Numeric] seconds per embedding, split between the providers
    # @param feature [String] the feature the embedding attempts are recorded under
    # @raise [ConfigurationError]
    def initialize(embed_model:, provider:, index:, backup_provider: nil, threshold: 0.92, budget: 1.0,
                   feature: "semantic_cache")
      unless embed_model.is_a?(String) && !embed_model.strip.empty?
        raise ConfigurationError, "embed_model must be a non-empty String, got #{embed_model.inspect}"
      end
      unless threshold.is_a?(Numeric) && threshold.positive? && threshold <= 1
        raise ConfigurationError, "threshold must be a number in (0, 1], got #{threshold.inspect}"
      end
      unless budget.is_a?(Numeric) && budget.positive?
        raise ConfigurationError, "budget must be a positive number of seconds, got #{budget.inspect}"
      end
      missing = %i[add nearest clear size].reject { |m| index.respond_to?(m) }
      unless missing.empty?
        raise ConfigurationError, "index must respond to #add, #nearest, #clear and #size " \
                                  "(#{index.class} lacks #{missing.map { |m| "##{m}" }.join(', ')})"
      end

      @embed_model = embed_model
      @provider = provider&.to_sym
      @backup_provider = backup_provider&.to_sym
      @threshold = threshold.to_f
      @budget = budget
      @feature = feature
      @index = index
      @lock = Mutex.new
      @down = false
      @writer = SemanticWriter.new(self)
    end

    # @api private: the tier for one call, nil when it cannot take part (the last
    # message is not the user's, or the transcript holds tool turns)
    # @return [SemanticLookup, nil]
    def lookup(config:, namespace:, messages:, request:, targets:, format:)
      return nil unless messages.last && messages.last[0] == "user"
      return nil if messages.any? { |role, _| role == "tool" }

      SemanticLookup.new(cache: self, config: config, namespace: namespace, messages: messages, request: request,
                         targets: targets, format: format)
    end

    # @api private: the embedding of +text+ within the budget; nil when the embedder
    # failed or was too slow (warned once until it answers again). +text+ is the
    # call's last user message as its chat sends it (scrubbed, or not with scrub:
    # false), so it is not scrubbed again here.
    # @return [Array<Float>, nil]
    def embed(config, text)
      vector = Embedder.new(config: config, model: @embed_model, provider: @provider, backup_provider: @backup_provider,
                            feature: @feature, budget: @budget, scrub: false).embed(text).vector
      @lock.synchronize { @down = false }
      vector
    rescue Error => e
      first = @lock.synchronize { !@down && (@down = true) }
      if first
        Warnings.warn("semantic cache skipped: embedding with #{@embed_model} failed (#{e.class}: #{e.message}); " \
                      "calls go on without it until it answers again", logger: config.logger)
      end
      nil
    end

    # @api private: the index's best entry, nil on a miss or when the index raised
    # @return [Array(String, Float), nil]
    def nearest(partition, vector, logger:)
      guard(:read, logger) { @index.nearest(partition: partition, vector: vector, threshold: @threshold) }
    end

    # @api private: adds an entry on the writer thread
    def add_later(partition, vector, value, logger:)
      @writer.push(partition, vector, value, logger)
    end

    # @api private: run by the writer thread
    def add_now(partition, vector, value, logger)
      guard(:write, logger) { @index.add(partition: partition, vector: vector, value: value) }
    end

    # Waits until the writes queued so far are in the index (tests, a script's end).
    # @param timeout [Numeric] seconds at most
    # @return [Boolean] whether every write landed in time
    def flush(timeout: 5)
      @writer.flush(timeout)
    end

    # Empties the index: once it returns no lookup answers an entry added before,
    # in any process sharing the index (doc/semantic-index.md, "What clear promises").
    def clear
      @index.clear
    end

    # @return [Integer] entries in the index
    def size
      @index.size
    end

    def inspect
      backup = @backup_provider ? " backup=#{@backup_provider}" : ""
      "#<#{self.class.name} #{@provider}/#{@embed_model}#{backup} threshold=#{@threshold} index=#{@index.class.name}>"
    end
    alias to_s inspect

    private

    # An index that raises (Redis down) is a miss, never a failed call.
    def guard(operation, logger)
      yield
    rescue StandardError => e
      if UsageLog.first_failure?([:semantic_cache, @index.class])
        Warnings.warn("semantic cache #{operation} failed (#{@index.class}): #{e.class}: #{e.message}; " \
                      "answering without it", logger: logger)
      end
      nil
    end
  end
end
