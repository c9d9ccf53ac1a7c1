# frozen_string_literal: true

require "optparse"
require_relative "command"
require_relative "usage_error"

module LlmFailover
  class CLI
    # `llm_failover health`: each target's circuit, as a fleet's Redis state store holds it.
    class HealthCommand < Command
      NAME = "health"

      # Where the store's outage warnings go: one line each on stderr. Not a Logger: from
      # Ruby 3.5 on, logger is a bundled gem an app's bundle may lack.
      ErrLines = Struct.new(:io) do
        def warn(message) = io.puts(message)
      end

      def parser(opts)
        OptionParser.new do |o|
          o.banner = "Usage: llm_failover health [--redis-url URL] [--namespace NAME]\n\n" \
                     "Each target's circuit (state, consecutive failures, opened at, cooldown until, last error)\n" \
                     "and a pool host's shared headroom (what it said is left, until when) from a RedisStateStore. A MemoryStateStore lives inside each process: ask it there\n" \
                     "with LlmFailover.health.\n\n"
          o.on("--redis-url URL", "the store's Redis (default: $REDIS_URL)") { |v| opts[:url] = v }
          o.on("--namespace NAME", "the store's namespace (default: llm_failover)") { |v| opts[:namespace] = v }
        end
      end

      def run(argv)
        opts = {}
        parser(opts).parse!(argv)
        raise UsageError, "unexpected argument #{argv.first.inspect}" unless argv.empty?

        url = opts[:url] || @env["REDIS_URL"]
        raise UsageError, "no Redis to read: pass --redis-url or set REDIS_URL" if url.nil? || url.empty?

        load_gem
        require_relative "../report/table"
        store = LlmFailover::RedisStateStore.new(url: url, namespace: opts[:namespace] || "llm_failover",
                                                 logger: ErrLines.new(@err))
        targets = store.health
        return FAILED unless store.connected? # the store's warning said why, on stderr
        at = ->(t) { t&.utc&.strftime("%Y-%m-%d %H:%M:%S") }
        @out.puts(LlmFailover::Report::Table.new(
          %w[provider model state failures opened_at cooldown_until last_error headroom],
          targets.map { |h|
            [h[:provider], h[:model], h[:state], h[:failures], at.call(h[:opened_at]), at.call(h[:cooldown_until]),
             h[:last_error]&.delete_prefix("LlmFailover::"), headroom(h[:headroom], at)]
          }
        ).to_s)
        OK
      end

      private

      # "0 requests until 12:00:30, 900 tokens until 12:01:00"; nil when nothing is shared.
      def headroom(room, at)
        return nil unless room

        [[room[:requests], "requests", room[:requests_reset_at]], [room[:tokens], "tokens", room[:tokens_reset_at]]]
          .select(&:first).map { |left, what, reset| "#{left} #{what} until #{at.call(reset)}" }.join(", ")
      end
    end
  end
end
