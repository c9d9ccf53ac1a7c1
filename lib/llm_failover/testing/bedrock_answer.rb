# frozen_string_literal: true

require "json"
require "securerandom"
require_relative "answer"
require_relative "event_stream"

module LlmFailover
  module Testing
    class FakeProvider
      # Bedrock Converse (POST /model/{id}/converse) and ConverseStream
      # (/converse-stream): a JSON answer, or an event stream whose messages are binary
      # frames with their CRCs (EventStream). As AWS sends them: no model or id in the
      # answer (the request id is the x-amzn-RequestId header), every stream payload
      # padded with a random "p", a contentBlockStart only for a tool call, the stream
      # ended by messageStop then metadata (the usage).
      class BedrockAnswer < Answer
        # ConverseStream's exception for a failure mid-stream (`error_event_after:`).
        STREAM_ERROR = ["modelStreamErrorException",
                        { "message" => "An error occurred while streaming the response. Retry your request.",
                          "originalStatusCode" => 500 }].freeze

        # @return [Hash] response header fields the provider sends with every answer
        def headers
          { "x-amzn-RequestId" => SecureRandom.uuid }
        end

        # @return [String] the Content-Type of a streamed answer
        def stream_content_type
          "application/vnd.amazon.eventstream"
        end

        # @return [String] the non-streamed answer
        def body
          json("metrics" => { "latencyMs" => 42 },
               "output" => { "message" => { "content" => @blocks.map { |b| content_block(b) }, "role" => "assistant" } },
               "stopReason" => @finish_reason, "usage" => usage)
        end

        def preamble_events
          [event("messageStart", "role" => "assistant")]
        end

        # The events of the i-th delta: a tool call's first opens its block
        # (contentBlockStart), every block's first closes the block before it.
        # @return [Array<String>]
        def delta_events(index)
          delta = @deltas[index]
          block = @blocks[delta.block]
          events = []
          if delta.first
            events << block_stop(prior_block(delta.block)) if index.positive?
            if block.kind == :tool
              events << event("contentBlockStart", "contentBlockIndex" => delta.block,
                                                   "start" => { "toolUse" => { "toolUseId" => block.id,
                                                                                "name" => block.name } })
            end
          end
          events << event("contentBlockDelta", "contentBlockIndex" => delta.block, "delta" => delta_body(block, delta))
        end

        # A frame whose message CRC does not match: a client must refuse the stream.
        def malformed_event
          EventStream.event("contentBlockDelta", JSON.generate("contentBlockIndex" => 0, "delta" => { "text" => "x" },
                                                               "p" => "abc"), bad_crc: true)
        end

        def error_event
          EventStream.exception(STREAM_ERROR[0], JSON.generate(STREAM_ERROR[1]))
        end

        def closing_events
          @deltas.empty? ? [] : [block_stop(@deltas.last.block)]
        end

        # no_done is OpenAI's; ConverseStream always ends with messageStop then metadata.
        def terminal_events(**)
          [event("messageStop", "stopReason" => @finish_reason),
           event("metadata", "usage" => usage, "metrics" => { "latencyMs" => 42 })]
        end

        private

        def default_finish_reason
          "end_turn"
        end

        def tool_finish_reason
          "tool_use"
        end

        def signed?
          true
        end

        # Bedrock's ids, as in the recordings: tooluse_ and 22 letters or digits.
        def make_id(_index)
          "tooluse_#{SecureRandom.alphanumeric(22)}"
        end

        # A call without arguments still streams one (empty) piece, which opens it.
        def tool_pieces(call)
          call.chunks.empty? ? [""] : call.chunks
        end

        # Converse's inputTokens leaves out what a prompt cache served or took, as
        # Anthropic's input_tokens does; totalTokens counts them.
        def usage
          cached = @cached_tokens.to_i
          written = @cache_write_tokens.to_i
          u = { "inputTokens" => @input_tokens - cached - written, "outputTokens" => @output_tokens,
                "totalTokens" => @input_tokens + @output_tokens }
          u["cacheReadInputTokens"] = cached if @cached_tokens
          u["cacheWriteInputTokens"] = written if @cache_write_tokens
          u
        end

        def delta_body(block, delta)
          case block.kind
          when :tool then { "toolUse" => { "input" => delta.piece } }
          when :thinking
            { "reasoningContent" => delta.signature ? { "signature" => delta.piece } : { "text" => delta.piece } }
          else { "text" => delta.piece }
          end
        end

        def block_stop(index)
          event("contentBlockStop", "contentBlockIndex" => index)
        end

        # A block of the plain answer: a call's input is the parsed arguments (arguments
        # that are not JSON go out as they are, a shape a client must refuse).
        def content_block(block)
          case block.kind
          when :text then { "text" => text }
          when :thinking
            { "reasoningContent" => { "reasoningText" => { "text" => block.pieces.join, "signature" => block.id } } }
          else
            { "toolUse" => { "input" => parsed(block.arguments), "name" => block.name, "toolUseId" => block.id } }
          end
        end

        # One event frame; its payload padded with "p" as AWS pads it (a random length,
        # so that the size of a message says nothing of its content).
        def event(type, payload)
          EventStream.event(type, JSON.generate(payload.merge("p" => "abcdefghijklmnopqrstuvwxyz"[0, rand(1..26)])))
        end
      end
    end
  end
end
