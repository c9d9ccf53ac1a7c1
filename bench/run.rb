# frozen_string_literal: true

# The benchmark: `bundle exec rake bench` (or `bundle exec ruby bench/run.rb`).
#
# Starts nginx on a loopback port (bench/peer.rb) and a C hand-off peer, builds the C
# floor, then measures every client side by side in the same run, each in its own
# process, in interleaved rounds (ROUNDS, default 5; each client's best round is shown:
# on a shared machine noise only ever adds time, so the best round is the closest to
# the client's own cost, and interleaving gives every client the same chances).
# Prints a table; nothing is asserted.
#
# Environment: N (calls per round, default 2000), STREAM_N (streamed calls, default 20),
# THREAD_N (calls per thread at 50 ms, default 20), HANDOFF_N (default 1000),
# ROUNDS, MEMORY=1 (also the 100k-call RSS figure; `rake bench:memory` runs it alone),
# SKIP_RUBY_LLM=1.

require "json"
require "open3"
require "rbconfig"
require "fileutils"
require_relative "peer"

module Bench
  ROOT = File.expand_path("..", __dir__)
  TMP = File.join(ROOT, "tmp", "bench")
  CLIENTS = File.join(__dir__, "clients.rb")

  module_function

  def env_int(name, default)
    Integer(ENV.fetch(name, default.to_s))
  end

  def sh!(*cmd)
    out, err, st = Open3.capture3(*cmd)
    abort "bench: #{cmd.join(' ')} failed:\n#{out}#{err}" unless st.success?
    out
  end

  def pkg(flags)
    sh!("pkg-config", flags, "libcurl", "json-c").strip.split
  end

  CORE = File.join(ROOT, "ext/llm_failover/core")

  # Builds bench/NAME.c into tmp/bench/NAME with -O2; with core: true, linked with
  # every source of the gem's C core (the flags the extension is built with).
  # shared: a library for Fiddle (bench/core_loop.c's core_loop_run) instead of a program.
  def build_c(name, core: false, shared: false)
    FileUtils.mkdir_p(TMP)
    exe = File.join(TMP, shared ? "#{name}.so" : name)
    src = File.join(__dir__, "#{name}.c")
    extra = core ? Dir[File.join(CORE, "*.c")].sort : []
    flags = shared ? ["-fPIC", "-shared", "-D#{name.upcase}_SHARED"] : []
    sh!(ENV.fetch("CC", "cc"), "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror", *flags,
        "-I#{CORE}", *pkg("--cflags"), "-o", exe, src, *extra, *pkg("--libs"), "-lm")
    exe
  end

  # A C client's output: microseconds per call, wall clock then CPU time.
  def c_client(*cmd)
    sh!(*cmd).split.map { |x| Float(x) }
  end

  def ruby_client(*args)
    cmd = [RbConfig.ruby, CLIENTS, *args.map(&:to_s)]
    JSON.parse(sh!(*cmd).lines.last)
  end

  def median(values)
    v = values.compact.sort
    v.empty? ? nil : v[v.size / 2]
  end

  # The best round: least time, or most calls per second.
  def best(values, more_is_better: false)
    v = values.compact
    return nil if v.empty?

    more_is_better ? v.max : v.min
  end

  def fmt(x, digits = 1)
    x.nil? ? "-" : format("%.#{digits}f", x)
  end

  def ratio(x)
    x.nil? ? "-" : format("%.2fx", x)
  end

  def verdict(ok)
    ok ? "met" : "MISSED"
  end

  def machine
    cpu = File.read("/proc/cpuinfo")[/^model name\s*:\s*(.+)$/, 1] rescue "?"
    nginx = (`nginx -v 2>&1`[%r{nginx/(\S+)}, 1] rescue "?")
    "#{Etc.nprocessors rescue '?'} cores (#{cpu}), Ruby #{RUBY_VERSION}, " \
      "#{`pkg-config --modversion libcurl`.strip.then { |v| "libcurl #{v}" }}, nginx #{nginx}"
  end

  def run
    require "etc"
    rounds = env_int("ROUNDS", 5)
    n = env_int("N", 2000)
    stream_n = env_int("STREAM_N", 20)
    thread_n = env_int("THREAD_N", 20)
    handoff_n = env_int("HANDOFF_N", 1000)

    floor = build_c("curl_floor")
    core_loop = build_c("core_loop", core: true)
    core_lib = build_c("core_loop", core: true, shared: true)
    handoff_peer = build_c("handoff_peer")
    body_file = File.join(TMP, "request.json")
    File.write(body_file, JSON.generate(model: "gpt-4o-mini", messages: [{ role: "user", content: "Hello" }]))
    stream_body_file = File.join(TMP, "request_stream.json")
    File.write(stream_body_file,
               JSON.generate(model: "gpt-4o-mini", messages: [{ role: "user", content: "Hello" }], stream: true))

    peer = Peer.new(dir: File.join(TMP, "peer")).start
    hp_out = nil
    begin
      hp_in, hp_out, hp_wait = Open3.popen2(handoff_peer)
      ports = hp_out.gets.to_s.split.drop(1).map(&:to_i)
      abort "bench: handoff_peer did not start" unless ports.size == 2
      fail_url = "http://127.0.0.1:#{ports[0]}/v1"
      ok_url = "http://127.0.0.1:#{ports[1]}/v1"

      fast = peer.base_url(:fast)
      clients = %w[engine gem net_http faraday]
      clients << "ruby_llm" unless ENV["SKIP_RUBY_LLM"]
      per_call = Hash.new { |h, k| h[k] = [] }
      cpu = Hash.new { |h, k| h[k] = [] }
      stream = Hash.new { |h, k| h[k] = [] }
      threads = Hash.new { |h, k| h[k] = [] }
      handoff = Hash.new { |h, k| h[k] = [] }
      info = {}

      rounds.times do |r|
        warn "bench: round #{r + 1}/#{rounds}"
        { "floor" => [floor, "#{fast}/chat/completions", n.to_s, body_file],
          "core" => [core_loop, fast, n.to_s] }.each do |k, cmd|
          wall, cpu_us = c_client(*cmd)
          per_call[k] << wall
          cpu[k] << cpu_us
        end
        res = ruby_client("core_in_ruby", n, fast, core_lib)
        per_call["core_in_ruby"] << res["us"]
        cpu["core_in_ruby"] << res["cpu_us"]
        clients.each do |c|
          res = ruby_client(c, c == "ruby_llm" ? [n / 4, 100].max : n, fast)
          info[c] = res
          per_call[c] << res["us"]
          cpu[c] << res["cpu_us"]
        end

        stream["floor"] << c_client(floor, peer.url(:stream), stream_n.to_s, stream_body_file)[0] / Peer::STREAM_EVENTS
        stream["core"] << c_client(core_loop, peer.base_url(:stream), stream_n.to_s, "stream")[0] / Peer::STREAM_EVENTS
        stream["gem"] << ruby_client("gem_stream", stream_n, peer.base_url(:stream))["per_chunk_us"]
        stream["net_http"] << ruby_client("net_http_stream", stream_n, peer.base_url(:stream))["per_chunk_us"]

        [1, 8].each do |t|
          threads["gem#{t}"] << ruby_client("gem_threads", thread_n, peer.base_url(:slow), t)["calls_per_s"]
          threads["net_http#{t}"] << ruby_client("net_http_threads", thread_n, peer.base_url(:slow), t)["calls_per_s"]
        end

        handoff["floor"] << handoff_gaps(hp_out) { sh!(floor, "#{fail_url}/chat/completions,#{ok_url}/chat/completions", (handoff_n * 2).to_s, body_file) }
        gem_res = nil
        handoff["gem"] << handoff_gaps(hp_out) { gem_res = ruby_client("gem_handoff", handoff_n, fail_url, ok_url) }
        handoff["gem_records"] << gem_res["records_median_us"]
      end

      memory = ENV["MEMORY"] == "1" ? ruby_client("memory", env_int("MEMORY_N", 100_000), fast, 1000) : nil

      report(rounds: rounds, n: n, stream_n: stream_n, thread_n: thread_n, handoff_n: handoff_n,
             per_call: per_call.transform_values { |v| best(v) }, cpu: cpu.transform_values { |v| best(v) },
             stream: stream.transform_values { |v| best(v) },
             threads: threads.transform_values { |v| best(v, more_is_better: true) },
             handoff: handoff.transform_values { |v| best(v) },
             info: info, memory: memory)
    ensure
      peer.stop
      if hp_wait
        Process.kill(:TERM, hp_wait.pid) rescue nil
        hp_wait.join
      end
    end
  end

  # Runs the block (a client talking to the hand-off peer) and returns the median of
  # the gaps the peer printed meanwhile.
  def handoff_gaps(io)
    yield
    gaps = []
    while IO.select([io], nil, nil, 0.2)
      line = io.gets or break
      gaps << Float(line.split[1]) if line.start_with?("D ")
    end
    gaps.drop(gaps.size / 10) # the warm-up calls
        .then { |g| median(g) }
  end

  def report(rounds:, n:, stream_n:, thread_n:, handoff_n:, per_call:, cpu:, stream:, threads:, handoff:, info:,
             memory:)
    gem = per_call["gem"]
    lines = []
    lines << "llm_failover bench, #{Time.now.utc.strftime('%Y-%m-%d %H:%M UTC')}"
    lines << machine
    lines << "best of #{rounds} interleaved rounds per client (hand-off: median gap of the best round); " \
             "each client in its own process; peer: nginx on loopback"
    lines << ""
    lines << "Per call, non-streamed, keep-alive (#{n} calls/round; fresh chat each call, records on, no-op sink)"
    lines << format("  %-40s %10s %10s %14s %12s", "client", "us/call", "calls/s", "gem vs it", "CPU us/call")
    names = {
      "floor" => "libcurl loop in C (the floor)",
      "core" => "the gem's C core alone (lf_run in C)",
      "core_in_ruby" => "the same C loop run from Ruby (Fiddle)",
      "engine" => "Engine#run from Ruby, empty listener",
      "gem" => "llm_failover chat.ask",
      "net_http" => "net/http keep-alive + JSON.parse",
      "faraday" => "Faraday #{info.dig('faraday', 'adapter')&.split('::')&.last || ''} adapter",
      "ruby_llm" => "ruby_llm #{info.dig('ruby_llm', 'version')} chat.ask"
    }
    per_call.sort_by { |k, _| names.keys.index(k) }.each do |k, us|
      lines << format("  %-40s %10s %10s %14s %12s", names[k], fmt(us), fmt(1e6 / us, 0),
                      k == "gem" ? "" : ratio(us / gem), fmt(cpu[k]))
    end
    lines << "  (CPU: user and system time of the client's process, best round; the rest of a call is waiting)"
    lines << ""
    lines << "Streamed, #{Peer::STREAM_EVENTS} events per call (#{stream_n} calls/round)"
    lines << format("  %-40s %10s %14s", "client", "us/chunk", "gem vs it")
    { "floor" => "libcurl loop in C, no parsing (the floor)", "core" => "the gem's C core alone (lf_run in C)",
      "gem" => "llm_failover ask { |chunk| }",
      "net_http" => "net/http read_body + JSON.parse per event" }.each do |k, label|
      lines << format("  %-40s %10s %14s", label, fmt(stream[k], 3), k == "gem" ? "" : ratio(stream[k] / stream["gem"]))
    end
    lines << ""
    lines << "Threads against a peer that answers after 50 ms (#{thread_n} calls per thread)"
    lines << format("  %-40s %10s %10s %12s", "client", "1 thread", "8 threads", "8 vs 1")
    %w[gem net_http].each do |k|
      one = threads["#{k}1"]
      eight = threads["#{k}8"]
      lines << format("  %-40s %10s %10s %12s", k == "gem" ? "llm_failover chat.ask (calls/s)" : "net/http (calls/s)",
                      fmt(one), fmt(eight), ratio(eight / one))
    end
    lines << ""
    lines << "Failover hand-off: 503 handed to the kernel -> backup's request read, at the peer (#{handoff_n} calls/round)"
    lines << format("  %-40s %10s", "client", "us")
    lines << format("  %-40s %10s", "libcurl loop in C alternating hosts", fmt(handoff["floor"]))
    lines << format("  %-40s %10s", "llm_failover, backoff 0 (peer's clock)", fmt(handoff["gem"]))
    lines << format("  %-40s %10s", "llm_failover (attempt records' gap)", fmt(handoff["gem_records"]))
    if memory
      lines << ""
      lines << "Memory: RSS after 1k calls #{memory['rss_kb_after_1000']} kB, after " \
               "#{memory.keys.grep(/rss_kb_after/).last.split('_').last} calls " \
               "#{memory[memory.keys.grep(/rss_kb_after/).last]} kB, growth #{memory['growth_kb']} kB"
    end
    lines << ""
    lines << "Targets"
    lines << "  per call >= 0.80x the floor's throughput: #{ratio(per_call['floor'] / gem)} " \
             "#{verdict(per_call['floor'] / gem >= 0.8)}"
    lines << "  >= 5x Faraday: #{ratio(per_call['faraday'] / gem)} #{verdict(per_call['faraday'] / gem >= 5)}"
    lines << "  >= 2x net/http: #{ratio(per_call['net_http'] / gem)} #{verdict(per_call['net_http'] / gem >= 2)}"
    lines << "  <= 2 us per chunk: #{fmt(stream['gem'], 3)} us #{verdict(stream['gem'] <= 2)}"
    lines << "  8 threads >= 7x one: #{ratio(threads['gem8'] / threads['gem1'])} " \
             "#{verdict(threads['gem8'] / threads['gem1'] >= 7)}"
    lines << "  hand-off < 1 ms: #{fmt(handoff['gem'])} us #{verdict(handoff['gem'] < 1000)}"
    if memory
      lines << "  RSS growth < 5 MB: #{memory['growth_kb']} kB #{verdict(memory['growth_kb'] < 5 * 1024)}"
    end
    lines.concat(budget(per_call))
    puts lines
  end

  # What each per-call target leaves, in this run, for what chat.ask adds to Engine#run
  # (the fresh Chat, its store and two messages, the Call, the attempt record and its
  # sink, the Reply), next to what it adds now.
  def budget(per_call)
    engine = per_call["engine"]
    gem = per_call["gem"]
    return [] unless engine && gem

    lines = ["", "What each per-call target leaves for chat.ask's Ruby layer (Engine#run alone: #{fmt(engine)} us; " \
                 "the Ruby layer adds #{fmt(gem - engine)} us now)"]
    { "0.80x the floor" => per_call["floor"] && per_call["floor"] / 0.8,
      "5x Faraday" => per_call["faraday"] && per_call["faraday"] / 5,
      "2x net/http" => per_call["net_http"] && per_call["net_http"] / 2 }.each do |label, limit|
      next unless limit

      lines << format("  %-16s chat.ask <= %6s us: %6s us left", label, fmt(limit), fmt(limit - engine))
    end
    lines
  end

  # `rake bench:memory`: the RSS figure alone.
  def memory_only
    peer = Peer.new(dir: File.join(TMP, "peer")).start
    begin
      n = env_int("MEMORY_N", 100_000)
      m = ruby_client("memory", n, peer.base_url(:fast), 1000)
      puts "RSS after 1000 calls: #{m['rss_kb_after_1000']} kB; after #{n}: #{m["rss_kb_after_#{n}"]} kB; " \
           "growth #{m['growth_kb']} kB (target < 5120 kB: #{verdict(m['growth_kb'] < 5120)}); " \
           "idle connections #{m['idle_connections']}"
    ensure
      peer.stop
    end
  end
end

if $PROGRAM_NAME == __FILE__
  ARGV.first == "memory" ? Bench.memory_only : Bench.run
end
