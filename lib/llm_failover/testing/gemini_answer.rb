# frozen_string_literal: true

require "json"
require "securerandom"
require_relative "answer"
require_relative "sealed_state"

module LlmFailover
  module Testing
    class FakeProvider
      # Google's Gemini generateContent, on Google AI or Vertex AI, in the shapes of the
      # recordings (shared/fixtures/recorded/*gemini*, *vertexai*): each streamed chunk a
      # whole GenerateContentResponse, frames ending in CRLF CRLF, a call whole in one part,
      # the first call of an answer signed (thoughtSignature), the last chunk the one with
      # the candidate's finishReason and the counts.
      class GeminiAnswer < Answer
        # By Vertex AI's route (Request#vertex?) its answers carry createTime and
        # trafficType, and no candidate index. The step's thinking becomes parts with
        # "thought": true only when the request asked for thought summaries
        # (generationConfig.thinkingConfig.includeThoughts). The first call's signature is
        # this server's SealedState for the request's lane.
        def initialize(request:, thinking: nil, usage: {}, **kwargs)
          json = request.json
          include_thoughts = json.is_a?(Hash) && json.dig("generationConfig", "thinkingConfig", "includeThoughts") == true
          @vertex = request.vertex?
          @thoughts_tokens = usage.fetch(:thoughts) { thinking ? thinking[:chunks].size : nil }
          super(request: request, thinking: include_thoughts ? thinking : nil, usage: usage, **kwargs)
          @id = SecureRandom.alphanumeric(22)
          @signature = SealedState.issue(api: :gemini, lane: request.lane)
        end

        # Google sends no request id header: the answer's responseId is its id.
        def headers
          {}
        end

        # @return [String] the non-streamed answer
        def body
          parts = @blocks.flat_map { |b| parts_of(b, b.kind == :text ? text : b.pieces.join) }
          json(response([candidate(parts, finish: true)], usage_metadata))
        end

        # The i-th delta's chunk: a piece of text or of a thought, or a whole call.
        # @return [Array<String>]
        def delta_events(index)
          delta = @deltas[index]
          block = @blocks[delta.block]
          [data(json(response([candidate(parts_of(block, delta.piece))], partial_usage)))]
        end

        def malformed_event
          "data: #{MALFORMED_DATA}\r\n\r\n"
        end

        # What Gemini sends inside a 200 stream when the model fails midway.
        def error_event
          data(json("error" => { "code" => 503, "message" => "The model is overloaded. Please try again later.",
                                 "status" => "UNAVAILABLE" }))
        end

        # The chunk whose candidate has the finishReason: the stream's end, with the counts.
        def terminal_events(**)
          [data(json(response([candidate([{ "text" => "" }], finish: true)], usage_metadata)))]
        end

        private

        def default_finish_reason
          "STOP"
        end

        # Gemini says STOP for a call too (with a finishMessage).
        def tool_finish_reason
          "STOP"
        end

        # Gemini 2.5 gives its calls no id; a step's own id is sent as given.
        def make_id(_index)
          nil
        end

        # A call comes whole, in one part: one delta.
        def tool_pieces(call)
          [call.arguments]
        end

        # The parts a block sends, with +text+ its text (or a piece of it). The first call of
        # the answer carries its signature, as Gemini signs the first of parallel calls.
        def parts_of(block, text)
          case block.kind
          when :thinking then [{ "text" => text, "thought" => true }]
          when :text then [{ "text" => text }]
          when :tool
            call = { "name" => block.name, "args" => parsed(block.arguments) }
            call["id"] = block.id if block.id
            part = { "functionCall" => call }
            part["thoughtSignature"] = @signature if block.equal?(@blocks.find { |b| b.kind == :tool })
            [part]
          else []
          end
        end

        def candidate(parts, finish: false)
          c = { "content" => { "role" => "model", "parts" => parts } }
          if finish
            c["finishReason"] = @finish_reason
            c["finishMessage"] = "Model generated function call(s)." if @calls.any?
          end
          c["index"] = 0 unless @vertex
          c
        end

        def response(candidates, usage)
          r = { "candidates" => candidates, "usageMetadata" => usage, "modelVersion" => model, "responseId" => @id }
          r["createTime"] = Time.now.utc.strftime("%Y-%m-%dT%H:%M:%S.%6NZ") if @vertex
          r
        end

        # Vertex AI's chunks before the last say only how the request was served; Google
        # AI's carry the counts so far.
        def partial_usage
          return { "trafficType" => "ON_DEMAND" } if @vertex

          usage_metadata
        end

        def usage_metadata
          u = { "promptTokenCount" => @input_tokens, "candidatesTokenCount" => @output_tokens,
                "totalTokenCount" => @input_tokens + @output_tokens + @thoughts_tokens.to_i,
                "promptTokensDetails" => [{ "modality" => "TEXT", "tokenCount" => @input_tokens }] }
          u["thoughtsTokenCount"] = @thoughts_tokens if @thoughts_tokens
          u["cachedContentTokenCount"] = @cached_tokens if @cached_tokens
          u["trafficType"] = "ON_DEMAND" if @vertex
          u
        end

        # Arguments that are not a JSON object still go out, as the object Gemini would
        # send ({}): its args are always an object.
        def parsed(arguments)
          value = JSON.parse(arguments)
          value.is_a?(Hash) ? value : {}
        rescue JSON::ParserError
          {}
        end

        def data(payload)
          "data: #{payload}\r\n\r\n"
        end
      end
    end
  end
end
