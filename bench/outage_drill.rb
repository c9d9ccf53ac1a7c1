# frozen_string_literal: true

# The outage drill: `bundle exec ruby bench/outage_drill.rb` (about four minutes).
#
# A fleet of PROCS forked processes, each with THREADS worker threads taking calls from
# its own queue. Calls arrive at RATE calls/s for the whole fleet (a Poisson process,
# RATE / PROCS per process), whether or not the workers keep up: traffic does not wait
# for an outage to end. The primary FakeProvider answers in PRIMARY_MS for WARMUP seconds
# (the fleet is busy when the outage begins, its calls at random phases), then 503 for
# OUTAGE seconds, then again in PRIMARY_MS for TAIL seconds; the backup answers in
# BACKUP_MS. Once for each of: no breaker, MemoryStateStore, RedisStateStore (a
# redis-server started on a loopback port), the last again with a 500 ms budget instead
# of 50 ms. Then RedisStateStore once more with the other traffic a fleet meets: every
# worker calling back to back (a backlog), all of them starting at the instant the
# outage begins, so PROCS x THREADS requests are in flight at once.
#
# Then the primary as a pool of three hosts (c.pool: three FakeProviders, equal weights)
# of which one dies the same way while its two siblings stay healthy, with each store:
# the dead host's requests and the calls' latency next to the single-host primary's.
#
# Default policy (3 retries, 0.1 s backoff doubling), circuit_threshold 5,
# circuit_cooldown COOLDOWN and circuit_first_probe FIRST_PROBE (scaled down from 60 s and
# 5 s like the outage: the adaptive recovery schedule, lf_circuit_interval). Then
# RedisStateStore with the fixed schedule (circuit_first_probe = circuit_cooldown) beside
# it, and both again over a LONG_OUTAGE (a ten-minute outage, scaled). Prints, per mode:
# requests that reached the dead primary and where each came from, p50/p99 latency of
# the calls that arrived during the outage (from arrival: queueing included), calls that
# failed, and how long after the recovery the primary served again. Then the per-call
# cost of each store on the happy path. Nothing is asserted.
#
# Where each request to the dead primary came from, from the attempt records and the
# state store's answers in each process (the store is wrapped to see what it answered;
# the circuit's opening time is the first closed -> open event, the fleet's with Redis,
# each process's own with MemoryStateStore):
#   threshold   sent before the circuit opened, up to the threshold
#   in_flight   sent before it opened, beyond the threshold (already under way)
#   late_retry  a retry sent after it opened, by a call that began before
#   late_start  a first attempt sent after it opened, admitted before
#   probe       the half-open probe
#   local       admitted by the process's own state while Redis did not answer in time
#   other       none of these
# Requests to the dead primary are its 503 answers, counted from the attempt records.
#
# Environment: PROCS (4), THREADS (4), RATE (12 calls/s), WARMUP (2 s), OUTAGE (12 s),
# LONG_OUTAGE (20 s), TAIL (6 s), COOLDOWN (2 s), FIRST_PROBE (COOLDOWN / 12), PRIMARY_MS
# (100), BACKUP_MS (50), STORE_N (5000 happy-path store calls timed), ONLY (a regexp: run
# only the modes whose name matches, e.g. '^(MemoryStateStore|RedisStateStore|pool.*)$').

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "delegate"
require "json"
require "llm_failover"
require "llm_failover/testing"
require_relative "../spec/support/redis_server"

module OutageDrill
  PROCS = Integer(ENV.fetch("PROCS", "4"))
  THREADS = Integer(ENV.fetch("THREADS", "4"))
  RATE = Float(ENV.fetch("RATE", "12"))
  WARMUP = Float(ENV.fetch("WARMUP", "2"))
  OUTAGE = Float(ENV.fetch("OUTAGE", "12"))
  TAIL = Float(ENV.fetch("TAIL", "6"))
  LONG_OUTAGE = Float(ENV.fetch("LONG_OUTAGE", "20"))
  COOLDOWN = Float(ENV.fetch("COOLDOWN", "2"))
  FIRST_PROBE = Float(ENV.fetch("FIRST_PROBE", (COOLDOWN / 12).to_s))
  PRIMARY_MS = Integer(ENV.fetch("PRIMARY_MS", "100"))
  BACKUP_MS = Integer(ENV.fetch("BACKUP_MS", "50"))
  STORE_N = Integer(ENV.fetch("STORE_N", "5000"))
  THRESHOLD = 5
  ONLY = ENV["ONLY"] && Regexp.new(ENV["ONLY"])
  # The host that dies: the primary itself, or the first of the pool's three.
  DEAD = { single: :primary, pool: :east }.freeze
  POOL_HOSTS = %i[east west north].freeze
  CAUSES = %w[threshold in_flight late_retry late_start probe local other].freeze

  module_function

  def now
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  # The process's state store, wrapped to remember (per thread) what it last answered
  # about the dead host: the route, when, and whether Redis answered it.
  class Tap < SimpleDelegator
    def initialize(store, dead_key)
      super(store)
      @dead_key = dead_key
    end

    def admit(keys, *rest)
      asked = Time.now.to_f # before the store saw it: an answer given after an opening is never earlier
      entries = super
      i = keys.index(@dead_key)
      if i
        local = __getobj__.respond_to?(:connected?) && !__getobj__.connected?
        Thread.current[:drill_admit] = [entries[i][0], asked, local]
      end
      entries
    end
  end

  # +primaries+: the primary's FakeProvider, or the pool's three (the first dies).
  def configure(primaries, backup, store, events, requests, first_probe)
    dead = primaries.size > 1 ? DEAD[:pool] : DEAD[:single]
    LlmFailover.reset_configuration!
    LlmFailover.configure do |c|
      if primaries.size > 1
        POOL_HOSTS.zip(primaries) { |name, fp| c.provider name, api: :openai, api_key: "sk-drill-#{name}", base_url: fp.base_url(:openai) }
        c.pool :primary, hosts: POOL_HOSTS.map { |name| { provider: name } }
      else
        c.provider :primary, api: :openai, api_key: "sk-drill", base_url: primaries.first.base_url(:openai)
      end
      c.provider :backup, api: :anthropic, api_key: "sk-drill", base_url: backup.base_url(:anthropic)
      c.prices = nil # the pool's loopback hosts have no price: no warning per host and process
      c.circuit_threshold = store ? THRESHOLD : 0
      c.circuit_cooldown = COOLDOWN
      c.circuit_first_probe = first_probe
      c.state_store = Tap.new(store, "#{dead}:gpt-4o") if store
      c.on_circuit_change = lambda do |e|
        events << [e.at.to_f, e.from, e.to, e.reason] if e.provider == dead
      end
      c.usage_log = lambda do |rec|
        next unless rec.host == dead && rec.http_status == 503 # the dead host's answer

        route, admitted_at, local = Thread.current[:drill_admit]
        requests << [rec.started_at.to_f, rec.attempt, route, admitted_at, local]
      end
    end
  end

  # One process. Returns its calls ([arrived, started, latency, provider or nil, host or
  # nil], times in s since the outage began), its circuit events and its requests to the
  # dead host.
  def worker(t0, stop_at, burst)
    calls = Queue.new
    queue = Queue.new
    workers = Array.new(THREADS) do
      Thread.new do
        chat = LlmFailover.chat(model: "gpt-4o", provider: :primary, backup_model: "claude", backup_provider: :backup)
        loop do
          arrived = burst ? now : queue.pop
          break if arrived.nil? || arrived >= stop_at

          started = now
          reply = begin
            chat.ask("drill")
          rescue LlmFailover::Error
            nil
          end
          calls << [arrived - t0, started - t0, now - arrived, reply&.provider, reply&.host]
        end
      end
    end
    arrivals(t0, stop_at, queue) unless burst
    THREADS.times { queue << nil }
    workers.each(&:join)
    Array.new(calls.size) { calls.pop }
  end

  # Poisson arrivals at RATE / PROCS calls/s until +stop_at+.
  def arrivals(t0, stop_at, queue)
    rng = Random.new(Process.pid)
    rate = RATE / PROCS
    t = t0 - WARMUP
    loop do
      t += -Math.log(1 - rng.rand) / rate
      break if t >= stop_at

      sleep [t - now, 0].max
      queue << t
    end
  end

  def run_mode(name, store_factory, burst: false, outage: OUTAGE, first_probe: FIRST_PROBE, pool: false)
    return nil if ONLY && !ONLY.match?(name)

    primaries = Array.new(pool ? POOL_HOSTS.size : 1) { LlmFailover::Testing::FakeProvider.start }
    primary = primaries.first # the one that dies
    backup = LlmFailover::Testing::FakeProvider.start
    healthy = { text: "primary", delay_headers: PRIMARY_MS / 1000.0 }
    primaries.each { |fp| fp.default = healthy }
    primary.default = burst ? { error: :unavailable } : healthy
    backup.default = { text: "from the backup", delay_headers: BACKUP_MS / 1000.0 }
    store_factory&.call&.clear
    warmup = burst ? 0 : WARMUP
    t0 = now + 0.5 + warmup # the outage begins; every process starts together
    wall_t0 = Time.now.to_f + (t0 - now)
    stop_at = t0 + outage + TAIL
    children = Array.new(PROCS) do
      reader, writer = IO.pipe
      pid = fork do
        reader.close
        events = []
        requests = Queue.new
        configure(primaries, backup, store_factory&.call, events, requests, first_probe)
        sleep [t0 - warmup - now, 0].max
        calls = worker(t0, stop_at, burst)
        writer.write(JSON.generate(calls: calls, events: events, requests: Array.new(requests.size) { requests.pop }))
        writer.close
        exit!(0)
      end
      writer.close
      [pid, reader]
    end
    sleep [t0 - now, 0].max
    primary.default = { error: :unavailable }
    sleep [t0 + outage - now, 0].max
    primary.default = healthy
    results = children.map do |pid, reader|
      JSON.parse(reader.read).tap { Process.wait(pid) } # not waitall: redis-server is a child too
    end
    primaries.each(&:stop)
    backup.stop
    summarize(name, results, wall_t0, outage, shared: store_factory&.call&.shared?, dead: pool ? DEAD[:pool] : DEAD[:single])
  end

  def percentile(sorted, p)
    return nil if sorted.empty?

    sorted[[(sorted.size * p).ceil - 1, 0].max]
  end

  def summarize(name, results, wall_t0, outage, shared:, dead:)
    calls = results.flat_map { |r| r["calls"] }
    dead_requests = results.sum { |r| r["requests"].size }
    during = calls.select { |arrived, _, _, _, _| arrived >= 0 && arrived < outage }
    latencies = during.map { |c| c[2] }.sort
    failed = calls.count { |c| c[3].nil? }
    back = calls.select { |_, started, _, _, host| started >= outage && host == dead.to_s }.map { |c| c[1] }.min
    { mode: name, outage_s: outage, calls: calls.size, dead_requests: dead_requests,
      p50_ms: (percentile(latencies, 0.5) * 1000).round, p99_ms: (percentile(latencies, 0.99) * 1000).round,
      to_backup: during.count { |c| c[3] == "backup" }, failed: failed, recover_s: back && (back - outage).round(2),
      causes: shared.nil? ? nil : causes(results, wall_t0, shared) }
  end

  # Each request the primary saw during the outage, by cause (see the top of the file).
  def causes(results, wall_t0, shared)
    counts = (CAUSES + ["before_open"]).to_h { |c| [c, 0] }
    opened_fleet = first_opening(results.flat_map { |r| r["events"] }, wall_t0)
    results.each do |r|
      opened = shared ? opened_fleet : first_opening(r["events"], wall_t0)
      r["requests"].each do |sent, attempt, route, admitted, local|
        counts[cause(sent, attempt, route, admitted, local, opened)] += 1
      end
    end
    split_threshold(counts, shared ? 1 : results.count { |r| first_opening(r["events"], wall_t0) })
    counts
  end

  def cause(sent, attempt, route, admitted, local, opened)
    return "local" if local
    return "probe" if route == 2
    return "before_open" if opened.nil? || sent < opened
    return "other" if admitted.nil? # sent without the store being asked (it had never seen a failure)
    return "late_retry" if attempt > 1 && admitted < opened

    admitted < opened ? "late_start" : "other"
  end

  # Requests sent before an opening: the first THRESHOLD of each opening, the rest in flight.
  def split_threshold(counts, openings)
    before = counts.delete("before_open").to_i
    counts["threshold"] = [before, THRESHOLD * openings].min
    counts["in_flight"] = before - counts["threshold"]
  end

  def first_opening(events, wall_t0)
    events.select { |at, from, to, _| from == "closed" && to == "open" && at >= wall_t0 }.map(&:first).min
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

  # Probes a target with Redis sends over +outage+ seconds of the schedule (one fleet).
  def probes(outage, first_probe)
    t = 0.0
    n = 0
    loop do
      t += LlmFailover::Circuit.interval(first_probe, COOLDOWN, t)
      break if t > outage

      n += 1
    end
    n
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
    puts "outage drill: #{PROCS} processes x #{THREADS} threads, #{RATE} calls/s arriving (Poisson); primary " \
         "#{PRIMARY_MS} ms for #{WARMUP}s, 503 for #{OUTAGE}s, #{PRIMARY_MS} ms for #{TAIL}s; backup #{BACKUP_MS} ms; " \
         "threshold #{THRESHOLD}, cooldown #{COOLDOWN}s, first probe #{FIRST_PROBE.round(3)}s; #{RUBY_DESCRIPTION}"
    modes = [["no breaker", nil], ["MemoryStateStore", -> { LlmFailover::MemoryStateStore.new }],
             ["RedisStateStore", redis_store], ["RedisStateStore 500ms", patient_store]]
    results = modes.map { |name, factory| run_mode(name, factory) }
    results << run_mode("RedisStateStore, backlog", redis_store, burst: true) unless ENV["NO_BACKLOG"]
    results << run_mode("RedisStateStore, fixed", redis_store, first_probe: COOLDOWN)
    results << run_mode("RedisStateStore, long", redis_store, outage: LONG_OUTAGE)
    results << run_mode("RedisStateStore, long, fixed", redis_store, outage: LONG_OUTAGE, first_probe: COOLDOWN)
    results << run_mode("pool of 3, MemoryStateStore", -> { LlmFailover::MemoryStateStore.new }, pool: true)
    results << run_mode("pool of 3, RedisStateStore", redis_store, pool: true)
    results.compact!
    columns = %i[mode outage_s calls dead_requests p50_ms p99_ms to_backup failed recover_s]
    puts table(%w[mode outage_s calls requests_to_dead_host p50_ms_during p99_ms_during to_backup_during failed_calls
                  recovered_after_s],
               results.map { |r| r.values_at(*columns) })
    puts
    puts "requests to the dead primary by cause (target with Redis: threshold + one probe per wait = " \
         "#{THRESHOLD} + #{probes(OUTAGE, FIRST_PROBE)} adaptive, #{THRESHOLD} + #{probes(OUTAGE, COOLDOWN)} fixed over " \
         "#{OUTAGE}s; #{THRESHOLD} + #{probes(LONG_OUTAGE, FIRST_PROBE)} adaptive, " \
         "#{THRESHOLD} + #{probes(LONG_OUTAGE, COOLDOWN)} fixed over #{LONG_OUTAGE}s)"
    puts table(["mode"] + CAUSES, results.select { |r| r[:causes] }.map { |r| [r[:mode]] + r[:causes].values_at(*CAUSES) })
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
