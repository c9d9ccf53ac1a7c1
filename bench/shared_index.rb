# frozen_string_literal: true

# The shared indexes searched by the server against mirrored in each process
# (loaded by bench/semantic_index.rb, whose helpers it uses): for each engine, way
# and size, one partition of SHARED_SIZES entries of DIM dimensions is loaded through
# the index's own #add, then a forked process (a new Sidekiq worker, say) builds a
# fresh index and answers QUERIES lookups. Printed: that process's first lookup (a
# mirror reads the whole partition then), the median of the others (hits and misses
# apart), what its RSS grew by, the hits found (recall against the entry each hit
# query was made from), the add time and the server's bytes per entry. PostgreSQL's
# partitions of BULK_FROM entries or more are written in bulk instead of through
# #add (the add time is then "-"). For Redis searched by the server: what a lookup and an
# add cost its other clients (Redis's main thread per call, another client's PING).
#
#   SHARED=redis,postgresql SHARED_SIZES=10000,100000 (the defaults; an engine whose
#   server is not installed is left out, saying so)
#
# Servers: a redis-server and a PostgreSQL cluster of the bench's own (the specs'
# spec/support/redis_server.rb and postgres_server.rb), stopped at the end. The
# server-side way needs Redis 8 and pgvector 0.8 (Debian 13); where they lack, the
# row says so.

require_relative "../spec/support/redis_server"
require_relative "../spec/support/postgres_server"

SHARED_ENGINES = ENV.fetch("SHARED", "redis,postgresql").split(",").map(&:to_sym)
SHARED_SIZES = ENV.fetch("SHARED_SIZES", "10000,100000").split(",").map { |s| Integer(s) }
# From this size on PostgreSQL's partition is written in bulk (Postgres#bulk_load).
BULK_FROM = Integer(ENV.fetch("BULK_FROM", 50_000))

# The vector of entry i, made again from its seed wherever it is needed (no process
# holds all of them).
def entry_vector(i)
  vector(Random.new(1_000_003 + i))
end

# Half the queries a stored entry plus noise (cosine ~0.99: a hit, that entry), half
# fresh vectors (a miss).
def shared_queries(n, rng)
  Array.new(QUERIES) do |q|
    next [vector(rng), nil] if q.odd?

    i = rng.rand(n)
    jitter = noise(rng, DIM)
    [entry_vector(i).each_with_index.map { |x, k| x + (0.1 * jitter[k]) }, i.to_s]
  end
end

# What one engine needs: a fresh index object (in any process), its server's bytes,
# and a way to empty it.
class SharedEngine
  attr_reader :name

  def self.for(name)
    case name
    when :redis
      return "redis-server is not installed" unless RedisServer.available?

      Redis.new
    when :postgresql
      return PostgresServer.missing_reason unless PostgresServer.available?

      Postgres.new
    else
      "unknown engine #{name} (SHARED=redis,postgresql)"
    end
  end

  # The Redis of the bench's own.
  class Redis < SharedEngine
    def initialize
      super
      require "llm_failover"
      @server = RedisServer.new.start
      @name = "RedisIndex (redis-server #{RedisServer.version})"
    end

    def index(search, n, mirror)
      LlmFailover::RedisIndex.new(url: @server.url, namespace: "bench", search: search, max_per_partition: n,
                                  mirror: mirror)
    end

    def server_bytes
      client { |c| c.call("INFO", "memory")[/used_memory:(\d+)/, 1].to_i }
    end

    # CPU seconds Redis's main thread has used: what every other client waits behind.
    def main_thread_seconds
      client { |c| c.call("INFO", "cpu").scan(/used_cpu_(?:user|sys)_main_thread:([\d.]+)/).sum { |(x)| Float(x) } }
    end

    # Runs the block while another client PINGs every millisecond; returns the PINGs'
    # round trips (seconds).
    def pings_meanwhile
      stop = false
      pinger = Thread.new do
        client do |c|
          times = []
          until stop
            t = now
            c.call("PING")
            times << now - t
            sleep 0.001
          end
          times
        end
      end
      yield
      stop = true
      pinger.value
    end

    def reconnect; end

    def stop
      @server.destroy
    end

    private

    def client
      c = RedisClient.new(url: @server.url)
      yield c
    ensure
      c&.close
    end
  end

  # PostgreSQL of the bench's own, the tables as create_tables! makes them.
  class Postgres < SharedEngine
    def initialize
      super
      require "llm_failover/active_record"
      require "pg"
      ActiveRecord::Base.logger = nil
      ActiveRecord::Migration.verbose = false
      reconnect
      LlmFailover::ActiveRecord.create_tables!(force: true)
      version = ActiveRecord::Base.connection.select_value("SHOW server_version")
      pgvector = ActiveRecord::Base.connection.select_value("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
      @name = "ActiveRecordIndex (PostgreSQL #{version}, #{pgvector ? "pgvector #{pgvector}" : 'no pgvector'})"
    end

    def index(search, n, mirror)
      LlmFailover::ActiveRecordIndex.new(search: search, max_per_partition: n, prune_every: n + 1, mirror: mirror)
    end

    # The rows #add would write, 1,000 a statement, the HNSW indexes built after them
    # (one HNSW insert at 1,536 dimensions costs ~10 ms here: 100,000 adds ~30 min).
    def bulk_load(way, partition, n)
      table = LlmFailover::ActiveRecord::VectorEntry
      c = ActiveRecord::Base.connection
      search = LlmFailover::ActiveRecord::Schema::VectorSearch
      search.indexes(table.table_name).each { |_, o| c.remove_index(table.table_name, name: o[:name], if_exists: true) }
      key = Digest::SHA256.hexdigest(partition)
      (0...n).each_slice(1000) do |ids|
        table.insert_all!(ids.map do |i|
          normalised = LlmFailover::MemoryIndex.normalise(entry_vector(i))
          row = { partition_key: key, value: i.to_s, created_at: Time.now.utc, dimensions: DIM }
          way == :server ? row.merge(vector: "", embedding: "{#{normalised.unpack('f*').join(',')}}") : row.merge(vector: normalised.unpack("f*").pack("e*"))
        end)
      end
      c.execute("SET maintenance_work_mem = '2GB'")
      LlmFailover::ActiveRecord::Schema.define_vector_search(c, table.table_name)
      c.execute("RESET maintenance_work_mem")
    end

    def server_bytes
      ActiveRecord::Base.connection.execute("VACUUM ANALYZE llm_failover_vectors")
      ActiveRecord::Base.connection.select_value("SELECT pg_total_relation_size('llm_failover_vectors')").to_i
    end

    # A forked child never uses its parent's connections.
    def reconnect
      ActiveRecord::Base.establish_connection(PostgresServer.config.merge(pool: 5))
    end

    def stop; end # PostgresServer stops its cluster at exit
  end
end

# Runs the block in a forked child; returns what it returned (through a pipe, as JSON).
def in_child
  reader, writer = IO.pipe
  pid = fork do
    reader.close
    writer.write(JSON.generate(yield))
  ensure
    writer.close
    exit!(0)
  end
  writer.close
  result = reader.read
  Process.wait(pid)
  JSON.parse(result)
ensure
  reader&.close
end

# One engine's way at one size: loads the partition, then measures a fresh process.
# The server way is the index's own choice (search: :auto), the mirror is asked for.
def shared_row(engine, way, n)
  partition = "tenant|text-embedding-3-small|digest"
  search = way == :server ? :auto : :mirror
  loader = engine.index(search, n, LlmFailover::MemoryIndex.new(max_entries: 1)) # the loader keeps no copy
  return { way: way, n: n, missing: "the server cannot search" } if loader.search != way

  loader.clear
  before = engine.server_bytes
  t0 = now
  if n >= BULK_FROM && engine.respond_to?(:bulk_load)
    engine.bulk_load(way, partition, n)
    add_s = nil
  else
    n.times { |i| loader.add(partition: partition, vector: entry_vector(i), value: i.to_s) }
    add_s = (now - t0) / n
  end
  server = (engine.server_bytes - before) / n
  queries = shared_queries(n, Random.new(n))
  result = in_child do
    engine.reconnect
    GC.start
    rss0 = rss_kb
    index = engine.index(search, n, LlmFailover::MemoryIndex.new(max_entries: nil, max_bytes: nil))
    first = now
    index.nearest(partition: partition, vector: queries.first[0], threshold: THRESHOLD)
    first = now - first
    times = { "hit" => [], "miss" => [] }
    found = queries.count do |q, want|
      t = now
      got = index.nearest(partition: partition, vector: q, threshold: THRESHOLD)
      times[want ? "hit" : "miss"] << now - t
      want && got&.first == want
    end
    GC.start
    { "first" => first, "hit" => median(times["hit"]), "miss" => median(times["miss"]), "found" => found,
      "rss" => (rss_kb - rss0) * 1024, "search" => index.search.to_s }
  end
  searching_redis = way == :server && engine.respond_to?(:pings_meanwhile)
  if searching_redis
    stall = main_thread_stall(engine, search, n, partition, queries)
    add_stalls = { full: add_stall(engine, search, partition, limit: n, first: n),
                   growing: add_stall(engine, search, partition, limit: n + (4 * QUERIES), first: n + (2 * QUERIES)) }
  end
  loader.clear
  { way: way, n: n, add: add_s, server: server, hits: queries.count { |_, want| want }, stall: stall,
    add_stalls: add_stalls }.merge(result.transform_keys(&:to_sym))
end

# What a searching lookup costs every other client of the server: the main thread's CPU
# per lookup (the lookups alone, in a forked process), then the same lookups again
# while another client PINGs: the PINGs' median and worst round trip.
def main_thread_stall(engine, search, n, partition, queries)
  lookups = lambda do
    in_child do
      index = engine.index(search, n, nil)
      queries.each { |q, _| index.nearest(partition: partition, vector: q, threshold: THRESHOLD) }
      nil
    end
  end
  before = engine.main_thread_seconds
  lookups.call
  cpu = (engine.main_thread_seconds - before) / queries.size
  pings = engine.pings_meanwhile(&lookups)
  { cpu: cpu, ping: median(pings), worst: pings.max }
end

# The same for adds: QUERIES new entries (from entry +first+ on) added in a forked process,
# the CPU per add, then QUERIES more while another client PINGs. At a limit of the
# partition's size every add removes the oldest entry as well (a full partition).
def add_stall(engine, search, partition, limit:, first:)
  adds = lambda do |from|
    in_child do
      index = engine.index(search, limit, nil)
      (from...(from + QUERIES)).each { |i| index.add(partition: partition, vector: entry_vector(i), value: i.to_s) }
      nil
    end
  end
  before = engine.main_thread_seconds
  adds.call(first)
  cpu = (engine.main_thread_seconds - before) / QUERIES
  pings = engine.pings_meanwhile { adds.call(first + QUERIES) }
  { cpu: cpu, ping: median(pings), worst: pings.max }
end

puts
puts "Shared indexes: one partition of #{DIM} dimensions, #{QUERIES} lookups in a fresh process " \
     "(half near a stored entry, half fresh), threshold #{THRESHOLD}"
shared_rows = []
SHARED_ENGINES.each do |name|
  engine = SharedEngine.for(name)
  if engine.is_a?(String)
    puts "#{name}: left out: #{engine}"
    next
  end
  SHARED_SIZES.each do |n|
    %i[server mirror].each do |search|
      r = shared_row(engine, search, n).merge(engine: engine.name)
      shared_rows << r
      if r[:missing]
        puts format("%s, %s, %7d entries: %s", r[:engine], search, n, r[:missing])
        next
      end
      puts format("%s, %s, %7d entries: first lookup %s, then hit %s, miss %s; hits found %d/%d; " \
                  "process RSS +%.1f MB; add %s; server %d B/entry",
                  r[:engine], r[:search], n, fmt_ms(r[:first]), fmt_ms(r[:hit]), fmt_ms(r[:miss]), r[:found], r[:hits],
                  r[:rss] / 1e6, fmt_ms(r[:add]), r[:server])
      next unless (stall = r[:stall])

      puts format("  Redis's main thread per lookup %s CPU; another client's PING meanwhile: median %s, worst %s",
                  fmt_ms(stall[:cpu]), fmt_ms(stall[:ping]), fmt_ms(stall[:worst]))
      r[:add_stalls].each do |kind, a|
        puts format("  per add (%s partition) %s CPU; another client's PING meanwhile: median %s, worst %s",
                    kind, fmt_ms(a[:cpu]), fmt_ms(a[:ping]), fmt_ms(a[:worst]))
      end
    end
  end
ensure
  engine.stop if engine.respond_to?(:stop)
end

unless shared_rows.empty?
  puts
  puts "| index | way | entries | first lookup | lookup hit | lookup miss | hits found | process RSS | server B/entry |"
  puts "|---|---|---:|---:|---:|---:|---:|---:|---:|"
  shared_rows.reject { |r| r[:missing] }.each do |r|
    puts format("| %s | %s | %d | %s | %s | %s | %d/%d | +%.1f MB | %d |", r[:engine], r[:search], r[:n], fmt_ms(r[:first]),
                fmt_ms(r[:hit]), fmt_ms(r[:miss]), r[:found], r[:hits], r[:rss] / 1e6, r[:server])
  end
end
