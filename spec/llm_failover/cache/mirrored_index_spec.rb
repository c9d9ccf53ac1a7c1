# frozen_string_literal: true

require "spec_helper"
require "support/redis_server"

# MirroredIndex: a shared index answered from this process's copy, here over Redis
# streams (RedisIndex, search: :mirror) on a real redis-server. The contract every
# mirroring index keeps is in spec/support/shared_index_examples.rb ("a mirrored
# semantic index"); these are the mirror's own bounds and its outage rule.
RSpec.describe LlmFailover::MirroredIndex do
  before(:all) do
    skip "redis-server is not installed (bin/setup installs it)" unless RedisServer.available?
    @redis = RedisServer.new.start
  end

  after(:all) { @redis&.destroy }

  let(:namespace) { "mirrored#{rand(1 << 30)}" }
  let(:log) { StringIO.new }

  def new_index(**options)
    LlmFailover::RedisIndex.new(url: @redis.url, namespace: namespace, search: :mirror, logger: Logger.new(log),
                                **options)
  end

  def axis(i, dim = 4)
    Array.new(dim) { |k| k == i ? 1.0 : 0.01 * k }
  end

  def value_near(index, i)
    index.nearest(partition: "t", vector: axis(i), threshold: 0.99)&.first
  end

  # Runs the block with redis-server stopped, and starts it again after.
  def while_redis_is_down
    @redis.stop
    yield
  ensure
    @redis.start
  end

  it "is what a RedisIndex told to mirror answers through" do
    index = new_index
    index.add(partition: "t", vector: axis(0), value: "zero")

    expect(index.search).to eq(:mirror)
    expect(index.mirror).to be_a(LlmFailover::MemoryIndex)
  end

  it "keeps the mirror within its own bounds while the store keeps every entry" do
    writer = new_index
    4.times { |i| writer.add(partition: "t", vector: axis(i), value: "v#{i}") }
    reader = new_index(mirror: LlmFailover::MemoryIndex.new(max_entries: 2))

    value_near(reader, 3)
    expect(reader.mirror.size).to eq(2)
    expect(reader.size).to eq(4)
  end

  # The spec's redis-server keeps nothing across a restart: the store comes back empty.
  it "counts its own mirror while the store is down, and the store's once it answers" do
    index = new_index
    3.times { |i| index.add(partition: "t", vector: axis(i), value: "v#{i}") }
    value_near(index, 0)

    while_redis_is_down do
      index.add(partition: "t", vector: axis(3), value: "local only")
      expect(index.size).to eq(4)
    end
    new_index.add(partition: "t", vector: axis(0), value: "after")
    expect(index.size).to eq(1)
    expect(log.string.lines.grep(/store failed/).size).to eq(1)
  end

  it "keeps an add made during an outage in this process only" do
    here = new_index
    here.add(partition: "t", vector: axis(0), value: "before")
    value_near(here, 0)

    while_redis_is_down { here.add(partition: "t", vector: axis(1), value: "local only") }
    here.add(partition: "t", vector: axis(2), value: "after")

    there = new_index
    expect([value_near(there, 1), value_near(there, 2)]).to eq([nil, "after"])
    expect(value_near(here, 1)).to eq("local only")
  end
end
