# frozen_string_literal: true

require "spec_helper"
require "support/engine_helpers"
require_relative "support/redis_server"

# Shared budgets by :usd and :tokens: each call holds the most it can cost in the
# state store before anything is sent, and settles to what it was billed after, so a
# fleet overspends by no more than the largest hold in flight.
RSpec.describe "A budget in money" do
  include EngineHelpers
  include_context "with fake providers"

  let(:log) { StringIO.new }
  let(:key) { "tenant-#{rand(1 << 30)}" }
  # gpt-4o at the default table's prices: $2.50 input, $10 output per million.
  # The hold of an ask("hello") with max_tokens: 200: input bound 16 + 8 + "user" +
  # "hello" = 33 tokens, and 200 output tokens: 33 x 2.50 + 200 x 10 = 2,082.5 per million.
  let(:hold) { BigDecimal("0.0020825") }
  # What each answer is billed: 20 input and 150 output tokens, within the hold.
  let(:spend) { BigDecimal("0.00155") }

  before do
    LlmFailover.configure do |c|
      c.max_retries = 0
      c.logger = Logger.new(log)
    end
    primary.default = { text: "primary", usage: { input: 20, output: 150 } }
    backup.default = { text: "backup", usage: { input: 20, output: 150 } }
  end

  def live(limit = 1, by: :usd)
    LlmFailover::Quota.live(key: key, limit: limit, window: :day, by: by)
  end

  def chat(limit = 1, **options)
    failover_chat(quota: limit, quota_by: :usd, quota_key: key, quota_window: :day, max_tokens: 200, **options)
  end

  describe "in the process (MemoryStateStore)" do
    it "holds the most the call can cost before the request leaves, and settles to its cost after" do
      primary.hold
      asked = Thread.new { chat.ask("hello") }
      wait_for { primary.request_count == 1 }
      expect(live.used).to eq(hold)
      primary.release
      reply = asked.value
      expect(reply.cost).to eq(spend)
      expect(live.used).to eq(spend)
    end

    it "moves to the backup once the budget is spent, and raises with enforce_quota" do
      # Three answers spend 0.00465, past 0.004: the fourth call goes to the backup.
      providers = Array.new(4) { chat(0.004).ask("hello").provider }
      expect(providers).to eq(%i[openai openai openai anthropic])
      expect(live(0.004)).to be_exceeded
      solo = LlmFailover.chat(model: "gpt-4o", provider: :openai, quota: 0.004, quota_by: :usd, quota_key: key,
                              quota_window: :day, enforce_quota: true)
      expect { solo.ask("hello") }.to raise_error(LlmFailover::QuotaExceededError, /quota exceeded/)
      expect(primary.request_count).to eq(3)
    end

    it "counts failed attempts the provider billed, and gives back the hold of a call that sent nothing" do
      LlmFailover.configure do |c|
        c.provider :anthropic, api: :anthropic, api_key: "sk-ant", base_url: primary.base_url(:anthropic)
      end
      claude = lambda do
        LlmFailover.chat(model: "claude-haiku-4-5", provider: :anthropic, quota: 1, quota_by: :usd, quota_key: key,
                         quota_window: :day, max_tokens: 200)
      end
      # The stream is cut after its first chunk: Anthropic had named the 20 input tokens.
      primary.enqueue({ chunks: %w[a b c], cut_after: 1, usage: { input: 20, output: 3 } })
      error = begin
        claude.call.ask("hello") { |_| }
      rescue LlmFailover::Error => e
        e
      end
      billed = error.attempts.sum(&:cost)
      expect(billed).to be_positive
      expect(live.used).to eq(billed)

      # Cancelled before its first request: nothing sent, nothing kept.
      already = Object.new
      def already.watch(cancellation, interval:)
        cancellation.cancel!
        nil
      end
      cut = LlmFailover.chat(model: "claude-haiku-4-5", provider: :anthropic, quota: 1, quota_by: :usd,
                             quota_key: key, quota_window: :day, cancel_check: already)
      expect(cut.ask("hello").cancelled?).to be(true)
      expect(live.used).to eq(billed)
    end

    it "gives the hold back when the primary's circuit is open, and costs nothing for a cache hit" do
      LlmFailover.configure do |c|
        c.circuit_threshold = 1
        c.cache = LlmFailover::MemoryCache.new
      end
      chat.ask("hello")
      expect(live.used).to eq(spend)
      expect(chat.ask("hello")).to be_cached
      expect(live.used).to eq(spend)
      primary.default = { error: :unavailable }
      chat.ask("opens the circuit")
      after_failure = live.used
      reply = chat.ask("skips the primary")
      expect(reply.attempts.first.skipped?).to be(true)
      expect(live.used).to eq(after_failure)
    end

    it "never stops a call when the budget is 0 (unlimited), and refuses a primary without a price" do
      3.times { failover_chat(quota: 0, quota_by: :usd, quota_key: key).ask("hello") }
      expect(primary.request_count).to eq(3)
      expect(live(0)).to have_attributes(used: 0, unlimited?: true)
      expect { LlmFailover.chat(model: "house-model", provider: :openai, quota: 5, quota_by: :usd, quota_key: key) }
        .to raise_error(LlmFailover::ConfigurationError, %r{needs a price for openai/house-model})
      expect { failover_chat(quota: -1, quota_by: :usd, quota_key: key) }
        .to raise_error(LlmFailover::ConfigurationError, /dollars/)
    end

    it "holds tokens the same way with quota_by: :tokens: the input bound and max_tokens" do
      primary.hold
      asked = Thread.new do
        failover_chat(quota: 1000, quota_by: :tokens, quota_key: key, quota_window: :day, max_tokens: 200).ask("hello")
      end
      wait_for { primary.request_count == 1 }
      expect(live(1000, by: :tokens).used).to eq(233)
      primary.release
      asked.value
      expect(live(1000, by: :tokens).used).to eq(170)
    end
  end

  describe "across a fleet (RedisStateStore on a real redis-server)" do
    before(:all) do
      skip "redis-server is not installed (bin/setup installs it)" unless RedisServer.available?
      @redis = RedisServer.new.start
    end

    after(:all) { @redis&.destroy }

    let(:store) do
      LlmFailover::RedisStateStore.new(url: @redis.url, namespace: "money#{rand(1 << 30)}", logger: Logger.new(log),
                                       budget: 2)
    end

    before do
      LlmFailover.configure { |c| c.state_store = store }
      # Every answer takes a moment, so that the racers' calls are in flight together.
      primary.default = { text: "primary", usage: { input: 20, output: 150 }, delay_headers: 0.02 }
    end

    # 4 processes and 4 threads each, 5 calls per racer, all started at once.
    def race(&calls)
      key # made here, once: a let first read in a forked child would be that child's own
      go_r, go_w = IO.pipe
      ready_r, ready_w = IO.pipe
      racer = lambda do
        ready_w.write("r")
        go_r.read(1)
        Array.new(5) { calls.call }
      end
      pipes = Array.new(4) do
        reader, writer = IO.pipe
        pid = fork do
          reader.close
          writer.write(Marshal.dump(Array.new(4) { Thread.new(&racer) }.flat_map(&:value)))
          writer.close
          exit!(0)
        end
        writer.close
        [pid, reader]
      end
      ready_r.read(16)
      go_w.write("g" * 16)
      results = pipes.flat_map do |pid, reader|
        Marshal.load(reader.read).tap { Process.wait(pid) }
      end
      expect(results.size).to eq(80)
      results
    ensure
      [go_r, go_w, ready_r, ready_w].each { |io| io&.close }
    end

    # A racer is turned away while the holds in flight reach the budget, and holds
    # settle below what they held: the race can end just short of the budget. With
    # nothing in flight, calls are let through until it is spent.
    def until_spent(providers, &call)
      40.times do
        providers << call.call
        break unless providers.last == :openai
      end
      providers
    end

    it "never spends past the budget by more than one call's hold, racing from 4 processes x 4 threads" do
      limit = BigDecimal("0.05")
      ask = -> { chat(limit.to_f).ask("hello").provider }
      providers = until_spent(race(&ask), &ask)
      spent = LlmFailover::Quota.live(key: key, limit: limit, window: :day, by: :usd, store: store).used
      answered_by_primary = providers.count(:openai)
      expect(spent).to eq(spend * answered_by_primary) # every hold settled to its answer's cost
      expect(spent).to be >= limit # the budget was used up ...
      expect(spent).to be <= limit + hold # ... and overspent by one hold at most
      expect(primary.request_count).to eq(answered_by_primary)
      expect(log.string).not_to include("unreachable")
    end

    it "holds tokens the same way: a 2,051-token budget is overspent by one hold at most" do
      ask = lambda do
        failover_chat(quota: 2_051, quota_by: :tokens, quota_key: key, quota_window: :day, max_tokens: 200)
          .ask("hello").provider
      end
      providers = until_spent(race(&ask), &ask)
      spent = LlmFailover::Quota.live(key: key, limit: 2_051, window: :day, store: store).used
      expect(spent).to eq(170 * providers.count(:openai))
      expect(spent).to be_between(2_051, 2_051 + 233)
    end
  end
end
