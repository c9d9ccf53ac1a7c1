# frozen_string_literal: true

require "json"

module LlmFailover
  module Testing
    class FakeProvider
      # Builds a healthy answer in one provider's protocol: the plain JSON body, or the
      # streamed events (each a complete SSE event, ready to go out as one HTTP chunk).
      #
      # An answer is a list of blocks: its text (when it has any, or when it has no tool
      # calls), then one block per tool call, in the shapes of the real recordings
      # (shared/fixtures/recorded/chat_function_calling_*). Streamed, each block's pieces
      # are the deltas the stream faults count (cut_after: 3 sends three deltas,
      # whichever blocks they belong to).
      class Answer
        # The broken event `malformed_after:` sends (the same bytes on both APIs).
        MALFORMED_DATA = '{"choices": [{"delta": {"content": "x"'

        # One content block: kind :thinking, :redacted, :text or :tool; id, name and
        # arguments for a tool; for thinking its signature (id) or redacted data (arguments).
        Block = Struct.new(:kind, :id, :name, :arguments, :pieces)
        # One streamed delta: which block, which piece of it, whether it opens the block;
        # signature: the piece is a thinking block's signature (Anthropic's signature_delta).
        Delta = Struct.new(:block, :piece, :first, :signature)

        attr_reader :model, :text, :chunks, :calls

        # @param request [Request] the request it answers: a protocol reads its options there
        #   (OpenAI's include_usage, Gemini's includeThoughts), and the reasoning state an
        #   answer hands out names its lane (SealedState)
        # @param model [String] the model the answer reports
        # @param text [String] the non-streamed answer's text
        # @param chunks [Array<String>] the text's streamed deltas
        # @param calls [Array<Step::Call>] tool calls after the text
        # @param usage [Hash] {input:, output:}
        # @param finish_reason [String, nil] nil picks the API's default
        # @param thinking [Hash, nil] Step#thinking: blocks before the text
        def initialize(request:, model:, text:, chunks:, usage:, finish_reason:, calls: [], thinking: nil)
          @request = request
          @model = model
          @text = text
          @chunks = chunks
          @calls = calls
          @thinking = thinking
          @blocks = build_blocks
          @deltas = @blocks.each_with_index.flat_map do |block, b|
            deltas = block.pieces.each_with_index.map { |piece, i| Delta.new(b, piece, i.zero?, false) }
            deltas << Delta.new(b, block.id, deltas.empty?, true) if block.kind == :thinking && signed?
            deltas
          end
          @input_tokens = usage.fetch(:input, 10)
          @output_tokens = usage.fetch(:output, @deltas.size)
          @finish_reason = finish_reason || (calls.empty? ? default_finish_reason : tool_finish_reason)
        end

        # @return [Integer] how many deltas the stream carries
        def delta_count
          @deltas.size
        end

        # @return [String] the Content-Type of a streamed answer
        def stream_content_type
          "text/event-stream"
        end

        # Events sent before the first content delta.
        def preamble_events
          []
        end

        # Events after the last delta that are not the terminal ones (sent even with no_terminal).
        def closing_events
          []
        end

        private

        # Whether a thinking block streams its signature as a delta of its own (Anthropic).
        def signed?
          false
        end

        # Whether the protocol has a form for a redacted thinking block (Anthropic).
        def redacted_blocks?
          false
        end

        # The block before +index+ that has pieces (0 when none has).
        def prior_block(index)
          @deltas.reverse_each { |d| return d.block if d.block < index }
          0
        end

        def build_blocks
          blocks = []
          if @thinking
            blocks << Block.new(:thinking, @thinking[:signature], nil, nil, @thinking[:chunks]) if @thinking[:text]
            blocks << Block.new(:redacted, nil, nil, @thinking[:redacted], []) if @thinking[:redacted] && redacted_blocks?
          end
          blocks << Block.new(:text, nil, nil, nil, @chunks) if @calls.empty? || !@text.empty?
          @calls.each_with_index do |call, i|
            blocks << Block.new(:tool, call.id || make_id(i), call.name, call.arguments, tool_pieces(call))
          end
          blocks
        end

        # A call's arguments as the plain answer carries them: parsed, or as they are when
        # they are no JSON (a shape a client must refuse).
        def parsed(arguments)
          JSON.parse(arguments)
        rescue JSON::ParserError
          arguments
        end

        def json(obj)
          JSON.generate(obj)
        end
      end
    end
  end
end
