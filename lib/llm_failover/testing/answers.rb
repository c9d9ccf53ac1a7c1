# frozen_string_literal: true

require "json"
require "securerandom"

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

        # One content block: kind :text or :tool; id, name and arguments for a tool.
        Block = Struct.new(:kind, :id, :name, :arguments, :pieces)
        # One streamed delta: which block, which piece of it, whether it opens the block.
        Delta = Struct.new(:block, :piece, :first)

        # @param api [Symbol] :openai or :anthropic
        # @return [Answer]
        def self.for(api, **kwargs)
          (api == :anthropic ? AnthropicAnswer : OpenAIAnswer).new(**kwargs)
        end

        attr_reader :model, :text, :chunks, :calls

        # @param model [String] the model the answer reports
        # @param text [String] the non-streamed answer's text
        # @param chunks [Array<String>] the text's streamed deltas
        # @param calls [Array<Step::Call>] tool calls after the text
        # @param usage [Hash] {input:, output:}
        # @param finish_reason [String, nil] nil picks the API's default
        # @param include_usage [Boolean] OpenAI stream_options.include_usage
        def initialize(model:, text:, chunks:, usage:, finish_reason:, include_usage: false, calls: [])
          @model = model
          @text = text
          @chunks = chunks
          @calls = calls
          @blocks = build_blocks
          @deltas = @blocks.each_with_index.flat_map do |block, b|
            block.pieces.each_with_index.map { |piece, i| Delta.new(b, piece, i.zero?) }
          end
          @input_tokens = usage.fetch(:input, 10)
          @output_tokens = usage.fetch(:output, @deltas.size)
          @finish_reason = finish_reason || (calls.empty? ? default_finish_reason : tool_finish_reason)
          @include_usage = include_usage
        end

        # @return [Integer] how many deltas the stream carries
        def delta_count
          @deltas.size
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

        def build_blocks
          blocks = []
          blocks << Block.new(:text, nil, nil, nil, @chunks) if @calls.empty? || !@text.empty?
          @calls.each_with_index do |call, i|
            blocks << Block.new(:tool, call.id || make_id(i), call.name, call.arguments, tool_pieces(call))
          end
          blocks
        end

        def json(obj)
          JSON.generate(obj)
        end
      end

      # OpenAI chat completions (and every compatible API).
      class OpenAIAnswer < Answer
        def initialize(**kwargs)
          super
          @id = "chatcmpl-#{SecureRandom.alphanumeric(24)}"
          @created = Time.now.to_i
        end

        # @return [Hash] response header fields the provider sends with every answer
        def headers
          { "x-request-id" => "req_#{SecureRandom.hex(16)}" }
        end

        # @return [String] the non-streamed answer
        def body
          tools = @blocks.select { |b| b.kind == :tool }
          message = { "role" => "assistant", "content" => tools.empty? || !text.empty? ? text : nil,
                      "refusal" => nil }
          unless tools.empty?
            message["tool_calls"] = tools.map do |b|
              { "id" => b.id, "type" => "function", "function" => { "name" => b.name, "arguments" => b.arguments } }
            end
          end
          json("id" => @id, "object" => "chat.completion", "created" => @created, "model" => model,
               "choices" => [{ "index" => 0, "message" => message, "logprobs" => nil,
                               "finish_reason" => @finish_reason }],
               "usage" => usage)
        end

        # The events of the i-th delta: a content piece, or a piece of a call's arguments.
        # A call opens with its id, type and name and empty arguments, then its pieces
        # (index = the call's position), as OpenAI, DeepSeek and OpenRouter stream them.
        # The very first event also carries the role.
        # @return [Array<String>]
        def delta_events(index)
          delta = @deltas[index]
          block = @blocks[delta.block]
          events = []
          if block.kind == :tool
            call_index = delta.block - (@blocks.first.kind == :text ? 1 : 0)
            if delta.first
              opener = { "index" => call_index, "id" => block.id, "type" => "function",
                         "function" => { "name" => block.name, "arguments" => "" } }
              events << delta_chunk({ "tool_calls" => [opener] }, first: index.zero?)
            end
            piece = { "index" => call_index, "function" => { "arguments" => delta.piece } }
            events << delta_chunk({ "tool_calls" => [piece] }, first: false)
          else
            events << delta_chunk({ "content" => delta.piece }, first: index.zero?)
          end
          events
        end

        def malformed_event
          "data: #{MALFORMED_DATA}\n\n"
        end

        def error_event
          data(json("error" => { "message" => "The server had an error while processing your request.",
                                 "type" => "server_error", "code" => nil }))
        end

        # @param no_done [Boolean] DeepSeek/Mistral style: usage on the finish chunk, no [DONE]
        def terminal_events(no_done: false)
          finish = [{ "index" => 0, "delta" => {}, "logprobs" => nil, "finish_reason" => @finish_reason }]
          return [chunk_event(finish, usage: usage)] if no_done

          events = [chunk_event(finish)]
          events << chunk_event([], usage: usage) if @include_usage
          events << "data: [DONE]\n\n"
        end

        private

        def default_finish_reason
          "stop"
        end

        def tool_finish_reason
          "tool_calls"
        end

        def make_id(_index)
          "call_#{SecureRandom.alphanumeric(24)}"
        end

        # Empty arguments still stream one (empty) piece, so the call is announced.
        def tool_pieces(call)
          call.chunks.empty? ? [""] : call.chunks
        end

        def delta_chunk(delta, first:)
          delta = { "role" => "assistant" }.merge(delta) if first
          chunk_event([{ "index" => 0, "delta" => delta, "logprobs" => nil, "finish_reason" => nil }])
        end

        def usage
          { "prompt_tokens" => @input_tokens, "completion_tokens" => @output_tokens,
            "total_tokens" => @input_tokens + @output_tokens }
        end

        def chunk_event(choices, usage: nil)
          chunk = { "id" => @id, "object" => "chat.completion.chunk", "created" => @created,
                    "model" => model, "system_fingerprint" => nil, "choices" => choices }
          # With include_usage OpenAI puts "usage": null on every chunk but the usage one.
          chunk["usage"] = usage if usage || @include_usage
          data(json(chunk))
        end

        def data(payload)
          "data: #{payload}\n\n"
        end
      end

      # Anthropic messages.
      class AnthropicAnswer < Answer
        def initialize(**kwargs)
          super
          @id = "msg_#{SecureRandom.alphanumeric(24)}"
        end

        # @return [Hash] response header fields the provider sends with every answer
        def headers
          { "request-id" => "req_#{SecureRandom.alphanumeric(24)}" }
        end

        # @return [String] the non-streamed answer
        def body
          json("id" => @id, "type" => "message", "role" => "assistant", "model" => model,
               "content" => @blocks.map { |b| content_block(b, final: true) },
               "stop_reason" => @finish_reason, "stop_sequence" => nil,
               "usage" => { "input_tokens" => @input_tokens, "output_tokens" => @output_tokens })
        end

        def preamble_events
          [event("message_start",
                 "type" => "message_start",
                 "message" => { "id" => @id, "type" => "message", "role" => "assistant", "model" => model,
                                "content" => [], "stop_reason" => nil, "stop_sequence" => nil,
                                "usage" => { "input_tokens" => @input_tokens, "output_tokens" => 1 } }),
           block_start(0),
           event("ping", "type" => "ping")]
        end

        # The events of the i-th delta; the first delta of every block but the first
        # closes the block before it and opens its own.
        # @return [Array<String>]
        def delta_events(index)
          delta = @deltas[index]
          events = []
          if delta.first && delta.block.positive?
            prior = prior_block(delta.block)
            events << block_stop(prior)
            # Blocks with no pieces in between still open and close.
            ((prior + 1)...delta.block).each { |empty| events << block_start(empty) << block_stop(empty) }
            events << block_start(delta.block)
          end
          piece = if @blocks[delta.block].kind == :tool
                    { "type" => "input_json_delta", "partial_json" => delta.piece }
                  else
                    { "type" => "text_delta", "text" => delta.piece }
                  end
          events << event("content_block_delta", "type" => "content_block_delta", "index" => delta.block,
                                                 "delta" => piece)
        end

        def malformed_event
          "event: content_block_delta\ndata: #{MALFORMED_DATA}\n\n"
        end

        def error_event
          event("error", "type" => "error", "error" => { "type" => "overloaded_error", "message" => "Overloaded" })
        end

        # Closes the last block that streamed (and opens and closes any empty ones after it).
        def closing_events
          last = @deltas.empty? ? 0 : @deltas.last.block
          events = [block_stop(last)]
          ((last + 1)...@blocks.size).each { |b| events << block_start(b) << block_stop(b) }
          events
        end

        # no_done is OpenAI's; Anthropic always ends with message_delta + message_stop.
        def terminal_events(**)
          [event("message_delta",
                 "type" => "message_delta",
                 "delta" => { "stop_reason" => @finish_reason, "stop_sequence" => nil },
                 "usage" => { "input_tokens" => @input_tokens, "output_tokens" => @output_tokens }),
           event("message_stop", "type" => "message_stop")]
        end

        private

        def default_finish_reason
          "end_turn"
        end

        def tool_finish_reason
          "tool_use"
        end

        def make_id(_index)
          "toolu_#{SecureRandom.alphanumeric(24)}"
        end

        # A call's input streams as an empty piece and then the JSON text's pieces; a call
        # without arguments sends the empty piece alone (the recordings show both).
        def tool_pieces(call)
          return [""] if call.arguments.strip == "{}" || call.arguments.empty?

          [""] + call.chunks
        end

        # The block before +index+ that has pieces (0 when none has).
        def prior_block(index)
          @deltas.reverse_each { |d| return d.block if d.block < index }
          0
        end

        def block_start(index)
          event("content_block_start", "type" => "content_block_start", "index" => index,
                                       "content_block" => content_block(@blocks[index], final: false))
        end

        def block_stop(index)
          event("content_block_stop", "type" => "content_block_stop", "index" => index)
        end

        # A block as Anthropic sends it: a tool_use's input is the parsed arguments
        # (empty while streaming, as Anthropic starts it; arguments that are not JSON
        # go out as they are, a shape a client must refuse).
        def content_block(block, final:)
          return { "type" => "text", "text" => final ? text : "" } if block.kind == :text

          { "type" => "tool_use", "id" => block.id, "name" => block.name,
            "input" => final ? parsed(block.arguments) : {}, "caller" => { "type" => "direct" } }
        end

        def parsed(arguments)
          JSON.parse(arguments)
        rescue JSON::ParserError
          arguments
        end

        def event(name, payload)
          "event: #{name}\ndata: #{json(payload)}\n\n"
        end
      end
    end
  end
end
