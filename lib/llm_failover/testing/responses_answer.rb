# frozen_string_literal: true

require "json"
require "securerandom"
require_relative "answer"
require_relative "sealed_state"

module LlmFailover
  module Testing
    class FakeProvider
      # OpenAI's Responses API (/responses, OpenAI and Azure), in the shapes of the recordings
      # under spec/fixtures/recorded/responses: output items (a reasoning item for a step's
      # thinking, a message, function calls), each streamed as output_item.added, its deltas
      # and output_item.done, and the whole response in response.completed (or
      # response.incomplete when the step's finish_reason is "length" or "content_filter").
      #
      # A reasoning item's encrypted_content (SealedState, for the request's lane) differs
      # between output_item.added, .done and response.completed, as OpenAI's does: the added
      # one is no reasoning at all, the other two are both final ones; a client must send
      # back a final one.
      class ResponsesAnswer < Answer
        def initialize(**kwargs)
          super
          @id = "resp_#{SecureRandom.hex(24)}"
          @created = Time.now.to_i
          @item_ids = @blocks.map { |b| "#{ITEM_PREFIX.fetch(b.kind)}_#{SecureRandom.hex(24)}" }
          @seq = 0
          @open = nil
        end

        # @return [Hash] response header fields the provider sends with every answer
        def headers
          { "x-request-id" => "req_#{SecureRandom.hex(16)}" }
        end

        # @return [String] the non-streamed answer
        def body
          json(response(status, final_items))
        end

        def preamble_events
          shell = response("in_progress", [])
          [event("response.created", "response" => shell), event("response.in_progress", "response" => shell),
           *open_block(0)]
        end

        # The events of the i-th delta; the first delta of a block closes the open one (and
        # opens and closes the blocks without pieces in between) and opens its own.
        # @return [Array<String>]
        def delta_events(index)
          delta = @deltas[index]
          events = delta.block == @open ? [] : move_to(delta.block)
          events << piece_event(delta.block, delta.piece)
        end

        def malformed_event
          "event: response.output_text.delta\ndata: #{MALFORMED_DATA}\n\n"
        end

        # An in-stream failure: the response failed with server_error (OpenAI also sends
        # a bare `error` event; a test serves one with raw: or a fixture).
        def error_event
          failed = response("failed", []).merge("error" => { "code" => "server_error",
                                                             "message" => "The server had an error while processing your request." })
          event("response.failed", "response" => failed)
        end

        # Closes the open block, then opens and closes the ones that never streamed.
        def closing_events
          @blocks.size > @open + 1 ? move_to(@blocks.size - 1) + close_block(@blocks.size - 1) : close_block(@open)
        end

        # response.completed, or response.incomplete when the answer was cut short; no_done
        # is chat completions' and means nothing here.
        def terminal_events(**)
          name = status == "incomplete" ? "response.incomplete" : "response.completed"
          [event(name, "response" => response(status, final_items))]
        end

        private

        ITEM_PREFIX = { thinking: "rs", redacted: "rs", text: "msg", tool: "fc" }.freeze

        # Responses' answer to a redacted thinking block: a reasoning item with no summary.
        def redacted_blocks?
          true
        end

        def default_finish_reason
          "stop"
        end

        def tool_finish_reason
          "tool_calls"
        end

        def make_id(_index)
          "call_#{SecureRandom.alphanumeric(24)}"
        end

        # The arguments stream as their pieces; a call without any still says "{}".
        def tool_pieces(call)
          call.chunks.empty? ? [call.arguments] : call.chunks
        end

        # "length" and "content_filter" are an incomplete response's reasons.
        def status
          %w[length content_filter].include?(@finish_reason) ? "incomplete" : "completed"
        end

        def incomplete_details
          return nil unless status == "incomplete"

          { "reason" => @finish_reason == "length" ? "max_output_tokens" : @finish_reason }
        end

        def response(state, output)
          { "id" => @id, "object" => "response", "created_at" => @created, "status" => state,
            "error" => nil, "incomplete_details" => state == "in_progress" ? nil : incomplete_details,
            "model" => model, "output" => output, "parallel_tool_calls" => true, "store" => false,
            "text" => { "format" => { "type" => "text" } }, "tool_choice" => "auto",
            "usage" => state == "in_progress" ? nil : usage }
        end

        def usage
          reasoning = @blocks.select { |b| b.kind == :thinking }.sum { |b| b.pieces.size }
          { "input_tokens" => @input_tokens, "input_tokens_details" => { "cached_tokens" => @cached_tokens.to_i },
            "output_tokens" => @output_tokens, "output_tokens_details" => { "reasoning_tokens" => reasoning },
            "total_tokens" => @input_tokens + @output_tokens }
        end

        # Every item as the answer ends with it (a fresh final encrypted_content each time).
        def final_items
          @blocks.each_index.map { |b| item(b, final: true) }
        end

        def item(index, final:)
          block = @blocks[index]
          id = @item_ids[index]
          case block.kind
          when :thinking, :redacted
            summary = block.kind == :thinking && final ? [{ "type" => "summary_text", "text" => block.pieces.join }] : []
            { "id" => id, "type" => "reasoning", "summary" => summary,
              "encrypted_content" => SealedState.issue(api: :responses, lane: @request.lane, final: final,
                                                       note: block.kind == :thinking ? block.pieces.join : block.arguments) }
          when :text
            { "id" => id, "type" => "message", "status" => final ? "completed" : "in_progress",
              "content" => final ? [text_part] : [], "role" => "assistant" }
          else
            { "id" => id, "type" => "function_call", "status" => final ? "completed" : "in_progress",
              "arguments" => final ? block.arguments : "", "call_id" => block.id, "name" => block.name }
          end
        end

        def text_part(value = text)
          { "type" => "output_text", "annotations" => [], "logprobs" => [], "text" => value }
        end

        # Closes the open block and every block up to +index+ (opened and closed: they have
        # no pieces), then opens +index+.
        def move_to(index)
          events = close_block(@open)
          ((@open + 1)...index).each { |b| events.concat(open_block(b)).concat(close_block(b)) }
          events.concat(open_block(index))
        end

        def open_block(index)
          @open = index
          events = [event("response.output_item.added", "item" => item(index, final: false), "output_index" => index)]
          case @blocks[index].kind
          when :text
            events << event("response.content_part.added", "content_index" => 0, "item_id" => @item_ids[index],
                                                           "output_index" => index, "part" => text_part(""))
          when :thinking
            events << event("response.reasoning_summary_part.added", "item_id" => @item_ids[index], "output_index" => index,
                                                                     "summary_index" => 0,
                                                                     "part" => { "type" => "summary_text", "text" => "" })
          end
          events
        end

        def close_block(index)
          block = @blocks[index]
          id = @item_ids[index]
          events = case block.kind
                   when :text
                     [event("response.output_text.done", "content_index" => 0, "item_id" => id, "logprobs" => [],
                                                         "output_index" => index, "text" => text),
                      event("response.content_part.done", "content_index" => 0, "item_id" => id,
                                                          "output_index" => index, "part" => text_part)]
                   when :tool
                     [event("response.function_call_arguments.done", "item_id" => id, "output_index" => index,
                                                                     "arguments" => block.arguments)]
                   when :thinking
                     summary = block.pieces.join
                     [event("response.reasoning_summary_text.done", "item_id" => id, "output_index" => index,
                                                                    "summary_index" => 0, "text" => summary),
                      event("response.reasoning_summary_part.done", "item_id" => id, "output_index" => index,
                                                                    "summary_index" => 0,
                                                                    "part" => { "type" => "summary_text", "text" => summary })]
                   else []
                   end
          events << event("response.output_item.done", "item" => item(index, final: true), "output_index" => index)
        end

        def piece_event(index, piece)
          id = @item_ids[index]
          case @blocks[index].kind
          when :tool
            event("response.function_call_arguments.delta", "delta" => piece, "item_id" => id, "output_index" => index)
          when :thinking
            event("response.reasoning_summary_text.delta", "delta" => piece, "item_id" => id, "output_index" => index,
                                                           "summary_index" => 0)
          else
            event("response.output_text.delta", "content_index" => 0, "delta" => piece, "item_id" => id,
                                                "logprobs" => [], "output_index" => index)
          end
        end

        def event(type, payload)
          data = { "type" => type }.merge(payload).merge("sequence_number" => @seq)
          @seq += 1
          "event: #{type}\ndata: #{json(data)}\n\n"
        end
      end
    end
  end
end
