# frozen_string_literal: true

require "base64"
require "json"
require "openssl"
require "uri"

require_relative "../errors"
require_relative "../safe_inspect"
require_relative "host"

module LlmFailover
  module Credentials
    # Vertex AI's token from a Google service account key file, without googleauth: a
    # JWT signed here (RS256 with the file's private key) is exchanged at the file's
    # token_uri for an access token (OAuth's jwt-bearer grant), as googleauth does. A source
    # for TokenSource, which asks it once and again shortly before the token expires. The
    # file is read and checked when the provider is configured; the key never leaves this
    # object but as a signature.
    class ServiceAccount
      include SafeInspect

      SCOPE = "https://www.googleapis.com/auth/cloud-platform"
      GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
      # The lifetime Google accepts at most for the assertion.
      ASSERTION_LIFETIME = 3600
      # Seconds the exchange may take (connect, then each read and write).
      OPEN_TIMEOUT = 10
      IO_TIMEOUT = 30
      # A token_uri in clear text is taken on loopback only (a test's token endpoint).
      LOOPBACK = %w[127.0.0.1 localhost ::1 [::1]].freeze

      # A TokenSource that asks the service account file at +path+.
      # @param option [Symbol] :credentials (given), or :environment (GOOGLE_APPLICATION_CREDENTIALS)
      # @raise [ConfigurationError] a file that is missing, not a service account key or broken
      def self.source(provider, path, option:)
        named = if option == :environment then "the service account file GOOGLE_APPLICATION_CREDENTIALS names"
                else "the credentials: service account file"
                end
        TokenSource.new(provider, new(provider, path, named: named), option: option, named: named)
      end

      # @param provider [Symbol] for the errors
      # @param path [String]
      # @param named [String] what the errors call the file
      def initialize(provider, path, named:)
        @provider = provider
        @named = named
        @email, @key_id, @token_uri, @key = read(path)
        freeze
      end

      # Signs an assertion and exchanges it for a token.
      # @return [Hash] { token:, expires_in: }
      # @raise [ConfigurationError] the token endpoint refused it or gave no token
      # @raise [SystemCallError, IOError, Net::OpenTimeout, ...] the endpoint was unreachable
      #   (TokenSource makes it a ConfigurationError)
      def call
        status, body = exchange(URI.encode_www_form("grant_type" => GRANT, "assertion" => assertion))
        answer = parse(body)
        token = answer["access_token"] if answer.is_a?(Hash)
        unless status == 200 && token.is_a?(String)
          refuse!("#{@named}: its token_uri answered #{status}#{oauth_error(answer)}")
        end

        lifetime = answer["expires_in"]
        { token: token, expires_in: lifetime.is_a?(Numeric) ? lifetime : TokenSource::UNKNOWN_LIFETIME }
      end

      def inspect
        "#<#{self.class.name} #{@email} [REDACTED]>"
      end

      private

      # @return [Array(String, String, URI, OpenSSL::PKey::RSA)]
      def read(path)
        refuse!("#{@named} must be a path (a String), got #{path.class}") unless path.is_a?(String)
        text = begin
          File.read(path)
        rescue SystemCallError => e
          refuse!("#{@named} cannot be read: #{e.class}")
        end
        # JSON's errors quote the text they choke on: the key would be in the message.
        json = parse(text)
        refuse!("#{@named} is not JSON") if json.nil?
        unless json.is_a?(Hash) && json["type"] == "service_account"
          refuse!("#{@named} is not a service account key (type #{json['type'].inspect if json.is_a?(Hash)}); " \
                  "for other application default credentials, load googleauth")
        end
        email = json["client_email"]
        refuse!("#{@named} has no client_email") unless email.is_a?(String) && !email.empty?
        [email.dup.freeze, json["private_key_id"], token_uri(json["token_uri"]), private_key(json["private_key"])]
      end

      def parse(text)
        JSON.parse(text)
      rescue JSON::ParserError, TypeError
        nil
      end

      def token_uri(value)
        uri = value.is_a?(String) ? URI.parse(value) : nil
        ok = uri.is_a?(URI::HTTPS) || (uri.is_a?(URI::HTTP) && LOOPBACK.include?(uri.host))
        refuse!("#{@named} has no https token_uri") unless ok
        uri.freeze
      rescue URI::InvalidURIError
        refuse!("#{@named} has a broken token_uri")
      end

      def private_key(pem)
        key = begin
          OpenSSL::PKey::RSA.new(pem) if pem.is_a?(String)
        rescue OpenSSL::PKey::PKeyError
          nil
        end
        refuse!("#{@named} has no RSA private key (private_key)") unless key&.private?
        key
      end

      # The signed JWT (RFC 7523) the token endpoint takes.
      def assertion
        now = Time.now.to_i
        header = { "alg" => "RS256", "typ" => "JWT", "kid" => @key_id }.compact
        claims = { "iss" => @email, "scope" => SCOPE, "aud" => @token_uri.to_s, "iat" => now,
                   "exp" => now + ASSERTION_LIFETIME }
        signing_input = [header, claims].map { |part| base64url(JSON.generate(part)) }.join(".")
        "#{signing_input}.#{base64url(@key.sign(OpenSSL::Digest.new('SHA256'), signing_input))}"
      end

      def base64url(bytes)
        Base64.urlsafe_encode64(bytes, padding: false)
      end

      # @return [Array(Integer, String)] the status and body
      def exchange(form)
        require "net/http"
        http = Net::HTTP.new(@token_uri.host, @token_uri.port)
        http.use_ssl = @token_uri.is_a?(URI::HTTPS)
        http.open_timeout = OPEN_TIMEOUT
        http.read_timeout = http.write_timeout = IO_TIMEOUT
        response = http.start do
          http.post(@token_uri.request_uri, form, "content-type" => "application/x-www-form-urlencoded")
        end
        [response.code.to_i, response.body.to_s]
      end

      # OAuth's error code and description, which name no secret.
      def oauth_error(answer)
        return "" unless answer.is_a?(Hash) && answer["error"].is_a?(String)

        description = answer["error_description"]
        " #{answer['error'][0, 64]}#{": #{description[0, 200]}" if description.is_a?(String)}"
      end

      # Raised outside any rescue: the cause would carry what was being parsed.
      def refuse!(message)
        Host.refuse!(@provider, message)
      end
    end
  end
end
