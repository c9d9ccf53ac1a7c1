# frozen_string_literal: true

require "spec_helper"
require "tmpdir"
require_relative "support/cloud_credentials"

# The credentials users already hold for Bedrock and Vertex AI, taken without being
# given: aws-sdk-core's provider chain and googleauth's application default credentials
# when the app loaded those gems (run in a process of their own, with the real gems, so
# that this one keeps neither loaded), else the AWS_* variables and a service account key
# file the gem signs for itself. Every exchange is real, on loopback: the FakeProvider
# checks SigV4 signatures, the service account's signed JWT, and that Vertex AI is sent
# the token it issued.
RSpec.describe "Cloud credentials" do
  let(:dir) { Dir.mktmpdir("cloud_credentials") }
  let(:email) { CloudCredentials::EMAIL }
  after { FileUtils.rm_rf(dir) }

  def rsa(name = :sa) = CloudCredentials.rsa(name)

  def service_account_file(fp, **options)
    CloudCredentials.service_account_file(fp, dir: dir, **options)
  end

  def run_apart(**plan)
    CloudCredentials.run_apart(dir: dir, **plan).first
  end

  describe "Vertex AI's service account file, signed by the gem" do
    let(:fp) { start_fake_provider(check_tokens: true, service_accounts: { email => rsa.public_key }) }

    around do |example|
      saved = ENV.fetch("GOOGLE_APPLICATION_CREDENTIALS", nil)
      example.run
    ensure
      saved ? ENV["GOOGLE_APPLICATION_CREDENTIALS"] = saved : ENV.delete("GOOGLE_APPLICATION_CREDENTIALS")
    end

    def vertex(backup: false, **credential)
      LlmFailover.configure do |c|
        c.provider :vertex, api: :vertex, project: "spec-project", location: "us-east5",
                            base_url: fp.on(:vertex).base_url(:vertex), **credential
        c.provider :backup, api: :anthropic, api_key: "sk-ant-backup-key", base_url: fp.on(:backup).base_url(:anthropic) if backup
        c.max_retries = 0
        fast_policy(c)
      end
    end

    it "exchanges a JWT signed with the file's key at its token_uri once, and sends the token it got" do
      vertex(credentials: service_account_file(fp))
      chat = LlmFailover.chat(model: "gemini-2.5-pro", provider: :vertex)
      2.times { chat.ask("Hi") }
      LlmFailover.chat(model: "claude-sonnet-4-5@20250929", provider: :vertex).ask("Hi")
      expect(fp.token_requests.size).to eq(1)
      form = URI.decode_www_form(fp.token_requests.first.body).to_h
      expect(form["grant_type"]).to eq("urn:ietf:params:oauth:grant-type:jwt-bearer")
      expect(fp.on(:vertex).requests.map(&:bearer_token).uniq.size).to eq(1) # check_tokens: the one it issued
      expect(fp.on(:vertex).request_count).to eq(3)
    end

    it "takes the file GOOGLE_APPLICATION_CREDENTIALS names when given no credential" do
      ENV["GOOGLE_APPLICATION_CREDENTIALS"] = service_account_file(fp)
      vertex
      expect(LlmFailover.chat(model: "gemini-2.5-pro", provider: :vertex).ask("Hi").provider).to eq(:vertex)
      expect(fp.token_requests.size).to eq(1)
    end

    it "exchanges again, once, when the token it holds has less than a minute left" do
      fp.enqueue_tokens({ expires_in: 30 }, { expires_in: 30 })
      vertex(credentials: service_account_file(fp))
      chat = LlmFailover.chat(model: "gemini-2.5-pro", provider: :vertex)
      2.times { chat.ask("Hi") }
      # The chat's own target took the first; each call then finds it about to expire.
      expect(fp.token_requests.size).to eq(3)
      expect(fp.on(:vertex).requests.map(&:bearer_token).uniq.size).to eq(2)
    end

    it "exchanges once when many threads need a token while the exchange is under way" do
      fp.enqueue_tokens({ delay_headers: 0.3 }) # long enough for every thread to find no token
      vertex(credentials: service_account_file(fp))
      threads = Array.new(4) { Thread.new { LlmFailover.chat(model: "gemini-2.5-pro", provider: :vertex).ask("Hi").provider } }
      expect(threads.map(&:value)).to eq([:vertex] * 4)
      expect(fp.token_requests.size).to eq(1)
    end

    it "prefers a credential given over the file GOOGLE_APPLICATION_CREDENTIALS names" do
      ENV["GOOGLE_APPLICATION_CREDENTIALS"] = service_account_file(fp)
      vertex(access_token: -> { { token: LlmFailover::Testing::FakeProvider::TokenAnswer.issue, expires_in: 3000 } })
      LlmFailover.chat(model: "gemini-2.5-pro", provider: :vertex).ask("Hi")
      expect(fp.token_requests).to eq([])
    end

    it "raises the token endpoint's refusal of a signature another key made, before any request, never failing over" do
      vertex(credentials: service_account_file(fp, key: rsa(:stranger)), backup: true)
      expect do
        LlmFailover.chat(model: "gemini-2.5-pro", provider: :vertex, backup_model: "claude-sonnet-4-6",
                         backup_provider: :backup).ask("Hi")
      end.to raise_error(LlmFailover::ConfigurationError,
                                               /\Aprovider :vertex: the credentials: service account file: its token_uri answered 400 invalid_grant: Invalid JWT Signature\./)
      expect([fp.token_requests.size, fp.on(:vertex).request_count, fp.on(:backup).request_count]).to eq([1, 0, 0])
    end

    it "raises an unreachable token endpoint as the configuration's error, with its cause" do
      closed = TCPServer.new("127.0.0.1", 0)
      port = closed.addr[1]
      closed.close
      path = service_account_file(fp)
      File.write(path, File.read(path).sub(fp.token_url, "http://127.0.0.1:#{port}/token"))
      vertex(credentials: path)
      expect { LlmFailover.chat(model: "gemini-2.5-pro", provider: :vertex).ask("Hi") }
        .to raise_error(LlmFailover::ConfigurationError, /the credentials: service account file raised Errno::ECONNREFUSED/) { |e|
          expect(e.cause).to be_a(Errno::ECONNREFUSED)
        }
    end

    {
      "a file that is not there" => [->(_fp, d) { File.join(d, "missing.json") }, /cannot be read: Errno::ENOENT/],
      "a file that is not JSON" => [->(_fp, d) { File.join(d, "sa.json").tap { |p| File.write(p, "{ not json") } }, /is not JSON/],
      "another kind of credential" => [->(fp, _d) { service_account_file(fp, type: "authorized_user") },
                                       /is not a service account key \(type "authorized_user"\); for other application default credentials, load googleauth/],
      "a token_uri in clear text off loopback" => [lambda { |fp, _d|
        service_account_file(fp).tap { |p| File.write(p, File.read(p).sub(fp.token_url, "http://oauth2.example.com/token")) }
      }, /has no https token_uri/],
      "a key that is no RSA private key" => [lambda { |fp, _d|
        service_account_file(fp).tap { |p| File.write(p, JSON.generate(JSON.parse(File.read(p)).merge("private_key" => rsa.public_key.to_pem))) }
      }, /has no RSA private key/]
    }.each do |what, (file, message)|
      it "refuses #{what} when configuring" do
        expect { vertex(credentials: instance_exec(fp, dir, &file)) }
          .to raise_error(LlmFailover::ConfigurationError, /\Aprovider :vertex: the credentials: service account file #{message}/)
      end
    end
  end

  describe "with aws-sdk-core loaded: its provider chain" do
    let(:fp) do
      start_fake_provider(aws_credentials: { "AKIDSHAREDFILE1" => "shared/SECRET-1",
                                             "AKIDGIVEN000001" => "given/SECRET-1",
                                             **(1..4).to_h { |i| ["AKIDPROCESS0000#{i}", { secret_access_key: "process/SECRET-#{i}", session_token: "process-SESSION-#{i}" }] } })
    end

    def bedrock(**credential)
      { "api" => "bedrock", "region" => "eu-central-1", "base_url" => fp.base_url(:bedrock), **credential }
    end

    def signed_by
      fp.requests.map { |r| r.headers["authorization"][%r{Credential=([^/]+)/}, 1] }
    end

    def shared_credentials
      File.join(dir, "credentials").tap do |path|
        File.write(path, "[default]\naws_access_key_id = AKIDSHAREDFILE1\naws_secret_access_key = shared/SECRET-1\n")
      end
    end

    # A profile whose credentials come from credential_process: a script that hands out
    # AKIDPROCESS00001, ...02, ... (one per run), each expiring +lifetime+ seconds later.
    def process_profile(lifetime)
      counter = File.join(dir, "runs")
      script = File.join(dir, "credential_process.rb")
      File.write(script, <<~RUBY)
        require "json"
        require "time"
        n = File.exist?(#{counter.inspect}) ? File.read(#{counter.inspect}).to_i + 1 : 1
        File.write(#{counter.inspect}, n.to_s)
        puts JSON.generate(Version: 1, AccessKeyId: "AKIDPROCESS0000\#{n}", SecretAccessKey: "process/SECRET-\#{n}",
                           SessionToken: "process-SESSION-\#{n}", Expiration: (Time.now + #{lifetime}).utc.iso8601)
      RUBY
      config = File.join(dir, "config")
      File.write(config, "[default]\ncredential_process = #{RbConfig.ruby} #{script}\n")
      [config, counter]
    end

    it "signs with the shared credentials file it finds" do
      lines = run_apart(require: ["aws-sdk-core"], provider: bedrock, model: "amazon.nova-lite-v1:0", calls: 2,
                        env: { "AWS_SHARED_CREDENTIALS_FILE" => shared_credentials })
      expect(lines.first(2)).to all(include("provider" => "cloud"))
      expect(signed_by).to eq(%w[AKIDSHAREDFILE1] * 2)
      expect(lines.last["loaded"]).to eq(["aws-sdk-core"])
    end

    it "signs with a provider's temporary credentials, session token and all, asking it no more for more calls" do
      config, runs = process_profile(3600)
      plan = { require: ["aws-sdk-core"], provider: bedrock, model: "amazon.nova-lite-v1:0",
               env: { "AWS_CONFIG_FILE" => config } }
      run_apart(**plan, calls: 1)
      once = File.read(runs).to_i # aws-sdk-core's resolve runs it itself
      File.delete(runs)
      lines = run_apart(**plan, calls: 3)
      expect(lines.first(3)).to all(include("provider" => "cloud"))
      expect(File.read(runs).to_i).to eq(once)
      expect(signed_by.last(3)).to eq(["AKIDPROCESS0000#{once}"] * 3)
      expect(fp.requests.last(3).map { |r| r.headers["x-amz-security-token"] }.uniq).to eq(["process-SESSION-#{once}"])
    end

    it "asks again, and signs with the new ones, when the credentials it holds are about to expire" do
      config, = process_profile(30)
      run_apart(require: ["aws-sdk-core"], provider: bedrock, model: "amazon.nova-lite-v1:0", calls: 2,
                env: { "AWS_CONFIG_FILE" => config })
      # Each call finds less than a minute left; aws-sdk-core runs the process anew.
      expect(signed_by.uniq.size).to eq(2)
      expect(signed_by).to all(start_with("AKIDPROCESS"))
    end

    it "prefers credentials: given over the chain's" do
      lines = run_apart(require: ["aws-sdk-core"], model: "amazon.nova-lite-v1:0",
                        provider: bedrock("credentials" => { "access_key_id" => "AKIDGIVEN000001",
                                                             "secret_access_key" => "given/SECRET-1" }),
                        env: { "AWS_SHARED_CREDENTIALS_FILE" => shared_credentials })
      expect(lines.first).to include("provider" => "cloud")
      expect(signed_by).to eq(%w[AKIDGIVEN000001])
    end

    it "raises a chain that finds nothing as the configuration's error, before any request" do
      lines = run_apart(require: ["aws-sdk-core"], provider: bedrock, model: "amazon.nova-lite-v1:0")
      expect(lines.first).to include("error" => "LlmFailover::ConfigurationError")
      expect(lines.first["message"]).to start_with("provider :cloud: aws-sdk-core's credential provider chain found no credentials")
      expect(fp.requests).to eq([])
    end
  end

  describe "with googleauth loaded: its application default credentials" do
    let(:fp) { start_fake_provider(check_tokens: true) }

    # An external account (workload identity federation) file: googleauth reads the
    # subject token from a file and exchanges it at the file's token_url, here the
    # FakeProvider's. (A service account file's token_uri googleauth 1.14 does not follow:
    # it always posts to www.googleapis.com.)
    def external_account_file
      subject = File.join(dir, "subject-token")
      File.write(subject, "spec-subject-token")
      File.join(dir, "external.json").tap do |path|
        File.write(path, JSON.generate(
                           "type" => "external_account",
                           "audience" => "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/q",
                           "subject_token_type" => "urn:ietf:params:oauth:token-type:jwt",
                           "token_url" => fp.token_url, "credential_source" => { "file" => subject }
                         ))
      end
    end

    def vertex(**credential)
      { "api" => "vertex", "project" => "spec-project", "location" => "us-east5", "base_url" => fp.base_url(:vertex),
        **credential }
    end

    it "takes its token once from googleauth, which exchanged it on loopback" do
      lines = run_apart(require: ["googleauth"], provider: vertex, model: "gemini-2.5-pro", calls: 2,
                        env: { "GOOGLE_APPLICATION_CREDENTIALS" => external_account_file })
      expect(lines.first(2)).to all(include("provider" => "cloud"))
      expect(fp.token_requests.size).to eq(1)
      form = URI.decode_www_form(fp.token_requests.first.body).to_h
      expect(form).to include("grant_type" => "urn:ietf:params:oauth:grant-type:token-exchange",
                              "subject_token" => "spec-subject-token",
                              "scope" => "https://www.googleapis.com/auth/cloud-platform")
      expect(fp.requests.reject(&:token?).map(&:bearer_token).uniq.size).to eq(1) # check_tokens: the one it issued
      expect(lines.last["loaded"]).to eq(["googleauth"])
    end

    it "prefers access_token: given over googleauth's" do
      token = LlmFailover::Testing::FakeProvider::TokenAnswer.issue
      lines = run_apart(require: ["googleauth"], provider: vertex("access_token" => token), model: "gemini-2.5-pro",
                        env: { "GOOGLE_APPLICATION_CREDENTIALS" => external_account_file })
      expect(lines.first).to include("provider" => "cloud")
      expect(fp.token_requests).to eq([])
    end

    it "raises googleauth's failure as the configuration's error, before any request" do
      lines = run_apart(require: ["googleauth"], provider: vertex, model: "gemini-2.5-pro",
                        env: { "GOOGLE_APPLICATION_CREDENTIALS" => File.join(dir, "missing.json") })
      expect(lines.first).to include("error" => "LlmFailover::ConfigurationError", "cause" => "RuntimeError")
      expect(lines.first["message"])
        .to eq("provider :cloud: googleauth's application default credentials raised RuntimeError (see the cause): " \
               "no token, no request")
      expect(fp.requests).to eq([])
    end
  end

  it "loads neither gem itself: without them, Bedrock takes the AWS_* variables" do
    fp = start_fake_provider(aws_credentials: { "AKIDENVONLY0001" => "env/SECRET-1" })
    lines = run_apart(provider: { "api" => "bedrock", "region" => "eu-central-1", "base_url" => fp.base_url(:bedrock) },
                      model: "amazon.nova-lite-v1:0",
                      env: { "AWS_ACCESS_KEY_ID" => "AKIDENVONLY0001", "AWS_SECRET_ACCESS_KEY" => "env/SECRET-1",
                             "AWS_SHARED_CREDENTIALS_FILE" => File.join(dir, "unused") })
    expect(lines.first).to include("provider" => "cloud")
    expect(lines.last["loaded"]).to eq([])
  end
end
