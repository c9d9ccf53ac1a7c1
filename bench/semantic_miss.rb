# frozen_string_literal: true

# What the semantic cache adds to a call it cannot answer: the embedding of the question
# (a round trip to the embedding provider) and the index's scan, before the provider call,
# then the write of the answer, on the cache's own thread. Against the same call without
# the tier, in the same run, both providers the gem's FakeProvider on loopback (unstreamed).
# Every question is eight random words, so every lookup misses (the script checks it). Two rows with the tier:
# each call in a tenant of its own (an empty partition: the tier's own cost, the embedding
# round trip, hashing, the queued write), and every call in one tenant, whose partition
# grows to N x ROUNDS entries (the index's scan on top; bench/semantic_index.rb measures the
# index alone). The index is LlmFailover::MemoryIndex. Figures are printed, never asserted.
#
#   bundle exec ruby bench/semantic_miss.rb          # N=1000 calls per row, best of ROUNDS=3
#
# A loopback round trip is the floor: a real embedding provider adds 20 to 300 ms.

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "llm_failover"
require "llm_failover/testing"
require "securerandom"

N = Integer(ENV.fetch("N", 1000))
ROUNDS = Integer(ENV.fetch("ROUNDS", 3))

def index
  LlmFailover::MemoryIndex.new
end

# Best round's mean microseconds per call of the block.
def measure
  best = Float::INFINITY
  ROUNDS.times do
    questions = Array.new(N) { Array.new(8) { SecureRandom.hex(4) }.join(" ") } # no two alike
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    questions.each { |q| yield q }
    best = [best, (Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0) / N * 1e6].min
  end
  best
end

rows = []
LlmFailover::Testing::FakeProvider.open do |fp|
  LlmFailover::Testing::FakeProvider.open do |embedder|
    fp.default = { text: "Three to five working days.", usage: { input: 30, output: 8 } }
    LlmFailover.configure do |c|
      c.provider :openai, api: :openai, api_key: "sk-bench", base_url: fp.base_url(:openai)
      c.provider :embedder, api: :openai, api_key: "sk-bench-embed", base_url: embedder.base_url(:openai)
    end
    ask = ->(q) { LlmFailover.chat(model: "gpt-4o", provider: :openai).ask(q) }
    own_tenant = ->(q) { LlmFailover.chat(model: "gpt-4o", provider: :openai, cache_namespace: q).ask(q) }
    measure(&ask) # warm the connections
    rows << ["call without the semantic tier", measure(&ask)]
    rows << ["LlmFailover.embed of one question alone", measure { |q| LlmFailover.embed(q, model: "emb", provider: :embedder) }]
    semantic = LlmFailover::SemanticCache.new(embed_model: "emb", provider: :embedder, threshold: 0.99, index: index)
    LlmFailover.configuration.semantic_cache = semantic
    rows << ["with the semantic tier, a miss, empty partition", measure(&own_tenant)]
    semantic.flush
    before = fp.request_count
    rows << ["... a miss, one partition of up to #{N * ROUNDS} entries", measure(&ask)]
    misses = fp.request_count - before
    abort "bench/semantic_miss.rb: #{N * ROUNDS - misses} lookups hit; every one must miss" unless misses == N * ROUNDS
    semantic.flush
    hits = fp.request_count
    asked = embedder.requests.last.json["input"].first
    LlmFailover.chat(model: "gpt-4o", provider: :openai).ask(asked)
    abort "bench/semantic_miss.rb: expected a hit for a question asked before" unless fp.request_count == hits
  end
end

base = rows.first[1]
puts format("%-58s %12s %12s", "N=#{N}, best of #{ROUNDS} rounds", "us per call", "vs without")
rows.each { |label, us| puts format("%-58s %12.1f %11.2fx", label, us, us / base) }
