# frozen_string_literal: true

require_relative "../errors"
require_relative "../safe_inspect"
require_relative "host"

module LlmFailover
  module Credentials
    # Bedrock's credentials from aws-sdk-core's provider chain (env variables, web identity,
    # SSO, shared files, credential_process, container and instance roles), when the app
    # has loaded that gem: a source for AwsSource, which asks it once and again shortly
    # before the credentials expire. The chain is resolved when a call first needs
    # credentials, and its provider kept: aws-sdk-core refreshes a provider's temporary
    # credentials itself when asked near their expiry.
    class AwsChain
      include SafeInspect

      NAMED = "aws-sdk-core's credential provider chain"

      # Whether the app loaded aws-sdk-core (the gem never requires it).
      def self.loaded?
        defined?(::Aws::CredentialProviderChain) ? true : false
      end

      # @param name [Symbol] the provider's, for the error
      def initialize(name)
        @name = name
        @provider = nil # asked under AwsSource's lock only
      end

      # @return [Hash] access_key_id:, secret_access_key:, session_token:, expires_at: (for
      #   temporary credentials)
      # @raise [ConfigurationError] the chain found nothing
      def call
        @provider ||= ::Aws::CredentialProviderChain.new.resolve
        unless @provider
          Host.refuse!(@name, "#{NAMED} found no credentials (no AWS_* variables, shared files, SSO, web identity " \
                              "or instance role): give credentials:")
        end

        keys = @provider.credentials
        expires_at = @provider.expiration if @provider.respond_to?(:expiration)
        { access_key_id: keys.access_key_id, secret_access_key: keys.secret_access_key,
          session_token: keys.session_token, expires_at: expires_at }.compact
      end

      def inspect
        "#<#{self.class.name} [REDACTED]>"
      end
    end
  end
end
