# frozen_string_literal: true

require "spec_helper"
require_relative "support/redis_server"
require "support/half_open_examples"

# A fleet sharing one RedisStateStore on a real redis-server: forked processes, and
# Redis going away and coming back under live calls.
RSpec.describe "A fleet sharing a RedisStateStore", :ruby_only do
  include_context "with fake providers"

  before(:all) do
    skip "redis-server is not installed (bin/setup installs it)" unless RedisServer.available?
    @redis = RedisServer.new.start
  end

  after(:all) { @redis&.destroy }

  let(:log) { StringIO.new }
  # A budget well above the 50 ms default: these specs count what the fleet shares,
  # and on a loaded machine (CI under the sanitizers) Redis can take longer than 50 ms
  # to answer, which sends a call to this process's own state instead. A stopped Redis
  # refuses at once, whatever the budget.
  let(:store) do
    LlmFailover::RedisStateStore.new(url: @redis.url, namespace: "fleet#{rand(1 << 30)}", logger: Logger.new(log),
                                     budget: 1.0)
  end

  before do
    LlmFailover.configure do |c|
      c.circuit_threshold = 3
      c.max_retries = 0
      c.state_store = store
    end
    primary.default = { error: :unavailable }
    backup.default = { text: "backup" }
  end

  # Forks +count+ processes that each make +calls+ calls, then waits for them. With a
  # block, the processes are forked first and start their calls once it has returned.
  # Returns the calls that failed, summed over the processes.
  def fleet(count, calls)
    go_reader, go_writer = IO.pipe
    pipes = Array.new(count) do
      reader, writer = IO.pipe
      pid = fork do
        reader.close
        go_writer.close
        go_reader.read # end of file: the parent has closed its end
        failed = 0
        calls.times do
          failover_chat.ask("hello")
        rescue LlmFailover::Error
          failed += 1
        end
        writer.write(failed.to_s)
        writer.close
        exit!(0)
      end
      writer.close
      [pid, reader]
    end
    go_reader.close
    yield if block_given?
    go_writer.close
    pipes.sum do |pid, reader|
      Process.wait(pid)
      reader.read.to_i
    end
  ensure
    go_writer&.close
  end

  it "stops four processes sending to a dead primary once the threshold is reached in total, " \
     "and lets one probe through per cooldown", :timing do
    LlmFailover.configure { |c| c.circuit_cooldown = 4 }
    expect(fleet(4, 10)).to eq(0) # the backup answered every call
    # The threshold, plus at most one request already in flight in each other process
    # when the third failure landed; none of the 40 calls after that.
    opened_with = primary.request_count
    expect(opened_with).to be_between(3, 3 + 3)
    expect(backup.request_count).to eq(40)
    until_at = LlmFailover.health.find { |t| t[:model] == "gpt-4o" }[:cooldown_until]
    sleep [until_at - Time.now + 0.1, 0].max # past the cooldown, as Redis holds it
    fleet(4, 5)
    expect(primary.request_count).to eq(opened_with + 1) # one probe fleet-wide; it failed and reopened
    h = LlmFailover.health.find { |t| t[:model] == "gpt-4o" }
    expect(h).to include(state: :open)
    expect(h[:failures]).to be >= 4
  end

  describe "the half-open probe" do
    before do
      LlmFailover.configure do |c|
        c.circuit_threshold = 1
        c.circuit_cooldown = 0.3
        c.request_timeout = SpecTime.scaled(10) # the probe's lock: its request's deadline
      end
      failover_chat.ask("opens it")
      sleep 0.35 # half-open
    end

    # Calls from four other processes while the probe (the thread the block starts) is
    # under way; returns the calls that failed and the probe's Reply. The processes are
    # forked before the probe starts: a child forked during a call would inherit the
    # call's memory without the thread that frees it (valgrind reports it lost there).
    def others_while
      probe = nil
      failed = fleet(4, 3) do
        probe = yield
        sleep 0.1 until primary.request_count == 2 # the probe reached the primary
      end
      [failed, probe.value]
    ensure
      probe&.join
    end

    it "keeps a slow probe the only request to the target until it reports, however long past the cooldown" do
      # Ten cooldowns, and longer than the other processes' 12 calls take on a loaded
      # machine, or under valgrind (stretched there).
      primary.enqueue({ text: "back", delay_headers: SpecTime.scaled(3) })
      failed, reply = others_while { Thread.new { failover_chat.ask("probe") } }
      expect(failed).to eq(0) # the backup answered them all
      expect(reply.provider).to eq(:openai)
      expect(primary.request_count).to eq(2) # the opening failure and the one probe
      expect(backup.request_count).to eq(1 + 12)
      expect(LlmFailover.health.find { |t| t[:model] == "gpt-4o" }).to include(state: :closed)
      primary.default = { text: "back" }
      expect(failover_chat.ask("closed again").provider).to eq(:openai)
    end

    it "frees the probe when its call ends without a result that counts, for the next call to probe" do
      primary.enqueue({ error: :bad_request }) # a 400: the call fails, the circuit learns nothing
      expect { failover_chat.ask("probe") }.to raise_error(LlmFailover::BadRequestError)
      primary.default = { text: "back" }
      expect(failover_chat.ask("the next probe").provider).to eq(:openai) # not ten seconds later
      expect(primary.request_count).to eq(3)
    end

    it "frees the probe of a backup the call never reached" do
      LlmFailover.configure { |c| c.circuit_cooldown = 60 }
      reversed = -> { LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic, backup_model: "gpt-4o", backup_provider: :openai) }
      backup.enqueue({ text: "the primary of this chat" })
      expect(reversed.call.ask("answered before its backup").provider).to eq(:anthropic)
      primary.default = { text: "back" }
      expect(failover_chat.ask("probes gpt-4o").provider).to eq(:openai)
    end
  end

  it_behaves_like "a half-open probe that a late failure leaves alone"
  it_behaves_like "a breaker that every success resets"

  it "costs one round trip for a call its primary answers: the health of its targets, nothing on the success" do
    primary.default = { text: "fine" }
    redis = RedisClient.new(url: @redis.url)
    evalshas = -> { redis.call("INFO", "commandstats")[/cmdstat_evalsha:calls=(\d+)/, 1].to_i }
    failover_chat.ask("loads the scripts")
    before = evalshas.call
    3.times { expect(failover_chat.ask("hello").provider).to eq(:openai) }
    expect(evalshas.call - before).to eq(3 * 2) # one pipelined read per call, one script per target
    primary.enqueue({ error: :unavailable })
    expect(failover_chat.ask("fails once").provider).to eq(:anthropic)
    before = evalshas.call
    failover_chat.ask("resets the count")
    expect(evalshas.call - before).to eq(2 + 1) # the failure it knows of: the success writes
    expect(store.health.find { |h| h[:model] == "gpt-4o" }).to include(failures: 0)
  ensure
    redis&.close
  end

  it "keeps answering while Redis is down (one warning), and shares again once it is back" do
    LlmFailover.configure { |c| c.circuit_cooldown = 60 }
    failover_chat.ask("one failure shared")
    @redis.stop
    begin
      replies = Array.new(8) { failover_chat.ask("redis is down") }
      expect(replies.map(&:content).uniq).to eq(["backup"])
      # this process's own state, which kept the shared failure, opened the circuit
      # after two more
      expect(primary.request_count).to eq(1 + 2)
      expect(log.string.scan(/unreachable/).size).to eq(1)
    ensure
      @redis.start
    end
    sleep 1.1 # the store asks Redis again at most once a second
    failover_chat.ask("redis is back")
    expect(log.string).to include("sharing resumed")
    expect(LlmFailover.health.find { |t| t[:model] == "gpt-4o" }).to include(state: :closed, failures: 1)
    expect(log.string.scan(/unreachable/).size).to eq(1)
  end

  # Issue 23, item 8: threads calling all along while Redis is stopped and started
  # twice. Requests under way when it stops, pooled connections that the restart left
  # dead: one warning per outage, one notice per recovery, nothing in between.
  it "logs one warning per Redis outage and one notice per recovery under concurrent calls" do
    LlmFailover.configure { |c| c.circuit_cooldown = 60 }
    primary.default = { text: "primary" }
    stop = false
    workers = Array.new(6) do
      Thread.new do
        calls = 0
        until stop
          failover_chat.ask("hello")
          calls += 1
        end
        calls
      end
    end
    wait_for { primary.request_count >= 30 } # every worker's pooled connection is in use
    2.times do
      @redis.stop
      seen = primary.request_count
      wait_for { primary.request_count >= seen + 30 } # calls go on, on this process's own state
      @redis.start
      wait_for { log.string.scan(/sharing resumed/).size == log.string.scan(/unreachable/).size }
      seen = primary.request_count
      wait_for { primary.request_count >= seen + 60 } # stale connections met, and past
    end
    stop = true
    expect(workers.map(&:value)).to all(be_positive)
    expect(log.string.scan(/unreachable/).size).to eq(2)
    expect(log.string.scan(/sharing resumed/).size).to eq(2)
    expect(store.connected?).to be(true)
  ensure
    stop = true
    workers&.each(&:join)
    @redis.start unless @redis.running?
  end

  # Issue 23, item 9: a bad value is its key's problem, never an outage.
  it "resets a key holding garbage, says so once, and goes on sharing for every other key" do
    LlmFailover.configure { |c| c.circuit_cooldown = 60 }
    primary.default = { text: "primary" }
    raw = RedisClient.new(url: @redis.url)
    tenant = ->(name) { failover_chat(quota: 100, quota_key: name, quota_window: :day) }
    tenant.call("tenant-a").ask("hello")
    quota_a = raw.call("KEYS", "#{store.namespace}:{quota:tenant-a}:*").first
    raw.call("SET", quota_a, "garbage")
    reversed = LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic)
    raw.call("SET", "#{store.namespace}:{anthropic:claude-sonnet-4-6}:circuit", "garbage") # a string, not a hash

    3.times { tenant.call("tenant-b").ask("hello") }
    primary.enqueue({ error: :unavailable })
    expect(failover_chat.ask("a healthy target's 503").provider).to eq(:anthropic)
    expect(raw.call("HGET", "#{store.namespace}:{openai:gpt-4o}:circuit", "failures")).to eq("1") # reached Redis
    quota_b = raw.call("KEYS", "#{store.namespace}:{quota:tenant-b}:*").first
    expect(raw.call("GET", quota_b)).to eq("3")

    2.times { tenant.call("tenant-a").ask("hello") }
    expect(raw.call("GET", quota_a)).to eq("2") # reset, then counted again
    2.times { expect(reversed.ask("hello").provider).to eq(:anthropic) }
    expect(raw.call("TYPE", "#{store.namespace}:{anthropic:claude-sonnet-4-6}:circuit")).not_to eq("string")
    expect(LlmFailover.health.map { |t| t[:model] }).to include("gpt-4o")
    expect(log.string).not_to include("unreachable")
    expect(log.string.scan(/cannot read/).size).to eq(2) # once for each key
    expect(store.connected?).to be(true)
  ensure
    raw&.close
  end

  it "sends one on_chain_exhausted per feature and error class per window for the whole fleet" do
    LlmFailover.configure { |c| c.circuit_threshold = 0 }
    backup.default = { error: :overloaded }
    results = Array.new(4) do
      reader, writer = IO.pipe
      pid = fork do
        reader.close
        alerts = 0
        LlmFailover.configure { |c| c.on_chain_exhausted = ->(_) { alerts += 1 } }
        3.times { failover_chat(feature: "summary").ask("down") rescue LlmFailover::Error }
        writer.write(alerts.to_s)
        writer.close
        exit!(0)
      end
      writer.close
      [pid, reader]
    end
    alerts = results.sum do |pid, reader|
      Process.wait(pid)
      reader.read.to_i
    end
    expect(alerts).to eq(1)
  end

  describe "llm_failover health" do
    require "llm_failover/cli"

    def run_cli(*argv, env: {})
      out = StringIO.new
      err = StringIO.new
      code = LlmFailover::CLI.run(argv, out: out, err: err, env: env)
      [code, out.string, err.string]
    end

    it "prints each target's circuit from the fleet's Redis" do
      LlmFailover.configure { |c| c.circuit_cooldown = 60 }
      3.times { failover_chat.ask("open it") }
      code, out, = run_cli("health", "--namespace", store.namespace, env: { "REDIS_URL" => @redis.url })
      expect(code).to eq(0)
      expect(out.lines.first.split).to eq(%w[provider model state failures opened_at cooldown_until last_error headroom])
      expect(out).to match(/^openai\s+gpt-4o\s+open\s+3\s+\S+ \S+\s+\S+ \S+\s+ServiceUnavailableError\s+-$/)
    end

    it "needs a Redis, and says when it cannot reach it" do
      expect(run_cli("health", env: {})).to match([2, "", /no Redis to read/])
      code, _, err = run_cli("health", "--redis-url", "redis://127.0.0.1:#{@redis.port + 1}", env: {})
      expect(code).to eq(1)
      expect(err).to include("unreachable")
    end
  end
end
