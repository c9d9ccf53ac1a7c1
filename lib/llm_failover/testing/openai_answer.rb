# frozen_string_literal: true

require "json"
require "securerandom"
require_relative "answer"

module LlmFailover
  module Testing
    class FakeProvider
      # OpenAI chat completions (and every compatible API).
      class OpenAIAnswer < Answer
        def initialize(**kwargs)
          super
          json = @request.json
          @include_usage = json.is_a?(Hash) && json.dig("stream_options", "include_usage") == true
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
          thought = @blocks.find { |b| b.kind == :thinking }
          message[@thinking[:field]] = thought.pieces.join if thought
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
          if block.kind == :thinking
            # DeepSeek sends content null beside reasoning_content; Ollama "" beside reasoning.
            content = @thinking[:field] == "reasoning" ? "" : nil
            events << delta_chunk({ "content" => content, @thinking[:field] => delta.piece }, first: index.zero?)
          elsif block.kind == :tool
            call_index = @blocks.first(delta.block).count { |b| b.kind == :tool }
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

        # Cached tokens are part of prompt_tokens, as OpenAI counts them.
        def usage
          u = { "prompt_tokens" => @input_tokens, "completion_tokens" => @output_tokens,
                "total_tokens" => @input_tokens + @output_tokens }
          u["prompt_tokens_details"] = { "cached_tokens" => @cached_tokens.to_i } if @cached_tokens
          u
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
    end
  end
end
