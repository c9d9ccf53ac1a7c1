# frozen_string_literal: true

require "base64"
require "json"
require "openssl"
require "uri"

module LlmFailover
  module Testing
    class FakeProvider
      # OAuth's jwt-bearer grant checked as Google's token endpoint checks a service
      # account's assertion, for a FakeProvider that knows service accounts
      # (`service_accounts:`, client_email => public key): an RS256 JWT whose signature holds
      # under the account's key, issued by it, for this endpoint, short-lived and current,
      # with a scope. One that fails gets Google's 400 invalid_grant. Other grants (an
      # external account's token exchange) are not checked.
      module JwtGrant
        GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
        # Google's limits: an assertion lasts an hour at most; clocks may differ a little.
        MAX_LIFETIME = 3600
        SKEW = 60

        module_function

        # @param request [Request] a token request
        # @param accounts [Hash{String=>OpenSSL::PKey::RSA}, nil] nil: nothing is checked
        # @param audience [String] this endpoint's URL, which the assertion must name
        # @return [Hash, nil] the step Google answers with instead of the script's
        def refusal(request, accounts:, audience:)
          return nil unless accounts

          form = URI.decode_www_form(request.body).to_h
          return nil unless form["grant_type"] == GRANT

          problem = problem_of(form["assertion"].to_s, accounts, audience)
          problem && { status: 400, headers: {}, body: { "error" => "invalid_grant", "error_description" => problem } }
        rescue ArgumentError # a body that is no form
          { status: 400, headers: {}, body: { "error" => "invalid_request", "error_description" => "Bad Request" } }
        end

        # @return [String, nil] Google's description of what is wrong with +jwt+
        def problem_of(jwt, accounts, audience)
          header_b64, claims_b64, signature_b64 = jwt.split(".", -1)
          return "Invalid JWT: Malformed." unless signature_b64 && jwt.count(".") == 2

          header, claims = [header_b64, claims_b64].map { |part| JSON.parse(decode(part)) }
          return "Invalid JWT: Unsupported algorithm." unless header.is_a?(Hash) && header["alg"] == "RS256"
          return "Invalid JWT: Malformed." unless claims.is_a?(Hash)

          key = accounts[claims["iss"]]
          return "Invalid grant: account not found" unless key
          return "Invalid JWT Signature." unless
            key.verify(OpenSSL::Digest.new("SHA256"), decode(signature_b64), "#{header_b64}.#{claims_b64}")

          timing_problem(claims) || claims_problem(claims, audience)
        rescue JSON::ParserError, ArgumentError
          "Invalid JWT: Malformed."
        end

        def timing_problem(claims)
          iat = claims["iat"]
          exp = claims["exp"]
          now = Time.now.to_i
          return nil if iat.is_a?(Integer) && exp.is_a?(Integer) && iat <= now + SKEW && exp > now &&
                        exp - iat <= MAX_LIFETIME

          "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your " \
            "iat and exp values in the JWT claim."
        end

        def claims_problem(claims, audience)
          return "Invalid JWT: Failed audience check." unless claims["aud"] == audience
          return "Invalid OAuth scope or ID token audience provided." unless claims["scope"].is_a?(String) &&
                                                                             !claims["scope"].strip.empty?

          nil
        end

        def decode(part)
          Base64.urlsafe_decode64(part + ("=" * (-part.size % 4)))
        end
      end
    end
  end
end
