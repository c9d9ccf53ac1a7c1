# frozen_string_literal: true

# One client, one measurement, in its own process (so that one library's load, GC
# state and threads never weigh on another's figure). bench/run.rb calls it:
#
#   ruby bench/clients.rb CLIENT N BASE_URL [EXTRA]
#
# Prints one line of JSON with the figures. Every call's answer is checked: a client
# that got an error or the wrong text aborts the bench instead of looking fast.

require "json"
require_relative "engine_call"
require_relative "client_support"

EXPECTED = "Hello! How can I help you today?"
STREAM_EVENTS = 5000

def now
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

# Runs the block warm-up times, then n times; returns microseconds per call (wall
# clock), and keeps this process's CPU time per call (user and system) in $cpu_us.
def timed(n, warm: [n / 10, 1].max)
  warm.times { yield }
  c0 = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
  t0 = now
  n.times { yield }
  t1 = now
  $cpu_us = (Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - c0) * 1e6 / n
  (t1 - t0) * 1e6 / n
end

def check!(text, expected = EXPECTED)
  return if text == expected

  abort "bench: wrong answer #{text.inspect[0, 200]} (expected #{expected.inspect[0, 60]})"
end

client, n, base = ARGV[0], Integer(ARGV[1]), ARGV[2]
out = {}

case client
when "gem"
  load_gem
  configure_gem(base)
  out[:us] = timed(n) { check!(LlmFailover.chat(model: MODEL, provider: :bench).ask("Hello").content) }

when "engine"
  # The binding alone: Engine#run with the request Chat#ask builds and a listener
  # that does nothing (no store, no records, no Reply).
  load_gem
  configure_gem(base)
  config = LlmFailover.configuration
  request = Bench::EngineCall.request(config, MODEL)
  listener = Bench::EngineCall::NullListener.new
  engine = LlmFailover.engine
  out[:us] = timed(n) { check!(engine.run(request, listener).content) }

when "core_in_ruby"
  # bench/core_loop.c's loop called once, through Fiddle, from a Ruby process with the
  # gem loaded and configured: the C core inside a Ruby process, no Ruby between calls.
  # Its line (wall and CPU us per call) is read from fd 1 through a pipe.
  require "fiddle"
  load_gem
  configure_gem(base)
  lib = Fiddle.dlopen(ARGV[3])
  run = Fiddle::Function.new(lib["core_loop_run"], [Fiddle::TYPE_INT, Fiddle::TYPE_VOIDP], Fiddle::TYPE_INT)
  words = ["core_loop", base, n.to_s].map { |w| "#{w}\0" }
  argv = words.map { |w| Fiddle::Pointer[w].to_i }.push(0).pack("J*")
  reader, writer = IO.pipe
  saved = $stdout.dup
  $stdout.flush
  $stdout.reopen(writer)
  rc = run.call(words.size, Fiddle::Pointer[argv])
  $stdout.reopen(saved)
  writer.close
  abort "bench: core_loop_run failed" unless rc.zero?
  out[:us], out[:cpu_us] = reader.read.split.map { |x| Float(x) }

when "net_http"
  require "net/http"
  uri = URI("#{base}/chat/completions")
  Net::HTTP.start(uri.host, uri.port) do |http|
    out[:us] = timed(n) do
      res = http.post(uri.path, request_body, HEADERS)
      check!(JSON.parse(res.body).dig("choices", 0, "message", "content"))
    end
  end

when "faraday"
  require "faraday"
  conn = Faraday.new(url: "#{base}/")
  out[:adapter] = conn.builder.adapter.name
  out[:us] = timed(n) do
    res = conn.post("chat/completions", request_body, HEADERS)
    check!(JSON.parse(res.body).dig("choices", 0, "message", "content"))
  end

when "ruby_llm"
  require "ruby_llm"
  require "logger"
  RubyLLM.configure do |c|
    c.openai_api_key = "bench-key"
    c.openai_api_base = base
  end
  # 1.2 logs requests at debug level only; its logger writes to stdout, which carries
  # this script's figures.
  RubyLLM.logger.level = Logger::WARN
  out[:version] = RubyLLM::VERSION
  out[:us] = timed(n) do
    check!(RubyLLM.chat(model: MODEL, provider: :openai, assume_model_exists: true).ask("Hello").content)
  end

when "gem_stream"
  load_gem
  configure_gem(base)
  count = 0
  out[:us] = timed(n, warm: 2) do
    count = 0
    reply = LlmFailover.chat(model: MODEL, provider: :bench).ask("Hello") { |chunk| count += 1 if chunk.content }
    abort "bench: #{count} chunks, expected #{STREAM_EVENTS}" unless count == STREAM_EVENTS
    abort "bench: truncated stream" unless reply.content.bytesize == STREAM_EVENTS * 5
  end
  out[:per_chunk_us] = out[:us] / STREAM_EVENTS

when "net_http_stream"
  require "net/http"
  uri = URI("#{base}/chat/completions")
  Net::HTTP.start(uri.host, uri.port) do |http|
    out[:us] = timed(n, warm: 2) do
      text = +""
      reader = SSEReader.new { |delta| text << delta }
      req = Net::HTTP::Post.new(uri.path, HEADERS)
      req.body = request_body(stream: true)
      http.request(req) { |res| res.read_body { |segment| reader.feed(segment) } }
      abort "bench: net/http stream: #{reader.events} events" unless reader.events == STREAM_EVENTS && reader.done?
    end
  end
  out[:per_chunk_us] = out[:us] / STREAM_EVENTS

when "gem_threads", "net_http_threads"
  # ARGV[3] threads each make N calls to the 50 ms peer.
  threads = Integer(ARGV[3])
  if client == "gem_threads"
    load_gem
    configure_gem(base)
    call = -> { check!(LlmFailover.chat(model: MODEL, provider: :bench).ask("Hello").content) }
  else
    require "net/http"
    uri = URI("#{base}/chat/completions")
    call = lambda do
      http = (Thread.current[:bench_http] ||= Net::HTTP.start(uri.host, uri.port))
      check!(JSON.parse(http.post(uri.path, request_body, HEADERS).body).dig("choices", 0, "message", "content"))
    end
  end
  Array.new(threads) { Thread.new { call.call } }.each(&:join) # warm: one connection each
  t0 = now
  Array.new(threads) { Thread.new { n.times { call.call } } }.each { |t| t.join(600) or abort("bench: hung") }
  elapsed = now - t0
  out[:calls_per_s] = threads * n / elapsed
  out[:ms_per_call] = elapsed * 1000 / n

when "gem_handoff"
  # Primary: the peer's side A (503), backup: side B (answers). No retry, no backoff.
  load_gem
  configure_gem(base, backup_url: ARGV[3], max_retries: 0, retry_interval: 0)
  gaps = []
  n.times do
    reply = LlmFailover.chat(model: MODEL, provider: :bench, backup_model: MODEL, backup_provider: :backup)
                       .ask("Hello")
    abort "bench: no failover" unless reply.failover? && reply.content == "Hello from the backup"
    first, second = reply.attempts
    # From the attempt records: primary attempt's end -> backup attempt's start.
    gaps << ((second.started_at.to_f - first.started_at.to_f) * 1e6) - (first.latency_ms * 1000)
  end
  gaps.sort!
  out[:records_median_us] = gaps[gaps.size / 2]

when "memory"
  load_gem
  configure_gem(base)
  marks = [ARGV[3] ? Integer(ARGV[3]) : 1000, n]
  done = 0
  marks.each do |mark|
    (mark - done).times { check!(LlmFailover.chat(model: MODEL, provider: :bench).ask("Hello").content) }
    done = mark
    GC.start
    out["rss_kb_after_#{mark}"] = rss_kb
  end
  out[:growth_kb] = out["rss_kb_after_#{marks[1]}"] - out["rss_kb_after_#{marks[0]}"]
  out[:idle_connections] = LlmFailover.engine.idle_connections

else
  abort "bench/clients.rb: unknown client #{client}"
end

out[:cpu_us] ||= $cpu_us if $cpu_us
puts JSON.generate(out)
