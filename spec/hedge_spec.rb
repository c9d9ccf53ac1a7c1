# frozen_string_literal: true

require "spec_helper"
require "async"
require "timeout"
require_relative "support/redis_server"

# Hedged requests (hedge_after): when the primary's first token is late, the backup is
# sent beside it, the first of the two to produce a token answers and the other is cut
# (its connection closed) and recorded as cancelled. The providers hold answers back
# by seconds where an example needs a loser, so that the order never rests on a race
# of milliseconds; no example asserts a time.
RSpec.describe "hedged requests" do
  include_context "with fake providers"

  let(:mono) { -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) } }

  # The same two servers with the protocols the other way round: the primary speaks
  # Anthropic and the backup OpenAI.
  before do
    LlmFailover.configure do |c|
      c.provider :anthropic_primary, api: :anthropic, api_key: FakeProviderHelpers::PRIMARY_KEY,
                                     base_url: primary.base_url(:anthropic)
      c.provider :openai_backup, api: :openai, api_key: FakeProviderHelpers::BACKUP_KEY,
                                 base_url: backup.base_url(:openai)
      c.first_token_timeout = 30
    end
  end

  PROTOCOLS = {
    "OpenAI primary, Anthropic backup" => { model: "gpt-4o", provider: :openai,
                                            backup_model: "claude-sonnet-4-6", backup_provider: :anthropic },
    "Anthropic primary, OpenAI backup" => { model: "claude-sonnet-4-6", provider: :anthropic_primary,
                                            backup_model: "gpt-4o", backup_provider: :openai_backup }
  }.freeze

  # The server notices a hang-up when it next looks at the connection.
  def wait_for_hangup(server, index)
    deadline = mono.call + 10
    sleep 0.02 until server.requests[index]&.client_closed? || mono.call > deadline
    server.requests[index]&.client_closed?
  end

  def ask(chat, text = "Hi")
    chunks = []
    reply = chat.ask(text) { |c| chunks << [c.reset?, c.content] }
    [reply, chunks]
  end

  PROTOCOLS.each do |label, targets|
    context label do
      def chat_with(targets, **options)
        LlmFailover.chat(**targets, **options)
      end

      it "answers from the backup when the primary starts late, and closes the primary's connection" do
        primary.enqueue({ text: "primary words", delay_first_token: 20 })
        backup.enqueue({ text: "backup words" })
        reply, chunks = ask(chat_with(targets, hedge_after: 0.3))

        expect(reply.content).to eq("backup words")
        expect(chunks.map(&:last).join).to eq("backup words") # never a word of the primary's
        expect(chunks.map(&:first)).to all(be(false))
        expect(wait_for_hangup(primary, 0)).to be(true)
        loser, winner = reply.attempts
        expect([loser.attempt, loser.provider, loser.cancelled?, loser.hedged?, loser.success?])
          .to eq([1, targets[:provider], true, true, false])
        expect([winner.attempt, winner.provider, winner.success?, winner.hedged?, winner.cancelled?])
          .to eq([2, targets[:backup_provider], true, true, false])
        expect(loser.error_class).to be_nil
        expect(loser.first_token_ms).to be_nil
        expect(loser.request_id).to eq(winner.request_id)
      end

      it "does not hedge a primary that starts before hedge_after" do
        primary.enqueue({ text: "prompt primary", delay_first_token: 0.05 })
        reply, = ask(chat_with(targets, hedge_after: 2))

        expect(reply.content).to eq("prompt primary")
        expect(backup.request_count).to eq(0)
        expect(reply.attempts.map { |a| [a.success?, a.hedged?] }).to eq([[true, false]])
      end

      it "lets the first of two slow starts answer and cuts the other" do
        primary.enqueue({ text: "first of two", delay_first_token: 1 })
        backup.enqueue({ text: "second of two", delay_first_token: 20, usage: { input: 7 } })
        reply, chunks = ask(chat_with(targets, hedge_after: 0.2))

        expect(reply.content).to eq("first of two")
        expect(chunks.map(&:last).join).to eq("first of two")
        expect(wait_for_hangup(backup, 0)).to be(true)
        winner, loser = reply.attempts
        expect([winner.attempt, winner.success?, winner.hedged?]).to eq([1, true, true])
        expect([loser.attempt, loser.cancelled?, loser.hedged?, loser.provider])
          .to eq([2, true, true, targets[:backup_provider]])
        # An Anthropic stream names its input tokens before its first text: they reached
        # the gem, and the loser's record keeps them.
        expect(loser.input_tokens).to eq(7) if targets[:backup_provider] == :anthropic
      end
    end
  end

  it "hands both attempts to the usage log, the loser as cancelled" do
    seen = []
    LlmFailover.configure { |c| c.usage_log = ->(record) { seen << record } }
    # Not streamed: the first byte of the body is the first token.
    primary.enqueue({ text: "late", delay_headers: 20 })
    backup.enqueue({ text: "on time" })
    reply = failover_chat(hedge_after: 0.2).ask("Hi")
    expect(reply.content).to eq("on time")

    expect(seen.map { |r| [r.attempt, r.cancelled?, r.hedged?, r.success?] })
      .to contain_exactly([1, true, true, false], [2, false, true, true])
    expect(seen.map(&:request_id).uniq).to eq([reply.request_id])
    expect(reply.attempts.map(&:attempt)).to eq([1, 2])
  end

  it "does nothing without a backup" do
    primary.enqueue({ text: "alone and late", delay_first_token: 0.6 })
    reply = LlmFailover.chat(model: "gpt-4o", provider: :openai, hedge_after: 0.1).ask("Hi")

    expect(reply.content).to eq("alone and late")
    expect(reply.attempts.map(&:hedged?)).to eq([false])
    expect(backup.request_count).to eq(0)
  end

  it "keeps a primary's 401 even when the hedge is running (a wrong key is never hidden)" do
    primary.enqueue({ error: :unauthorized, delay_headers: 0.6 })
    backup.enqueue({ text: "backup", delay_first_token: 20 })

    expect { ask(failover_chat(hedge_after: 0.2)) }.to raise_error(LlmFailover::UnauthorizedError) { |e|
      expect(e.attempts.map { |a| [a.attempt, a.cancelled?, a.hedged?] }).to eq([[1, false, true], [2, true, true]])
    }
    expect(wait_for_hangup(backup, 0)).to be(true)
  end

  it "ends both requests of a hedge when a Timeout cuts the call, and records both" do
    seen = []
    LlmFailover.configure { |c| c.usage_log = ->(record) { seen << record } }
    primary.enqueue({ text: "slow", delay_first_token: 20 })
    backup.enqueue({ text: "slow too", delay_first_token: 20 })
    chat = failover_chat(hedge_after: 0.2)

    expect { Timeout.timeout(1.5) { ask(chat) } }.to raise_error(Timeout::Error)
    expect(seen.map { |r| [r.attempt, r.error_class, r.hedged?] })
      .to contain_exactly([1, "LlmFailover::AbortedError", true], [2, "LlmFailover::AbortedError", true])
    expect(wait_for_hangup(primary, 0)).to be(true)
    expect(wait_for_hangup(backup, 0)).to be(true)
  end

  it "refuses a hedge_after that is not a positive number or :auto" do
    expect { failover_chat(hedge_after: -1) }.to raise_error(LlmFailover::ConfigurationError, /hedge_after/)
    expect { failover_chat(hedge_after: :sometimes) }.to raise_error(LlmFailover::ConfigurationError, /hedge_after/)
    expect { failover_chat(hedge_after: :auto) }.not_to raise_error
  end

  context "under a Fiber scheduler (Async)", :fiber_scheduler do
    it "answers from the backup when the primary starts late, the primary's connection closed" do
      primary.enqueue({ text: "primary words", delay_first_token: 20 })
      backup.enqueue({ text: "backup words" })
      reply = chunks = nil
      Async { reply, chunks = ask(failover_chat(hedge_after: 0.3)) }.wait

      expect(reply.content).to eq("backup words")
      expect(chunks.map(&:last).join).to eq("backup words")
      expect(wait_for_hangup(primary, 0)).to be(true)
      expect(reply.attempts.map { |a| [a.attempt, a.cancelled?, a.hedged?] }).to eq([[1, true, true], [2, false, true]])
    end

    it "lets the first of two slow starts answer, while other fibers run" do
      primary.enqueue({ text: "first of two", delay_first_token: 1 })
      backup.enqueue({ text: "second of two", delay_first_token: 20 })
      reply = nil
      ticks = 0
      Async do |task|
        ticker = task.async { loop { ticks += 1; task.sleep 0.05 } }
        reply, = ask(failover_chat(hedge_after: 0.2))
        ticker.stop
      end.wait

      expect(reply.content).to eq("first of two")
      expect(wait_for_hangup(backup, 0)).to be(true)
      expect(ticks).to be > 2 # the call waited through the scheduler
      expect(reply.attempts.map { |a| [a.attempt, a.cancelled?] }).to eq([[1, false], [2, true]])
    end

    it "does not hedge a primary that starts before hedge_after" do
      primary.enqueue({ text: "prompt primary", delay_first_token: 0.05 })
      reply = nil
      Async { reply, = ask(failover_chat(hedge_after: 2)) }.wait

      expect(reply.content).to eq("prompt primary")
      expect(backup.request_count).to eq(0)
    end
  end

  shared_examples "hedge_after: :auto" do
    it "hedges only once it has learnt the primary's first tokens, at their 95th percentile" do
      LlmFailover.configure { |c| c.state_store = store }
      primary.default = { text: "quick" }

      # Not enough samples yet: a late primary is waited for.
      primary.enqueue({ text: "late, no hedge yet", delay_first_token: 0.6 })
      reply, = ask(failover_chat(hedge_after: :auto))
      expect(reply.attempts.map(&:hedged?)).to eq([false])
      expect(backup.request_count).to eq(0)

      (LlmFailover::HedgeDelay::MIN_SAMPLES - 1).times { ask(failover_chat(hedge_after: :auto)) }
      samples = store.first_token_times("openai:gpt-4o")
      expect(samples.size).to eq(LlmFailover::HedgeDelay::MIN_SAMPLES)
      # The late start is among twenty: the 95th percentile is the slowest of them.
      expect(LlmFailover::HedgeDelay.percentile(samples)).to eq([samples.max, LlmFailover::HedgeDelay::FLOOR].max)

      primary.enqueue({ text: "late", delay_first_token: 20 })
      backup.enqueue({ text: "hedged" })
      reply, = ask(failover_chat(hedge_after: :auto))
      expect(reply.content).to eq("hedged")
      expect(reply.attempts.map { |a| [a.cancelled?, a.hedged?] }).to eq([[true, true], [false, true]])
      # The loser's wait is a sample too (a lower bound of its start).
      expect(store.first_token_times("openai:gpt-4o").size).to eq(LlmFailover::HedgeDelay::MIN_SAMPLES + 1)
      expect(store.first_token_times("anthropic:claude-sonnet-4-6").size).to eq(1)
    end
  end

  context "with the MemoryStateStore" do
    let(:store) { LlmFailover::MemoryStateStore.new }

    include_examples "hedge_after: :auto"
  end

  context "with a RedisStateStore" do
    before(:all) do
      skip "redis-server is not installed (bin/setup installs it)" unless RedisServer.available?
      @redis = RedisServer.new.start
    end

    after(:all) { @redis&.destroy }

    let(:store) { LlmFailover::RedisStateStore.new(url: @redis.url, namespace: "hedge#{rand(1 << 30)}") }

    include_examples "hedge_after: :auto"

    it "keeps at most WINDOW samples per target, newest first" do
      window = LlmFailover::FirstTokenTimes::WINDOW
      store.record_first_tokens("openai:gpt-4o", Array.new(window) { |i| i.to_f })
      store.record_first_tokens("openai:gpt-4o", [1000.0, 1001.0])
      times = store.first_token_times("openai:gpt-4o")
      expect(times.size).to eq(window)
      expect(times.first(3)).to eq([1001.0, 1000.0, window - 1.0])
    end
  end

  it "takes the 95th percentile of the samples, never below the floor" do
    expect(LlmFailover::HedgeDelay.percentile([1.0] * 5)).to be_nil
    samples = (1..100).map { |i| i / 10.0 }
    expect(LlmFailover::HedgeDelay.percentile(samples)).to eq(9.6)
    expect(LlmFailover::HedgeDelay.percentile([0.01] * 40)).to eq(LlmFailover::HedgeDelay::FLOOR)
  end
end
