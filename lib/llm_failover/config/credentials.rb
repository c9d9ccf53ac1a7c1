# frozen_string_literal: true

require_relative "../errors"
require_relative "../safe_inspect"
require_relative "host"
require_relative "aws_chain"
require_relative "google_default"
require_relative "service_account"

module LlmFailover
  # One provider's credential, as its host takes it, and where it comes from: a key
  # given once (api_key:), a source asked for a token that expires (access_token:, a
  # callable; Vertex AI's service account file, credentials:), or AWS credentials
  # (credentials:, a Hash or a callable). Given none, the ambient ones a user already
  # holds: aws-sdk-core's provider chain or googleauth's application default credentials
  # when that gem is loaded, else the environment's. Credentials.for picks it from the
  # options the host takes (Host#credentials). #current is what a call sends; its identity changes only when the
  # credential does, so that ProviderConfig rebuilds a target's Engine::Target then, and
  # only then; #engine_fields says which Engine::Target members carry it.
  #
  # @api private: ProviderConfig's
  module Credentials
    # A credential every call sends as it is: api_key:.
    class Key
      include SafeInspect

      # @return [Symbol] the option that gave it
      attr_reader :option

      # @param value [String] checked by Credentials.for
      # @param option [Symbol] api_key: or access_token:
      # @param bearer [Boolean] a token given as it is (access_token: "..."), or a Bedrock API
      #   key: sent as a bearer token
      def initialize(value, option:, bearer: false)
        @value = value.dup.freeze
        @option = option
        @bearer = bearer
        freeze
      end

      # @return [Hash] the Engine::Target members that carry +value+
      def engine_fields(value)
        { api_key: value, bearer: @bearer }
      end

      # @return [String]
      def current
        @value
      end

      def inspect
        "#<#{self.class.name} #{@option}: [REDACTED]>"
      end
    end

    # A source of tokens that expire, asked when a call needs a token and the last one is
    # missing or about to expire, never per call (Azure's Entra ID, Vertex AI's OAuth).
    #
    # The contract of a token source: #call, with no argument, returns
    # - a Hash { token: String, expires_at: Time } or { token: String, expires_in: seconds },
    #   or
    # - a String, the token alone, then taken for UNKNOWN_LIFETIME seconds.
    # A token is asked again REFRESH_BEFORE seconds before it expires, once, under a lock
    # (the threads of a process share it). A source that raises, returns nil, an empty token
    # or another shape is a ConfigurationError for its provider: raised by the call before
    # any request, never a failover (a working backup would hide it). An Entra ID client
    # fits it in a line; googleauth (GoogleDefault) and a service account file
    # (ServiceAccount) are such callables.
    class TokenSource
      include SafeInspect

      # Seconds before its expiry that a token is asked again: a call may outlast it.
      REFRESH_BEFORE = 60
      # Seconds a token given without an expiry is used.
      UNKNOWN_LIFETIME = 300

      # @return [Symbol] the option that gave it
      attr_reader :option

      # @param provider [Symbol] the provider's name, for the error
      # @param source [#call]
      # @param option [Symbol] the option that gave it (:environment, :aws_sdk, :googleauth
      #   for an ambient source)
      # @param named [String] what the errors call the source
      def initialize(provider, source, option:, named: "the #{option}: source")
        @provider = provider
        @source = source
        @option = option
        @named = named
        @held = nil # [value, monotonic time to ask again], frozen: read in one step
        @lock = Mutex.new
      end

      # @return [Hash] the Engine::Target members that carry +value+
      def engine_fields(value)
        { api_key: value, bearer: true }
      end

      # @return [String] a token that has REFRESH_BEFORE seconds left at least
      # @raise [ConfigurationError] the source failed
      def current
        held = @held
        return held[0] if held && now < held[1]

        @lock.synchronize do
          @held = refresh unless @held && now < @held[1]
          @held[0]
        end
      end

      def inspect
        "#<#{self.class.name} #{@option}: [REDACTED]>"
      end

      private

      # @return [Array(Object, Float)] what #current holds next
      def refresh
        answer = begin
          @source.call
        rescue ConfigurationError
          raise
        rescue StandardError => e
          Host.refuse!(@provider, "#{@named} raised #{e.class} (see the cause): no #{what}, no request")
        end
        value, expires_at = read(answer)
        [value.frozen? ? value : value.dup.freeze, now + [expires_at - Time.now - REFRESH_BEFORE, 0].max].freeze
      end

      # What it gives, in its errors.
      def what
        "token"
      end

      # @return [Array(String, Time)] the token and when it expires
      def read(answer)
        token, expires_at = answer.is_a?(Hash) ? from_hash(answer) : [answer, Time.now + UNKNOWN_LIFETIME]
        unless token.is_a?(String) && !token.strip.empty? && !token.match?(/[\r\n\0]/)
          Host.refuse!(@provider, "#{@named} gave no token (#{Credentials.shape(answer)}); it must " \
                                  "return a String or { token:, expires_at: } (or expires_in:)")
        end
        [token, expires_at]
      end

      def from_hash(answer)
        h = answer.transform_keys(&:to_sym)
        expires_at = h[:expires_at]
        expires_at = Time.now + h[:expires_in] if expires_at.nil? && h[:expires_in].is_a?(Numeric)
        unless expires_at.is_a?(Time)
          Host.refuse!(@provider, "#{@named} gave no expiry: { token:, expires_at: Time } or " \
                                  "{ token:, expires_in: seconds }")
        end
        [h[:token], expires_at]
      end

      def now
        Process.clock_gettime(Process::CLOCK_MONOTONIC)
      end
    end

    # AWS credentials as a Bedrock request is signed with (SigV4). Never shown.
    AwsKeys = Struct.new(:access_key_id, :secret_access_key, :session_token) do
      include SafeInspect

      def inspect
        "#<LlmFailover::Credentials::AwsKeys [REDACTED]>"
      end
    end

    # Bedrock's AWS credentials (credentials:): a Hash given once, a callable asked as a
    # TokenSource is (once, again shortly before they expire), aws-sdk-core's provider
    # chain (AwsChain) or the environment.
    #
    # The contract of a credentials source: #call, with no argument, returns a Hash
    # { access_key_id:, secret_access_key:, session_token: (optional) } and, for temporary
    # credentials, expires_at: (a Time; aws-sdk-core's expiration: too) or expires_in:
    # seconds; without an expiry they are asked again after UNKNOWN_LIFETIME seconds. A
    # source that raises or returns another shape is a ConfigurationError for its provider.
    # aws-sdk-core's provider chain (AwsChain) is such a callable.
    class AwsSource < TokenSource
      # The environment's, when credentials: is not given (read when a call needs them).
      ENV_SOURCE = lambda do
        { access_key_id: ENV.fetch("AWS_ACCESS_KEY_ID", nil), secret_access_key: ENV.fetch("AWS_SECRET_ACCESS_KEY", nil),
          session_token: ENV.fetch("AWS_SESSION_TOKEN", nil) }
      end

      # @return [Hash] the Engine::Target members that carry +value+
      def engine_fields(value)
        { api_key: nil, bearer: false, aws_credentials: value.to_a }
      end

      private

      def what
        "AWS credentials"
      end

      # @return [Array(AwsKeys, Time)]
      def read(answer)
        keys = Credentials.aws_keys(@provider, answer, @option, named: @named)
        h = answer.transform_keys(&:to_sym)
        expires_at = h[:expires_at] || h[:expiration]
        expires_at = Time.now + h[:expires_in] if expires_at.nil? && h[:expires_in].is_a?(Numeric)
        [keys, expires_at.is_a?(Time) ? expires_at : Time.now + UNKNOWN_LIFETIME]
      end
    end

    # Bedrock's credentials given as a Hash: the same every call.
    class AwsKeysGiven
      include SafeInspect

      attr_reader :option

      def initialize(keys)
        @keys = keys
        @option = :credentials
        freeze
      end

      # @return [AwsKeys]
      def current
        @keys
      end

      def engine_fields(value)
        { api_key: nil, bearer: false, aws_credentials: value.to_a }
      end

      def inspect
        "#<#{self.class.name} credentials: [REDACTED]>"
      end
    end

    module_function

    # The credential of a provider from the options the host takes.
    # @param host [Host]
    # @param given [Hash{Symbol => Object}] api_key:, access_token:, credentials: as configured
    #   (nil: not given)
    # A credential given always wins over an ambient one (an explicit choice is never
    # overridden by what the machine happens to hold).
    # @return [Key, TokenSource, AwsSource, AwsKeysGiven]
    # @raise [ConfigurationError] none given, two given, one the host does not take, a bad value
    def for(host, given)
      name = host.name
      present = given.reject { |_, v| v.nil? }
      takes = host.credentials
      (present.keys - takes).each do |option|
        Host.refuse!(name, "#{option}: is not how api: #{host.api.inspect} is authenticated (it takes " \
                           "#{takes.map { |t| "#{t}:" }.join(' or ')})")
      end
      return ambient(host) if present.empty? && %i[bedrock vertex].include?(host.api)
      Host.refuse!(name, "#{takes.join(' or ')} is missing (nil); is its environment variable set?") if present.empty?
      Host.refuse!(name, "give one of #{present.keys.map { |t| "#{t}:" }.join(' and ')}, not both") if present.size > 1

      option, value = present.first
      return ServiceAccount.source(name, value, option: :credentials) if option == :credentials && host.api == :vertex
      return aws(name, value) if option == :credentials
      return TokenSource.new(name, value, option: option) if option == :access_token && value.respond_to?(:call)

      Key.new(checked_key(name, option, value), option: option, bearer: option == :access_token || host.bearer_key?)
    end

    # The credential of a Bedrock or Vertex AI provider configured with none: what the
    # machine holds, asked when a call first needs it. Bedrock: aws-sdk-core's provider
    # chain when that gem is loaded, else AWS_* variables. Vertex AI: googleauth's
    # application default credentials when that gem is loaded, else the service account
    # file GOOGLE_APPLICATION_CREDENTIALS names (read now).
    def ambient(host)
      name = host.name
      if host.api == :bedrock
        return AwsSource.new(name, AwsChain.new(name), option: :aws_sdk, named: AwsChain::NAMED) if AwsChain.loaded?

        return AwsSource.new(name, AwsSource::ENV_SOURCE, option: :environment,
                                   named: "the environment's AWS credentials")
      end
      if GoogleDefault.loaded?
        return TokenSource.new(name, GoogleDefault.new, option: :googleauth, named: GoogleDefault::NAMED)
      end

      path = ENV.fetch("GOOGLE_APPLICATION_CREDENTIALS", "")
      return ServiceAccount.source(name, path, option: :environment) unless path.empty?

      Host.refuse!(name, "access_token or credentials is missing: give access_token: or credentials: (a service " \
                         "account file), set GOOGLE_APPLICATION_CREDENTIALS, or load googleauth (require " \
                         "\"googleauth\") for its application default credentials")
    end

    # credentials: a Hash checked now, or a source asked when a call needs it.
    def aws(name, value)
      return AwsSource.new(name, value, option: :credentials) if value.respond_to?(:call)
      unless value.is_a?(Hash)
        Host.refuse!(name, "credentials must be a Hash { access_key_id:, secret_access_key:, session_token: } or " \
                           "a callable, got #{value.class}")
      end

      AwsKeysGiven.new(aws_keys(name, value, :credentials))
    end

    # @param answer [Object] what credentials: is, or what its source returned
    # @return [AwsKeys] frozen
    # @raise [ConfigurationError] no access key id or secret, or a broken value
    def aws_keys(name, answer, option, named: nil)
      h = answer.is_a?(Hash) ? answer.transform_keys(&:to_sym) : {}
      keys = AwsKeys.new(*h.values_at(:access_key_id, :secret_access_key, :session_token))
      usable = ->(v) { v.is_a?(String) && !v.strip.empty? && !v.match?(/[\r\n\0]/) }
      return AwsKeys.new(*keys.map { |v| v&.dup&.freeze }).freeze if
        usable.call(keys.access_key_id) && usable.call(keys.secret_access_key) &&
        (keys.session_token.nil? || usable.call(keys.session_token))

      if option == :environment
        Host.refuse!(name, "the environment's AWS credentials are missing: set AWS_ACCESS_KEY_ID and " \
                           "AWS_SECRET_ACCESS_KEY, or give credentials:")
      end
      unless option == :credentials
        Host.refuse!(name, "#{named} gave AWS credentials that are missing or broken (#{shape(answer)})")
      end
      Host.refuse!(name, "the credentials: AWS credentials are missing or broken (#{shape(answer)}): give " \
                         "{ access_key_id:, secret_access_key:, session_token: (optional) }")
    end

    # What a source returned, without its value.
    def shape(answer)
      return "nil" if answer.nil?
      return "a Hash with #{answer.keys.map(&:inspect).join(', ')}" if answer.is_a?(Hash)

      answer.is_a?(String) ? "a String, empty or broken" : "a #{answer.class}"
    end

    # The key's value is never put in a message, not even in part.
    def checked_key(name, option, key)
      Host.refuse!(name, "#{option} must be a String#{' or a callable' if option == :access_token}, got #{key.class}") unless
        key.is_a?(String)
      Host.refuse!(name, "#{option} is empty") if key.strip.empty?
      Host.refuse!(name, "#{option} contains a CR, LF or NUL character (a pasted newline?)") if key.match?(/[\r\n\0]/)

      key
    end
  end
end
