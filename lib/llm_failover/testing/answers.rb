# frozen_string_literal: true

require "json"
require "securerandom"

module LlmFailover
  module Testing
    class FakeProvider
      # Builds a healthy answer in one provider's protocol: the plain JSON body, or the
      # streamed events (each a complete SSE event, ready to go out as one HTTP chunk).
      class Answer
        # The broken event `malformed_after:` sends (the same bytes on both APIs).
        MALFORMED_DATA = '{"choices": [{"delta": {"content": "x"'

        # @param api [Symbol] :openai or :anthropic
        # @return [Answer]
        def self.for(api, **kwargs)
          (api == :anthropic ? AnthropicAnswer : OpenAIAnswer).new(**kwargs)
        end

        attr_reader :model, :text, :chunks, :tool_call

        # @param model [String] the model the answer reports
        # @param text [String] the non-streamed answer
        # @param chunks [Array<String>] the streamed content deltas
        # @param usage [Hash] {input:, output:}
        # @param finish_reason [String, nil] nil picks the API's default
        # @param include_usage [Boolean] OpenAI stream_options.include_usage
        # @param tool_call [String, nil] answer with a call of this tool instead of text: +text+
        #   is then the arguments' JSON text and +chunks+ its streamed pieces
        def initialize(model:, text:, chunks:, usage:, finish_reason:, include_usage: false, tool_call: nil)
          @model = model
          @text = text
          @chunks = chunks
          @tool_call = tool_call
          @tool_id = "call_#{SecureRandom.alphanumeric(24)}" if tool_call
          @input_tokens = usage.fetch(:input, 10)
          @output_tokens = usage.fetch(:output, chunks.size)
          @finish_reason = finish_reason || (tool_call ? tool_finish_reason : default_finish_reason)
          @include_usage = include_usage
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
          message = if tool_call
                      { "role" => "assistant", "content" => nil, "refusal" => nil,
                        "tool_calls" => [{ "id" => @tool_id, "type" => "function",
                                           "function" => { "name" => tool_call, "arguments" => text } }] }
                    else
                      { "role" => "assistant", "content" => text, "refusal" => nil }
                    end
          json("id" => @id, "object" => "chat.completion", "created" => @created, "model" => model,
               "choices" => [{ "index" => 0, "message" => message, "logprobs" => nil,
                               "finish_reason" => @finish_reason }],
               "usage" => usage)
        end

        # The i-th content delta; the first also carries the role, as OpenAI's first chunk does.
        def delta_event(index)
          delta = if tool_call
                    function = { "arguments" => chunks[index] }
                    call = { "index" => 0, "function" => function }
                    if index.zero? # the first piece names the call, as OpenAI's does
                      function["name"] = tool_call
                      call.merge!("id" => @tool_id, "type" => "function")
                    end
                    { "tool_calls" => [call] }
                  else
                    { "content" => chunks[index] }
                  end
          delta = { "role" => "assistant" }.merge(delta) if index.zero?
          chunk_event([{ "index" => 0, "delta" => delta, "logprobs" => nil, "finish_reason" => nil }])
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
               "content" => [content_block(final: true)],
               "stop_reason" => @finish_reason, "stop_sequence" => nil,
               "usage" => { "input_tokens" => @input_tokens, "output_tokens" => @output_tokens })
        end

        def preamble_events
          [event("message_start",
                 "type" => "message_start",
                 "message" => { "id" => @id, "type" => "message", "role" => "assistant", "model" => model,
                                "content" => [], "stop_reason" => nil, "stop_sequence" => nil,
                                "usage" => { "input_tokens" => @input_tokens, "output_tokens" => 1 } }),
           event("content_block_start",
                 "type" => "content_block_start", "index" => 0, "content_block" => content_block(final: false)),
           event("ping", "type" => "ping")]
        end

        def delta_event(index)
          event("content_block_delta",
                "type" => "content_block_delta", "index" => 0,
                "delta" => if tool_call
                             { "type" => "input_json_delta", "partial_json" => chunks[index] }
                           else
                             { "type" => "text_delta", "text" => chunks[index] }
                           end)
        end

        def malformed_event
          "event: content_block_delta\ndata: #{MALFORMED_DATA}\n\n"
        end

        def error_event
          event("error", "type" => "error", "error" => { "type" => "overloaded_error", "message" => "Overloaded" })
        end

        def closing_events
          [event("content_block_stop", "type" => "content_block_stop", "index" => 0)]
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

        # The answer's one content block: text, or a tool_use whose input is the parsed
        # arguments (empty while streaming, as Anthropic starts it; arguments that are not
        # JSON go out as they are, a shape a client must refuse).
        def content_block(final:)
          return { "type" => "text", "text" => final ? text : "" } unless tool_call

          input = final ? parsed_arguments : {}
          { "type" => "tool_use", "id" => @tool_id.sub("call_", "toolu_"), "name" => tool_call, "input" => input }
        end

        def parsed_arguments
          JSON.parse(text)
        rescue JSON::ParserError
          text
        end

        def event(name, payload)
          "event: #{name}\ndata: #{json(payload)}\n\n"
        end
      end
    end
  end
end
