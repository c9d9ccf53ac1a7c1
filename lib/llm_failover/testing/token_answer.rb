# frozen_string_literal: true

require "json"
require "securerandom"

module LlmFailover
  module Testing
    class FakeProvider
      # The answer of an OAuth token endpoint (POST .../token: Google's
      # oauth2.googleapis.com/token, which Vertex AI's credentials are exchanged at; the
      # Vertex recordings begin with one): an access token that says when it expires, so a
      # server started with check_tokens: true can refuse an expired one, or OAuth's error.
      module TokenAnswer
        # What an access token of this server looks like: its lane and its expiry inside.
        TOKEN = /\Aya29\.fake-([A-Za-z0-9_.-]*)-(\d+)-[0-9a-f]+\z/.freeze
        DEFAULT_EXPIRES_IN = 3599

        # name => [status, OAuth error, description]
        ERRORS = {
          unauthorized: [400, "invalid_grant", "Token has been expired or revoked."],
          forbidden: [403, "unauthorized_client", "Client is unauthorized to retrieve access tokens."],
          bad_request: [400, "invalid_request", "Missing required parameter: grant_type"]
        }.freeze

        module_function

        # @param step [Step] access_token:, expires_in: (seconds), or error:
        # @param lane [Symbol, nil]
        # @return [Array(Integer, Hash, String)] status, headers, JSON body
        def build(step, lane: nil)
          headers = { "content-type" => "application/json; charset=utf-8" }
          if step.key?(:error)
            status, error, description = ERRORS.fetch(step[:error]) { [500, "internal_failure", "Backend Error"] }
            return [status, headers, JSON.generate("error" => error, "error_description" => description)]
          end
          expires_in = step[:expires_in] || DEFAULT_EXPIRES_IN
          token = step[:access_token] || issue(lane: lane, expires_in: expires_in)
          [200, headers, JSON.generate("access_token" => token, "expires_in" => expires_in,
                                       "scope" => "https://www.googleapis.com/auth/cloud-platform",
                                       "token_type" => "Bearer")]
        end

        # A token of this server, valid for +expires_in+ seconds.
        # @return [String]
        def issue(lane: nil, expires_in: DEFAULT_EXPIRES_IN)
          "ya29.fake-#{lane}-#{Time.now.to_i + expires_in}-#{SecureRandom.hex(12)}"
        end

        # Whether +token+ is one this server issued that has not expired yet.
        # @return [Boolean]
        def valid?(token, now: Time.now.to_i)
          m = TOKEN.match(token.to_s)
          !m.nil? && m[2].to_i > now
        end
      end
    end
  end
end
