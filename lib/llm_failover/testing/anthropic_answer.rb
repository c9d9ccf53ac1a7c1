# frozen_string_literal: true

require "json"
require "securerandom"
require_relative "answer"

module LlmFailover
  module Testing
    class FakeProvider
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
          piece = case @blocks[delta.block].kind
                  when :tool then { "type" => "input_json_delta", "partial_json" => delta.piece }
                  when :thinking
                    if delta.signature
                      { "type" => "signature_delta", "signature" => delta.piece }
                    else
                      { "type" => "thinking_delta", "thinking" => delta.piece }
                    end
                  else { "type" => "text_delta", "text" => delta.piece }
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

        def signed?
          true
        end

        def redacted_blocks?
          true
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
          case block.kind
          when :text then return { "type" => "text", "text" => final ? text : "" }
          when :thinking
            # Streamed, the text and the signature come as deltas.
            return { "type" => "thinking", "thinking" => final ? block.pieces.join : "",
                     "signature" => final ? block.id : "" }
          when :redacted then return { "type" => "redacted_thinking", "data" => block.arguments }
          end

          { "type" => "tool_use", "id" => block.id, "name" => block.name,
            "input" => final ? parsed(block.arguments) : {}, "caller" => { "type" => "direct" } }
        end

        def event(name, payload)
          "event: #{name}\ndata: #{json(payload)}\n\n"
        end
      end
    end
  end
end
