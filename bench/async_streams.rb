# frozen_string_literal: true

# N streaming chats at once on one thread under Async, against the peer's drip stream
# (50 events over 2 s, bench/peer.rb): wall time against one chat alone, CPU time per
# chunk, and RSS per chat in flight. The gem, net/http, ruby_llm (when it loads) and the
# fiber floor side by side, each client and N in a process of its own. Printed, never
# asserted.
#
# The fiber floor is the cheapest client any design could be under the same scheduler
# with the chunks arriving in the calling fiber: a socket per stream, the request
# written as one string, then IO#wait_readable and read_nonblock until the response's
# last chunk (no HTTP or SSE parsing beyond finding that end). Its CPU per chunk is
# what async and the kernel alone cost per chunk.
#
#   bundle exec ruby bench/async_streams.rb [N ...]          the table (N: 100 1000;
#                                                            SKIP_RUBY_LLM=1 leaves it out)
#   bundle exec ruby bench/async_streams.rb CLIENT N BASE    one measurement, one JSON line

require "json"
require "rbconfig"
require "async"
require_relative "client_support"

DRIP_EVENTS = 50

# async 2.24 asks an IO waited on without a timeout for IO#timeout, which Ruby 3.1's IO
# lacks (3.2's answers nil): net/http's waits without one (a write that would block,
# under load) and the floor's wait_readable raised NoMethodError. The gem's own IO
# answers it (LlmFailover::Engine::WaitIO).
class IO
  def timeout = nil
end unless IO.method_defined?(:timeout)

def now
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

def cpu
  Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
end

# One streamed chat with the client; returns the number of content chunks.
def chat_once(client, base)
  case client
  when "gem"
    count = 0
    reply = LlmFailover.chat(model: MODEL, provider: :bench).ask("Hello") { |chunk| count += 1 if chunk.content }
    abort "bench: gem: #{count} chunks, #{reply.content.bytesize} bytes" unless reply.content.bytesize == DRIP_EVENTS * 5
    count
  when "net_http"
    uri = URI("#{base}/chat/completions")
    reader = SSEReader.new { |_delta| nil }
    Net::HTTP.start(uri.host, uri.port) do |http|
      req = Net::HTTP::Post.new(uri.path, HEADERS)
      req.body = request_body(stream: true)
      http.request(req) { |res| res.read_body { |segment| reader.feed(segment) } }
    end
    abort "bench: net/http: #{reader.events} events" unless reader.done?
    reader.events
  when "floor"
    floor_stream(base)
  when "ruby_llm"
    count = 0
    # Its last chunk carries the finish reason and no text: counted like the gem's, by text.
    RubyLLM.chat(model: MODEL, provider: :openai, assume_model_exists: true).ask("Hello") do |chunk|
      count += 1 unless chunk.content.to_s.empty?
    end
    count
  end
end

# The fiber floor's stream: returns DRIP_EVENTS once the response's last chunk (the
# chunked encoding's "0\r\n\r\n" after "[DONE]") has arrived.
def floor_stream(base)
  uri = URI(base)
  body = request_body(stream: true)
  request = "POST #{uri.path}/chat/completions HTTP/1.1\r\nHost: #{uri.host}:#{uri.port}\r\n" \
            "Content-Type: application/json\r\nAuthorization: Bearer bench-key\r\n" \
            "Content-Length: #{body.bytesize}\r\n\r\n#{body}"
  sock = Socket.tcp(uri.host, uri.port)
  sock.write(request)
  buf = String.new(capacity: 4096)
  tail = +""
  loop do
    case sock.read_nonblock(4096, buf, exception: false)
    when :wait_readable then sock.wait_readable
    when nil then abort "bench: floor: the peer closed the stream early"
    else
      tail = (tail << buf)[-16..] || tail
      break if tail.end_with?("\r\n0\r\n\r\n")
    end
  end
  sock.close
  DRIP_EVENTS
end

def setup(client, base)
  case client
  when "gem"
    load_gem
    configure_gem(base, first_token_timeout: 60, idle_timeout: 60, request_timeout: 120)
  when "net_http"
    require "net/http"
  when "floor"
    require "socket"
    require "uri"
  when "ruby_llm"
    require "ruby_llm"
    require "logger"
    RubyLLM.configure do |c|
      c.openai_api_key = "bench-key"
      c.openai_api_base = base
      c.request_timeout = 120
    end
    RubyLLM.logger.level = Logger::ERROR # not a warning per chat that it assumes the model exists
  end
end

# One client, one N: prints the figures as a JSON line.
def measure(client, n, base)
  setup(client, base)
  out = { client: client, n: n }
  Async { chat_once(client, base) }.wait # warm-up: loading, first connection
  t0 = now
  Async { chat_once(client, base) }.wait
  out[:one_s] = now - t0

  GC.start
  rss0 = rss_kb
  peak = rss0
  chunks = 0
  c0 = cpu
  t0 = now
  running = true
  # A thread of its own: a file read in a fiber goes through async's io_read, which
  # asks IO#timeout, missing on Ruby 3.1.
  sampler = Thread.new do
    while running
      peak = [peak, rss_kb].max
      sleep 0.05
    end
  end
  Async do |task|
    Array.new(n) do
      task.async do
        got = chat_once(client, base) # (not chunks += ...: the fiber switches inside the call)
        chunks += got
      end
    end.each(&:wait)
  end.wait
  running = false
  sampler.join
  out[:wall_s] = now - t0
  cpu_s = cpu - c0
  abort "bench: #{client}: #{chunks} chunks, expected #{n * DRIP_EVENTS}" unless chunks == n * DRIP_EVENTS
  out[:ratio] = out[:wall_s] / out[:one_s]
  out[:cpu_per_chunk_us] = cpu_s * 1e6 / chunks
  out[:cpu_per_chat_ms] = cpu_s * 1e3 / n
  out[:rss_per_chat_kb] = (peak - rss0).to_f / n
  puts JSON.generate(out)
end

def table(sizes)
  require_relative "peer"
  peer = Bench::Peer.new(dir: File.expand_path("../tmp/bench/peer-async", __dir__)).start
  base = peer.base_url(:drip)
  clients = %w[gem net_http]
  clients << "ruby_llm" if ENV["SKIP_RUBY_LLM"] != "1" && system(RbConfig.ruby, "-e", "require 'ruby_llm'", err: File::NULL)
  clients << "floor"
  rows = sizes.flat_map do |n|
    clients.map do |client|
      line = IO.popen([RbConfig.ruby, __FILE__, client, n.to_s, base], &:read)
      abort "bench: #{client} #{n} failed" unless $?.success?
      JSON.parse(line.lines.last, symbolize_names: true)
    end
  end
  puts "N concurrent streamed chats on one thread under Async; peer: #{DRIP_EVENTS} events over 2 s each; " \
       "load average #{File.read('/proc/loadavg').split.first(3).join(' ')} at the end"
  puts "| client | N | one chat | N chats | wall / one | CPU per chunk | CPU per chat | RSS per chat in flight |"
  puts "|---|---:|---:|---:|---:|---:|---:|---:|"
  rows.each do |r|
    puts format("| %s | %d | %.2f s | %.2f s | %.2fx | %.1f us | %.2f ms | %.0f kB |", r[:client], r[:n], r[:one_s],
                r[:wall_s], r[:ratio], r[:cpu_per_chunk_us], r[:cpu_per_chat_ms], r[:rss_per_chat_kb])
  end
ensure
  peer&.stop
end

if ARGV.size == 3 && !ARGV[0].match?(/\A\d+\z/)
  measure(ARGV[0], Integer(ARGV[1]), ARGV[2])
else
  table(ARGV.empty? ? [100, 1000] : ARGV.map { |a| Integer(a) })
end
