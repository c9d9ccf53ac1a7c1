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
#   SQLite plain / per turn   the same two canned figures with the ActiveRecord store
#                      on a SQLite file (a chat record per ask), and the SQL statements
#                      of each (sql.active_record events)
#
# and, once, the memory a MemoryStore keeps per stored round (an assistant message with
# its call, the call's snapshot, the result message), from ObjectSpace after a full GC.
# The FakeProvider is Ruby in this process, so the loopback figures include the
# server's own time; the canned ones do not. Nothing is asserted.

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "objspace"
require "llm_failover"
require "llm_failover/testing"
require "tmpdir"
require "llm_failover/active_record"

ActiveRecord::Base.establish_connection(adapter: "sqlite3",
                                        database: File.join(Dir.mktmpdir("bench_tool_loop"), "bench.sqlite3"))
ActiveRecord::Migration.verbose = false
LlmFailover::ActiveRecord.create_tables!

class Chat < ActiveRecord::Base
  acts_as_llm_chat
end

class Message < ActiveRecord::Base
  acts_as_llm_message
end

TURNS = 5

# Answers the way the real engine reports, at once: a tool call until the ask holds
# TURNS - 1 results (after its user message), then text.
require_relative "engine_call"

class CannedToolEngine
  def run(request, listener)
    messages = request.messages
    asked = messages.rindex { |m| m[0] == "user" }
    results = messages[asked..].count { |m| m[0] == "tool" }
    target = request.targets.first
    listener.on_attempt(Bench::EngineCall.attempt(attempt: 1, target: target, success: true, http_status: 200,
                                                  failover_eligible: false, latency_ms: 1.0, input_tokens: 9,
                                                  output_tokens: 9, started_at: Time.now, reached: true,
                                                  provider_request_id: "chatcmpl-canned"))
    answer = { status: :ok, target: target, attempts: 1, provider_request_id: "chatcmpl-canned",
               model: "gpt-4o-mini", input_tokens: 9, output_tokens: 9 }
    if request.tools && results < TURNS - 1
      Bench::EngineCall.result(**answer, content: "", finish_reason: "tool_calls",
                                         tool_calls: [["call_#{results}_#{rand(1 << 30)}", "step", %({"n":#{results}})]])
    else
      Bench::EngineCall.result(**answer, content: "Done.", finish_reason: "stop")
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
  chat_for = lambda do |engine, tools, store = nil|
    chat = LlmFailover.chat(model: "gpt-4o-mini", provider: :bench, **(store ? { store: store } : {}))
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

  on_sqlite = ->(tools) { chat_for.call(canned, tools, Chat.create!(model: "gpt-4o-mini", provider: "bench").llm_store) }
  statements = lambda do |&call|
    count = 0
    counter = ActiveSupport::Notifications.subscribe("sql.active_record") do |*, payload|
      count += 1 unless %w[SCHEMA TRANSACTION].include?(payload[:name])
    end
    call.call
    count
  ensure
    ActiveSupport::Notifications.unsubscribe(counter)
  end

  puts format("%-6s %18s %10s %16s %18s %14s %16s", "round", "plain (loopback)", "per turn", "plain (canned)",
              "per turn (canned)", "SQLite plain", "SQLite per turn")
  rounds.times do |r|
    a = time.call(n) { chat_for.call(nil, false).ask("Hello") }
    b = time.call(n) { loopback_loop.call } / TURNS
    c = time.call(n * 10) { chat_for.call(canned, false).ask("Hello") }
    d = time.call(n * 10) { chat_for.call(canned, true).ask("Go") } / TURNS
    e = time.call(n) { on_sqlite.call(false).ask("Hello") }
    f = time.call(n) { on_sqlite.call(true).ask("Go") } / TURNS
    puts format("%-6d %18.1f %10.1f %16.1f %18.1f %14.1f %16.1f", r + 1, a, b, c, d, e, f)
  end
  plain_sql = statements.call { on_sqlite.call(false).ask("Hello") }
  loop_sql = statements.call { on_sqlite.call(true).ask("Go") }
  puts format("SQL statements: %d for a plain ask, %.1f per turn of the five-turn loop", plain_sql, loop_sql.fdiv(TURNS))

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
