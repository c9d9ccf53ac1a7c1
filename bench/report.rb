# frozen_string_literal: true

# What `llm_failover report` costs on a big attempts table:
#
#   bundle exec ruby bench/report.rb [N]      # N attempt rows, default 200000
#
# Builds N attempt rows (a seeded random week of traffic: retries, failovers, an outage
# with its circuit open, lost, cancelled and stopped calls, cache hits) in a SQLite file
# under a temp dir, then times, in the same run and the same process:
#
#   count        SELECT COUNT(*) of the table: the floor, one pass over an index
#   scan         SELECT SUM(latency_ms), SUM(input_tokens), SUM(output_tokens): one pass over
#                every row, the floor of any aggregate over the table
#   text         `llm_failover report --since 8d` (Report::CLI.run, text), as a user runs it
#   html         the same with --html
#   per method   each query of Report on a fresh Report (summary, failure_rates, ...)
#
# Each figure is the fastest of ROUNDS runs (default 3) in CPU time of this thread
# (SQLite runs in it; a shared machine's other work stretches wall time), next to its
# wall time and its ratio to the full scan. Nothing is asserted. KEEP=1 leaves the file
# and prints its path (for sqlite3's EXPLAIN QUERY PLAN); DB=path times that file
# instead of building one; BEFORE=<commit> also times that commit's text report on the
# same file, in a child process (the figure before a change, from the same run).

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "fileutils"
require "stringio"
require "tmpdir"
require "active_record"
require "sqlite3"
require "llm_failover/active_record"
require "llm_failover/report/cli"

module ReportBench
  N = Integer(ARGV[0] || ENV.fetch("N", "200000"))
  ROUNDS = Integer(ENV.fetch("ROUNDS", "3"))
  NOW = Time.now.utc
  WEEK = 7 * 86_400
  GPT = %w[openai gpt-4o].freeze
  CLAUDE = %w[anthropic claude-sonnet-4-6].freeze
  MINI = %w[openai gpt-4o-mini].freeze
  ROUTES = { "summary" => [GPT, CLAUDE], "support_reply" => [CLAUDE, GPT], "tailoring" => [MINI, GPT],
             nil => [GPT, CLAUDE] }.freeze
  OUTAGE = (NOW - (3 * 86_400))...(NOW - (3 * 86_400) + 3600)
  STATUS = { "UnauthorizedError" => 401, "ServiceUnavailableError" => 503, "OverloadedError" => 529,
             "RateLimitError" => 429, "StreamInterruptedError" => 200, "CircuitOpenError" => nil,
             "AbortedError" => 200 }.freeze

  module_function

  # [target, outcome] per attempt: nil answered, :cached, :cancelled, or an error class.
  def plan(random, feature, at)
    primary, backup = ROUTES.fetch(feature)
    open = primary == GPT && OUTAGE.cover?(at) && at > OUTAGE.begin + 120
    return [[primary, "CircuitOpenError"], [backup, nil]] if open
    return [[primary, "ServiceUnavailableError"]] * 2 + [[backup, nil]] if primary == GPT && OUTAGE.cover?(at)

    case random.rand(1000)
    when 0...60 then [[primary, :cached]]
    when 60...80 then [[primary, "RateLimitError"], [primary, nil]]
    when 80...90 then [[primary, "StreamInterruptedError"], [backup, nil]]
    when 90...95 then [[primary, "OverloadedError"], [primary, "OverloadedError"], [backup, nil]]
    when 95...97 then [[primary, "UnauthorizedError"]]
    when 97...99 then [[primary, "ServiceUnavailableError"], [backup, "OverloadedError"]]
    when 99...102 then [[primary, "AbortedError"]]
    when 102...104 then [[primary, :cancelled]]
    else [[primary, nil]]
    end
  end

  def rows(random, request_id, at)
    feature = ROUTES.keys[random.rand(ROUTES.size)]
    plan(random, feature, at).each_with_index.map do |((provider, model), outcome), i|
      error = outcome.is_a?(String) ? outcome : nil
      success = outcome.nil? || outcome == :cached
      input, output = if outcome == :cached || error == "CircuitOpenError" then [0, 0]
                      elsif success then [300 + random.rand(900), 80 + random.rand(400)]
                      elsif %w[StreamInterruptedError AbortedError].include?(error) || outcome == :cancelled
                        [600, 40 + random.rand(100)]
                      end
      { request_id: request_id, attempt: i + 1, provider: provider, model: model, feature: feature,
        success: success, cached: outcome == :cached, cancelled: outcome == :cancelled,
        error_class: error && "LlmFailover::#{error}", error_message: error && "bench",
        http_status: success ? 200 : STATUS[error], failover_eligible: !success && error != "UnauthorizedError",
        latency_ms: success ? 300 + random.rand(3000) : random.rand(1000), input_tokens: input,
        output_tokens: output, started_at: at + (i * 0.5) }
    end
  end

  def build(path)
    ActiveRecord::Base.establish_connection(adapter: "sqlite3", database: path)
    LlmFailover::ActiveRecord.create_tables!
    insert_attempts(ActiveRecord::Base.connection.raw_connection)
    circuit = [["closed", "open", "threshold", OUTAGE.begin + 120],
               ["open", "half_open", "cooldown_elapsed", OUTAGE.end],
               ["half_open", "closed", "success", OUTAGE.end + 1]]
    LlmFailover::ActiveRecord::CircuitTransition.insert_all!(circuit.map do |from, to, reason, at|
      { provider: GPT[0], model: GPT[1], from_state: from, to_state: to, reason: reason, occurred_at: at }
    end)
    ActiveRecord::Base.connection.execute("ANALYZE")
    ActiveRecord::Base.remove_connection
  end

  # Straight through the sqlite3 gem in one transaction, values as ActiveRecord writes
  # them (UTC times as text, booleans as 1/0): insert_all takes ten times longer.
  def insert_attempts(db)
    columns = LlmFailover::ActiveRecord::Attempt::COLUMNS - %i[provider_request_id]
    random = Random.new(42)
    uuid = Random.new(7)
    db.transaction do
      statement = db.prepare("INSERT INTO llm_failover_attempts (#{columns.join(', ')}) " \
                             "VALUES (#{(['?'] * columns.size).join(', ')})")
      count = 0
      while count < N
        at = NOW - WEEK + (random.rand * (WEEK - 60))
        request_id = format("%08x-%04x-4%03x-%04x-%012x", uuid.rand(2**32), uuid.rand(2**16), uuid.rand(2**12),
                            uuid.rand(2**16), uuid.rand(2**48))
        rows(random, request_id, at).first(N - count).each do |row|
          statement.execute(columns.map { |c| sqlite_value(row[c]) })
          count += 1
        end
      end
      statement.close
    end
  end

  def sqlite_value(value)
    case value
    when true then 1
    when false then 0
    when Time then value.utc.strftime("%Y-%m-%d %H:%M:%S.%6N")
    else value
    end
  end

  # [thread CPU seconds, wall seconds] of the fastest of ROUNDS runs.
  def measure
    Array.new(ROUNDS) do
      GC.start
      cpu = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
      wall = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      yield
      [Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) - cpu,
       Process.clock_gettime(Process::CLOCK_MONOTONIC) - wall]
    end.min_by(&:first)
  end

  def cli(path, *extra)
    out = StringIO.new
    err = StringIO.new
    status = LlmFailover::Report::CLI.run(["--database", path, "--since", "8d", *extra], out: out, err: err)
    raise "report failed (#{status}): #{err.string}" unless status.zero?

    out.string
  end

  # The text report of another commit's lib/ (BEFORE=<commit>) on the same file, in a
  # child process: [thread CPU seconds, wall seconds] of its fastest of ROUNDS runs.
  def before(path, dir)
    root = File.expand_path("..", __dir__)
    lib = File.join(dir, "before")
    FileUtils.mkdir_p(lib)
    system("git -C #{root} archive #{ENV['BEFORE']} lib | tar -x -C #{lib}", exception: true)
    FileUtils.cp(File.join(root, "lib/llm_failover/llm_failover.so"), File.join(lib, "lib/llm_failover/"))
    script = <<~RUBY
      require "stringio"
      require "llm_failover/report/cli"
      best = Array.new(#{ROUNDS}) do
        GC.start
        cpu = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
        wall = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        LlmFailover::Report::CLI.run(["--database", #{path.inspect}, "--since", "8d"], out: StringIO.new, err: $stderr)
        [Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) - cpu,
       Process.clock_gettime(Process::CLOCK_MONOTONIC) - wall]
      end.min_by(&:first)
      puts best.join(" ")
    RUBY
    IO.popen([RbConfig.ruby, "-I", File.join(lib, "lib"), "-e", script], &:read).split.map(&:to_f)
  end

  def run
    dir = Dir.mktmpdir("llm_failover_report_bench")
    path = ENV["DB"] || File.join(dir, "bench.sqlite3")
    unless ENV["DB"]
      built = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      build(path)
      puts "built in #{(Process.clock_gettime(Process::CLOCK_MONOTONIC) - built).round(1)} s"
    end
    db = SQLite3::Database.new(path)
    rows = db.get_first_value("SELECT COUNT(*) FROM llm_failover_attempts")
    db.close
    puts "#{rows} attempt rows in #{path} (#{(File.size(path) / 1e6).round(1)} MB)"
    puts "load average: #{File.read('/proc/loadavg').split.first(3).join(' ')}" if File.exist?("/proc/loadavg")

    ActiveRecord::Base.establish_connection(adapter: "sqlite3", database: path)
    connection = ActiveRecord::Base.connection
    figures = {}
    figures["count"] = measure { connection.select_value("SELECT COUNT(*) FROM llm_failover_attempts") }
    figures["scan"] = measure do
      connection.select_rows("SELECT SUM(latency_ms), SUM(input_tokens), SUM(output_tokens) FROM llm_failover_attempts")
    end
    html_path = File.join(dir, "bench.html")
    figures["text (#{ENV['BEFORE']})"] = before(path, dir) if ENV["BEFORE"]
    figures["text"] = measure { cli(path) }
    figures["html"] = measure { cli(path, "--html", html_path) }
    from = NOW - (8 * 86_400)
    %i[summary failure_rates saves features incident_windows tokens cache_hits open_circuits circuit_windows
       error_classes timeline].each do |name|
      figures["  #{name}"] = measure { LlmFailover::Report.new(from: from).public_send(name) }
    end

    scan = figures["scan"][0]
    puts format("%-24s %10s %10s %10s", "", "cpu ms", "wall ms", "x scan")
    figures.each do |name, (cpu, wall)|
      puts format("%-24s %10.1f %10.1f %10.1f", name, cpu * 1000, wall * 1000, cpu / scan)
    end
    puts cli(path).lines.first(6).join if ENV["SHOW"]
  ensure
    ActiveRecord::Base.remove_connection if ActiveRecord::Base.connected?
    if ENV["KEEP"] && !ENV["DB"]
      puts "kept #{path}"
    elsif dir
      FileUtils.remove_entry(dir)
    end
  end
end

ReportBench.run if $PROGRAM_NAME == __FILE__
