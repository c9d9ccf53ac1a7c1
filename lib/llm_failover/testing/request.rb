# frozen_string_literal: true

require "json"
require_relative "transcript"

module LlmFailover
  module Testing
    class FakeProvider
      # One request as the server saw it. headers has lowercase names; json is the parsed
      # body when it is a JSON object; api is :openai, :anthropic, :responses, :bedrock,
      # :gemini (Google's generateContent, on Google AI or Vertex AI), :oauth (a token
      # exchange, Vertex AI's credentials) or nil (unrouted). Claude on Vertex AI
      # (rawPredict) is :anthropic. stream is the body's "stream", or the path's where the
      # path says it (Google's streamGenerateContent, Bedrock's /converse-stream). A host's
      # own traits are beside it (fake_provider/azure.rb, vertex.rb).
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
          stream = json&.fetch("stream", nil) == true || GOOGLE_STREAM.include?(google_method(path)) ||
                   path.split("?", 2).first[BEDROCK_PATH, 2] == "converse-stream"
          new(method, path, headers, body, json, route(method, path), stream, nil,
              path[%r{\A/providers/([^/?]+)/}, 1]&.to_sym)
        end

        # Google's paths: .../models/MODEL:METHOD (Google AI: /v1beta/models/M; Vertex AI:
        # /v1/projects/P/locations/L/publishers/PUBLISHER/models/M).
        GOOGLE_PATH = %r{/models/([^/:?]+):([A-Za-z]+)\z}.freeze
        GOOGLE_CHAT = %w[generateContent streamGenerateContent].freeze
        GOOGLE_EMBED = %w[batchEmbedContents embedContent].freeze
        GOOGLE_STREAM = %w[streamGenerateContent streamRawPredict].freeze
        # Claude on Vertex AI: Anthropic's body at publishers/anthropic.
        VERTEX_CLAUDE = %w[rawPredict streamRawPredict].freeze
        # Bedrock's paths: /model/MODEL/converse and /converse-stream, the model id escaped
        # as AWS's SDKs send it (an ARN's ':' and '/' too).
        BEDROCK_PATH = %r{/model/([^/]+)/(converse|converse-stream)\z}.freeze

        # @return [String, nil] the method after a Google model path (generateContent, ...)
        def self.google_method(path)
          path.split("?", 2).first[GOOGLE_PATH, 2]
        end

        # @return [Symbol, nil] the API a POST to this path speaks; nil: not routed (a 404)
        def self.route(method, path)
          return nil unless method == "POST"

          bare = path.split("?", 2).first
          google = google_method(path)
          if bare.end_with?("/chat/completions", "/embeddings") then :openai
          elsif bare.end_with?("/messages") then :anthropic
          elsif bare.end_with?("/responses") then :responses
          elsif BEDROCK_PATH.match?(bare) then :bedrock
          elsif VERTEX_CLAUDE.include?(google) && bare.include?("/publishers/anthropic/") then :anthropic
          elsif (GOOGLE_CHAT + GOOGLE_EMBED).include?(google) && !bare.include?("/publishers/anthropic/") then :gemini
          elsif bare.end_with?("/token") then :oauth
          end
        end

        # @return [String, nil] the model a path names (Google's, Vertex AI's, Bedrock's),
        #   unescaped
        def path_model
          bare = path.split("?", 2).first
          model = bare[api == :bedrock ? BEDROCK_PATH : GOOGLE_PATH, 1]
          model && model.gsub(/%([0-9A-Fa-f]{2})/) { Regexp.last_match(1).hex.chr }.force_encoding(Encoding::UTF_8)
        end

        # @return [String, nil] the model asked for: the body's "model", or the path's
        #   (Google's hosts, Claude on Vertex AI, Bedrock)
        def model
          model = json["model"] if json.is_a?(Hash)
          model.is_a?(String) ? model : path_model
        end

        # @return [String, nil] the bearer token of its Authorization header (OpenAI's key,
        #   Azure's Entra ID token, Vertex AI's access token)
        def bearer_token
          headers["authorization"].to_s[/\ABearer\s+(\S+)/i, 1]
        end

        # @return [Boolean] whether it asks for an OAuth token (Vertex AI's credentials)
        def token?
          api == :oauth
        end

        # @return [Boolean] whether it asks for embeddings (the OpenAI-compatible /embeddings,
        #   Gemini's batchEmbedContents or embedContent)
        def embeddings?
          return GOOGLE_EMBED.include?(self.class.google_method(path)) if api == :gemini

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
