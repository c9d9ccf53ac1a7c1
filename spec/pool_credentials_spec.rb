# frozen_string_literal: true

require "spec_helper"
require "logger"
require "stringio"

# A pool's host whose credential source fails (DESIGN, "Protocols and hosts": a token
# source that fails is a ConfigurationError for that host, never a silent failover). The
# host stays in the pick: a call that goes to it raises its ConfigurationError, naming it,
# with no request sent and no sibling or backup answering instead, as a 401 from it would
# be raised; the calls the pick sends to its siblings go through.
RSpec.describe "A pool host whose credential source fails" do
  let(:fp) { start_fake_provider }
  let(:broken) { [true] } # the token endpoint is down while broken.first
  let(:asked) { Queue.new }
  let(:records) { [] }
  let(:log) { StringIO.new }

  before do
    asked = self.asked
    broken = self.broken
    source = lambda do
      asked << true
      raise IOError, "token endpoint down" if broken.first

      { token: "entra-SECRET-#{asked.size}", expires_in: 3600 }
    end
    records = self.records
    LlmFailover.configure do |c|
      c.provider :azure_east, api: :azure, base_url: fp.on(:azure_east).base_url(:azure), access_token: source
      c.provider :azure_west, api: :azure, base_url: fp.on(:azure_west).base_url(:azure), api_key: "az-west-SECRET-0042"
      c.provider :openai, api: :openai, api_key: "sk-openai-SECRET-0042", base_url: fp.on(:openai).base_url(:openai)
      c.provider :backup, api: :anthropic, api_key: "sk-ant-backup-SECRET", base_url: fp.on(:backup).base_url(:anthropic)
      c.pool :gpt, hosts: [{ provider: :azure_east }, { provider: :azure_west }, { provider: :openai }]
      c.usage_log = ->(record) { records << record }
      c.logger = Logger.new(log)
      fast_policy(c)
    end
  end

  def chat(pool = :gpt)
    LlmFailover.chat(model: "gpt-4o", provider: pool, backup_model: "claude-sonnet-4-6", backup_provider: :backup)
  end

  # A pool whose pick is +host+ but for one call in a million, then +others+.
  def led_by(host, *others)
    LlmFailover.configure do |c|
      c.pool :led, hosts: [{ provider: host, weight: 1_000_000 }, *others.map { |h| { provider: h } }]
    end
    chat(:led)
  end

  def secret_free(*texts)
    texts.each { |t| expect(t.to_s).not_to include("SECRET") }
  end

  it "raises for the calls the pick sends to it, and answers the others from their own hosts" do
    raised = []
    answered = []
    pool_chat = chat
    60.times do # a third of them go to the broken host, by weight
      answered << pool_chat.ask("hello").host
    rescue LlmFailover::ConfigurationError => e
      raised << e
    end
    expect(raised).not_to be_empty
    expect(answered.tally.keys).to contain_exactly(:azure_west, :openai)
    expect(raised.map(&:message).uniq)
      .to eq(["provider :azure_east: the access_token: source raised IOError (see the cause): no token, no request"])
    expect(raised.map(&:cause)).to all(be_a(IOError))
    expect([fp.on(:azure_east).request_count, fp.on(:backup).request_count]).to eq([0, 0])
    expect(asked.size).to eq(1 + 60) # by the chat, then by each call: a failure is never kept

    # Each raised call leaves one record: the broken host's, no request sent.
    broken_records = records.select { |r| r.host == :azure_east }
    expect(broken_records.size).to eq(raised.size)
    expect(broken_records.map { |r| [r.provider, r.success?, r.skipped?, r.error_class, r.http_status] }.uniq)
      .to eq([[:gpt, false, true, "LlmFailover::ConfigurationError", nil]])
    expect(records.size).to eq(raised.size + answered.size)
    secret_free(raised.map(&:message), raised.map(&:inspect), broken_records.map(&:to_h), log.string)
    expect(log.string).to include("failed on azure_east/gpt-4o: LlmFailover::ConfigurationError")
  end

  it "is never passed over: a call moved to it by a sibling's failure raises it, and the backup stays unasked" do
    fp.on(:azure_west).default = { error: :server }
    expect { led_by(:azure_west, :azure_east).ask("hello") }
      .to raise_error(LlmFailover::ConfigurationError, /\Aprovider :azure_east: the access_token: source raised IOError/)
    expect(records.map { |r| [r.host, r.error_class, r.skipped?] })
      .to eq([[:azure_west, "LlmFailover::ServerError", false], [:azure_east, "LlmFailover::ConfigurationError", true]])
    expect([fp.on(:azure_east).request_count, fp.on(:backup).request_count]).to eq([0, 0])
  end

  it "is the error of an embedding call that goes to it, with its source's error as the cause" do
    led_by(:azure_east, :openai)
    expect { LlmFailover.embed("hello", model: "text-embedding-3-small", provider: :led) }
      .to raise_error(LlmFailover::ConfigurationError, /\Aprovider :azure_east: /) { |e| expect(e.cause).to be_a(IOError) }
    led_by(:openai, :azure_east)
    expect(LlmFailover.embed("hello", model: "text-embedding-3-small", provider: :led).provider).to eq(:led)
    expect(fp.on(:azure_east).request_count).to eq(0)
  end

  it "serves calls again once its source recovers, and keeps the pool's target from then on" do
    expect { led_by(:azure_east, :openai).ask("hello") }.to raise_error(LlmFailover::ConfigurationError)
    broken[0] = false
    chat = led_by(:azure_east, :openai)
    3.times { expect(chat.ask("hello").host).to eq(:azure_east) }
    # asked by the broken chat and its call, then once for the new chat's three calls
    expect(fp.on(:azure_east).requests.map(&:bearer_token)).to eq(["entra-SECRET-3"] * 3)
    pool = LlmFailover.configuration.pools[:led]
    expect(pool.target("gpt-4o")).to equal(pool.target("gpt-4o"))
  end
end
