# frozen_string_literal: true

# The response cache's cost: a hit against a network call to a provider on loopback
# (the gem's FakeProvider, unstreamed), with the stores an app would use: the gem's
# MemoryCache, ActiveSupport's MemoryStore, and Redis (a read/write store over
# redis-client against a redis-server this script starts on a free port, if installed).
# Figures are printed, never asserted.
#
#   bundle exec ruby bench/cache.rb          # N=2000 calls per row, best of ROUNDS=3
#
# A loopback call is the floor of a network call: a real provider adds 0.3 to 30 s.

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "llm_failover"
require "llm_failover/testing"
require "active_support"
require "active_support/cache"
require_relative "../spec/support/redis_server"

N = Integer(ENV.fetch("N", 2000))
ROUNDS = Integer(ENV.fetch("ROUNDS", 3))
PROMPT = "Summarize the refund policy in two sentences. " * 20 # ~1 KB: the key hashes it

# A store over redis-client: what an app without ActiveSupport's Redis store would write.
class RedisStore
  def initialize(client)
    @client = client
  end

  def read(key)
    @client.call("GET", key)
  end

  def write(key, value, expires_in: nil)
    expires_in ? @client.call("SET", key, value, "EX", expires_in.ceil) : @client.call("SET", key, value)
    true
  end
end

# Starts redis-server (no persistence) on a free loopback port, as the specs do;
# yields a RedisStore, or nil when Redis cannot be had.
def with_redis
  require "redis-client"
  server = RedisServer.new.start
  yield RedisStore.new(RedisClient.new(url: server.url))
rescue LoadError, RuntimeError, SystemCallError => e
  warn "redis row skipped: #{e.message}"
  yield nil
ensure
  server&.destroy
end

# Best round's mean microseconds per ask.
def measure(chat_options)
  best = Float::INFINITY
  ROUNDS.times do
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    N.times { LlmFailover.chat(model: "gpt-4o", provider: :openai, **chat_options).ask(PROMPT) }
    elapsed = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
    best = [best, elapsed / N * 1e6].min
  end
  best
end

rows = []
LlmFailover::Testing::FakeProvider.open do |fp|
  fp.default = { text: "Refunds within 30 days, receipt required. " * 3, usage: { input: 300, output: 30 } }
  LlmFailover.configure do |c|
    c.provider :openai, api: :openai, api_key: "sk-bench", base_url: fp.base_url(:openai)
  end
  measure(cache: false) # warm the connection
  rows << ["network call (FakeProvider, loopback)", measure(cache: false)]
  with_redis do |redis|
    stores = { "hit: LlmFailover::MemoryCache" => LlmFailover::MemoryCache.new,
               "hit: ActiveSupport::Cache::MemoryStore" => ActiveSupport::Cache::MemoryStore.new }
    stores["hit: Redis (redis-client, loopback)"] = redis if redis
    stores.each do |label, store|
      LlmFailover.chat(model: "gpt-4o", provider: :openai, cache: store).ask(PROMPT) # the one miss
      requests = fp.request_count
      rows << [label, measure(cache: store)]
      raise "#{label}: a hit made a request" unless fp.request_count == requests
    end
  end
end

network = rows.first[1]
puts format("%-42s %12s %10s", "N=#{N}, best of #{ROUNDS}", "us/call", "x network")
rows.each { |label, us| puts format("%-42s %12.1f %10.2f", label, us, us / network) }
