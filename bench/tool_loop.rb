# frozen_string_literal: true

# What a five-round tool loop costs the gem: `bundle exec ruby bench/tool_loop.rb`
# (N asks per figure, default 200; ROUNDS, default 3). Prints, per round of
# measurement, in us:
#
#   plain (loopback)   one chat.ask without tools against a FakeProvider on loopback
#   per turn           a five-turn tool loop (four tool calls, then an answer) against
#                      the same server, divided by its five turns
#   plain (canned)     one chat.ask whose engine answers at once (no network): the gem's
#                      own Ruby time for one call
#   per turn (canned)  the five-turn loop with that engine, per turn: the gem's own time
#                      per round (transcript, store, tool run, the turn's call)
#
# and, once, the memory a MemoryStore keeps per stored round (an assistant message with
# its call, the call's snapshot, the result message), from ObjectSpace after a full GC.
# The FakeProvider is Ruby in this process, so the loopback figures include the
# server's own time; the canned ones do not. Nothing is asserted.

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "objspace"
require "llm_failover"
require "llm_failover/testing"

TURNS = 5

# Answers the way the real engine reports, at once: a tool call until the ask holds
# TURNS - 1 results (after its user message), then text.
class CannedToolEngine
  def run(request, listener)
    messages = request[:messages]
    asked = messages.rindex { |m| m[0] == "user" }
    results = messages[asked..].count { |m| m[0] == "tool" }
    listener.on_attempt({ attempt: 1, target: 0, success: true, error_class: nil, error_message: nil, phase: nil,
                          http_status: 200, failover_eligible: false, retry_after: nil, latency_ms: 1.0,
                          first_token_ms: nil, input_tokens: 9, output_tokens: 9, started_at: Time.now,
                          provider_request_id: "chatcmpl-canned" })
    answer = { ok: true, target: 0, first_target: 0, attempts: 1, provider_request_id: "chatcmpl-canned",
               model: "gpt-4o-mini", input_tokens: 9, output_tokens: 9 }
    if request[:tools] && results < TURNS - 1
      answer.merge(content: "", finish_reason: "tool_calls",
                   tool_calls: [["call_#{results}_#{rand(1 << 30)}", "step", %({"n":#{results}})]])
    else
      answer.merge(content: "Done.", finish_reason: "stop")
    end
  end
end

class Step < LlmFailover::Tool
  description "One step"
  param :n, type: :integer
  def execute(n:) = { n: n, ok: true }
end

n = Integer(ENV.fetch("N", "200"))
rounds = Integer(ENV.fetch("ROUNDS", "3"))
fp = LlmFailover::Testing::FakeProvider.start
begin
  LlmFailover.configure do |c|
    c.provider :bench, api: :openai, api_key: "bench-key", base_url: fp.base_url(:openai)
    c.usage_log = ->(_record) {}
    c.max_tool_rounds = TURNS
  end
  tool_turns = Array.new(TURNS - 1) { |i| { tool_calls: [{ name: "step", arguments: { "n" => i } }] } }
  canned = CannedToolEngine.new
  chat_for = lambda do |engine, tools|
    chat = LlmFailover.chat(model: "gpt-4o-mini", provider: :bench)
    chat.instance_variable_set(:@engine, engine) if engine # the engine a Chat may be given (Chat.new(engine:))
    tools ? chat.with_tool(Step) : chat
  end
  loopback_loop = lambda do
    fp.enqueue(*tool_turns, { text: "Done." })
    reply = chat_for.call(nil, true).ask("Go")
    raise "expected #{TURNS - 1} calls, got #{reply.tool_calls.size}" unless reply.tool_calls.size == TURNS - 1
  end
  time = lambda do |count, &call|
    (count / 10).times(&call)
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    count.times(&call)
    (Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0) * 1e6 / count
  end

  puts format("%-6s %18s %10s %16s %18s", "round", "plain (loopback)", "per turn", "plain (canned)", "per turn (canned)")
  rounds.times do |r|
    a = time.call(n) { chat_for.call(nil, false).ask("Hello") }
    b = time.call(n) { loopback_loop.call } / TURNS
    c = time.call(n * 10) { chat_for.call(canned, false).ask("Hello") }
    d = time.call(n * 10) { chat_for.call(canned, true).ask("Go") } / TURNS
    puts format("%-6d %18.1f %10.1f %16.1f %18.1f", r + 1, a, b, c, d)
  end

  # Memory: one chat keeps K loops; what it holds after a full GC, per stored round.
  k = 200
  chat = chat_for.call(canned, true)
  chat.ask("warm up")
  GC.start(full_mark: true, immediate_sweep: true)
  before = ObjectSpace.memsize_of_all
  k.times { chat.ask("Go") }
  GC.start(full_mark: true, immediate_sweep: true)
  after = ObjectSpace.memsize_of_all
  stored_rounds = k * (TURNS - 1) # rounds with a call; the final answers are counted in with them
  puts format("memory: %d bytes per stored round (%d asks of %d turns kept in one MemoryStore, %d messages)",
              (after - before) / stored_rounds, k, TURNS, chat.messages.size)
ensure
  fp.stop
end
