# frozen_string_literal: true

require_relative "../safe_inspect"

module LlmFailover
  module Credentials
    # Vertex AI's token from googleauth's application default credentials (the service
    # account or external account file GOOGLE_APPLICATION_CREDENTIALS names, gcloud's user
    # credentials, the metadata server), when the app has loaded that gem: a source for
    # TokenSource, which asks it once and again shortly before the token expires. Found
    # when a call first needs a token, and kept.
    class GoogleDefault
      include SafeInspect

      NAMED = "googleauth's application default credentials"
      SCOPE = "https://www.googleapis.com/auth/cloud-platform"

      # Whether the app loaded googleauth (the gem never requires it).
      def self.loaded?
        defined?(::Google::Auth) && ::Google::Auth.respond_to?(:get_application_default) ? true : false
      end

      def initialize
        @credentials = nil # asked under TokenSource's lock only
      end

      # @return [Hash, String] { token:, expires_at: }, or the token alone when googleauth
      #   says no expiry
      def call
        @credentials ||= ::Google::Auth.get_application_default([SCOPE])
        @credentials.fetch_access_token!
        token = @credentials.access_token
        expires_at = @credentials.expires_at
        expires_at.is_a?(Time) ? { token: token, expires_at: expires_at } : token
      end

      def inspect
        "#<#{self.class.name} [REDACTED]>"
      end
    end
  end
end
