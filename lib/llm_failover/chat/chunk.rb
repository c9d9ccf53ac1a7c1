# frozen_string_literal: true

module LlmFailover
  # One streamed piece of an answer, handed to the block of Chat#ask / #complete.
  #
  # A reset chunk (reset? true, content "") means: discard everything shown so far,
  # another target is about to answer from scratch.
  class Chunk
    # What the chunks of one answer from one target share, made once per target.
    # @api private
    Source = Struct.new(:model, :provider, :request_id, :reset)

    # @return [String] the text delta ("" for a reset)
    attr_reader :content
    # @return [Integer] 0, 1, ... within the current answer (a reset starts again at 0)
    attr_reader :index

    def initialize(content:, model:, provider:, index:, request_id:, reset: false)
      take(content, index, Source.new(model, provider, request_id, reset ? true : false).freeze)
    end

    # @return [String] the model asked of the target that sent it
    def model
      @source.model
    end

    # @return [Symbol] the configured provider name of that target
    def provider
      @source.provider
    end

    # @return [String] the UUID of the logical call
    def request_id
      @source.request_id
    end

    def reset?
      @source.reset
    end

    # So that `print chunk` prints the text.
    def to_s
      content
    end

    def inspect
      "#<LlmFailover::Chunk #{reset? ? 'RESET' : content.inspect} #{provider}/#{model} ##{index}>"
    end

    private

    def take(content, index, source)
      @content = content
      @index = index
      @source = source
      freeze
    end

    # @api private: a streamed delta, one per event of the stream, built positionally
    # and setting its fields itself (what #take does). #new's keywords cost ~5k
    # instructions more per delta (two allocations), an allocate + __send__ builder
    # ~0.4k more, the call of #take ~0.2k: a chunk took 13.2k, then 10.2k, against the
    # speed guard's 10k (bench/README.md).
    class Delta < Chunk
      def initialize(content, index, source) # rubocop:disable Lint/MissingSuper
        @content = content
        @index = index
        @source = source
        freeze
      end
    end
  end
end
