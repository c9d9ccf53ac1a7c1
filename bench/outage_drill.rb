# frozen_string_literal: true

# The outage drill: `bundle exec ruby bench/outage_drill.rb` (about a minute).
#
# A fleet of PROCS forked processes x THREADS threads calls chat.ask in a loop against a
# primary FakeProvider that answers 503 for OUTAGE seconds and then recovers, with a
# healthy backup (BACKUP_MS of latency), once for each of: no breaker, MemoryStateStore,
# RedisStateStore (a redis-server started on a loopback port), the last again with a
# 500 ms budget instead of 50 ms. Default policy (3 retries,
# 0.1 s backoff doubling), circuit_threshold 5, circuit_cooldown COOLDOWN (scaled down
# from 60 s like the outage). Prints, per mode: requests that reached the dead primary,
# p50/p99 latency of the calls started during the outage, calls that failed, and how long
# after the recovery the primary served again. Then the per-call cost of each store on
# the happy path. Nothing is asserted.
#
# Environment: PROCS (4), THREADS (4), OUTAGE (12 s), TAIL (6 s after it), COOLDOWN (2 s),
# BACKUP_MS (50), STORE_N (5000 happy-path store calls timed).

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "json"
require "llm_failover"
require "llm_failover/testing"
require_relative "../spec/support/redis_server"

module OutageDrill
  PROCS = Integer(ENV.fetch("PROCS", "4"))
  THREADS = Integer(ENV.fetch("THREADS", "4"))
  OUTAGE = Float(ENV.fetch("OUTAGE", "12"))
  TAIL = Float(ENV.fetch("TAIL", "6"))
  COOLDOWN = Float(ENV.fetch("COOLDOWN", "2"))
  BACKUP_MS = Integer(ENV.fetch("BACKUP_MS", "50"))
  STORE_N = Integer(ENV.fetch("STORE_N", "5000"))
  THRESHOLD = 5

  module_function

  def now
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  def configure(primary, backup, store)
    LlmFailover.reset_configuration!
    LlmFailover.configure do |c|
      c.provider :primary, api: :openai, api_key: "sk-drill", base_url: primary.base_url(:openai)
      c.provider :backup, api: :anthropic, api_key: "sk-drill", base_url: backup.base_url(:anthropic)
      c.circuit_threshold = store ? THRESHOLD : 0
      c.circuit_cooldown = COOLDOWN
      c.state_store = store if store
    end
  end

  # One process: THREADS threads calling until +stop_at+; returns one row per call:
  # [started (s since t0), latency (s), provider or nil when it failed].
  def worker(t0, stop_at)
    rows = Queue.new
    Array.new(THREADS) do
      Thread.new do
        chat = LlmFailover.chat(model: "gpt-4o", provider: :primary, backup_model: "claude", backup_provider: :backup)
        while now < stop_at
          started = now
          provider = begin
            chat.ask("drill").provider
          rescue LlmFailover::Error
            nil
          end
          rows << [started - t0, now - started, provider]
        end
      end
    end.each(&:join)
    Array.new(rows.size) { rows.pop }
  end

  def run_mode(name, store_factory)
    primary = LlmFailover::Testing::FakeProvider.start
    backup = LlmFailover::Testing::FakeProvider.start
    primary.default = { error: :unavailable }
    backup.default = { text: "from the backup", delay_headers: BACKUP_MS / 1000.0 }
    store = store_factory&.call
    store&.clear
    configure(primary, backup, store)
    t0 = now + 0.5 # every process starts together
    stop_at = t0 + OUTAGE + TAIL
    children = Array.new(PROCS) do
      reader, writer = IO.pipe
      pid = fork do
        reader.close
        configure(primary, backup, store_factory&.call)
        sleep [t0 - now, 0].max
        writer.write(JSON.generate(worker(t0, stop_at)))
        writer.close
        exit!(0)
      end
      writer.close
      [pid, reader]
    end
    sleep [t0 + OUTAGE - now, 0].max
    dead_requests = primary.request_count
    primary.default = { text: "primary is back" }
    rows = children.flat_map do |pid, reader|
      JSON.parse(reader.read).tap { Process.wait(pid) } # not waitall: redis-server is a child too
    end
    primary.stop
    backup.stop
    summarize(name, rows, dead_requests)
  end

  def percentile(sorted, p)
    return nil if sorted.empty?

    sorted[[(sorted.size * p).ceil - 1, 0].max]
  end

  def summarize(name, rows, dead_requests)
    during = rows.select { |started, _, _| started < OUTAGE }.map { |_, latency, _| latency }.sort
    failed = rows.count { |_, _, provider| provider.nil? }
    back = rows.select { |started, _, provider| started >= OUTAGE && provider == "primary" }.map(&:first).min
    { mode: name, calls: rows.size, dead_requests: dead_requests,
      p50_ms: (percentile(during, 0.5) * 1000).round, p99_ms: (percentile(during, 0.99) * 1000).round,
      failed: failed, recover_s: back && (back - OUTAGE).round(2) }
  end

  # Happy path: the store calls one healthy chat.ask makes (one admit of two targets).
  def store_cost(name, store)
    keys = ["primary:gpt-4o", "backup:claude"]
    store.admit(keys, COOLDOWN)
    t = now
    STORE_N.times { store.admit(keys, COOLDOWN) }
    us = (now - t) / STORE_N * 1e6
    [name, us.round(1)]
  end

  def table(headers, rows)
    cells = [headers] + rows.map { |r| r.map { |c| c.nil? ? "-" : c.to_s } }
    widths = headers.each_index.map { |i| cells.map { |r| r[i].length }.max }
    cells.map { |r| r.each_with_index.map { |c, i| c.rjust(widths[i]) }.join("  ") }.join("\n")
  end

  def main
    redis = RedisServer.new.start
    redis_store = -> { LlmFailover::RedisStateStore.new(url: redis.url, namespace: "drill") }
    # The same with a budget ten times the default: on a loaded machine Redis itself
    # answers slower than 50 ms at times, and those calls go on with local state.
    patient_store = -> { LlmFailover::RedisStateStore.new(url: redis.url, namespace: "drill", budget: 0.5) }
    puts "outage drill: #{PROCS} processes x #{THREADS} threads, primary 503 for #{OUTAGE}s then healthy for " \
         "#{TAIL}s, backup #{BACKUP_MS} ms, threshold #{THRESHOLD}, cooldown #{COOLDOWN}s, #{RUBY_DESCRIPTION}"
    results = [["no breaker", nil], ["MemoryStateStore", -> { LlmFailover::MemoryStateStore.new }],
               ["RedisStateStore", redis_store], ["RedisStateStore 500ms", patient_store]].map { |name, factory| run_mode(name, factory) }
    puts table(%w[mode calls requests_to_dead_primary p50_ms_during p99_ms_during failed_calls recovered_after_s],
               results.map { |r| r.values_at(:mode, :calls, :dead_requests, :p50_ms, :p99_ms, :failed, :recover_s) })
    puts
    info = RedisClient.new(url: redis.url)
    info.call("CONFIG", "RESETSTAT")
    costs = [store_cost("MemoryStateStore", LlmFailover::MemoryStateStore.new),
             store_cost("RedisStateStore", redis_store.call)]
    evalsha = info.call("INFO", "commandstats")[/cmdstat_evalsha:calls=(\d+)/, 1].to_i
    puts "happy path, per call (one admit of both targets; a success with no failures writes nothing):"
    puts table(%w[store us_per_call], costs)
    puts "Redis: #{(evalsha.to_f / (STORE_N + 1)).round(2)} EVALSHA per call, pipelined in one round trip"
  ensure
    redis&.destroy
  end
end

OutageDrill.main if $PROGRAM_NAME == __FILE__
