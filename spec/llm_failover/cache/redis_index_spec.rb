# frozen_string_literal: true

require "spec_helper"
require "support/redis_server"
require "support/shared_index_examples"
require "support/holding_proxy"

# RedisIndex on a real redis-server: searched by Redis where it has vector sets
# (Redis 8), mirrored in each process otherwise (and wherever search: :mirror says).
RSpec.describe "LlmFailover::RedisIndex" do
  before(:all) do
    skip "redis-server is not installed (bin/setup installs it)" unless RedisServer.available?
    @redis = RedisServer.new.start
  end

  after(:all) { @redis&.destroy }

  let!(:namespace) { "spec#{rand(1 << 30)}" } # before a fork: the child uses the same
  let(:log) { StringIO.new }
  let(:logger) { Logger.new(log) }

  def reconnect; end # each RedisIndex makes its own connections in its process

  def client
    c = RedisClient.new(url: @redis.url)
    yield c
  ensure
    c&.close
  end

  def remove_from_store_behind_the_index
    client { |c| c.call("SCAN", "0", "MATCH", "#{namespace}:*", "COUNT", 1000)[1].each { |k| c.call("DEL", k) } }
  end

  it "asks Redis once which way it searches: Redis 8 itself, an older one through a mirror" do
    index = LlmFailover::RedisIndex.new(url: @redis.url, namespace: namespace, logger: logger)
    expect(index.search).to eq(RedisServer.major_version >= 8 ? :server : :mirror)
    expect(index.inspect).to include("search=#{index.search}")
  end

  it "says so at the first use when told to search on a Redis that cannot" do
    skip "redis-server #{RedisServer.version} has vector sets" if RedisServer.vector_sets?

    index = LlmFailover::RedisIndex.new(url: @redis.url, namespace: namespace, search: :server)
    expect { index.nearest(partition: "t", vector: [1.0], threshold: 0.9) }
      .to raise_error(LlmFailover::ConfigurationError, /cannot search/)
  end

  it "misses, warns once and asks again while Redis is down at its first use" do
    @redis.stop
    begin
      index = LlmFailover::RedisIndex.new(url: @redis.url, namespace: namespace, logger: logger)
      2.times { expect(index.nearest(partition: "t", vector: [1.0, 0.0], threshold: 0.9)).to be_nil }
      expect(index.add(partition: "t", vector: [1.0, 0.0], value: "dropped")).to be_nil
      expect { index.add(partition: "t", vector: [0.0, 0.0], value: "bad") }.to raise_error(ArgumentError)
      expect(index.search).to be_nil
      expect(log.string.lines.grep(/store failed/).size).to eq(1)
    ensure
      @redis.start
    end
    index.add(partition: "t", vector: [1.0, 0.0], value: "after")
    expect(index.search).not_to be_nil
    expect(index.nearest(partition: "t", vector: [1.0, 0.0], threshold: 0.9)&.first).to eq("after")
    expect(log.string.lines.grep(/answers again/).size).to eq(1)
  end

  describe "mirrored (streams)" do
    def new_index(**options)
      LlmFailover::RedisIndex.new(url: @redis.url, namespace: namespace, search: :mirror, logger: logger, **options)
    end

    include_examples "a shared semantic index"
    include_examples "a mirrored semantic index"

    it "answers from the mirror while Redis is down, with one warning, and mirrors again once it is back" do
      here = new_index
      here.add(partition: "t", vector: [1.0, 0.0], value: "kept")
      @redis.stop
      begin
        3.times { expect(here.nearest(partition: "t", vector: [1.0, 0.0], threshold: 0.9)&.first).to eq("kept") }
        here.add(partition: "t", vector: [0.0, 1.0], value: "local only")
        expect(here.nearest(partition: "t", vector: [0.0, 1.0], threshold: 0.9)&.first).to eq("local only")
        expect(log.string.lines.grep(/store failed/).size).to eq(1)
      ensure
        @redis.start
      end
      other = new_index
      other.add(partition: "t", vector: [0.6, 0.8], value: "after")
      expect(here.nearest(partition: "t", vector: [0.6, 0.8], threshold: 0.99)&.first).to eq("after")
      expect(log.string.lines.grep(/answers again/).size).to eq(1)
    end

    it "keeps the vectors as float32 in a stream per partition, under its namespace" do
      new_index.add(partition: "acme|m|d", vector: [0.5, 0.25], value: "v")
      client do |c|
        keys = c.call("SCAN", "0", "MATCH", "#{namespace}:*", "COUNT", 1000)[1]
        expect(keys.size).to eq(1)
        fields = c.call("XRANGE", keys.first, "-", "+").first[1].each_slice(2).to_h
        expect(fields["v"].unpack("e*")).to eq([0.5, 0.25])
        expect(fields["x"]).to eq("v")
        expect(c.call("TTL", keys.first)).to be > 0
      end
    end
  end

  describe "searched by Redis (vector sets)" do
    before(:all) do
      unless RedisServer.vector_sets?
        skip "redis-server #{RedisServer.version} has no vector sets (VADD, Redis 8): the server-side " \
             "RedisIndex specs are SKIPPED here; the Debian 13 leg of CI runs them"
      end
    end

    def new_index(**options)
      LlmFailover::RedisIndex.new(url: @redis.url, namespace: namespace, logger: logger, **options)
    end

    def engine
      LlmFailover::RedisIndex::VectorSets
    end

    def graph_dimensions
      24
    end

    include_examples "a shared semantic index"
    include_examples "a searching semantic index"

    it "keeps a float32 vector set (normalised), its values and their order per partition, all expiring ttl after the last add" do
      new_index(ttl: 600).add(partition: "acme|m|d", vector: [3.0, 4.0], value: "v")
      client do |c|
        keys = c.call("SCAN", "0", "MATCH", "#{namespace}:*", "COUNT", 1000)[1].sort
        tag = "{#{Digest::SHA256.hexdigest('acme|m|d')[0, 32]}}"
        expect(keys).to eq(%W[#{namespace}:vset-order:#{tag} #{namespace}:vset-values:#{tag} #{namespace}:vset:#{tag}])
        set = "#{namespace}:vset:#{tag}"
        expect(c.call("VINFO", set)).to include("quant-type" => "f32", "vector-dim" => 2)
        element = c.call("VRANDMEMBER", set)
        expect(c.call("HGET", "#{namespace}:vset-values:#{tag}", element)).to eq("v")
        expect(c.call("VEMB", set, element).map { |x| Float(x) }).to match([be_within(1e-6).of(0.6), be_within(1e-6).of(0.8)])
        keys.each { |k| expect(c.call("TTL", k)).to be_between(1, 600) }
      end
    end

    it "keeps a partition's newest max_per_partition entries, and one entry per vector" do
      here = new_index(max_per_partition: 5)
      12.times { |i| here.add(partition: "t", vector: [1.0, i.to_f], value: "entry #{i}") }
      here.add(partition: "t", vector: [2.0, 22.0], value: "entry 11 again") # the same direction as entry 11
      here.add(partition: "u", vector: [1.0, 0.0], value: "u")
      expect(here.size).to eq(6)
      expect(here.nearest(partition: "t", vector: [1.0, 0.0], threshold: 0.999)).to be_nil # entry 0 is gone
      expect(here.nearest(partition: "t", vector: [1.0, 7.0], threshold: 0.99999)&.first).to eq("entry 7")
      expect(here.nearest(partition: "t", vector: [1.0, 11.0], threshold: 0.99999)&.first).to eq("entry 11 again")
      expect(here.nearest(partition: "u", vector: [1.0, 0.0], threshold: 0.9)&.first).to eq("u")
    end

    # Runs +call+ with an index behind a proxy that holds the index's +command+, yields
    # while it is held (the spec changes the store), then returns what +call+ returned.
    def while_held(command, call, **options)
      proxy = HoldingProxy.new(port: @redis.port, command: command)
      index = LlmFailover::RedisIndex.new(url: proxy.url, namespace: namespace, logger: logger, **options)
      held = Thread.new do
        Thread.current.report_on_exception = false # its error is the spec's, through #value
        call.call(index)
      end
      expect(proxy.wait_until_held).to be(true)
      yield
      proxy.release
      held.value
    ensure
      proxy&.close
      held&.join
    end

    # A lookup is VSIM, then the values in a round trip of their own: held at the HMGET.
    def held_lookup(partition:, vector:, threshold:, &meanwhile)
      lookup = ->(index) { index.nearest(partition: partition, vector: vector, threshold: threshold) }
      while_held("HMGET", lookup, &meanwhile)
    end

    it "misses an entry cleared between VSIM and reading its value, though another partition has the same vector" do
      here = new_index
      here.add(partition: "t", vector: [1.0, 0.0], value: "before the clear")
      found = held_lookup(partition: "t", vector: [1.0, 0.0], threshold: 0.9) do
        here.clear
        here.add(partition: "u", vector: [1.0, 0.0], value: "another partition's")
      end
      expect(found).to be_nil
      expect(here.nearest(partition: "u", vector: [1.0, 0.0], threshold: 0.9)&.first).to eq("another partition's")
      expect(log.string).not_to include("store failed")
    end

    it "answers the next candidate when the best one was trimmed between VSIM and reading its value" do
      here = new_index(max_per_partition: 2)
      here.add(partition: "t", vector: [1.0, 0.0], value: "best")
      here.add(partition: "t", vector: [1.0, 0.2], value: "next") # cosine 0.98 to the query
      found = held_lookup(partition: "t", vector: [1.0, 0.0], threshold: 0.95) do
        here.add(partition: "t", vector: [0.0, 1.0], value: "newest") # the oldest, "best", goes
      end
      expect(found.first).to eq("next")
      expect(found.last).to be_within(1e-6).of(1 / Math.sqrt(1.04))
    end

    # An add writes the value, then calls VADD itself: held at that VADD.
    def held_add(partition:, vector:, value:, **options, &meanwhile)
      add = ->(index) { index.add(partition: partition, vector: vector, value: value) }
      while_held("VADD", add, **options, &meanwhile)
    end

    def keys_and_ttls
      client do |c|
        c.call("SCAN", "0", "MATCH", "#{namespace}:*", "COUNT", 1000)[1].to_h { |k| [k, c.call("TTL", k)] }
      end
    end

    it "leaves nothing behind, nor a key without a TTL, when a clear comes between an add's value and its vector" do
      here = new_index(ttl: 600)
      here.add(partition: "t", vector: [0.0, 1.0], value: "before the clear")
      held_add(partition: "t", vector: [1.0, 0.0], value: "added across the clear", ttl: 600) { here.clear }
      expect(here.nearest(partition: "t", vector: [1.0, 0.0], threshold: 0.9)).to be_nil
      expect(here.size).to eq(0)
      expect(keys_and_ttls.values).to all(be_between(1, 600))
      expect(log.string).not_to include("store failed")
    end

    it "takes the vector back out when its value was trimmed before the vector went in" do
      here = new_index(max_per_partition: 1)
      here.add(partition: "t", vector: [0.0, 1.0], value: "oldest")
      held_add(partition: "t", vector: [1.0, 0.0], value: "trimmed while held", max_per_partition: 1) do
        here.add(partition: "t", vector: [0.6, 0.8], value: "newest") # the held add's entry is the oldest now
      end
      expect(here.size).to eq(1)
      expect(here.nearest(partition: "t", vector: [0.6, 0.8], threshold: 0.99)&.first).to eq("newest")
      expect(here.nearest(partition: "t", vector: [1.0, 0.0], threshold: 0.9)).to be_nil
      expect(keys_and_ttls.values).to all(be > 0)
    end

    it "refuses an add whose partition was cleared and made again with another dimension before its vector went in" do
      here = new_index
      here.add(partition: "t", vector: [0.0, 1.0], value: "two dimensions")
      expect do
        held_add(partition: "t", vector: [1.0, 0.0], value: "refused") do
          here.clear
          here.add(partition: "t", vector: [1.0, 0.0, 0.0], value: "three dimensions")
        end
      end.to raise_error(ArgumentError, /dimension/)
      client do |c|
        tag = "{#{Digest::SHA256.hexdigest('t')[0, 32]}}"
        expect(c.call("HVALS", "#{namespace}:vset-values:#{tag}")).to eq(["three dimensions"])
        expect(c.call("ZCARD", "#{namespace}:vset-order:#{tag}")).to eq(1)
      end
      expect(here.nearest(partition: "t", vector: [1.0, 0.0, 0.0], threshold: 0.9)&.first).to eq("three dimensions")
    end

    it "misses while Redis is down, with one warning, and searches again once it is back" do
      here = new_index
      here.add(partition: "t", vector: [1.0, 0.0], value: "kept by Redis")
      @redis.stop
      begin
        3.times { expect(here.nearest(partition: "t", vector: [1.0, 0.0], threshold: 0.9)).to be_nil }
        expect(here.add(partition: "t", vector: [0.0, 1.0], value: "dropped")).to be_nil
        expect(here.size).to eq(0)
        expect(log.string.lines.grep(/store failed/).size).to eq(1)
      ensure
        @redis.start
      end
      here.add(partition: "t", vector: [0.0, 1.0], value: "after")
      expect(here.nearest(partition: "t", vector: [0.0, 1.0], threshold: 0.9)&.first).to eq("after")
      expect(log.string.lines.grep(/answers again/).size).to eq(1)
    end
  end
end
