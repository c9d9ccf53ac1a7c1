# frozen_string_literal: true

require "json"
require "securerandom"
require "uri"

module LlmFailover
  module Testing
    class FakeProvider
      # Azure OpenAI as the FakeProvider serves it: its paths under `base_url(:azure)`
      # (`/openai/v1/responses`, `/openai/v1/chat/completions`, `/openai/v1/embeddings`, and
      # a deployment's `/openai/deployments/NAME/chat/completions?api-version=V`) and AI
      # Foundry's under `base_url(:azure_foundry)` (`/models/chat/completions?api-version=V`),
      # the key in an `api-key` header or an Entra ID token as `Authorization: Bearer`. A
      # request without either gets Azure's 401, a deployment or Foundry path without an
      # api-version Azure's 404, and neither takes a step.
      module Azure
        UNAUTHORIZED = { "error" => { "code" => "401",
                                      "message" => "Access denied due to invalid subscription key or wrong API " \
                                                   "endpoint. Make sure to provide a valid key for an active " \
                                                   "subscription and use a correct regional API endpoint for your " \
                                                   "resource." } }.freeze
        NOT_FOUND = { "error" => { "code" => "404", "message" => "Resource not found" } }.freeze

        module_function

        # @param path [String] a request's path (a lane's prefix allowed)
        # @return [Symbol, nil] :v1, :deployment or :foundry; nil: not an Azure path
        def layout(path)
          bare = path.split("?", 2).first.sub(%r{\A/providers/[^/]+}, "")
          if bare.start_with?("/openai/v1/") then :v1
          elsif bare.match?(%r{\A/openai/deployments/[^/]+/}) then :deployment
          elsif bare.start_with?("/models/") then :foundry
          end
        end

        # @return [Hash, nil] the step Azure answers +request+ with instead of the script's
        def refusal(request)
          layout = request.azure_layout
          return nil unless layout
          return { status: 401, body: UNAUTHORIZED, headers: { "apim-request-id" => SecureRandom.uuid } } unless
            request.azure_credential
          return { status: 404, body: NOT_FOUND } if layout != :v1 && request.api_version.nil?

          nil
        end
      end

      class Request
        # @return [Symbol, nil] the Azure layout its path is in (see Azure.layout)
        def azure_layout
          Azure.layout(path)
        end

        # @return [Symbol, nil] how it carried its credential to Azure: :api_key (an api-key
        #   header), :bearer (an Entra ID token), nil for none
        def azure_credential
          return :api_key unless headers["api-key"].to_s.strip.empty?

          bearer_token ? :bearer : nil
        end

        # @return [String, nil] the api-version query parameter
        def api_version
          query = path.split("?", 2)[1]
          query && URI.decode_www_form(query).to_h["api-version"]
        rescue ArgumentError
          nil
        end

        # @return [String, nil] a deployment path's deployment name, decoded
        def deployment
          name = path.split("?", 2).first[%r{/openai/deployments/([^/]+)/}, 1]
          name && URI.decode_www_form_component(name)
        end
      end
    end
  end
end
