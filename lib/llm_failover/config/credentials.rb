# frozen_string_literal: true

require_relative "../errors"
require_relative "../safe_inspect"
require_relative "host"

module LlmFailover
  # One provider's credential, as its host takes it, and where it comes from: a key
  # given once (api_key:), or a source asked for a token that expires (access_token:, a
  # callable). Credentials.for picks it from the options the host takes (Host#credentials).
  # #current is what a call sends; its identity changes only when the credential does, so
  # that ProviderConfig rebuilds a target's Engine::Target then, and only then.
  #
  # @api private: ProviderConfig's
  module Credentials
    # A credential every call sends as it is: api_key:.
    class Key
      include SafeInspect

      # @param value [String] checked by Credentials.for
      # @param bearer [Boolean] a token given as it is (access_token: "..."): sent as a bearer
      def initialize(value, bearer: false)
        @value = value.dup.freeze
        @bearer = bearer
        freeze
      end

      # @return [String]
      def current
        @value
      end

      # @return [Boolean] false: sent as the host's key header (a bearer token where the
      #   host takes its key so)
      def bearer?
        @bearer
      end

      def inspect
        "#<#{self.class.name} [REDACTED]>"
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
    # any request, never a failover (a working backup would hide it). googleauth's
    # credentials and an Entra ID client fit it in a line: an adapter is such a callable.
    class TokenSource
      include SafeInspect

      # Seconds before its expiry that a token is asked again: a call may outlast it.
      REFRESH_BEFORE = 60
      # Seconds a token given without an expiry is used.
      UNKNOWN_LIFETIME = 300

      # @param provider [Symbol] the provider's name, for the error
      # @param source [#call]
      # @param option [Symbol] the option that gave it, for the error
      def initialize(provider, source, option:)
        @provider = provider
        @source = source
        @option = option
        @value = nil
        @refresh_at = nil
        @lock = Mutex.new
      end

      # @return [String] a token that has REFRESH_BEFORE seconds left at least
      # @raise [ConfigurationError] the source failed
      def current
        value = @value
        return value if value && now < @refresh_at

        @lock.synchronize do
          refresh unless @value && now < @refresh_at
          @value
        end
      end

      # @return [Boolean] true: sent as Authorization: Bearer
      def bearer?
        true
      end

      def inspect
        "#<#{self.class.name} #{@option}: [REDACTED]>"
      end

      private

      def refresh
        answer = begin
          @source.call
        rescue StandardError => e
          Host.refuse!(@provider, "the #{@option}: source raised #{e.class} (see the cause): no token, no request")
        end
        token, expires_at = read(answer)
        @value = token.dup.freeze
        @refresh_at = now + [expires_at - Time.now - REFRESH_BEFORE, 0].max
      end

      # @return [Array(String, Time)] the token and when it expires
      def read(answer)
        token, expires_at = answer.is_a?(Hash) ? from_hash(answer) : [answer, Time.now + UNKNOWN_LIFETIME]
        unless token.is_a?(String) && !token.strip.empty? && !token.match?(/[\r\n\0]/)
          Host.refuse!(@provider, "the #{@option}: source gave no token (#{shape(answer)}); it must return a " \
                                  "String or { token:, expires_at: } (or expires_in:)")
        end
        [token, expires_at]
      end

      def from_hash(answer)
        h = answer.transform_keys(&:to_sym)
        expires_at = h[:expires_at]
        expires_at = Time.now + h[:expires_in] if expires_at.nil? && h[:expires_in].is_a?(Numeric)
        unless expires_at.is_a?(Time)
          Host.refuse!(@provider, "the #{@option}: source gave no expiry: { token:, expires_at: Time } or " \
                                  "{ token:, expires_in: seconds }")
        end
        [h[:token], expires_at]
      end

      # What the source returned, without its value.
      def shape(answer)
        return "nil" if answer.nil?
        return "a Hash with #{answer.keys.map(&:inspect).join(', ')}" if answer.is_a?(Hash)

        answer.is_a?(String) ? "an empty or broken String" : "a #{answer.class}"
      end

      def now
        Process.clock_gettime(Process::CLOCK_MONOTONIC)
      end
    end

    module_function

    # The credential of a provider from the options the host takes.
    # @param host [Host]
    # @param given [Hash{Symbol => Object}] api_key:, access_token: as configured (nil: not given)
    # @return [Key, TokenSource]
    # @raise [ConfigurationError] none given, two given, one the host does not take, a bad value
    def for(host, given)
      name = host.name
      present = given.reject { |_, v| v.nil? }
      takes = host.credentials
      (present.keys - takes).each do |option|
        Host.refuse!(name, "#{option}: is not how api: #{host.api.inspect} is authenticated (it takes " \
                           "#{takes.map { |t| "#{t}:" }.join(' or ')})")
      end
      Host.refuse!(name, "#{takes.join(' or ')} is missing (nil); is its environment variable set?") if present.empty?
      Host.refuse!(name, "give one of #{present.keys.map { |t| "#{t}:" }.join(' and ')}, not both") if present.size > 1

      option, value = present.first
      return TokenSource.new(name, value, option: option) if option == :access_token && value.respond_to?(:call)

      Key.new(checked_key(name, option, value), bearer: option == :access_token)
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
