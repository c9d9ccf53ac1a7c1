# frozen_string_literal: true

require "spec_helper"
require_relative "support/redis_server"

# quota_key: a quota counted in the state store, one atomic reservation per call.
RSpec.describe "A shared quota" do
  include_context "with fake providers"

  let(:log) { StringIO.new }
  let(:key) { "tenant-#{rand(1 << 30)}" }

  before do
    LlmFailover.configure do |c|
      c.max_retries = 0
      c.logger = Logger.new(log)
    end
    primary.default = { text: "primary", usage: { input: 12, output: 5 } }
    backup.default = { text: "backup" }
  end

  def live(limit = 3, window: :day)
    LlmFailover::Quota.live(key: key, limit: limit, window: window)
  end

  def chat(**options)
    failover_chat(quota: 3, quota_key: key, quota_window: :day, **options)
  end

  describe "in the process (MemoryStateStore)" do
    it "sends calls to the primary until the limit, then to the backup" do
      providers = Array.new(5) { chat.ask("hi").provider }
      expect(providers).to eq(%i[openai openai openai anthropic anthropic])
      expect(primary.request_count).to eq(3)
      expect(live).to have_attributes(used: 3, remaining: 0, exceeded?: true)
    end

    it "raises QuotaExceededError with enforce_quota and no backup, sending nothing" do
      solo = -> { LlmFailover.chat(model: "gpt-4o", provider: :openai, quota: 1, quota_key: key, enforce_quota: true) }
      solo.call.ask("one")
      expect { solo.call.ask("two") }.to raise_error(LlmFailover::QuotaExceededError)
      expect(primary.request_count).to eq(1)
      expect(live(1, window: :month).used).to eq(1)
    end

    it "reserves nothing for a quota of 0 (unlimited)" do
      3.times { failover_chat(quota: 0, quota_key: key).ask("hi") }
      expect(primary.request_count).to eq(3)
      expect(live(0, window: :month)).to have_attributes(used: 0, unlimited?: true, remaining: Float::INFINITY)
    end

    it "gives the unit back when every target failed" do
      primary.default = { error: :unavailable }
      backup.default = { error: :unavailable }
      expect { chat.ask("hi") }.to raise_error(LlmFailover::ServiceUnavailableError)
      expect(live.used).to eq(0)
    end

    it "keeps the unit when the primary was called and the backup answered" do
      primary.default = { error: :unavailable }
      expect(chat.ask("hi").provider).to eq(:anthropic)
      expect(live.used).to eq(1)
    end

    it "gives the unit back when the primary's open circuit was skipped" do
      LlmFailover.configure { |c| c.circuit_threshold = 1 }
      primary.default = { error: :unavailable }
      chat.ask("opens the circuit")
      reply = chat.ask("skips the primary")
      expect(reply.attempts.first.skipped?).to be(true)
      expect(primary.request_count).to eq(1)
      expect(live.used).to eq(1)
    end

    it "gives the unit back when the call was cancelled before any request, and keeps it for one cut mid-stream" do
      # A cancel_check that finds a cancel already made as the call starts (what a chat
      # record's does for a Stop pressed while its job was queued).
      already = Object.new
      def already.watch(cancellation, interval:)
        cancellation.cancel!
        nil
      end
      reply = chat(cancel_check: already).ask("hi")
      expect([reply.cancelled?, primary.request_count, live.used]).to eq([true, 0, 0])

      primary.enqueue({ chunks: %w[a b c], stall_after: 1 })
      shown = 0
      streaming = chat
      reply = streaming.ask("hi") { |_c| streaming.cancel! if (shown += 1) == 1 }
      expect([reply.cancelled?, primary.request_count, live.used]).to eq([true, 1, 1])
    end

    it "uses none for a cached answer" do
      LlmFailover.configure { |c| c.cache = LlmFailover::MemoryCache.new }
      expect(chat.ask("same").cached?).to be(false)
      expect(chat.ask("same").cached?).to be(true)
      expect(live.used).to eq(1)
    end

    it "counts the tokens the primary used with quota_by: :tokens" do
      chat(quota: 100, quota_by: :tokens).ask("hi")
      expect(live(100).used).to eq(17)
      chat(quota: 100, quota_by: :tokens).ask("again")
      expect(live(100).used).to eq(34)
    end

    it "counts each window apart" do
      chat(quota_window: :hour).ask("hi")
      expect(live(3, window: :hour).used).to eq(1)
      expect(live(3, window: :day).used).to eq(0)
    end

    it "refuses options it cannot honour" do
      expect { chat(quota_used: 5) }.to raise_error(LlmFailover::ConfigurationError, /exclude/)
      expect { chat(quota_window: :week) }.to raise_error(LlmFailover::ConfigurationError, /quota_window/)
      expect { chat(quota_by: :dollars) }.to raise_error(LlmFailover::ConfigurationError, /quota_by/)
      expect { chat(quota_key: "") }.to raise_error(LlmFailover::ConfigurationError, /quota_key/)
    end
  end

  describe "across a fleet (RedisStateStore on a real redis-server)" do
    before(:all) do
      skip "redis-server is not installed (bin/setup installs it)" unless RedisServer.available?
      @redis = RedisServer.new.start
    end

    after(:all) { @redis&.destroy }

    let(:store) do
      # A generous budget: on a loaded machine a slow answer would count as Redis down.
      LlmFailover::RedisStateStore.new(url: @redis.url, namespace: "quota#{rand(1 << 30)}", logger: Logger.new(log),
                                       budget: 2)
    end

    before { LlmFailover.configure { |c| c.state_store = store } }

    it "lets exactly the last 10 units through when 8 threads and 4 processes race for them" do
      period, ttl = LlmFailover::QuotaWindow.new(:day).at
      store.adjust_quota(key, period, 90, ttl) # 90 of 100 already used
      # Every racer waits for one byte of +go+, so that the first reservations of all
      # twelve meet at the same moment.
      go_r, go_w = IO.pipe
      ready_r, ready_w = IO.pipe
      race = lambda do |calls|
        chats = Array.new(calls) { chat(quota: 100) }
        ready_w.write("r")
        go_r.read(1)
        chats.map { |c| c.ask("hi").provider }
      end

      pipes = Array.new(4) do
        reader, writer = IO.pipe
        pid = fork do
          reader.close
          writer.write(Marshal.dump(race.call(4)))
          writer.close
          exit!(0)
        end
        writer.close
        [pid, reader]
      end
      threads = Array.new(8) { Thread.new { race.call(4) } }
      ready_r.read(12)
      go_w.write("g" * 12)
      providers = threads.flat_map(&:value)
      pipes.each do |pid, reader|
        providers.concat(Marshal.load(reader.read))
        Process.wait(pid)
      end

      expect(providers.size).to eq(48)
      expect(providers.count(:openai)).to eq(10)
      expect(providers.count(:anthropic)).to eq(38)
      expect(primary.request_count).to eq(10)
      expect(backup.request_count).to eq(38)
      expect(LlmFailover::Quota.live(key: key, limit: 100, window: :day, store: store).used).to eq(100)
      expect(log.string).not_to include("unreachable") # every count was Redis's
    ensure
      [go_r, go_w, ready_r, ready_w].each { |io| io&.close }
    end

    it "counts in the process while Redis is down, with one warning" do
      down = RedisServer.new # never started: nothing listens on its port
      LlmFailover.configure { |c| c.state_store = LlmFailover::RedisStateStore.new(url: down.url, logger: Logger.new(log)) }
      providers = Array.new(5) { chat.ask("hi").provider }
      expect(providers).to eq(%i[openai openai openai anthropic anthropic])
      expect(log.string.scan(/unreachable/).size).to eq(1)
    ensure
      down&.destroy
    end

    # Issue 27: the outage warning of a store built without a logger (the generated
    # initializer's) goes to c.logger, Rails.logger in an app, not to stderr.
    it "warns through c.logger when the store was given no logger of its own" do
      down = RedisServer.new
      LlmFailover.configure do |c|
        c.logger = Logger.new(log)
        c.state_store = LlmFailover::RedisStateStore.new(url: down.url)
      end
      expect { chat.ask("hi") }.not_to output.to_stderr
      expect(log.string.scan(/llm_failover: Redis state store unreachable/).size).to eq(1)
    ensure
      down&.destroy
    end
  end
end
