# frozen_string_literal: true

# What chat.ask's Ruby layer costs between network calls, against what it costs on its
# own: `bundle exec ruby bench/ruby_layer.rb` (N calls per figure, default 3000; ROUNDS,
# default 3). Starts its own nginx (bench/peer.rb). Prints, per round, in us per call:
#
#   engine          Engine#run with chat.ask's request and an empty listener
#   engine+canned   the same, each followed by a chat.ask whose engine is canned (no network)
#   chat.ask        the real thing
#   canned alone    chat.ask with the canned engine, nothing else in the loop
#
# engine+canned minus engine is what the Ruby layer costs when it runs after a wait in
# poll(2); canned alone is what the same code costs in a tight loop. Nothing is asserted.

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "llm_failover"
require_relative "peer"
require_relative "engine_call"

# Answers at once, the way the real engine reports: one attempt, then the result.
class CannedEngine
  def run(request, listener)
    target = request.targets.first
    listener.on_attempt(Bench::EngineCall.attempt(attempt: 1, target: target, success: true, http_status: 200,
                                                  failover_eligible: false, latency_ms: 1.5, input_tokens: 9,
                                                  output_tokens: 9, started_at: Time.now, reached: true,
                                                  provider_request_id: "chatcmpl-canned"))
    Bench::EngineCall.result(status: :ok, target: target, attempts: 1, provider_request_id: "chatcmpl-canned",
                             content: "Hello!", model: Bench::Peer::MODEL, finish_reason: "stop", input_tokens: 9,
                             output_tokens: 9)
  end
end

n = Integer(ENV.fetch("N", "3000"))
rounds = Integer(ENV.fetch("ROUNDS", "3"))
peer = Bench::Peer.new(dir: File.expand_path("../tmp/bench/peer_ruby_layer", __dir__)).start
begin
  LlmFailover.configure do |c|
    c.provider :bench, api: :openai, api_key: "bench-key", base_url: peer.base_url(:fast)
    c.usage_log = ->(_record) {}
  end
  config = LlmFailover.configuration
  request = Bench::EngineCall.request(config, "gpt-4o-mini")
  listener = Bench::EngineCall::NullListener.new
  engine = LlmFailover.engine
  canned = CannedEngine.new
  ask = lambda do |with|
    chat = LlmFailover.chat(model: "gpt-4o-mini", provider: :bench)
    chat.instance_variable_set(:@engine, with) # the engine a Chat may be given (Chat.new(engine:))
    chat.ask("Hello")
  end
  time = lambda do |&call|
    (n / 10).times(&call)
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    n.times(&call)
    (Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0) * 1e6 / n
  end
  puts format("%-8s %10s %15s %10s %14s", "round", "engine", "engine+canned", "chat.ask", "canned alone")
  rounds.times do |r|
    a = time.call { engine.run(request, listener) }
    b = time.call do
      engine.run(request, listener)
      ask.call(canned)
    end
    c = time.call { ask.call(engine) }
    d = time.call { ask.call(canned) }
    puts format("%-8d %10.1f %15.1f %10.1f %14.1f", r + 1, a, b, c, d)
  end
ensure
  peer.stop
end
