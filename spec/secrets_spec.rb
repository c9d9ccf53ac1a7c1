# frozen_string_literal: true

require "spec_helper"
require "tmpdir"
require_relative "support/cloud_credentials"

# API keys never leave: no record, reply, chat, configuration, exception or log line
# shows them, whole or in part.
RSpec.describe "Secrets" do
  include_context "with fake providers"

  let(:secret_fragments) { %w[SECRET123 SECRET456 sk-test sk-ant-S] }
  let(:log) { StringIO.new }
  let(:records) { [] }

  before do
    LlmFailover.configure do |c|
      c.logger = Logger.new(log)
      c.usage_log = [->(r) { records << r }, Logger.new(log)]
    end
  end

  def leaks(text)
    secret_fragments.select { |s| text.to_s.include?(s) }
  end

  it "keeps the keys out of everything a successful failover produces" do
    primary.default = { error: :server }
    chat = failover_chat(max_retries: 1)
    reply = chat.ask("Hi") { |_| nil }

    texts = [reply.inspect, reply.to_s, chat.inspect, chat.to_s, LlmFailover.configuration.inspect,
             chat.config.inspect, log.string, JSON.generate(records.map(&:to_h)), records.map(&:inspect).join,
             reply.attempts.map(&:inspect).join, chat.messages.map(&:inspect).join]
    expect(texts.flat_map { |t| leaks(t) }).to eq([])
    expect(records.size).to eq(3) # the checks above looked at something
    expect(log.string).not_to be_empty
  end

  it "keeps the keys out of errors, even when the provider quotes the key back" do
    primary.enqueue({ status: 401, headers: { "content-type" => "application/json" },
                      body: { error: { message: "Incorrect API key provided: sk-test-SECRET123.",
                                       type: "invalid_request_error", code: "invalid_api_key" } } })
    error = nil
    begin
      failover_chat.ask("Hi")
    rescue LlmFailover::Error => e
      error = e
    end
    expect(error).to be_a(LlmFailover::UnauthorizedError)
    texts = [error.message, error.inspect, error.full_message, error.body.to_s, error.attempts.map(&:to_h).to_s,
             log.string, JSON.generate(records.map(&:to_h))]
    expect(texts.flat_map { |t| leaks(t) }).to eq([])
  end

  it "keeps the keys out of the backup's error after a failover" do
    primary.default = { error: :unavailable }
    backup.default = { error: :unauthorized }
    expect { failover_chat(max_retries: 0).ask("Hi") }.to raise_error(LlmFailover::UnauthorizedError) { |e|
      expect(leaks([e.message, e.inspect, e.full_message, e.cause&.full_message, e.body].join)).to eq([])
    }
    expect(leaks(log.string + JSON.generate(records.map(&:to_h)))).to eq([])
  end

  it "keeps the keys out of the configuration and provider inspections, pp included" do
    LlmFailover.configure do |c|
      c.provider :custom, api: :openai, api_key: "sk-test-SECRET123",
                          headers: { "X-Api-Token" => "tok-SECRET456" }
    end
    out = StringIO.new
    PP.pp(LlmFailover.configuration, out)
    PP.pp(LlmFailover.configuration.providers, out)
    # A Target holds the engine's description of it, key included: shown, it must not be.
    target = LlmFailover.configuration.provider_config(:custom).target("gpt-4o")
    chat = LlmFailover.chat(model: "gpt-4o", provider: :custom)
    PP.pp(target, out)
    PP.pp(chat.send(:engine_targets), out)
    PP.pp(chat, out)
    texts = [out.string, LlmFailover.configuration.providers.inspect, LlmFailover.configuration.providers.to_s,
             target.inspect, target.to_s]
    expect(texts.flat_map { |t| leaks(t) }).to eq([])
  end

  it "keeps a rejected key out of the ConfigurationError" do
    expect { LlmFailover.configure { |c| c.provider :bad, api: :nope, api_key: "sk-test-SECRET123" } }
      .to raise_error(LlmFailover::ConfigurationError) { |e| expect(leaks(e.message)).to eq([]) }
  end

  describe "a key quoted near where a message or body is cut" do
    key = "sk-QvZ9kXwTqJ4mB7nYcL2hR8sD5fG1pW6uE3aK0xV"
    token = "otk-Hq7ZpR3wXk9VmT2bNc6L"
    fragments = [key, token].flat_map { |s| (0..s.length - 4).map { |i| s[i, 4] } }.uniq

    # The key starts `at` bytes into the page, the header value right after it.
    def page(at, key, token)
      "<html><body>#{'.' * (at - 12)}#{key} #{token}#{'.' * 200}</body></html>"
    end

    before do
      LlmFailover.configure do |c|
        c.provider :quoting, api: :openai, api_key: key, base_url: primary.base_url(:openai),
                             headers: { "X-Org-Token" => token }
      end
    end

    def failure(answer, **options)
      primary.enqueue(answer)
      LlmFailover.chat(model: "gpt-4o", provider: :quoting, max_retries: 0, **options).ask("Hi")
      raise "expected a failure"
    rescue LlmFailover::Error => e
      e
    end

    {
      "an HTML 500 page (the message quotes its first 200 bytes)" =>
        [{ status: 500, body: nil, headers: { "content-type" => "text/html" } }, 170],
      "a 200 that is not the protocol (the message quotes 80 bytes)" =>
        [{ status: 200, body: nil, headers: { "content-type" => "text/html" } }, 60],
      "an error body whose message outgrows the 1024-byte message cap" =>
        [{ status: 500, body: :json, headers: { "content-type" => "application/json" } }, 1000],
      "an error page longer than the 64 KiB kept of a body" =>
        [{ status: 500, body: nil, headers: { "content-type" => "text/html" } }, 65_536 - 20]
    }.each do |what, (answer, at)|
      it "leaves no 4-byte fragment of a key or header value in #{what}" do
        body = if answer[:body] == :json
                 { error: { message: "#{'.' * at}#{key} #{'.' * 990}#{token}", type: "server_error" } }
               else
                 page(at, key, token)
               end
        error = failure(answer.merge(body: body))
        texts = [error.message, error.body.to_s, error.inspect, error.full_message,
                 error.attempts.map(&:to_h).to_s, log.string, JSON.generate(records.map(&:to_h))]
        leaked = fragments.select { |f| texts.any? { |t| t.include?(f) } }
        expect(leaked).to eq([])
        expect(error.message).to include("[REDACTED]") unless at > 60_000
        expect(records.size).to eq(1)
      end
    end

    # libcurl hands the body over in pieces and a piece that would pass
    # max_response_bytes is dropped, so the kept body ends wherever a piece did: a page
    # of keys ends, most of the time, inside one.
    it "leaves no 4-byte fragment of a key at the end of a body cut at max_response_bytes" do
      leaked = 5.times.flat_map do
        error = failure({ status: 500, body: ".#{key}" * 4000, headers: { "content-type" => "text/html" } },
                        max_response_bytes: 50_000)
        texts = [error.message, error.body.to_s, error.attempts.map(&:to_h).to_s]
        fragments.select { |f| texts.any? { |t| t.include?(f) } }
      end
      expect(leaked).to eq([])
      expect(log.string).to include("response exceeded")
    end
  end

  # Each host's credential (a key, an Entra ID or OAuth token) and the reasoning state its
  # answers carry (the Responses API's encrypted items, Gemini's signatures) stay out of
  # everything a failover, a tool loop and a rejected credential produce.
  describe "on every host" do
    let(:fp) { start_fake_provider(strict_transcript: true) }
    token = "ya29.SECRET789-token"
    # name => the provider's options, the fake's api, a model, its credential
    hosts = {
      "the Responses API" => [{ api: :responses, api_key: "sk-test-SECRET123", encrypted_reasoning: true }, :responses,
                              "gpt-5", "sk-test-SECRET123"],
      "Azure with a key" => [{ api: :azure, azure_api: :responses, api_key: "az-SECRET456-key" }, :azure, "gpt-4o",
                             "az-SECRET456-key"],
      "Azure with an Entra ID token" => [{ api: :azure, azure_api: :responses, encrypted_reasoning: true,
                                           access_token: -> { { token: token, expires_in: 3600 } } },
                                         :azure, "gpt-5", token],
      "Gemini" => [{ api: :gemini, api_key: "AIza-SECRET123-key" }, :gemini, "gemini-2.5-flash", "AIza-SECRET123-key"],
      "Vertex AI" => [{ api: :vertex, project: "secrets", location: "us-east5", access_token: -> { token } }, :vertex,
                      "gemini-2.5-pro", token],
      "Bedrock, signed" => [{ api: :bedrock, region: "us-east-1",
                              credentials: { access_key_id: "AKIDSECRET123", secret_access_key: "aws/SECRET456+key",
                                             session_token: "FwoG-SECRET789-session" } }, :bedrock,
                            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
                            "AKIDSECRET123 aws/SECRET456+key FwoG-SECRET789-session"]
    }

    class SecretsSpecClock < LlmFailover::Tool
      tool_name "clock"
      description "The time"
      def execute = "noon"
    end

    hosts.each do |name, (options, fake_api, model, credential)|
      context "with #{name}" do
        let(:secret_fragments) { %w[SECRET123 SECRET456 SECRET789] }

        before do
          LlmFailover.configure do |c|
            c.provider :host, **options, base_url: fp.on(:host).base_url(fake_api)
            c.provider :backup, api: :anthropic, api_key: "sk-ant-SECRET456", base_url: fp.on(:backup).base_url(:anthropic)
          end
        end

        def host_chat(model)
          LlmFailover.chat(model: model, provider: :host, backup_model: "claude-sonnet-4-6", backup_provider: :backup,
                           max_retries: 0)
        end

        it "keeps its credential and its reasoning state out of a tool loop that failed over" do
          fp.on(:host).enqueue({ thinking: "Check the clock.", tool_calls: [{ name: "clock" }] }, { error: :server })
          chat = host_chat(model).with_tool(SecretsSpecClock)
          reply = chat.ask("Time?") { |_| nil }
          state = chat.messages.flat_map { |m| [m.reasoning, *m.tool_calls.map(&:signature)] }.compact
          # the answer carried some (Converse keeps none): the checks below look for it
          expect(state).not_to be_empty unless fake_api == :bedrock
          texts = [reply.inspect, chat.inspect, LlmFailover.configuration.inspect, log.string,
                   JSON.generate(records.map(&:to_h)), records.map(&:inspect).join, chat.messages.map(&:inspect).join,
                   chat.messages.flat_map(&:tool_calls).map(&:inspect).join, reply.tool_calls.map(&:inspect).join]
          expect(texts.flat_map { |t| leaks(t) }).to eq([])
          expect(texts.select { |t| state.any? { |piece| t.include?(piece) } }).to eq([])
        end

        it "keeps its credential out of the error when the host quotes it back" do
          fp.on(:host).enqueue({ status: 401, headers: { "content-type" => "application/json" },
                                 body: { error: { message: "Bad credential: #{credential}", code: 401 } } })
          error = nil
          begin
            host_chat(model).ask("Hi")
          rescue LlmFailover::Error => e
            error = e
          end
          expect(error).to be_a(LlmFailover::UnauthorizedError)
          expect(error.body).to include("Bad credential: [REDACTED]") # quoted, and redacted
          texts = [error.message, error.inspect, error.full_message, error.body.to_s, error.attempts.map(&:to_h).to_s,
                   log.string, JSON.generate(records.map(&:to_h))]
          expect(texts.flat_map { |t| leaks(t) }).to eq([])
        end
      end
    end
  end

  # The ambient sources (the gem's own service account signer, aws-sdk-core's chain,
  # googleauth's application default credentials): no token, private key, signed JWT or
  # AWS secret in what a call, a failure or an inspection shows.
  describe "the cloud credential sources" do
    let(:dir) { Dir.mktmpdir("secrets") }
    let(:key) { CloudCredentials.rsa }
    # Pieces of the private key's PEM body (never the armour lines).
    let(:key_pieces) { key.to_pem.lines[1..-2].map(&:chomp).values_at(0, 10, -1) }
    after { FileUtils.rm_rf(dir) }

    def shown(*more)
      out = StringIO.new
      PP.pp(LlmFailover.configuration, out)
      [out.string, LlmFailover.configuration.inspect, LlmFailover.configuration.providers.inspect, log.string,
       JSON.generate(records.map(&:to_h)), records.map(&:inspect).join, *more]
    end

    def found(texts, secrets)
      secrets.select { |secret| texts.any? { |t| t.to_s.include?(secret) } }
    end

    describe "a service account file, signed by the gem" do
      let(:fp) { start_fake_provider(check_tokens: true, service_accounts: { CloudCredentials::EMAIL => key.public_key }) }

      def vertex(path)
        LlmFailover.configure do |c|
          c.provider :vertex, api: :vertex, project: "secrets", location: "us-east5", credentials: path,
                              base_url: fp.on(:vertex).base_url(:vertex)
          c.provider :backup, api: :anthropic, api_key: "sk-ant-SECRET456", base_url: fp.on(:backup).base_url(:anthropic)
        end
      end

      it "keeps the token, the key and the signed JWT out of a failover and a quoted-back 401" do
        token = "ya29.fake--#{Time.now.to_i + 3600}-5ec2e7789abcdef012345678" # one check_tokens takes
        fp.enqueue_tokens({ access_token: token })
        vertex(CloudCredentials.service_account_file(fp, dir: dir))
        fp.on(:vertex).enqueue({ error: :server },
                               { status: 401, headers: { "content-type" => "application/json" },
                                 body: { error: { message: "Bad credential: #{token}", code: 401 } } })
        chat = LlmFailover.chat(model: "gemini-2.5-pro", provider: :vertex, backup_model: "claude-sonnet-4-6",
                                backup_provider: :backup, max_retries: 0)
        reply = chat.ask("Hi")
        error = begin
          chat.ask("Again")
        rescue LlmFailover::Error => e
          e
        end
        expect([reply.provider, error.class]).to eq([:backup, LlmFailover::UnauthorizedError])
        assertion = URI.decode_www_form(fp.token_requests.first.body).to_h.fetch("assertion")
        secrets = [token, assertion, assertion.split(".").last, *key_pieces]
        texts = shown(reply.inspect, chat.inspect, chat.messages.map(&:inspect).join, error.message, error.inspect,
                      error.full_message, error.body.to_s, LlmFailover.configuration.providers[:vertex].credential.inspect)
        expect(found(texts, secrets)).to eq([])
        expect(fp.on(:vertex).requests.map(&:bearer_token).uniq).to eq([token]) # what was checked was sent
      end

      it "keeps the signed JWT and the key out of the endpoint's refusal" do
        vertex(CloudCredentials.service_account_file(fp, dir: dir, key: CloudCredentials.rsa(:stranger)))
        error = begin
          LlmFailover.chat(model: "gemini-2.5-pro", provider: :vertex).ask("Hi")
        rescue LlmFailover::ConfigurationError => e
          e
        end
        expect(error.message).to include("Invalid JWT Signature")
        assertion = URI.decode_www_form(fp.token_requests.first.body).to_h.fetch("assertion")
        stranger = CloudCredentials.rsa(:stranger).to_pem.lines[1..-2].map(&:chomp).values_at(0, -1)
        expect(found(shown(error.message, error.full_message, error.inspect), [assertion, assertion.split(".").last, *stranger]))
          .to eq([])
      end

      it "keeps the key out of the error about a file that is no JSON, causes included" do
        path = File.join(dir, "sa.json")
        File.write(path, "{ \"private_key\": #{key.to_pem.inspect}, oops }")
        error = begin
          vertex(path)
        rescue LlmFailover::ConfigurationError => e
          e
        end
        expect(error.message).to end_with("is not JSON")
        causes = []
        cause = error
        causes << cause.message while (cause = cause.cause)
        expect(found([error.message, error.full_message, *causes], key_pieces)).to eq([])
      end
    end

    it "keeps aws-sdk-core's credentials out of what the provider shows, and out of a refusal" do
      fp = start_fake_provider(aws_credentials: { "AKIDSHAREDSECRET1" => "shared/SECRET456-right" })
      File.write(File.join(dir, "credentials"),
                 "[default]\naws_access_key_id = AKIDSHAREDSECRET1\naws_secret_access_key = shared/SECRET456-wrong\n" \
                 "aws_session_token = FwoG-SECRET789-session\n")
      lines, out = CloudCredentials.run_apart(
        dir: dir, require: ["aws-sdk-core"], model: "amazon.nova-lite-v1:0",
        provider: { "api" => "bedrock", "region" => "eu-central-1", "base_url" => fp.base_url(:bedrock) },
        env: { "AWS_SHARED_CREDENTIALS_FILE" => File.join(dir, "credentials") }
      )
      expect(lines.first).to include("error" => "LlmFailover::UnauthorizedError") # signed, with the wrong secret
      signature = fp.requests.first.headers["authorization"][/Signature=(\h+)/, 1]
      expect(found([out], ["SECRET456", "SECRET789", signature])).to eq([])
    end

    it "keeps googleauth's token out of what the provider shows, and out of a quoted-back 401" do
      token = "ya29.SECRET789-from-googleauth"
      fp = start_fake_provider
      fp.enqueue_tokens({ access_token: token })
      fp.enqueue({ status: 401, headers: { "content-type" => "application/json" },
                   body: { error: { message: "Bad credential: #{token}", code: 401 } } })
      File.write(File.join(dir, "subject"), "SECRET123-subject-token")
      File.write(File.join(dir, "external.json"), JSON.generate(
                                                    "type" => "external_account", "audience" => "//iam.googleapis.com/x",
                                                    "subject_token_type" => "urn:ietf:params:oauth:token-type:jwt",
                                                    "token_url" => fp.token_url,
                                                    "credential_source" => { "file" => File.join(dir, "subject") }
                                                  ))
      lines, out = CloudCredentials.run_apart(
        dir: dir, require: ["googleauth"], model: "gemini-2.5-pro",
        provider: { "api" => "vertex", "project" => "secrets", "location" => "us-east5", "base_url" => fp.base_url(:vertex) },
        env: { "GOOGLE_APPLICATION_CREDENTIALS" => File.join(dir, "external.json") }
      )
      expect(lines.first).to include("error" => "LlmFailover::UnauthorizedError")
      expect(fp.requests.reject(&:token?).map(&:bearer_token)).to eq([token]) # it was sent, where it belongs
      expect(found([out], %w[SECRET789 SECRET123])).to eq([])
    end
  end

  it "still sends the key to the provider, where it belongs" do
    failover_chat.ask("Hi")
    expect(primary.requests.last.headers["authorization"]).to eq("Bearer sk-test-SECRET123")
  end
end
