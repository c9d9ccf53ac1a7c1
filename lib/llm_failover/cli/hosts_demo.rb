# frozen_string_literal: true

require_relative "demo"

module LlmFailover
  # `llm_failover demo --hosts`: a failover between two hosts that speak different protocols.
  #
  # The primary speaks Bedrock's ConverseStream (AWS's binary event stream), every request
  # signed with SigV4, and its FakeProvider checks each signature as AWS does; it cuts its
  # stream halfway. The backup speaks OpenAI's Responses API and answers. The partial answer
  # is reset, and the table shows each attempt's protocol and cost at the default prices.
  class HostsDemo < Demo
    PROMPT = "Why keep the same model on a second host?"
    PRIMARY = { provider: :bedrock, model: "claude-sonnet-4-5", protocol: "Bedrock Converse" }.freeze
    BACKUP = { provider: :openai, model: "gpt-5", protocol: "OpenAI Responses" }.freeze
    # The host's own id for the logical model name (models:), priced in the default table.
    BEDROCK_ID = "global.anthropic.claude-sonnet-4-5-20250929-v1:0"
    PRIMARY_TEXT = "A host can fail while the model is fine: a region throttles, a quota runs out, " \
                   "an endpoint has a bad hour, and every app on it waits."
    BACKUP_TEXT = "Because hosts fail on their own. When Bedrock cuts a stream, the backup on OpenAI's " \
                  "Responses API answers the same question in its own protocol, and the partial answer " \
                  "is reset, not welded onto the new one."
    # The gem's test credentials, no AWS account's: the FakeProvider checks signatures made with them.
    AWS = Testing::OFFLINE_AWS_CREDENTIALS

    private

    def primary_server
      { aws_credentials: { AWS[:access_key_id] => AWS[:secret_access_key] } }
    end

    def script
      @primary.enqueue({ text: PRIMARY_TEXT, cut_after: CUT_AFTER, chunk_delay: @chunk_delay })
      @backup.default = { text: BACKUP_TEXT, chunk_delay: @chunk_delay, usage: { input: 16, output: 41 } }
    end

    def providers(config)
      config.provider PRIMARY[:provider], api: :bedrock, region: "us-east-1", credentials: AWS,
                                          base_url: @primary.base_url(:bedrock),
                                          models: { PRIMARY[:model] => BEDROCK_ID }
      config.provider BACKUP[:provider], api: :responses, api_key: "demo-key", base_url: @backup.base_url(:responses)
    end

    def title
      "llm_failover demo --hosts: two hosts, two protocols, on loopback (no keys, no network)"
    end

    def provider_rows
      [["primary", label(PRIMARY), "#{PRIMARY[:protocol]}, SigV4-signed", @primary.base_url(:bedrock),
        "checks each signature; cuts its stream after #{CUT_AFTER} words"],
       ["backup", label(BACKUP), BACKUP[:protocol], @backup.base_url(:responses), "healthy"]]
    end

    def table_columns
      { protocols: LlmFailover.configuration.providers.transform_values(&:api), costs: true }
    end

    def for_real
      "For real: each host's c.provider is in doc/providers.md (Bedrock takes region: and your AWS credentials)"
    end
  end
end
