# frozen_string_literal: true

require "openssl"

module LlmFailover
  module Testing
    class FakeProvider
      # AWS Signature Version 4 checked as AWS checks a Bedrock request, for a FakeProvider
      # that knows credentials (`aws_credentials:`): the canonical request (method, the path
      # as sent escaped once more, the query, the signed headers, the body's SHA-256), the
      # string to sign, the key derived from the secret, date, region and service. A request
      # that fails gets AWS's own 403, named by x-amzn-errortype.
      module SigV4
        ALGORITHM = "AWS4-HMAC-SHA256"
        AUTHORIZATION = %r{\AAWS4-HMAC-SHA256\ Credential=([^/,]+)/(\d{8})/([^/,]+)/([^/,]+)/aws4_request,\s*
                           SignedHeaders=([^,]+),\s*Signature=(\h{64})\z}x.freeze

        module_function

        # SigV4's canonical URI of a path as it was sent: every byte but A-Z a-z 0-9 - . _ ~
        # and '/' escaped, a '%' too (AWS escapes the path once more for every service but
        # S3: %3A becomes %253A).
        # @return [String]
        def canonical_uri(path)
          path.b.gsub(%r{[^A-Za-z0-9\-._~/]}) { |c| format("%%%02X", c.ord) }
        end

        # @return [String] the hex signature of +string_to_sign+
        def signature(secret:, date:, region:, service:, string_to_sign:)
          key = %W[#{date} #{region} #{service} aws4_request].reduce("AWS4#{secret}") do |k, part|
            OpenSSL::HMAC.digest("SHA256", k, part)
          end
          OpenSSL::HMAC.hexdigest("SHA256", key, string_to_sign)
        end

        # @param method [String] @param path [String] as sent, query included
        # @param headers [Hash] lowercase names @param body [String]
        # @param signed [Array<String>] the signed headers' names
        # @return [String]
        def canonical_request(method:, path:, headers:, body:, signed:)
          bare, query = path.split("?", 2)
          canonical_headers = signed.map { |name| "#{name}:#{headers[name].to_s.strip.gsub(/\s+/, ' ')}\n" }.join
          payload = headers["x-amz-content-sha256"] || OpenSSL::Digest::SHA256.hexdigest(body.b)
          [method, canonical_uri(bare), canonical_query(query.to_s), canonical_headers, signed.join(";"), payload]
            .join("\n")
        end

        def canonical_query(query)
          query.split("&").map { |pair| pair.include?("=") ? pair : "#{pair}=" }.sort.join("&")
        end

        # AWS's answer to a Bedrock request whose signature does not hold, as a FakeProvider
        # step, or nil when it does (or when it is no Bedrock request, or the server checks
        # no signature).
        # @param request [Request]
        # @param credentials [Hash{String=>String,Hash}, nil] access key id => secret, or
        #   { secret_access_key:, session_token: }; nil: nothing is checked
        # @return [Hash, nil]
        def refusal(request, credentials:)
          return nil unless credentials && request.api == :bedrock

          header = request.headers["authorization"]
          return error(403, "MissingAuthenticationTokenException", "Missing Authentication Token") unless header

          match = AUTHORIZATION.match(header.strip)
          unless match
            return error(400, "IncompleteSignatureException",
                         "Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters.")
          end

          key_id, date, region, service, signed, given = match.captures
          secret, token = secret_of(credentials[key_id])
          return error(403, "UnrecognizedClientException", "The security token included in the request is invalid.") if
            secret.nil? || request.headers["x-amz-security-token"] != token

          signed = signed.split(";")
          amz_date = request.headers["x-amz-date"].to_s
          creq = canonical_request(method: request.method, path: request.path, headers: request.headers,
                                   body: request.body, signed: signed)
          sts = [ALGORITHM, amz_date, "#{date}/#{region}/#{service}/aws4_request",
                 OpenSSL::Digest::SHA256.hexdigest(creq)].join("\n")
          expected = signature(secret: secret, date: date, region: region, service: service, string_to_sign: sts)
          return nil if signed.include?("host") && amz_date.start_with?(date) &&
                        OpenSSL.fixed_length_secure_compare(expected, given)

          error(403, "InvalidSignatureException",
                "The request signature we calculated does not match the signature you provided. Check your AWS " \
                "Secret Access Key and signing method. Consult the service documentation for details.")
        end

        def secret_of(entry)
          return [entry, nil] if entry.is_a?(String) || entry.nil?

          entry = entry.transform_keys(&:to_sym)
          [entry[:secret_access_key], entry[:session_token]]
        end

        def error(status, name, message)
          { status: status, headers: { "x-amzn-errortype" => "#{name}:http://internal.amazon.com/coral/com.amazon.coral.service/" },
            body: { "message" => message } }
        end
      end
    end
  end
end
