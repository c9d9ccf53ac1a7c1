# frozen_string_literal: true

# How long Thread#kill takes to end a call that waits on a silent provider
# (the GVL is released while waiting; the unblocking function wakes
# the core's wait). Prints figures; asserts nothing.
#   bundle exec ruby bench/interrupt.rb [rounds]
$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "llm_failover"
require "llm_failover/testing"

rounds = Integer(ARGV[0] || 20)
fp = LlmFailover::Testing::FakeProvider.start
engine = LlmFailover::Engine.new
listener = Object.new
def listener.on_chunk(*) = nil
def listener.on_reset(_) = nil
def listener.on_attempt(_) = nil
target = LlmFailover::Engine::Target.new(key: "openai:m", api: :openai, base_url: fp.base_url(:openai), api_key: "k",
                                         model: "m")
policy = LlmFailover::Engine::Policy.new(max_retries: 0, retry_interval: 0.1, retry_backoff_factor: 2,
                                         retry_max_interval: 1, retry_interval_randomness: 0, connect_timeout: 5,
                                         first_token_timeout: 60, idle_timeout: 60, request_timeout: 60,
                                         failover_on_context_length: false, max_response_bytes: 1 << 20)
request = LlmFailover::Engine::Request.new(targets: [target], messages: [%w[user hi]], policy: policy)
clock = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }
latencies = Array.new(rounds) do |i|
  fp.enqueue({ delay_headers: 30 })
  thread = Thread.new { engine.run(request, listener) }
  sleep 0.01 until fp.request_count == i + 1
  sleep 0.05
  started = clock.call
  thread.kill
  thread.join
  (clock.call - started) * 1000
end
fp.stop
sorted = latencies.sort
printf("Thread#kill of a waiting call, %d rounds: median %.3f ms, max %.3f ms (target: < 100 ms)\n",
       rounds, sorted[rounds / 2], sorted.last)
