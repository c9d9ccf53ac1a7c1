# frozen_string_literal: true

require "spec_helper"

# Credentials that come from a source: access_token: as a callable (Azure's Entra ID,
# Vertex AI's OAuth) and Bedrock's AWS credentials (a callable, or the environment), asked
# when a call needs them and the last ones are about to expire, never per call; a source
# that fails is the configuration's error, raised before any request, never a failover.
RSpec.describe "Credential sources" do
  let(:fp) { start_fake_provider }
  let(:asked) { [] }

  # A source that hands out token-1, token-2, ... each valid for +lifetime+ seconds.
  def source(lifetime)
    lambda do
      asked << :asked
      { token: "token-#{asked.size}-SECRET", expires_in: lifetime }
    end
  end

  def configure(access_token:, backup: false)
    LlmFailover.configure do |c|
      c.provider :azure, api: :azure, base_url: fp.on(:azure).base_url(:azure), access_token: access_token
      c.provider :backup, api: :anthropic, api_key: "sk-ant-backup-key", base_url: fp.on(:backup).base_url(:anthropic) if backup
      c.max_retries = 0
      fast_policy(c)
    end
  end

  def bearers
    fp.on(:azure).requests.map(&:bearer_token)
  end

  it "asks once for a token that lasts, however many calls and chats use it" do
    configure(access_token: source(3600))
    chat = LlmFailover.chat(model: "gpt-4o", provider: :azure)
    3.times { chat.ask("Hi") }
    LlmFailover.chat(model: "gpt-4o-mini", provider: :azure).ask("Hi")
    expect(asked.size).to eq(1)
    expect(bearers).to eq(["token-1-SECRET"] * 4)
  end

  it "asks again, once per call, for a token that expires within a minute, and sends the new one" do
    configure(access_token: source(30))
    chat = LlmFailover.chat(model: "gpt-4o", provider: :azure)
    2.times { chat.ask("Hi") }
    expect(bearers).to eq(%w[token-2-SECRET token-3-SECRET]) # the chat's own target took token-1
    expect(asked.size).to eq(3)
  end

  it "takes an expires_at, and a String alone for a token of unknown lifetime" do
    configure(access_token: -> { asked << 1 && { "token" => "at-SECRET", "expires_at" => Time.now + 600 } })
    2.times { LlmFailover.chat(model: "gpt-4o", provider: :azure).ask("Hi") }
    configure(access_token: -> { asked << 1 && "plain-SECRET" })
    2.times { LlmFailover.chat(model: "gpt-4o", provider: :azure).ask("Hi") }
    expect(bearers).to eq(%w[at-SECRET at-SECRET plain-SECRET plain-SECRET])
    expect(asked.size).to eq(2)
  end

  it "asks once when many threads need a token at the same moment" do
    gate = Queue.new
    configure(access_token: lambda {
      gate.pop
      asked << :asked
      { token: "shared-SECRET", expires_in: 3600 }
    })
    threads = Array.new(4) { Thread.new { LlmFailover.chat(model: "gpt-4o", provider: :azure).ask("Hi").content } }
    # Whatever the order they reach the source in, one of them asks and the others wait.
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + SpecTime.scaled(10)
    until threads.count { |t| t.status == "sleep" } == 4
      raise "a thread ended before the source answered" unless threads.all?(&:alive?)
      raise "the threads never waited for the source" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.01
    end
    4.times { gate << :go }
    expect(threads.map(&:value).uniq).to eq([LlmFailover::Testing::FakeProvider::DEFAULT_TEXT])
    expect(asked.size).to eq(1)
    expect(bearers.uniq).to eq(["shared-SECRET"])
  end

  {
    "raises" => -> { raise IOError, "metadata server unreachable" },
    "returns nil" => -> {},
    "returns an empty token" => -> { { token: "", expires_in: 60 } },
    "returns a Hash without an expiry" => -> { { token: "abc-SECRET" } },
    "returns something else" => -> { 42 }
  }.each do |what, bad|
    it "raises a ConfigurationError naming the provider when its source #{what}, before any request and never failing over" do
      configure(access_token: bad, backup: true)
      error = nil
      begin
        LlmFailover.chat(model: "gpt-4o", provider: :azure, backup_model: "claude-sonnet-4-6", backup_provider: :backup)
      rescue LlmFailover::ConfigurationError => e
        error = e
      end
      expect(error).not_to be_nil
      expect(error.message).to start_with("provider :azure: the access_token: source")
      expect(error.message).not_to include("SECRET")
      expect(error.cause).to be_a(IOError) if what == "raises"
      expect(fp.requests).to eq([])
    end
  end

  it "raises a source that fails on a later renewal from that call, not from a failover" do
    tokens = [{ token: "first-SECRET", expires_in: 1 }]
    configure(access_token: -> { tokens.shift || raise(IOError, "token endpoint down") }, backup: true)
    chat = LlmFailover.chat(model: "gpt-4o", provider: :azure, backup_model: "claude-sonnet-4-6", backup_provider: :backup)
    expect { chat.ask("Hi") }.to raise_error(LlmFailover::ConfigurationError, /provider :azure: the access_token: source raised IOError/)
    expect([fp.on(:azure).request_count, fp.on(:backup).request_count]).to eq([0, 0])
    expect(chat.messages.map(&:role)).to eq(%w[user]) # the prompt waits for a complete once the source works
  end

  describe "Bedrock's AWS credentials" do
    let(:fp) do
      start_fake_provider(aws_credentials: { "AKIDENVSPEC1" => "env/SECRET-1",
                                             "AKIDTEMPSPEC" => { secret_access_key: "temp/SECRET",
                                                                 session_token: "temp-SESSION" } })
    end

    around do |example|
      saved = ENV.to_h.slice("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
      %w[AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN].each { |k| ENV.delete(k) }
      example.run
    ensure
      %w[AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN].each { |k| ENV.delete(k) }
      ENV.update(saved)
    end

    def bedrock(**options)
      LlmFailover.configure do |c|
        c.provider :bedrock, api: :bedrock, region: "eu-central-1", base_url: fp.on(:bedrock).base_url(:bedrock),
                             **options
        c.provider :backup, api: :anthropic, api_key: "sk-ant-backup-key", base_url: fp.on(:backup).base_url(:anthropic)
        c.max_retries = 0
        fast_policy(c)
      end
      LlmFailover.chat(model: "amazon.nova-lite-v1:0", provider: :bedrock, backup_model: "claude-sonnet-4-6",
                       backup_provider: :backup)
    end

    def signed_by
      fp.on(:bedrock).requests.map { |r| r.headers["authorization"][%r{Credential=([^/]+)/}, 1] }
    end

    it "signs with the environment's, read when a call first needs them" do
      chat = nil
      expect { chat = bedrock }.to raise_error(LlmFailover::ConfigurationError, /set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY/)
      ENV["AWS_ACCESS_KEY_ID"] = "AKIDENVSPEC1"
      ENV["AWS_SECRET_ACCESS_KEY"] = "env/SECRET-1"
      chat = bedrock
      expect(chat.ask("Hi").provider).to eq(:bedrock)
      expect(signed_by).to eq(["AKIDENVSPEC1"])
    end

    it "asks a source once for credentials that last, and sends their session token" do
      bedrock(credentials: lambda {
        asked << :asked
        { access_key_id: "AKIDTEMPSPEC", secret_access_key: "temp/SECRET", session_token: "temp-SESSION",
          expiration: Time.now + 3600 }
      }).tap { |chat| 2.times { chat.ask("Hi") } }
      expect(asked.size).to eq(1)
      expect(signed_by).to eq(%w[AKIDTEMPSPEC AKIDTEMPSPEC])
      expect(fp.on(:bedrock).requests.map { |r| r.headers["x-amz-security-token"] }.uniq).to eq(["temp-SESSION"])
    end

    it "raises a signature AWS refuses at once, never hidden by the backup" do
      chat = bedrock(credentials: { access_key_id: "AKIDENVSPEC1", secret_access_key: "not-the-SECRET" })
      expect { chat.ask("Hi") }.to raise_error(LlmFailover::UnauthorizedError, /signature/)
      expect(fp.on(:backup).request_count).to eq(0)
    end

    it "refuses credentials: without a secret when configuring, and a source's broken answer before any request" do
      expect { bedrock(credentials: { access_key_id: "AKIDENVSPEC1" }) }
        .to raise_error(LlmFailover::ConfigurationError, /provider :bedrock: the credentials: AWS credentials are missing/)
      expect { bedrock(credentials: -> { { access_key_id: "AKIDENVSPEC1", secret_access_key: "" } }) }
        .to raise_error(LlmFailover::ConfigurationError, /provider :bedrock: the credentials: AWS credentials/)
      expect { bedrock(credentials: -> { raise Errno::ECONNREFUSED, "169.254.169.254" }) }
        .to raise_error(LlmFailover::ConfigurationError, /the credentials: source raised Errno::ECONNREFUSED/)
      expect(fp.requests).to eq([])
    end
  end
end
