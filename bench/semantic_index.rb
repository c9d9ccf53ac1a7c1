# frozen_string_literal: true

# The semantic cache's index: lookup time and memory per entry of MemoryIndex (the C
# core's int8 scan with float rescoring) for 1k, 10k and 100k entries of 1,536
# dimensions in one partition, beside the same exact search as a plain Ruby scan and,
# when the numo-narray gem loads, as a Numo::SFloat matrix product. Then the shared
# indexes (RedisIndex, ActiveRecordIndex on PostgreSQL), searched by the server and
# mirrored, on servers of the bench's own (bench/shared_index.rb). Figures are
# printed, never asserted.
#
#   bundle exec ruby bench/semantic_index.rb              # SIZES=1000,10000,100000
#   SIZES=10000 QUERIES=50 bundle exec ruby bench/semantic_index.rb
#   BASELINE=0.8 bundle exec ruby bench/semantic_index.rb # unrelated vectors at cosine ~0.8
#   SIZES= SHARED=redis SHARED_SIZES=10000 bundle exec ruby bench/semantic_index.rb
#                                 # the shared part alone (SHARED=none: without it)
#
# Data: random vectors (components roughly normal), or with BASELINE a shared
# direction added so that two unrelated vectors have about that cosine, as the
# embeddings of unrelated texts often do. Queries alternate a stored vector plus
# noise (a hit at 0.92) and a fresh vector (a miss). Each lookup is timed alone on
# one thread; the table shows the median. The Ruby and Numo scans compute the same
# best entry (checked against the index's answer).

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "llm_failover"

SIZES = ENV.fetch("SIZES", "1000,10000,100000").split(",").map { |s| Integer(s) }
DIM = Integer(ENV.fetch("DIM", 1536))
QUERIES = Integer(ENV.fetch("QUERIES", 40))
RUBY_QUERIES = Integer(ENV.fetch("RUBY_QUERIES", 3))
BASELINE = Float(ENV.fetch("BASELINE", 0))
THRESHOLD = 0.92
$stdout.sync = true

begin
  require "numo/narray"
rescue LoadError
  nil
end

def rss_kb
  File.read("/proc/self/status")[/VmRSS:\s+(\d+)/, 1].to_i
end

def now
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

def median(xs)
  s = xs.sort
  s[s.size / 2]
end

# Components roughly normal: the sum of two uniforms from one unpack of random bytes.
def noise(rng, dim)
  rng.bytes(dim * 4).unpack("s*").each_slice(2).map { |a, b| (a + b) / 65_536.0 }
end

SHARED = noise(Random.new(1), DIM).freeze
# Unrelated vectors at cosine ~BASELINE: a*shared + noise with a*a*|s|^2 / (a*a*|s|^2 + |n|^2) = BASELINE.
SHARED_WEIGHT = BASELINE.positive? ? Math.sqrt(BASELINE / (1 - BASELINE)) : 0.0

def vector(rng)
  n = noise(rng, DIM)
  return n if SHARED_WEIGHT.zero?

  n.each_index { |i| n[i] += SHARED_WEIGHT * SHARED[i] }
  n
end

def normalise(v)
  norm = Math.sqrt(v.sum { |x| x * x })
  v.map { |x| x / norm }
end

def ruby_scan(rows, query, threshold)
  best = nil
  best_score = threshold
  rows.each_with_index do |row, i|
    dot = 0.0
    j = 0
    while j < DIM
      dot += row[j] * query[j]
      j += 1
    end
    if dot >= best_score
      best_score = dot
      best = i
    end
  end
  best && [best, best_score]
end

def fmt_ms(s)
  s.nil? ? "-" : format("%.3f ms", s * 1000)
end

puts "MemoryIndex kernel: #{LlmFailover::MemoryIndex.kernel}; #{DIM} dimensions; threshold #{THRESHOLD}; " \
     "#{BASELINE.positive? ? "unrelated vectors at cosine ~#{BASELINE}" : 'random vectors'}"
puts "numo-narray: #{defined?(Numo::SFloat) ? Gem.loaded_specs['numo-narray']&.version || 'loaded' : 'not installed'}"
puts

rows = []
SIZES.each do |n|
  GC.start
  rng = Random.new(n)
  index = LlmFailover::MemoryIndex.new(max_entries: nil, max_bytes: nil)
  stored = Array.new(n) { vector(rng) } # the Ruby and Numo scans read the same vectors
  GC.start
  rss_before = rss_kb
  t0 = now
  stored.each_with_index do |v, i|
    index.add(partition: "tenant|text-embedding-3-small|digest", vector: v, value: i.to_s)
  end
  add_s = (now - t0) / n
  rss_index = rss_kb
  stats = index.stats

  queries = Array.new(QUERIES) do |q|
    if q.even?
      base = stored[rng.rand(n)]
      jitter = noise(rng, DIM)
      base.each_with_index.map { |x, i| x + 0.1 * jitter[i] } # cosine ~0.99 to base
    else
      vector(rng)
    end
  end

  index_times = { hit: [], miss: [] }
  answers = queries.map do |q|
    t = now
    got = index.nearest(partition: "tenant|text-embedding-3-small|digest", vector: q, threshold: THRESHOLD)
    index_times[got ? :hit : :miss] << now - t
    got
  end

  normalised = stored.map { |v| normalise(v) }
  stored = nil
  GC.start
  ruby_times = []
  queries.first(RUBY_QUERIES).each_with_index do |q, k|
    t = now
    best = ruby_scan(normalised, normalise(q), THRESHOLD)
    ruby_times << now - t
    agree = best.nil? ? answers[k].nil? : answers[k] && Integer(answers[k][0]) == best[0]
    warn "the Ruby scan disagrees with the index on query #{k}" unless agree
  end

  numo_time = nil
  if defined?(Numo::SFloat)
    matrix = Numo::SFloat.cast(normalised)
    numo_times = queries.first(QUERIES).each_with_index.map do |q, k|
      t = now
      scores = matrix.dot(Numo::SFloat.cast(normalise(q)))
      i = scores.max_index
      best = scores[i] >= THRESHOLD ? i : nil
      elapsed = now - t
      agree = best.nil? ? answers[k].nil? : answers[k] && Integer(answers[k][0]) == best
      warn "the Numo scan disagrees with the index on query #{k}" unless agree
      elapsed
    end
    numo_time = median(numo_times)
    matrix = nil
  end
  normalised = nil

  rows << {
    n: n, hit: median(index_times[:hit]), miss: median(index_times[:miss]),
    hits: index_times[:hit].size, misses: index_times[:miss].size,
    per_entry: stats[:allocated] / n, counted: stats[:bytes] / n,
    rss_per_entry: (rss_index - rss_before) * 1024 / n, add: add_s,
    ruby: ruby_times.empty? ? nil : median(ruby_times), numo: numo_time
  }
  r = rows.last
  puts format("%7d entries: lookup hit %s, miss %s (%d/%d); add %s; index %d B/entry " \
              "(%d counted against max_bytes), RSS +%d B/entry; Ruby scan %s; Numo %s",
              n, fmt_ms(r[:hit]), fmt_ms(r[:miss]), r[:hits], r[:misses], fmt_ms(r[:add]), r[:per_entry],
              r[:counted], r[:rss_per_entry], fmt_ms(r[:ruby]), fmt_ms(r[:numo]))
  index.clear
  index = nil
end

puts
puts "| entries | MemoryIndex hit | MemoryIndex miss | bytes per entry (index / RSS) | plain Ruby scan | Numo::SFloat#dot |"
puts "|---:|---:|---:|---:|---:|---:|"
rows.each do |r|
  puts format("| %d | %s | %s | %d / %d | %s | %s |", r[:n], fmt_ms(r[:hit]), fmt_ms(r[:miss]), r[:per_entry],
              r[:rss_per_entry], fmt_ms(r[:ruby]), fmt_ms(r[:numo]))
end

require_relative "shared_index" unless ENV["SHARED"] == "none"
