# frozen_string_literal: true

require "fileutils"
require "socket"
require "tmpdir"

# A throwaway PostgreSQL cluster for the suite: initdb into a temp dir, the server on a
# free loopback port (its unix socket in the same dir), started the first time a spec
# asks for it and stopped at exit. Debian's binaries (bin/setup installs them); initdb
# and postgres refuse to run as root, so as root they run as the `postgres` user.
module PostgresServer
  DATABASE = "llm_failover_test"

  class << self
    # @return [String, nil] the directory of initdb/pg_ctl/postgres, newest version first
    def bin_dir
      return @bin_dir if defined?(@bin_dir)

      dirs = [ENV["LLM_FAILOVER_PG_BIN"], *Dir["/usr/lib/postgresql/*/bin"].sort_by { |d| -d[%r{/(\d+)/bin}, 1].to_i }]
      @bin_dir = dirs.compact.find { |d| %w[initdb pg_ctl postgres].all? { |b| File.executable?(File.join(d, b)) } }
    end

    def available?
      !bin_dir.nil?
    end

    # Why the PostgreSQL specs are skipped (nil when they are not).
    def missing_reason
      return nil if available?

      "PostgreSQL binaries not found (/usr/lib/postgresql/*/bin or LLM_FAILOVER_PG_BIN): " \
        "run bin/setup (apt-get install postgresql); the PostgreSQL specs are SKIPPED"
    end

    # @return [String, nil] the pgvector release this server would install ("0.8.0")
    def pgvector_version
      return nil unless available?

      control = "/usr/share/postgresql/#{bin_dir[%r{/(\d+)/bin}, 1]}/extension/vector.control"
      File.exist?(control) ? File.read(control)[/default_version\s*=\s*'([^']+)'/, 1] : nil
    end

    # Why the specs of PostgreSQL searching vectors itself are skipped (nil when they
    # are not): they need pgvector 0.8 or later.
    def pgvector_missing_reason
      return missing_reason if missing_reason
      return nil if LlmFailover::ActiveRecord::Schema::VectorSearch.usable?(pgvector_version)

      found = pgvector_version ? "pgvector #{pgvector_version}" : "no pgvector"
      "PostgreSQL #{bin_dir[%r{/(\d+)/bin}, 1]} here has #{found} (0.8 or later: apt-get install " \
        "postgresql-NN-pgvector): the server-side ActiveRecordIndex specs are SKIPPED; the Debian 13 leg of CI runs them"
    end

    # Starts the cluster once; later calls return the same settings.
    # @return [Hash] ActiveRecord connection settings (host, port, database, username)
    def config
      @config ||= start
    end

    # Settings for the pg gem (PG.connect) to the test database.
    def pg_params
      c = config
      { host: c[:host], port: c[:port], dbname: c[:database], user: c[:username] }
    end

    private

    def start
      raise missing_reason unless available?

      @dir = Dir.mktmpdir("llm_failover_pg")
      @owner = Process.pid
      as_root = Process.uid.zero?
      FileUtils.chown_R("postgres", "postgres", @dir) if as_root
      data = File.join(@dir, "data")
      port = free_port
      at_exit { stop }

      run(as_root, "initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
      options = "-p #{port} -k #{@dir} -c listen_addresses=127.0.0.1 -c fsync=off " \
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=100"
      run(as_root, "pg_ctl", "-D", data, "-l", File.join(@dir, "server.log"), "-o", options, "-w", "-t", "60",
          "start")
      @data = data
      @as_root = as_root
      run(as_root, "createdb", "-h", "127.0.0.1", "-p", port.to_s, "-U", "postgres", DATABASE)
      { adapter: "postgresql", host: "127.0.0.1", port: port, database: DATABASE, username: "postgres" }
    end

    # Only the process that started the server stops it (specs fork; a child's exit
    # must not take the server away from the parent).
    def stop
      return unless @owner == Process.pid && @dir

      run(@as_root, "pg_ctl", "-D", @data, "-m", "immediate", "-w", "stop") if @data
    rescue StandardError => e
      warn "PostgresServer: could not stop the test cluster: #{e.message}"
    ensure
      FileUtils.remove_entry(@dir, true) if @owner == Process.pid && @dir
    end

    # The sanitizer runtime the suite may run under stays out of the server's processes.
    def run(as_root, tool, *args)
      command = [File.join(bin_dir, tool), *args]
      command = ["runuser", "-u", "postgres", "--", *command] if as_root
      env = { "LD_PRELOAD" => nil, "ASAN_OPTIONS" => nil, "UBSAN_OPTIONS" => nil }
      log = File.join(@dir, "#{tool}.out")
      return if system(env, *command, out: log, err: %i[child out], chdir: @dir)

      raise "PostgresServer: #{tool} failed:\n#{File.read(log)}"
    end

    def free_port
      server = TCPServer.new("127.0.0.1", 0)
      server.addr[1]
    ensure
      server&.close
    end
  end
end
