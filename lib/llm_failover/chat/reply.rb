# frozen_string_literal: true

require "bigdecimal"

require_relative "target"
require_relative "../money/pricing"

module LlmFailover
  # The answer to one logical call, and who really gave it.
  class Reply
    # @return [String] the full answer text
    attr_reader :content
    # @return [String] the model asked of the target that answered: what "model" means
    #   on chunks and attempt records too (the backup's model after a failover)
    attr_reader :model
    # @return [String, nil] the model the provider says answered (often a dated
    #   snapshot of #model, e.g. "gpt-4o-2024-08-06"); nil when no answer came
    attr_reader :response_model
    # @return [Symbol] the configured provider name that answered (a pool's, when the
    #   chat named one)
    attr_reader :provider
    # @return [Symbol, nil] the provider entry that answered: one of a pool's hosts, else
    #   #provider; nil when no host did (a cache hit, a call cancelled before it began)
    attr_reader :host
    attr_reader :input_tokens, :output_tokens, :finish_reason, :provider_request_id
    # @return [String] UUID of the logical call, shared by its attempt records
    attr_reader :request_id
    # @return [Array<AttemptRecord>] every attempt, in order
    attr_reader :attempts
    # @return [Integer] content chunks the block received for this answer (0 unstreamed)
    attr_reader :chunk_count
    # @return [Array<ToolCall>] every tool call this ask made, in order (id, name,
    #   arguments, result, error, provider); empty without tools
    attr_reader :tool_calls
    # @return [Array<ToolCall>] calls parked for approval (requires_approval!): nothing ran
    attr_reader :pending_tool_calls
    # @return [BigDecimal, nil] USD: the whole call's cost, the sum of every attempt's
    #   (#attempts: failed ones and every tool-loop turn included); nil when an attempt
    #   was billed at a price not known
    attr_reader :cost

    # @api private: the empty list of tool calls a Reply without any shares (frozen)
    NO_CALLS = [].freeze

    def initialize(content:, model:, provider:, input_tokens:, output_tokens:, request_id:, attempts:,
                   failover:, finish_reason: nil, provider_request_id: nil, streamed: false, chunk_count: 0,
                   cached: false, cancelled: false, json: nil, response_model: nil, tool_calls: NO_CALLS,
                   pending_tool_calls: NO_CALLS, cache_tier: nil, similarity: nil, host: nil)
      @content = content
      @host = host
      @model = model
      @response_model = response_model
      @provider = provider
      @input_tokens = input_tokens
      @output_tokens = output_tokens
      @request_id = request_id
      @attempts = attempts.frozen? ? attempts : attempts.dup.freeze
      @cost = Reply.cost_of(@attempts)
      @failover = failover ? true : false
      @finish_reason = finish_reason
      @provider_request_id = provider_request_id
      @streamed = streamed ? true : false
      @chunk_count = chunk_count
      @cached = cached ? true : false
      @cancelled = cancelled ? true : false
      @json = json
      @cache_tier = cache_tier
      @similarity = similarity
      @tool_calls = tool_calls.frozen? ? tool_calls : tool_calls.dup.freeze
      @pending_tool_calls = pending_tool_calls.frozen? ? pending_tool_calls : pending_tool_calls.dup.freeze
      freeze
    end

    # @return [Hash, nil] with JSON mode or a schema, the answer's object (checked by
    #   the engine; content is its text as the provider sent it); nil for text
    def json
      @json
    end

    # @api private
    # @param records [Array<AttemptRecord>]
    # @return [BigDecimal, nil] their costs summed; nil when one is nil
    def self.cost_of(records)
      records.sum(Pricing::ZERO) { |record| record.cost || (return nil) }
    end

    # Whether the answer came from the response cache: no request was made, and
    # model and provider name the ones that produced it.
    def cached?
      @cached
    end

    # @return [Symbol, nil] which cache tier answered: :exact (the same request) or
    #   :semantic (a question close enough, everything else equal); nil for a provider's
    attr_reader :cache_tier

    # @return [Float, nil] a semantic hit's cosine similarity to the question it answered
    attr_reader :similarity

    # Whether Chat#cancel! stopped the answer: content is the partial text received.
    def cancelled?
      @cancelled
    end

    # Whether a target other than the first one tried gave the answer.
    def failover?
      @failover
    end

    # Whether the answer was streamed to a block.
    def streamed?
      @streamed
    end
    alias chunks? streamed?

    def to_s
      content
    end

    def inspect
      "#<#{self.class.name} #{Target.label(provider, model)} #{content.length} chars " \
        "attempts=#{attempts.size}#{' failover' if failover?}#{' cached' if cached?}#{' cancelled' if cancelled?} request_id=#{request_id}>"
    end
  end
end
