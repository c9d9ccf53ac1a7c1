# frozen_string_literal: true

require "spec_helper"
require "support/redis_server"

# The quota part of the state-store protocol (LlmFailover::QuotaCounters), one contract
# for both stores.
RSpec.shared_examples "a store of quota counters" do
  it "reserves while the counter is below the limit, then refuses and leaves it" do
    expect(Array.new(3) { store.reserve_quota("t", "p1", 1, 3, 60) }).to eq([[true, 1], [true, 2], [true, 3]])
    expect(store.reserve_quota("t", "p1", 1, 3, 60)).to eq([false, 3])
    expect(store.quota_used("t", "p1")).to eq(3)
  end

  it "gives units back, never below zero, and adds tokens past the limit" do
    store.reserve_quota("t", "p1", 1, 10, 60)
    expect(store.adjust_quota("t", "p1", 16, 60)).to eq(17)
    expect(store.reserve_quota("t", "p1", 1, 10, 60)).to eq([false, 17])
    expect(store.adjust_quota("t", "p1", -20, 60)).to eq(0)
    expect(store.adjust_quota("t", "missing", 5, 60)).to eq(5)
  end

  it "keeps each key and each period apart" do
    store.reserve_quota("a", "p1", 1, 5, 60)
    store.reserve_quota("a", "p2", 1, 5, 60)
    store.reserve_quota("b", "p1", 1, 5, 60)
    store.reserve_quota("a", "p1", 1, 5, 60)
    expect([store.quota_used("a", "p1"), store.quota_used("a", "p2"), store.quota_used("b", "p1")]).to eq([2, 1, 1])
    expect(store.quota_used("c", "p1")).to eq(0)
  end

  it "forgets a counter once its period's time is up" do
    store.reserve_quota("t", "p1", 1, 5, 0.2)
    sleep 0.3
    expect(store.quota_used("t", "p1")).to eq(0)
    expect(store.reserve_quota("t", "p1", 1, 5, 0.2)).to eq([true, 1])
  end
end

RSpec.describe "LlmFailover::MemoryStateStore's quota counters" do
  subject(:store) { LlmFailover::MemoryStateStore.new }

  it_behaves_like "a store of quota counters"
end

RSpec.describe "LlmFailover::RedisStateStore's quota counters" do
  before(:all) do
    skip "redis-server is not installed (bin/setup installs it)" unless RedisServer.available?
    @redis = RedisServer.new.start
  end

  after(:all) { @redis&.destroy }

  subject(:store) { LlmFailover::RedisStateStore.new(url: @redis.url, namespace: "q#{rand(1 << 30)}", budget: 2) }

  it_behaves_like "a store of quota counters"

  it "keeps one key per quota and period, hash-tagged, expiring with the period" do
    store.reserve_quota("tenant-42", "2026-12", 1, 5, 3600)
    store.adjust_quota("tenant-42", "2026-12", 4, 3600)
    client = RedisClient.new(url: @redis.url)
    expect(client.call("KEYS", "#{store.namespace}:*")).to eq(["#{store.namespace}:{quota:tenant-42}:2026-12"])
    expect(client.call("PTTL", "#{store.namespace}:{quota:tenant-42}:2026-12")).to be_between(3_500_000, 3_600_000)
  ensure
    client&.close
  end
end

RSpec.describe LlmFailover::QuotaWindow do
  let(:now) { Time.utc(2026, 12, 31, 23, 20, 30) }

  it "names calendar periods in UTC and says how long each has left" do
    expect(described_class.new(:hour).at(now)).to eq(["2026-12-31T23", 2370.0])
    expect(described_class.new(:day).at(now)).to eq(["2026-12-31", 2370.0])
    expect(described_class.new(:month).at(now)).to eq(["2026-12", 2370.0])
    expect(described_class.new(:month).at(Time.new(2027, 1, 1, 0, 30, 0, "+01:00"))).to eq(["2026-12", 1800.0])
  end

  it "aligns a period of seconds on the Unix epoch" do
    expect(described_class.new(60).at(now)).to eq(["60s:#{now.to_i / 60}", 30.0])
  end
end
