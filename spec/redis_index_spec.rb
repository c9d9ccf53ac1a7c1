# frozen_string_literal: true

require "spec_helper"
require_relative "support/redis_server"
require_relative "support/shared_index_examples"

RSpec.describe "LlmFailover::RedisIndex" do
  before(:all) do
    skip "redis-server is not installed (bin/setup installs it)" unless RedisServer.available?
    @redis = RedisServer.new.start
  end

  after(:all) { @redis&.destroy }

  let!(:namespace) { "spec#{rand(1 << 30)}" } # before a fork: the child uses the same
  let(:log) { StringIO.new }
  let(:logger) { Logger.new(log) }

  def new_index
    LlmFailover::RedisIndex.new(url: @redis.url, namespace: namespace, logger: logger)
  end

  def reconnect; end # each RedisIndex makes its own connections in its process

  def remove_from_store_behind_the_index
    client = RedisClient.new(url: @redis.url)
    client.call("SCAN", "0", "MATCH", "#{namespace}:vindex:*", "COUNT", 1000)[1].each { |k| client.call("DEL", k) }
    client.close
  end

  include_examples "a shared semantic index"

  it "drops another process's mirror when one process clears the index" do
    here = new_index
    here.add(partition: "t", vector: [1.0, 0.0], value: "before")
    other = new_index
    expect(other.nearest(partition: "t", vector: [1.0, 0.0], threshold: 0.9)&.first).to eq("before")
    here.clear
    expect(other.nearest(partition: "t", vector: [1.0, 0.0], threshold: 0.9)).to be_nil
    expect(other.mirror.size).to eq(0)
    here.add(partition: "t", vector: [0.0, 1.0], value: "after")
    expect(other.nearest(partition: "t", vector: [0.0, 1.0], threshold: 0.9)&.first).to eq("after")
  end

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
    here = new_index
    here.add(partition: "acme|m|d", vector: [0.5, 0.25], value: "v")
    client = RedisClient.new(url: @redis.url)
    keys = client.call("SCAN", "0", "MATCH", "#{namespace}:*", "COUNT", 1000)[1]
    expect(keys.size).to eq(1)
    entries = client.call("XRANGE", keys.first, "-", "+")
    fields = entries.first[1].each_slice(2).to_h
    expect(fields["v"].unpack("e*")).to eq([0.5, 0.25])
    expect(fields["x"]).to eq("v")
    expect(client.call("TTL", keys.first)).to be > 0
    client.close
  end
end
