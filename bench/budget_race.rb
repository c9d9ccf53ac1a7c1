# frozen_string_literal: true

# How far a fleet overspends a shared budget: 4 processes x 4 threads race 5 calls
# each against one Redis-backed quota_by: :tokens budget of 2,051 tokens (and, where
# the gem has it, a quota_by: :usd budget of $0.05), every answer held 20 ms so that
# the racers' calls are in flight together. Prints what was spent against the limit.
#
#   ruby -Ilib bench/budget_race.rb        # this checkout
#   ruby -I/path/to/other/lib bench/budget_race.rb
$LOAD_PATH.unshift File.expand_path("../spec", __dir__)
require "llm_failover"
require "llm_failover/testing"
require "logger"
require "support/redis_server"

redis = RedisServer.new.start
fake = LlmFailover::Testing::FakeProvider.new.start
LlmFailover.configure do |c|
  c.provider :openai, api: :openai, api_key: "sk-bench", base_url: fake.base_url(:openai)
  c.provider :anthropic, api: :anthropic, api_key: "sk-bench", base_url: fake.base_url(:anthropic)
  c.max_retries = 0
  c.logger = Logger.new(File::NULL)
  c.state_store = LlmFailover::RedisStateStore.new(url: redis.url, namespace: "bench#{rand(1 << 30)}", budget: 2)
end
fake.default = { text: "answer", usage: { input: 20, output: 150 }, delay_headers: 0.02 }

def race(options)
  go_r, go_w = IO.pipe
  ready_r, ready_w = IO.pipe
  racer = lambda do
    ready_w.write("r")
    go_r.read(1)
    Array.new(5) do
      LlmFailover.chat(model: "gpt-4o", provider: :openai, backup_model: "claude-haiku-4-5",
                       backup_provider: :anthropic, max_tokens: 200, quota_window: :day, **options).ask("hello").provider
    end
  end
  pids = Array.new(4) do
    fork do
      Array.new(4) { Thread.new(&racer) }.each(&:join)
      exit!(0)
    end
  end
  ready_r.read(16)
  go_w.write("g" * 16)
  pids.each { |pid| Process.wait(pid) }
ensure
  [go_r, go_w, ready_r, ready_w].each(&:close)
end

begin
  { tokens: 2_051, usd: 0.05 }.each do |by, limit|
    unless LlmFailover::Chat::Options::QUOTA_BY.include?(by)
      puts "quota_by: #{by}: not in this version"
      next
    end

    key = "bench-#{by}-#{rand(1 << 30)}"
    race(quota: limit, quota_by: by, quota_key: key)
    window = { key: key, limit: limit, window: :day }
    used = (by == :usd ? LlmFailover::Quota.live(**window, by: :usd) : LlmFailover::Quota.live(**window)).used
    puts format("quota_by: %-6s limit %-8s spent %-10s overspent %s (%.1f%%)", by, limit, used.to_f.round(6),
                (used - limit).to_f.round(6), 100.0 * (used - limit) / limit)
  end
ensure
  fake.stop
  redis.destroy
end
