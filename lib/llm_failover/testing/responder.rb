# frozen_string_literal: true

require "json"
require_relative "openai_answer"
require_relative "anthropic_answer"
require_relative "responses_answer"
require_relative "bedrock_answer"
require_relative "gemini_answer"
require_relative "event_stream"
require_relative "canned_errors"
require_relative "google_errors"
require_relative "embedding_answer"
require_relative "token_answer"

module LlmFailover
  module Testing
    class FakeProvider
      # Answers one request according to one step. #serve returns :keep when the
      # connection can carry the next request, :close when it must be closed, :gone when
      # it already is.
      class Responder
        # Each protocol's answer; chat completions for every other.
        ANSWERS = { anthropic: AnthropicAnswer, responses: ResponsesAnswer, bedrock: BedrockAnswer,
                    gemini: GeminiAnswer }.freeze

        # Fixture headers we recompute: the body framing is ours.
        FRAMING_HEADERS = %w[content-length transfer-encoding connection].freeze

        # @param io [HttpIO]
        # @param request [Request]
        # @param step [Step]
        # @param waiter [#call] sleeps for the given seconds, raising Stopped when the server stops
        def initialize(io, request, step, waiter)
          @io = io
          @request = request
          @step = step
          @waiter = waiter
          @close = step[:close] || client_wants_close? ||
                   step[:headers].to_h.any? { |k, v| k.to_s.casecmp?("connection") && v.to_s.casecmp?("close") }
        end

        # @return [Symbol] :keep, :close or :gone
        def serve
          pause(@step[:delay_headers])
          if @step[:reset]
            @io.reset!
            return :gone
          end

          if @step.key?(:fixture) then serve_fixture
          elsif @request.token? && !@step.key?(:body) then serve_token # a refusal (JwtGrant) has its body
          elsif @step.key?(:raw) then serve_raw
          elsif @step.key?(:error) then serve_error
          elsif @step.key?(:status) || @step.key?(:body) then serve_exact
          elsif @request.embeddings? then serve_embeddings
          elsif @request.stream then return serve_stream
          else serve_answer
          end
          @close ? :close : :keep
        end

        private

        def client_wants_close?
          @request.headers["connection"].to_s.downcase.split(/\s*,\s*/).include?("close")
        end

        # Waits between parts of the answer; a client that hangs up meanwhile is
        # recorded on its request (Request#client_closed?).
        def pause(seconds)
          @waiter.call(seconds, @io) if seconds&.positive?
        rescue HttpIO::HungUp
          @request.client_closed = true
          raise
        end

        def serve_fixture
          fixture = @step.fixture_response
          headers = fixture[:headers].reject { |k, _| FRAMING_HEADERS.include?(k.downcase) }
          type = fixture[:headers].find { |k, _| k.casecmp?("content-type") }&.last.to_s
          aws = type.include?("vnd.amazon.eventstream")
          if aws || type.include?("text/event-stream")
            @io.write_head(fixture[:status], framing(headers, chunked: true))
            # An SSE event, or one binary event-stream message, per chunk.
            events = aws ? EventStream.split(fixture[:body]) : fixture[:body].scan(/.*?(?:\r\n\r\n|\n\n|\r\r)|.+\z/m)
            events.each_with_index do |event, i|
              pause(@step[:chunk_delay]) if i.positive?
              @io.write_chunk(event)
            end
            @io.finish_chunks
          else
            send_whole(fixture[:status], headers, fixture[:body])
          end
        end

        def serve_raw
          send_whole(@step[:status] || 200,
                     { "Content-Type" => @step[:content_type] || "application/json" }, @step[:raw])
        end

        def serve_error
          return serve_google_error if @request.api == :gemini

          status, headers, body = CannedErrors.build(@step[:error], @request.api, model: request_model)
          headers = { "Content-Type" => "application/json" }.merge(headers)
          headers["retry-after"] = @step[:retry_after].to_s if @step.key?(:retry_after)
          headers["retry-after-ms"] = @step[:retry_after_ms].to_s if @step.key?(:retry_after_ms)
          send_whole(@step[:status] || status, headers, body)
        end

        # Google's errors name their wait in the body (RetryInfo), not in a header.
        def serve_google_error
          status, headers, body = GoogleErrors.build(@step[:error], model: request_model, vertex: @request.vertex?,
                                                                    retry_after: @step[:retry_after])
          headers["retry-after-ms"] = @step[:retry_after_ms].to_s if @step.key?(:retry_after_ms)
          send_whole(@step[:status] || status, headers, body)
        end

        # The OAuth token exchange (Vertex AI's credentials): a fresh access token, or the
        # step's error in OAuth's shape.
        def serve_token
          status, headers, body = TokenAnswer.build(@step, lane: @request.lane)
          send_whole(@step[:status] || status, headers, body)
        end

        def serve_exact
          body = @step[:body]
          body = JSON.generate(body) if body.is_a?(Hash) || body.is_a?(Array)
          headers = { "Content-Type" => "application/json" }
          headers["retry-after"] = @step[:retry_after].to_s if @step.key?(:retry_after)
          headers["retry-after-ms"] = @step[:retry_after_ms].to_s if @step.key?(:retry_after_ms)
          send_whole(@step[:status] || 200, headers, body.to_s)
        end

        # Embeddings: the deterministic bag-of-words vectors of the request's input
        # (Gemini's: the text of each request's content).
        def serve_embeddings
          answer = EmbeddingAnswer.new(embedding_texts, model: @step[:model] || request_model)
          body = if @request.api != :gemini then answer.body
                 else answer.gemini_body(single: Request.google_method(@request.path) == "embedContent")
                 end
          send_whole(200, { "Content-Type" => "application/json" }, body)
        end

        def embedding_texts
          json = @request.json || {}
          return gemini_texts(json) if @request.api == :gemini

          input = json["input"]
          input.is_a?(Array) ? input : [input.to_s]
        end

        # batchEmbedContents: a request per text; embedContent: the body is the one.
        def gemini_texts(json)
          requests = json["requests"].is_a?(Array) ? json["requests"] : [json]
          requests.map do |r|
            parts = r.is_a?(Hash) ? r.dig("content", "parts") : nil
            Array(parts).filter_map { |pt| pt["text"] if pt.is_a?(Hash) }.join
          end
        end

        def serve_answer
          answer = build_answer
          send_whole(200, { "Content-Type" => "application/json" }.merge(answer.headers), answer.body)
        end

        # Streams the answer, applying the fault options between deltas (text pieces and
        # pieces of a tool call's arguments alike: cut_after can cut inside a call).
        def serve_stream
          answer = build_answer
          headers = { "Content-Type" => answer.stream_content_type, "Cache-Control" => "no-cache" }.merge(answer.headers)
          @io.write_head(200, framing(headers, chunked: true))
          @sent = 0
          answer.preamble_events.each { |e| event(e) }
          pause(@step[:delay_first_token])

          count = answer.delta_count
          at = ->(key) { @step.key?(key) ? [@step[key], count].min : nil }
          cut, stall, malformed, error = at.call(:cut_after), at.call(:stall_after),
                                         at.call(:malformed_after), at.call(:error_event_after)
          (0..count).each do |i|
            if i == cut
              @io.close # FIN after a partial body: no terminal event, no last chunk
              return :gone
            end
            if i == stall
              @io.wait_for_hangup
              return :close
            end
            event(answer.malformed_event) if i == malformed
            if i == error
              event(answer.error_event)
              @io.finish_chunks
              return @close ? :close : :keep
            end
            answer.delta_events(i).each { |e| event(e) } if i < count
          end

          answer.closing_events.each { |e| event(e) }
          answer.terminal_events(no_done: @step[:no_done]).each { |e| event(e) } unless @step[:no_terminal]
          @io.finish_chunks
          @close ? :close : :keep
        end

        def event(data)
          pause(@step[:chunk_delay]) if @sent.positive?
          @io.write_chunk(data)
          @sent += 1
        end

        def build_answer
          usage = @step[:usage].to_h.transform_keys(&:to_sym)
          text, chunks, calls = @step.answer_for(@request.json)
          answer = ANSWERS.fetch(@request.api, OpenAIAnswer)
          answer.new(request: @request, model: @step[:model] || request_model, text: text, chunks: chunks, calls: calls,
                     usage: usage, finish_reason: @step[:finish_reason], thinking: @step.thinking)
        end

        # The body's model, or the path's (Google's hosts, Claude on Vertex AI, Bedrock).
        def request_model
          @request.model || "fake-model"
        end

        def send_whole(status, headers, body)
          @io.write_head(status, framing(headers, length: body.bytesize))
          @io.write(body) unless body.empty?
        end

        # Our headers (and a rate limit's), then the step's extra headers (which win,
        # case-insensitively), then framing.
        def framing(headers, chunked: false, length: nil)
          headers = headers.merge(@request.rate_headers) if @request.rate_headers
          extra = @step[:headers].to_h.to_h { |k, v| [k.to_s, v.to_s] }
          merged = headers.reject { |k, _| extra.keys.any? { |e| e.casecmp?(k) } }.merge(extra)
          merged = merged.reject { |k, _| FRAMING_HEADERS.include?(k.downcase) }.to_a
          merged << (chunked ? ["Transfer-Encoding", "chunked"] : ["Content-Length", length.to_s])
          merged << ["Connection", @close ? "close" : "keep-alive"]
          merged
        end
      end
    end
  end
end
