# frozen_string_literal: true

require "optparse"
require_relative "../report"

module LlmFailover
  class Report
    # `llm_failover report --database URL [--since 7d] [--table NAME] [--html PATH]`
    #
    # Without --database nor DATABASE_URL, inside a Rails app's directory it reads
    # config/database.yml (RAILS_ENV, default development; the primary database).
    #
    # Connects through its own abstract model, so running it inside an app process
    # leaves ActiveRecord::Base's connection alone.
    module CLI
      USAGE = "usage: llm_failover report --database URL [--since 7d|24h|30m] [--table llm_failover_attempts] " \
              "[--html report.html]"
      UNITS = { "d" => 86_400, "h" => 3600, "m" => 60 }.freeze
      EX_USAGE = 2 # the same usage status as every other llm_failover command

      # The connection the report reads (named, so its pool is its own).
      class Database < ::ActiveRecord::Base
        self.abstract_class = true
      end

      # The attempts table behind that connection.
      class Attempt < Database
        self.table_name = LlmFailover::ActiveRecord::Attempt.table_name
      end

      # The circuit events table behind that connection.
      class CircuitTransition < Database
        self.table_name = LlmFailover::ActiveRecord::CircuitTransition.table_name
      end

      class << self
        # @param argv [Array<String>] the arguments after "report"
        # @return [Integer] exit status: 0, 1 (database trouble), 2 (usage)
        def run(argv, out: $stdout, err: $stderr)
          options = parse(argv.dup)
          if options[:help]
            out.puts(options[:help])
            return 0
          end
          url = options[:database] || ENV["DATABASE_URL"].to_s.then { |u| u.empty? ? nil : u } || app_database
          if url.nil? || url.empty?
            raise OptionParser::MissingArgument, "--database (or DATABASE_URL, or run it where config/database.yml is)"
          end

          connect(url)
          Attempt.table_name = options[:table]
          unless Attempt.table_exists?
            err.puts("llm_failover report: no table #{options[:table]} in that database " \
                     "(run the llm_failover:install migration, or LlmFailover::ActiveRecord.create_tables!)")
            return 1
          end
          report = Report.new(from: Time.now - options[:since], attempts: Attempt, circuit_events: CircuitTransition)
          if options[:html]
            File.write(options[:html], report.to_html)
            out.puts("llm_failover report: wrote #{options[:html]}")
          else
            out.print(report.to_s)
          end
          0
        rescue OptionParser::ParseError, ArgumentError => e
          err.puts("llm_failover report: #{e.message}", USAGE)
          EX_USAGE
        rescue ::ActiveRecord::ActiveRecordError, SystemCallError, LoadError => e # LoadError: no gem for that adapter
          err.puts("llm_failover report: #{e.class}: #{e.message}")
          1
        ensure
          Database.remove_connection if Database.connected?
        end

        # @return [Integer] seconds in "7d", "24h", "30m"
        # @raise [ArgumentError]
        def duration(text)
          match = /\A(\d+)([dhm])\z/.match(text.to_s.strip)
          raise ArgumentError, "--since wants a number and d, h or m (7d, 24h, 30m), got #{text.inspect}" unless match

          match[1].to_i * UNITS.fetch(match[2])
        end

        private

        def parse(argv)
          options = { since: duration("7d"), table: LlmFailover::ActiveRecord::Attempt.table_name }
          parser = OptionParser.new do |o|
            o.banner = USAGE
            o.on("--database URL", "database URL, or the path of a SQLite file") { |v| options[:database] = v }
            o.on("--since DURATION", "period to report: 7d, 24h, 30m (default 7d)") do |v|
              options[:since] = duration(v)
            end
            o.on("--table NAME", "attempts table (default llm_failover_attempts)") { |v| options[:table] = v }
            o.on("--html PATH", "write the report as one HTML page with charts to PATH") { |v| options[:html] = v }
            o.on("-h", "--help", "this text") { options[:help] = o.help }
          end
          rest = parser.parse(argv)
          raise OptionParser::InvalidArgument, rest.join(" ") unless rest.empty?

          options
        end

        # The app's settings from config/database.yml in the current directory, nil
        # when there is none. ERB is evaluated as Rails does.
        def app_database(path = "config/database.yml")
          return nil unless File.exist?(path)

          require "erb"
          require "yaml"
          env = ENV["RAILS_ENV"] || ENV["RACK_ENV"] || "development"
          all = YAML.safe_load(ERB.new(File.read(path)).result, aliases: true) || {}
          config = all[env]
          raise ArgumentError, "#{path} has no #{env.inspect} database" unless config.is_a?(Hash)

          config = config["primary"] || config.values.first unless config.key?("adapter") || config.key?("url")
          config.transform_keys(&:to_sym)
        end

        # A URL ("postgres://...", "sqlite3:db/x.sqlite3"), a bare SQLite file path, or
        # settings from database.yml. A SQLite file that does not exist is an error,
        # never created empty.
        def connect(url)
          config =
            if url.is_a?(Hash) then url
            elsif url.match?(%r{\A[a-z][a-z0-9+.-]*:}i) then url
            else { adapter: "sqlite3", database: url }
            end
          path = sqlite_path(config)
          raise ArgumentError, "no such SQLite database: #{path}" if path && !File.exist?(path)

          Database.establish_connection(config)
        end

        def sqlite_path(config)
          return (config[:adapter].to_s.start_with?("sqlite") ? config[:database] : nil) if config.is_a?(Hash)

          match = %r{\Asqlite3:(?://)?([^?]+)}.match(config)
          match && match[1] != ":memory:" ? match[1] : nil
        end
      end
    end
  end
end
