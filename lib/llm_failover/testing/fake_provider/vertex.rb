# frozen_string_literal: true

require_relative "../google_errors"
require_relative "../token_answer"

module LlmFailover
  module Testing
    class FakeProvider
      # Vertex AI as the FakeProvider serves it: its route under `base_url(:vertex)`
      # (`/v1/projects/P/locations/L/publishers/google/models/M:generateContent` and
      # `:streamGenerateContent` for Gemini, `publishers/anthropic/models/M:rawPredict` and
      # `:streamRawPredict` for Claude), an OAuth access token as `Authorization: Bearer`,
      # issued by its token endpoint (FakeProvider#token_url). With check_tokens, a request
      # whose token this server did not issue, or saw expire, gets Vertex AI's 401 and takes
      # no step.
      module Vertex
        module_function

        # @param check_tokens [Boolean] the server's option
        # @return [Hash, nil] the step Vertex AI answers +request+ with instead of the script's
        def refusal(request, check_tokens:)
          return nil unless check_tokens && request.vertex? && !TokenAnswer.valid?(request.bearer_token)

          status, headers, body = GoogleErrors.build(:unauthorized, model: request.path_model.to_s, vertex: true)
          { status: status, headers: headers, body: body }
        end
      end

      class Request
        # @return [Boolean] whether it came by Vertex AI's route (/projects/P/locations/L/...)
        def vertex?
          path.include?("/projects/") && path.include?("/publishers/")
        end
      end
    end
  end
end
