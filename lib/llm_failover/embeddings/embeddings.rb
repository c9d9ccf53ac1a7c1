# frozen_string_literal: true

require_relative "../chat/target"

module LlmFailover
  # The answer to LlmFailover.embed: one vector per text, in the order given, and
  # who made them.
  class Embeddings
    # @return [Array<Array<Float>>] one vector per text, as the provider sent it
    attr_reader :vectors
    # @return [String] the embedding model asked for (the same on either provider)
    attr_reader :model
    # @return [Symbol] the configured provider that answered
    attr_reader :provider
    # @return [Integer, nil] input tokens the provider counted
    attr_reader :tokens
    # @return [Array<AttemptRecord>] every attempt, in order
    attr_reader :attempts
    # @return [String] UUID of the call, shared by its attempt records
    attr_reader :request_id

    def initialize(vectors:, model:, provider:, tokens:, attempts:, request_id:)
      @vectors = vectors.each(&:freeze).freeze
      @model = model
      @provider = provider
      @tokens = tokens
      @attempts = attempts.frozen? ? attempts : attempts.dup.freeze
      @request_id = request_id
      freeze
    end

    # @return [Array<Float>] the first vector (the one of a single text)
    def vector
      @vectors.first
    end

    # @return [Integer] numbers per vector
    def dimensions
      @vectors.first&.size || 0
    end

    # Whether the backup provider made them.
    def failover?
      !@attempts.empty? && @attempts.first.provider != @provider
    end

    def inspect
      "#<#{self.class.name} #{Target.label(provider, model)} #{vectors.size}x#{dimensions} " \
        "attempts=#{attempts.size} request_id=#{request_id}>"
    end
    alias to_s inspect
  end
end
