# frozen_string_literal: true

require "spec_helper"

# c.provider for each api: the defaults a host gets, and every mistake a ConfigurationError
# that names the provider and the option, raised when configuring, before any HTTP.
RSpec.describe "c.provider for each host" do
  def provider(**options)
    LlmFailover.configure { |c| c.provider :p, **options }
    LlmFailover.configuration.provider_config(:p)
  end

  def engine(model = "m", **options)
    provider(**options).engine_target(model)
  end

  describe "defaults" do
    it "puts each api at its own host when no base_url is given" do
      expect(provider(api: :responses, api_key: "k").base_url).to eq("https://api.openai.com/v1")
      expect(provider(api: :gemini, api_key: "k").base_url).to eq("https://generativelanguage.googleapis.com")
      expect(provider(api: :vertex, project: "proj", location: "us-east5", access_token: "t").base_url)
        .to eq("https://us-east5-aiplatform.googleapis.com")
      expect(provider(api: :vertex, project: "proj", location: "global", access_token: "t").base_url)
        .to eq("https://aiplatform.googleapis.com")
      expect(provider(api: :bedrock, region: "eu-west-3").base_url).to eq("https://bedrock-runtime.eu-west-3.amazonaws.com")
    end

    it "describes each target to the engine: protocol, layout, its parts, the credential's form and its origin" do
      azure = "https://res.openai.azure.com"
      expect(engine(api: :azure, base_url: azure, api_key: "k").to_h.values_at(:api, :layout, :bearer, :origin))
        .to eq([:openai, :azure, false, "p"])
      expect(engine(api: :azure, base_url: azure, azure_api: :responses, access_token: -> { "t" })
               .to_h.values_at(:api, :layout, :bearer)).to eq([:responses, :azure, true])
      expect(engine(api: :azure, base_url: azure, api_version: "2024-10-21", api_key: "k")
               .to_h.values_at(:api, :layout, :api_version)).to eq([:openai, :azure_deployment, "2024-10-21"])
      expect(engine(api: :azure, base_url: "#{azure}/models", api_version: "v", api_key: "k").layout).to eq(:azure_foundry)
      vertex = { api: :vertex, project: "proj", location: "us-east5", access_token: "t" }
      expect(engine("gemini-2.5-pro", **vertex).to_h.values_at(:api, :layout, :vertex))
        .to eq([:gemini, :vertex, %w[proj us-east5]])
      expect(engine("claude-sonnet-4-5@20250929", **vertex).api).to eq(:anthropic)
      expect(engine(api: :openai, api_key: "k").to_h.values_at(:layout, :encrypted_reasoning)).to eq([nil, false])
      aws = { access_key_id: "AKID", secret_access_key: "s", session_token: "t" }
      expect(engine(api: :bedrock, region: "us-east-1", credentials: aws).to_h
               .values_at(:api, :region, :api_key, :bearer, :aws_credentials))
        .to eq([:bedrock, "us-east-1", nil, false, %w[AKID s t]])
      expect(engine(api: :bedrock, region: "us-east-1", api_key: "bedrock-api-key").to_h
               .values_at(:api_key, :bearer, :aws_credentials)).to eq(["bedrock-api-key", true, nil])
    end

    it "asks the Responses API for reasoning items of the models encrypted_reasoning names" do
      responses = { api: :responses, api_key: "k", encrypted_reasoning: ["o3", /\Agpt-5/],
                    models: { "thinker" => "o3" } }
      expect(%w[gpt-5 gpt-5-mini o3 thinker gpt-4o].map { |m| engine(m, **responses).encrypted_reasoning })
        .to eq([true, true, true, true, false])
      expect(engine("gpt-4o", api: :responses, api_key: "k", encrypted_reasoning: true).encrypted_reasoning).to be(true)
    end
  end

  describe "mistakes" do
    azure = { api: :azure, base_url: "https://res.openai.azure.com" }
    vertex = { api: :vertex, project: "proj", location: "us-east5" }
    {
      "Azure without a base_url" => [{ api: :azure, api_key: "k" }, /base_url: is missing/],
      "Azure with both credentials" => [azure.merge(api_key: "k", access_token: "t"), /give one of api_key: and access_token:/],
      "Azure without a credential" => [azure, /api_key or access_token is missing/],
      "an unknown azure_api" => [azure.merge(api_key: "k", azure_api: :assistants), /azure_api must be :chat or :responses/],
      "the Responses API on a deployment" => [azure.merge(api_key: "k", azure_api: :responses, api_version: "v"),
                                              /does not serve the Responses API/],
      "AI Foundry without an api_version" => [{ api: :azure, api_key: "k", base_url: "https://x.ai.azure.com/models" },
                                              /api_version: is missing/],
      "a blank api_version" => [azure.merge(api_key: "k", api_version: " "), /api_version must be a String/],
      "azure_api: off Azure" => [{ api: :openai, api_key: "k", azure_api: :chat }, /azure_api: is for api: :azure/],
      "Vertex AI without a project" => [{ api: :vertex, location: "us-east5", access_token: "t" }, /project: is missing/],
      "Vertex AI without a location" => [{ api: :vertex, project: "proj", access_token: "t" }, /location: is missing/],
      "a location that is no host name" => [vertex.merge(location: "us east", access_token: "t"), /location must be/],
      "Vertex AI with an api_key" => [vertex.merge(api_key: "k"), /api_key: is not how api: :vertex is authenticated/],
      "Vertex AI without a credential" => [vertex, /access_token or credentials is missing: .* GOOGLE_APPLICATION_CREDENTIALS/],
      "credentials: on Vertex AI that is no file" => [vertex.merge(credentials: "/nonexistent/sa.json"),
                                                     /the credentials: service account file cannot be read: Errno::ENOENT/],
      "project: off Vertex AI" => [{ api: :gemini, api_key: "k", project: "proj" }, /project: is for api: :vertex/],
      "a token that is neither a String nor a callable" => [vertex.merge(access_token: 42), /access_token must be a String or a callable/],
      "Bedrock without a region" => [{ api: :bedrock }, /region: is missing/],
      "a region that is no host name" => [{ api: :bedrock, region: "us_east_1" }, /region must be an AWS region/],
      "Bedrock with an access_token" => [{ api: :bedrock, region: "us-east-1", access_token: "t" },
                                         /access_token: is not how api: :bedrock is authenticated/],
      "credentials: of another kind" => [{ api: :bedrock, region: "us-east-1", credentials: "AKID:secret" },
                                         /credentials must be a Hash/],
      "region: off Bedrock" => [{ api: :openai, api_key: "k", region: "us-east-1" }, /region: is for api: :bedrock/],
      "encrypted_reasoning off the Responses API" => [{ api: :openai, api_key: "k", encrypted_reasoning: true },
                                                      /encrypted_reasoning: is for the Responses API/],
      "encrypted_reasoning of another kind" => [{ api: :responses, api_key: "k", encrypted_reasoning: "o3" },
                                                /encrypted_reasoning must be true, false or a list/]
    }.each do |what, (options, message)|
      it "refuses #{what}" do
        expect { provider(**options) }.to raise_error(LlmFailover::ConfigurationError, /\Aprovider :p: .*#{message}/)
      end
    end
  end
end
