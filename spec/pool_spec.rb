# frozen_string_literal: true

require "spec_helper"
require_relative "support/redis_server"

# c.pool: one target served by several hosts, each a provider entry with its own key,
# circuit and headroom (read from its own rate-limit headers, which the FakeProvider
# sends per lane as each protocol's host does).
RSpec.describe "Pools" do
  let(:fp) { start_fake_provider }
  let(:east) { fp.on(:east) }
  let(:west) { fp.on(:west) }
  let(:claude) { fp.on(:claude) }
  let(:backup) { fp.on(:backup) }

  before do
    LlmFailover.configure do |c|
      c.provider :east, api: :openai, api_key: "sk-east-0123456789", base_url: east.base_url(:openai)
      c.provider :west, api: :openai, api_key: "sk-west-0123456789", base_url: west.base_url(:openai)
      c.provider :claude, api: :anthropic, api_key: "sk-ant-claude-0123", base_url: claude.base_url(:anthropic)
      c.provider :backup, api: :anthropic, api_key: "sk-ant-backup-0123", base_url: backup.base_url(:anthropic)
      c.pool :gpt, hosts: [{ provider: :east, weight: 2 }, { provider: :west }, { provider: :claude }]
      c.price :east, "gpt-4o", input: 2.50, output: 10.00
      c.price :west, "gpt-4o", input: 2.50, output: 10.00
      c.price :claude, "gpt-4o", input: 3.00, output: 15.00
      fast_policy(c)
    end
  end

  def pool_chat(**options)
    LlmFailover.chat(model: "gpt-4o", provider: :gpt, backup_model: "claude-sonnet-4-6", backup_provider: :backup,
                     **options)
  end

  # Every host of the pool but +host+ spent: each answers its next request with a 429
  # for a minute (no request left), and pool calls go on until each has (each call
  # moves to a sibling). From then on the pool's calls go to +host+ alone.
  def only(host)
    others = %i[east west claude] - [host]
    others.each { |h| fp.on(h).rate_limit(requests: 0, per: 60) }
    sent = others.to_h { |h| [h, fp.on(h).request_count] }
    refused = -> { others.all? { |h| fp.on(h).request_count > sent[h] } }
    50.times do
      break if refused.call

      pool_chat.ask("spend the others")
    end
    expect(refused.call).to be(true)
  end

  it "splits calls by weight: each host's share within 0.07 of its weight's over 600 calls" do
    hosts = Array.new(600) { pool_chat.ask("hello").host }.tally
    expect(hosts.keys).to contain_exactly(:east, :west, :claude)
    expect(hosts[:east] / 600.0).to be_within(0.07).of(0.5)
    expect(hosts[:west] / 600.0).to be_within(0.07).of(0.25)
    expect(hosts[:claude] / 600.0).to be_within(0.07).of(0.25)
    expect(backup.request_count).to eq(0)
  end

  it "records each attempt's host beside the pool's name, priced at the host's price" do
    reply = pool_chat.ask("hello")
    record = reply.attempts.last
    expect(record.provider).to eq(:gpt)
    expect(record.host).to eq(reply.host)
    expect(record.to_h[:host]).to eq(reply.host.to_s)
    price = reply.host == :claude ? [3.00, 15.00] : [2.50, 10.00]
    expect(record.cost).to eq((BigDecimal(price[0].to_s) * record.input_tokens +
                               BigDecimal(price[1].to_s) * record.output_tokens) / 1_000_000)
  end

  it "gives a host that said it has no requests left none until its window refills" do
    LlmFailover.configure { |c| c.retry_max_interval = 0.5 } # a refill 3 s away is not waited for
    only(:east) # west and claude are spent for a minute
    east.rate_limit(requests: 2, per: SpecTime.scaled(3))
    sent = east.request_count
    2.times { expect(pool_chat.ask("hello").host).to eq(:east) } # "0 left" after the second
    5.times { expect(pool_chat.ask("hello").host).to eq(:backup) }
    expect(east.request_count).to eq(sent + 2) # none after it said 0 left: no 429 was needed
    skipped = pool_chat.ask("again").attempts.select(&:skipped?)
    expect(skipped.map(&:host)).to contain_exactly(:east, :west, :claude)
    expect(skipped.find { |r| r.host == :east }.error_message).to match(/no headroom/)
    # Once its window has refilled, it takes calls again.
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + SpecTime.scaled(10)
    host = nil
    loop do
      host = pool_chat.ask("later").host
      break if host == :east || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.2
    end
    expect(host).to eq(:east)
  end

  it "moves a failing host's call to a sibling at once, never to the backup first" do
    east.default = { error: :server }
    west.default = { error: :overloaded }
    20.times do
      reply = pool_chat.ask("hello")
      expect(reply.host).to eq(:claude)
      expect(reply.failover?).to be(false)
      expect(reply.attempts.map(&:host).last).to eq(:claude)
      expect(reply.attempts.map(&:host).tally.values).to all(eq(1)) # no host retried
    end
    expect(backup.request_count).to eq(0)
  end

  it "fails over to the backup once every host has failed, after max_retries + 1 attempts in the pool" do
    [east, west, claude].each { |h| h.default = { error: :unavailable } }
    reply = pool_chat.ask("hello") # max_retries 3: each host once, then the last one again
    expect(reply.host).to eq(:backup)
    hosts = reply.attempts.map(&:host)
    expect(hosts.size).to eq(4 + 1)
    expect(hosts.first(3)).to contain_exactly(:east, :west, :claude)
    expect(hosts[3]).to eq(hosts[2])
  end

  it "raises a wrong key from one host, never hides it with a sibling or the backup" do
    only(:east)
    east.default = { error: :unauthorized }
    expect { pool_chat.ask("hello") }.to raise_error(LlmFailover::UnauthorizedError) { |e|
      expect(e.attempts.map(&:host)).to eq([:east])
    }
    expect(backup.request_count).to eq(0)
  end

  it "withdraws a host's streamed words before a sibling answers" do
    west.default = { text: "half of an answer", cut_after: 2 }
    LlmFailover.configure { |c| c.pool :two, hosts: [{ provider: :west }, { provider: :east }] }
    chat = LlmFailover.chat(model: "gpt-4o", provider: :two)
    chunks, block = collect_chunks
    until chunks.any?(&:reset?)
      chunks.clear
      reply = chat.ask("hello", &block)
    end
    expect(reply.host).to eq(:east)
    after_reset = chunks.drop_while { |c| !c.reset? }.drop(1)
    expect(after_reset.map(&:content).join).to eq(reply.content)
    expect(chat.messages.last.content).to eq(reply.content)
  end

  it "hedges a pool host's late first token to the backup" do
    [east, west, claude].each { |h| h.default = { text: "late", delay_first_token: SpecTime.scaled(5) } }
    backup.default = { text: "from the backup" }
    reply = pool_chat(hedge_after: 0.3).ask("hello") { |_| }
    expect(reply.host).to eq(:backup)
    expect(reply.attempts.map(&:hedged?)).to eq([true, true])
    expect(reply.attempts.first.cancelled?).to be(true) # the pool's host, cut
    expect(%i[east west claude]).to include(reply.attempts.first.host)
  end

  it "keeps a tool loop's later turns on the host the ask started on" do
    weather = Class.new(LlmFailover::Tool) do
      tool_name "weather"
      description "The weather"
      param :city, type: :string
      def execute(city:) = { city: city, temp: 21 }
    end
    [east, west, claude].each do |h|
      h.enqueue({ tool_calls: [{ name: "weather", arguments: { "city" => "Oslo" } }] }, { text: "Sunny" })
    end
    10.times do
      reply = pool_chat.with_tool(weather).ask("Weather in Oslo?")
      expect(reply.content).to eq("Sunny")
      expect(reply.attempts.map(&:host).uniq).to eq([reply.host])
      fp.on(reply.host).enqueue({ tool_calls: [{ name: "weather", arguments: { "city" => "Oslo" } }] },
                                { text: "Sunny" })
    end
  end

  it "lists each host's circuit and headroom in LlmFailover.health" do
    only(:east)
    east.rate_limit(requests: 10, tokens: 50_000, per: 60)
    expect(pool_chat.ask("hello").host).to eq(:east)
    row = LlmFailover.health.find { |h| h[:provider] == :east }
    expect(row).to include(model: "gpt-4o", state: :closed)
    expect(row[:headroom]).to include(requests: 9)
    expect(row[:headroom][:tokens]).to be_between(1, 50_000)
    expect(row[:headroom][:requests_reset_at]).to be_between(Time.now, Time.now + 61)
  end

  describe "configuration" do
    it "is used wherever a provider's name is: the backup may be a pool" do
      LlmFailover.configure { |c| c.pool :claudes, hosts: [{ provider: :claude }, { provider: :backup }] }
      east.default = { error: :unavailable }
      reply = LlmFailover.chat(model: "gpt-4o", provider: :east, backup_model: "claude-x",
                               backup_provider: :claudes).ask("hello")
      expect(reply.provider).to eq(:claudes)
      expect(%i[claude backup]).to include(reply.host)
      expect(reply.failover?).to be(true)
    end

    it "refuses a host that is not a provider, a bad weight, a name a provider has" do
      expect { LlmFailover.configure { |c| c.pool :p, hosts: [{ provider: :nope }] } }
        .to raise_error(LlmFailover::ConfigurationError, /host :nope is not a configured provider/)
      expect { LlmFailover.configure { |c| c.pool :p, hosts: [{ provider: :east, weight: 0 }] } }
        .to raise_error(LlmFailover::ConfigurationError, /weight must be a positive number/)
      expect { LlmFailover.configure { |c| c.pool :p, hosts: [{ provider: :east }, { provider: :east }] } }
        .to raise_error(LlmFailover::ConfigurationError, /:east is a host twice/)
      expect { LlmFailover.configure { |c| c.pool :east, hosts: [{ provider: :west }] } }
        .to raise_error(LlmFailover::ConfigurationError, /a provider has that name/)
      expect { LlmFailover.configure { |c| c.pool :p, hosts: [] } }
        .to raise_error(LlmFailover::ConfigurationError, /non-empty Array/)
    end

    it "takes a host redeclared after the pool, and never shows a key" do
      LlmFailover.configure do |c|
        c.provider :east, api: :openai, api_key: "sk-east-NEWKEY-9876", base_url: east.base_url(:openai)
      end
      only(:east)
      pool_chat.ask("hello")
      expect(east.requests.last.headers["authorization"]).to eq("Bearer sk-east-NEWKEY-9876")
      shown = [LlmFailover.configuration.inspect, LlmFailover.configuration.pools[:gpt].inspect]
      expect(shown.join).not_to include("NEWKEY")
      expect(LlmFailover.configuration.pools[:gpt].inspect).to include("east*2")
    end
  end

  describe "with a fleet sharing Redis", :ruby_only do
    before(:all) do
      skip "redis-server is not installed (bin/setup installs it)" unless RedisServer.available?
      @redis = RedisServer.new.start
    end

    after(:all) { @redis&.destroy }

    before do
      store = LlmFailover::RedisStateStore.new(url: @redis.url, namespace: "pool#{rand(1 << 30)}", budget: 1.0)
      LlmFailover.configure { |c| c.state_store = store }
    end

    def commands(name)
      redis = RedisClient.new(url: @redis.url)
      redis.call("INFO", "commandstats")[/cmdstat_#{name}:calls=(\d+)/, 1].to_i
    ensure
      redis&.close
    end

    it "shares a host's cooldown: another process's calls pass it over until it refills" do
      only(:east)
      east.rate_limit(requests: 1, per: 60)
      sent = east.request_count
      pid = fork do
        # Its one request left: east answers, and says it has none for a minute.
        reply = LlmFailover.chat(model: "gpt-4o", provider: :gpt).ask("from the other process")
        exit!(reply.host == :east ? 0 : 1)
      end
      expect(Process.wait2(pid).last.success?).to be(true)
      expect(east.request_count).to eq(sent + 1)
      # This process never heard east say so: Redis tells it.
      10.times { expect(pool_chat.ask("here").host).to eq(:backup) }
      expect(east.request_count).to eq(sent + 1)
      expect(LlmFailover.health.find { |h| h[:provider] == :east }[:headroom]).to include(requests: 0)
      require "llm_failover/cli"
      out = StringIO.new
      code = LlmFailover::CLI.run(["health", "--redis-url", @redis.url, "--namespace",
                                   LlmFailover.configuration.state_store.namespace], out: out, err: StringIO.new, env: {})
      expect(code).to eq(0)
      expect(out.string).to match(/^east\s+gpt-4o\s+closed\s+0\s.*0 requests until \d{4}-\d\d-\d\d /)
    end

    it "costs one round trip for a call a pool answers; a host left dry is one write more" do
      pool_chat.ask("loads the scripts")
      evalshas = commands("evalsha")
      sets = commands("set")
      3.times { pool_chat.ask("hello") }
      expect(commands("evalsha") - evalshas).to eq(3 * 4) # one pipelined read per call, one script per host
      expect(commands("set")).to eq(sets)
      only(:east)
      east.rate_limit(requests: 1, per: 60)
      sets = commands("set")
      expect(pool_chat.ask("its last one").host).to eq(:east)
      expect(commands("set") - sets).to eq(1) # east's requests: 0 for the fleet
    end
  end
end
