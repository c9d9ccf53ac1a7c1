# frozen_string_literal: true

require_relative "target"

module LlmFailover
  # One streamed piece of an answer, handed to the block of Chat#ask / #complete.
  #
  # A reset chunk (reset? true, content "") means: discard everything shown so far,
  # another target is about to answer from scratch.
  class Chunk
    # @return [String] the text delta ("" for a reset)
    attr_reader :content
    # @return [Integer] 0, 1, ... within the current answer (a reset starts again at 0)
    attr_reader :index
    # @return [String] the model asked of the target that sent it
    attr_reader :model
    # @return [Symbol] the configured provider name of that target
    attr_reader :provider
    # @return [String] the UUID of the logical call
    attr_reader :request_id

    def initialize(content:, model:, provider:, index:, request_id:, reset: false)
      @content = content
      @model = model
      @provider = provider
      @index = index
      @request_id = request_id
      @reset = reset ? true : false
      freeze
    end

    def reset?
      @reset
    end

    # So that `print chunk` prints the text.
    def to_s
      content
    end

    def inspect
      "#<LlmFailover::Chunk #{reset? ? 'RESET' : content.inspect} #{Target.label(provider, model)} ##{index}>"
    end
  end
end
