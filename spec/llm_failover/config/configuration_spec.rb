# frozen_string_literal: true

require "spec_helper"

RSpec.describe LlmFailover::Configuration, :ruby_only do
  def configure(&block)
    LlmFailover.configure(&block)
  end

  def valid_provider(c, **overrides)
    c.provider(:openai, api: :openai, api_key: "sk-test-SECRET123", **overrides)
  end

  describe "defaults" do
    it "has DESIGN.md's defaults" do
      c = LlmFailover.configuration
      expect([c.max_retries, c.retry_interval, c.retry_backoff_factor, c.retry_max_interval,
              c.retry_interval_randomness]).to eq([3, 0.1, 2, 30, 0.5])
      expect([c.connect_timeout, c.first_token_timeout, c.idle_timeout, c.request_timeout]).to eq([5, 30, 30, 300])
      expect(c.failover_on_context_length).to be(false)
      expect(c.max_response_bytes).to eq(32 * 1024 * 1024)
      expect([c.usage_log, c.on_chain_exhausted, c.alert_window, c.logger]).to eq([nil, nil, 900, nil])
    end

    it "defaults base_url per api" do
      configure do |c|
        c.provider :o, api: :openai, api_key: "k1"
        c.provider :a, api: "anthropic", api_key: "k2"
      end
      providers = LlmFailover.configuration.providers
      expect(providers[:o].base_url).to eq("https://api.openai.com/v1")
      expect(providers[:a].base_url).to eq("https://api.anthropic.com")
      expect(providers[:a].api).to eq(:anthropic)
    end

    it "keeps a custom base_url without its trailing slash" do
      configure { |c| c.provider :groq, api: :openai, api_key: "k", base_url: "https://api.groq.com/openai/v1/" }
      expect(LlmFailover.configuration.providers[:groq].base_url).to eq("https://api.groq.com/openai/v1")
    end

    it "forgets everything on reset_configuration!" do
      configure do |c|
        valid_provider(c)
        c.max_retries = 0
      end
      LlmFailover.reset_configuration!
      expect(LlmFailover.configuration.providers).to be_empty
      expect(LlmFailover.configuration.max_retries).to eq(3)
    end
  end

  describe "provider validation" do
    {
      "an unknown api" => [{ api: :cohere }, /unknown api :cohere/],
      "a nil key" => [{ api_key: nil }, /api_key is missing/],
      "an empty key" => [{ api_key: "  " }, /api_key is empty/],
      "a non-String key" => [{ api_key: 123 }, /api_key must be a String/],
      "a LF in the key" => [{ api_key: "sk-abc\n" }, /api_key contains a CR, LF/],
      "a CR in the key" => [{ api_key: "sk-a\rbc" }, /api_key contains a CR, LF/],
      "a CR in a header name" => [{ headers: { "X-A\r" => "v" } }, /not a valid HTTP header name/],
      "a LF in a header value" => [{ headers: { "X-A" => "v\nX-B: evil" } }, /header X-A value contains a CR, LF/],
      "a non-String header value" => [{ headers: { "X-A" => 1 } }, /header X-A must have a String value/],
      "an ftp base_url" => [{ base_url: "ftp://example.com" }, %r{http:// or https:// URL}],
      "a base_url without a host" => [{ base_url: "https://" }, %r{http:// or https:// URL}],
      "a relative base_url" => [{ base_url: "/v1" }, %r{http:// or https:// URL}]
    }.each do |what, (overrides, message)|
      it "rejects #{what} with a clear ConfigurationError" do
        args = { api: :openai, api_key: "sk-test-SECRET123" }.merge(overrides)
        expect { configure { |c| c.provider(:openai, **args) } }
          .to raise_error(LlmFailover::ConfigurationError, message)
      end
    end

    # Issue 15, probe 4: a base_url may carry a password (userinfo) or a key (query).
    {
      "credentials" => "https://bob:hunter2-SECRET@api.example.com/v1",
      "a key in the query" => "https://api.example.com/v1?api_key=sk-SECRET&org=x",
      "a non-http URL with credentials" => "ftp://bob:hunter2-SECRET@example.com",
      "an unparseable URL with credentials" => "https://bob:p@ss-SECRET@api.example.com/v1",
      "a bad scheme and a key in the query" => "htps://api.example.com/?key=sk-SECRET",
      "credentials without a scheme" => "bob:hunter2-SECRET@api.example.com",
      "a key in the fragment" => "https://api.example.com/v1#sk-SECRET"
    }.each do |what, url|
      it "rejects a base_url with #{what} without quoting it" do
        expect { configure { |c| c.provider(:openai, api: :openai, api_key: "k", base_url: url) } }
          .to raise_error(LlmFailover::ConfigurationError) { |e|
            expect(e.message).not_to include("SECRET")
            expect(e.message).to include("[REDACTED]")
          }
      end
    end

    ["", " ", "#", "?"].each do |url|
      it "rejects base_url: #{url.inspect} with a ConfigurationError naming base_url" do
        expect { configure { |c| c.provider(:openai, api: :openai, api_key: "k", base_url: url) } }
          .to raise_error(LlmFailover::ConfigurationError, /provider :openai: base_url must be an http/)
      end
    end

    it "shows the rest of a rejected base_url" do
      expect { configure { |c| c.provider(:openai, api: :openai, api_key: "k", base_url: "https://u:pw@api.example.com/v1?a=1") } }
        .to raise_error(LlmFailover::ConfigurationError, %r{"https://\[REDACTED\]@api\.example\.com/v1\?a=\[REDACTED\]"})
    end

    it "never puts the rejected key in the message" do
      expect { configure { |c| c.provider(:openai, api: :openai, api_key: "sk-test-SECRET123\n") } }
        .to raise_error(LlmFailover::ConfigurationError) { |e| expect(e.message).not_to include("SECRET123") }
    end
  end

  describe "option validation" do
    {
      max_retries: [-1, 1.5, "3", nil],
      retry_interval: [-0.1, "0.1", nil, Float::NAN, Float::INFINITY],
      retry_backoff_factor: [-2, 0.5, "2"],
      retry_max_interval: [-1, :thirty],
      retry_interval_randomness: [-0.1, 1.5, "0.5"],
      connect_timeout: [-5, 0, "5"],
      first_token_timeout: [0, -1, []],
      idle_timeout: [0, "30"],
      request_timeout: [-300, nil],
      failover_on_context_length: [nil, "yes", 1],
      max_response_bytes: [0, -1, 1.5],
      alert_window: [-1, "900"],
      usage_log: [Object.new, [->(r) { r }, 42]],
      on_chain_exhausted: [Object.new, "alert"],
      logger: [Object.new]
    }.each do |option, bad_values|
      bad_values.each do |bad|
        it "rejects #{option} = #{bad.inspect}" do
          expect { configure { |c| c.public_send(:"#{option}=", bad) } }
            .to raise_error(LlmFailover::ConfigurationError, /#{option}|usage_log sink/)
        end
      end
    end

    it "explains the randomness range" do
      expect { configure { |c| c.retry_interval_randomness = 2 } }
        .to raise_error(LlmFailover::ConfigurationError, /within 0..1/)
    end

    it "accepts sensible values" do
      logger = Logger.new(StringIO.new)
      configure do |c|
        c.max_retries = 0
        c.retry_interval = 0
        c.retry_interval_randomness = 1
        c.retry_backoff_factor = 1.5
        c.request_timeout = 0.5
        c.usage_log = [->(r) { r }, logger]
        c.on_chain_exhausted = ->(a) { a }
        c.logger = logger
      end
      expect(LlmFailover.configuration.usage_log.size).to eq(2)
    end
  end

  describe "LlmFailover.chat" do
    before do
      configure do |c|
        valid_provider(c)
        c.provider :anthropic, api: :anthropic, api_key: "sk-ant-SECRET456"
      end
    end

    it "names the configured providers when the provider is unknown" do
      expect { LlmFailover.chat(model: "gpt-4o", provider: :mistral) }
        .to raise_error(LlmFailover::ConfigurationError, /unknown provider :mistral.*:openai, :anthropic/)
    end

    it "rejects an unknown backup provider" do
      expect { LlmFailover.chat(model: "m", provider: :openai, backup_model: "b", backup_provider: :nope) }
        .to raise_error(LlmFailover::ConfigurationError, /unknown provider :nope/)
    end

    it "requires a provider" do
      expect { LlmFailover.chat(model: "gpt-4o") }.to raise_error(LlmFailover::ConfigurationError, /provider/)
    end

    it "raises ModelNotFoundError for an empty model" do
      expect { LlmFailover.chat(model: "", provider: :openai) }.to raise_error(LlmFailover::ModelNotFoundError)
      expect { LlmFailover.chat(model: nil, provider: :openai) }.to raise_error(LlmFailover::ModelNotFoundError)
      expect { LlmFailover.chat(model: "m", provider: :openai, backup_model: " ", backup_provider: :anthropic) }
        .to raise_error(LlmFailover::ModelNotFoundError, /backup_model/)
    end

    it "overrides any option for one chat only" do
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, max_retries: 0, idle_timeout: 2,
                              failover_on_context_length: true)
      expect(chat.config.max_retries).to eq(0)
      expect(chat.config.idle_timeout).to eq(2)
      expect(chat.config.failover_on_context_length).to be(true)
      expect(LlmFailover.configuration.max_retries).to eq(3)
      expect(LlmFailover.configuration.failover_on_context_length).to be(false)
    end

    it "validates overrides like the global setters" do
      expect { LlmFailover.chat(model: "gpt-4o", provider: :openai, max_retries: -1) }
        .to raise_error(LlmFailover::ConfigurationError, /max_retries/)
    end

    it "names unknown keywords" do
      expect { LlmFailover.chat(model: "gpt-4o", provider: :openai, max_retry: 1, colour: :red) }
        .to raise_error(LlmFailover::ConfigurationError, /unknown options :max_retry, :colour/)
    end

    it "rejects a bad quota, quota_used and enforce_quota" do
      base = { model: "m", provider: :openai }
      expect { LlmFailover.chat(**base, quota: -1) }.to raise_error(LlmFailover::ConfigurationError, /quota/)
      expect { LlmFailover.chat(**base, quota: "10") }.to raise_error(LlmFailover::ConfigurationError, /quota/)
      expect { LlmFailover.chat(**base, quota_used: "x") }.to raise_error(LlmFailover::ConfigurationError, /quota_used/)
      expect { LlmFailover.chat(**base, enforce_quota: 1) }.to raise_error(LlmFailover::ConfigurationError, /enforce_quota/)
    end

    it "rejects a store that lacks the interface" do
      expect { LlmFailover.chat(model: "m", provider: :openai, store: Object.new) }
        .to raise_error(LlmFailover::ConfigurationError, /store Object lacks #messages/)
    end
  end

  describe "#inspect" do
    it "shows the providers and options, never a key or a header value" do
      configure do |c|
        c.provider :openai, api: :openai, api_key: "sk-test-SECRET123",
                            headers: { "Authorization-Extra" => "Bearer tok-SECRET789" }
        c.max_retries = 1
      end
      text = LlmFailover.configuration.inspect
      expect(text).to include("openai", "max_retries=1", "[REDACTED]")
      expect(text).not_to include("SECRET")
      expect(text).not_to match(/sk-.{3}/)
      provider = LlmFailover.configuration.providers[:openai]
      expect([provider.inspect, provider.to_s, LlmFailover.configuration.to_s].join).not_to include("SECRET")
    end
  end
end
