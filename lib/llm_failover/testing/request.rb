# frozen_string_literal: true

require "json"
require_relative "transcript"

module LlmFailover
  module Testing
    class FakeProvider
      # Bedrock's path: the model id (escaped as AWS's SDKs send it) and the operation.
      BEDROCK_PATH = %r{/model/([^/]+)/(?:converse|converse-stream)\z}.freeze

      # One request as the server saw it. headers has lowercase names; json is the parsed
      # body when it is a JSON object; api is :openai, :anthropic, :bedrock or nil
      # (unrouted); stream is the body's "stream", or for Bedrock the path's
      # /converse-stream.
      # client_closed is set when the client hung up while the answer was held back (a
      # delay): a hedged request's loser, a cancelled call. lane is the provider name its
      # path starts with (`/providers/NAME/...`, see Lane) or nil.
      Request = Struct.new(:method, :path, :headers, :body, :json, :api, :stream, :client_closed, :lane) do
        # The request from what HttpIO#read_request read: every String as UTF-8, the
        # path without an absolute-form target's scheme and host, the body parsed when it
        # is a JSON object, routed by method and path.
        # @return [Request]
        def self.parse(method, target, headers, body)
          path = target.dup.force_encoding(Encoding::UTF_8)
          path = path.sub(%r{\Ahttps?://[^/]*}i, "") # absolute-form targets
          body = body.dup.force_encoding(Encoding::UTF_8)
          json = begin
            parsed = JSON.parse(body)
            parsed.is_a?(Hash) ? parsed : nil
          rescue JSON::ParserError, EncodingError
            nil
          end
          headers = headers.to_h { |k, v| [k.dup.force_encoding(Encoding::UTF_8), v.dup.force_encoding(Encoding::UTF_8)] }
          method = method.dup.force_encoding(Encoding::UTF_8)
          api = route(method, path)
          stream = api == :bedrock ? path.split("?", 2).first.end_with?("/converse-stream") : json&.fetch("stream", nil) == true
          new(method, path, headers, body, json, api, stream, nil, path[%r{\A/providers/([^/?]+)/}, 1]&.to_sym)
        end

        # @return [Symbol, nil] the API a POST to this path speaks; nil: not routed (a 404)
        def self.route(method, path)
          return nil unless method == "POST"

          bare = path.split("?", 2).first
          if bare.end_with?("/chat/completions", "/embeddings") then :openai
          elsif bare.end_with?("/messages") then :anthropic
          elsif BEDROCK_PATH.match?(bare) then :bedrock
          end
        end

        # @return [String, nil] the model asked for: the body's "model", or Bedrock's from
        #   its path, unescaped
        def model
          if api == :bedrock
            id = path.split("?", 2).first[BEDROCK_PATH, 1]
            return id&.gsub(/%(\h\h)/) { Regexp.last_match(1).hex.chr }&.force_encoding(Encoding::UTF_8)
          end
          json["model"] if json.is_a?(Hash) && json["model"].is_a?(String)
        end

        # @return [Boolean] whether it asks for embeddings (the OpenAI-compatible /embeddings)
        def embeddings?
          api == :openai && path.split("?", 2).first.end_with?("/embeddings")
        end

        # @return [Boolean] whether it asked for a stream
        def stream?
          stream
        end

        # @return [Boolean] whether the client closed the connection during a delay of
        #   this answer (delay_headers, delay_first_token, chunk_delay)
        def client_closed?
          client_closed ? true : false
        end

        # @return [Array<Transcript::Call>] the tool calls in the request's messages
        def tool_calls
          Transcript.new(api, json).calls
        end

        # @return [Array<Transcript::Result>] the tool results in the request's messages
        #   (id, content as text, error), so a test can count what each tool round sent
        def tool_results
          Transcript.new(api, json).results
        end
      end
    end
  end
end

require_relative "sent_attachments"
