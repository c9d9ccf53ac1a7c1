# frozen_string_literal: true

# Hedged requests: `bundle exec ruby bench/hedge.rb` (about a minute and a half).
#
# Two FakeProviders (OpenAI primary, Anthropic backup), each starting its answer SLOW_S
# late for SLOW_SHARE of the requests it gets and FAST_S late otherwise (the issue's
# provider: 5 s late 10% of the time, else 300 ms; unscaled by default), each request
# drawn on its own. CALLS streamed calls per mode, THREADS at a time, each a short answer
# (the first token ends it, near enough). Modes: no hedging, hedge_after 2.0, 1.0 and
# 0.5 s, and :auto after WARM calls taught it the primary's first tokens (the same
# state store). Prints per mode p50, p95 and p99 of a call's time (from ask to its
# return), the share of calls that sent a second request (the extra requests hedging
# costs) and the share the backup answered. Nothing is asserted.
#
# Environment: CALLS (400), THREADS (25), SLOW_SHARE (0.1), SLOW_S (5), FAST_S (0.3),
# WARM (100), SEED (1), MODES (off,2.0,1.0,0.5,auto).

require "bundler/setup"
require "llm_failover"
require "llm_failover/testing"

CALLS = Integer(ENV.fetch("CALLS", 400))
THREADS = Integer(ENV.fetch("THREADS", 25))
SLOW_SHARE = Float(ENV.fetch("SLOW_SHARE", 0.1))
SLOW_S = Float(ENV.fetch("SLOW_S", 5))
FAST_S = Float(ENV.fetch("FAST_S", 0.3))
WARM = Integer(ENV.fetch("WARM", 100))
RNG = Random.new(Integer(ENV.fetch("SEED", 1)))

def steps(count)
  Array.new(count) { { text: "ok", delay_first_token: RNG.rand < SLOW_SHARE ? SLOW_S : FAST_S } }
end

def percentile(sorted, p)
  sorted[((sorted.size - 1) * p).round]
end

# Runs +calls+ streamed calls, THREADS at a time; returns [seconds of each, replies].
def run(calls, hedge_after)
  queue = Queue.new
  calls.times { |i| queue << i }
  times = []
  replies = []
  lock = Mutex.new
  Array.new(THREADS) do
    Thread.new do
      loop do
        queue.pop(true)
        chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, backup_model: "claude-sonnet-4-6",
                                backup_provider: :anthropic, hedge_after: hedge_after)
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        reply = chat.ask("Hi") { |_chunk| nil }
        took = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
        lock.synchronize do
          times << took
          replies << reply
        end
      rescue ThreadError
        break
      end
    end
  end.each(&:join)
  [times, replies]
end

primary = LlmFailover::Testing::FakeProvider.start
backup = LlmFailover::Testing::FakeProvider.start
store = LlmFailover::MemoryStateStore.new
LlmFailover.configure do |c|
  c.provider :openai, api: :openai, api_key: "bench-key-primary", base_url: primary.base_url(:openai)
  c.provider :anthropic, api: :anthropic, api_key: "bench-key-backup", base_url: backup.base_url(:anthropic)
  c.first_token_timeout = SLOW_S * 4 # a slow start is slow, never a timeout
  c.max_retries = 0
  c.state_store = store
end

puts format("hedged requests: %d calls per mode, %d at a time; first token %.2f s late for %.0f%% of requests, " \
            "else %.2f s", CALLS, THREADS, SLOW_S, SLOW_SHARE * 100, FAST_S)
puts format("%-18s %8s %8s %8s %14s %16s", "mode", "p50 s", "p95 s", "p99 s", "extra requests", "backup answered")
modes = ENV.fetch("MODES", "off,2.0,1.0,0.5,auto").split(",").map do |m|
  { "off" => nil, "auto" => :auto }.fetch(m) { Float(m) }
end
modes.each do |mode|
  primary.clear
  backup.clear
  if mode == :auto
    store.clear
    primary.enqueue(*steps(WARM))
    backup.enqueue(*steps(WARM))
    run(WARM, :auto)
    primary.clear
    backup.clear
  end
  primary.enqueue(*steps(CALLS))
  backup.enqueue(*steps(CALLS))
  times, replies = run(CALLS, mode)
  sorted = times.sort
  hedged = replies.count { |r| r.attempts.any?(&:hedged?) }
  by_backup = replies.count { |r| r.provider == :anthropic }
  label = mode.nil? ? "off" : "hedge_after #{mode.inspect}"
  label += format(" (%.2f s)", LlmFailover::HedgeDelay.percentile(store.first_token_times("openai:gpt-4o")) || 0) if mode == :auto
  if mode == :auto && ENV["SAMPLES"]
    samples = store.first_token_times("openai:gpt-4o").sort
    warn "primary samples: #{samples.size}, top 15: #{samples.last(15).map { |s| s.round(2) }.inspect}"
  end
  puts format("%-18s %8.2f %8.2f %8.2f %13.1f%% %15.1f%%", label, percentile(sorted, 0.5), percentile(sorted, 0.95),
              percentile(sorted, 0.99), 100.0 * hedged / CALLS, 100.0 * by_backup / CALLS)
end
primary.stop
backup.stop
