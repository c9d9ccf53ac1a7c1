# frozen_string_literal: true

require_relative "values"
require_relative "table"

module LlmFailover
  class Report
    # The report's numbers as tables of formatted cells. The text report prints them;
    # the HTML report puts them beside its charts, so both show the same figures.
    class Tables
      # A line that stands where a table cannot be made.
      Note = Struct.new(:text) do
        alias_method :to_s, :text
      end

      TITLES = {
        summary: "Summary",
        failure_rates: "Failure rate per provider and model",
        hosts: "Traffic, failures and spend per host (a pool's hosts; failed attempts included)",
        saves: "Failover saves (succeeded after a failed attempt)",
        features: "Features",
        incident_windows: "Incident windows (failures per #{BUCKET_SECONDS / 60}-minute bucket, UTC)",
        tokens: "Tokens (failed attempts included)",
        cache_hits: "Response cache hits (saved tokens estimated from uncached answers)",
        hedges: "Hedged requests (hedge_after: two attempts side by side, one extra request; cut: the losers)",
        open_circuits: "Calls routed around an open circuit",
        circuit_windows: "Circuit incidents (open -> closed, from the circuit log)",
        error_classes: "Failed attempts by error class",
        spend_summary: "Spend (USD, at the prices each attempt was recorded with)",
        spend: "Spend per provider and model (failed attempts included)",
        spend_by_feature: "Spend per feature",
        spend_by_day: "Spend per day (UTC) and provider",
        failover_premium: "Failover premium (what answers on another target cost beyond the first target's price " \
                          "for the same tokens)",
        timeline: "Attempts and failures per time bucket (UTC)"
      }.freeze

      # @param report [Report]
      def initialize(report)
        @report = report
      end

      # @return [Table]
      def summary
        s = @report.summary
        Table.new(%w[attempts requests failed_attempts saves failover_saves cross_provider lost cache_hits
                     routed_around stopped_by_caller],
                  [[s[:attempts], s[:requests], s[:failures], s[:saves], s[:failover_saves],
                    s[:cross_provider_saves], s[:lost], s[:cache_hits], s[:routed_around], s[:stopped]]])
      end

      # @return [Table]
      def failure_rates
        Table.new(%w[provider model attempts failures rate failover_eligible top_error],
                  @report.failure_rates.map { |r|
                    [r.provider, r.model, r.attempts, r.failures, percent(r.rate), r.failover_eligible, r.top_error]
                  })
      end

      # @return [Table, Note] a note when no pool served the period (each provider is its
      #   own host: the failure rates say it all)
      def hosts
        return Note.new("(no pool in this period: every provider is its own host)") unless @report.pooled?

        Table.new(%w[provider host model attempts share failures rate input output spent spent_on_failed],
                  @report.hosts.map { |h|
                    total = @report.hosts.select { |o| o.provider == h.provider && o.model == h.model }.sum(&:attempts)
                    [h.provider, h.host, h.model, h.attempts, percent(h.attempts.fdiv(total)), h.failures,
                     percent(h.rate), h.input, h.output, usd(h.cost), usd(h.failed)]
                  })
      end

      # @return [Table]
      def saves
        Table.new(%w[from to saves], @report.save_paths)
      end

      # @return [Table]
      def features
        Table.new(%w[feature requests attempts failed_attempts failed_over saved lost stopped_by_caller],
                  @report.features.map { |f|
                    [f.feature || "(none)", f.requests, f.attempts, f.failed_attempts, f.failed_over, f.saved, f.lost,
                     f.stopped]
                  })
      end

      # @return [Table]
      def incident_windows
        Table.new(%w[window failures attempts providers errors],
                  @report.incident_windows.map { |w|
                    [window(w.starts_at, w.ends_at), w.failures, w.attempts, w.providers, w.errors]
                  })
      end

      # @return [Table]
      def tokens
        Table.new(%w[provider model input output total failed_input failed_output],
                  @report.tokens.map { |t|
                    [t.provider, t.model, t.input, t.output, t.total, t.failed_input, t.failed_output]
                  })
      end

      # @return [Table]
      def cache_hits
        Table.new(%w[provider model hits exact_rate semantic semantic_rate saved_input saved_output],
                  @report.cache_hits.map { |h|
                    [h.provider, h.model, h.hits, percent(h.exact_rate), h.semantic, percent(h.semantic_rate),
                     h.saved_input, h.saved_output]
                  })
      end

      # @return [Table] per provider and model
      def hedges
        Table.new(%w[provider model hedged_attempts answered cut cut_input cut_output],
                  @report.hedges.map { |h| [h.provider, h.model, h.attempts, h.answered, h.cut, h.cut_input, h.cut_output] })
      end

      # @return [Table]
      def open_circuits
        Table.new(%w[provider model calls first_skip last_skip],
                  @report.open_circuits.map { |c| [c.provider, c.model, c.calls, clock(c.first_skip), clock(c.last_skip)] })
      end

      # @return [Table, Note] a note instead when there is no circuit events table
      def circuit_windows
        unless @report.circuit_log?
          return Note.new("(no #{@report.circuit_table_name} table: run `rails g llm_failover:install` again and migrate)")
        end

        Table.new(%w[provider model opened_at closed_at open_s reason reopens routed_around],
                  @report.circuit_windows.map { |w|
                    [w.provider, w.model, clock(w.opened_at), w.closed_at ? clock(w.closed_at) : "(open)",
                     w.duration&.round(1), w.reason, w.reopens, w.routed_around]
                  })
      end

      # @return [Table]
      def error_classes
        Table.new(%w[error_class attempts failover_eligible],
                  @report.error_classes.map { |e| [e.error_class, e.attempts, e.failover_eligible] })
      end

      # @return [Table] one row per target and bucket with attempts
      def timeline
        points = @report.timeline&.points || []
        Table.new(%w[bucket provider model attempts failures rate],
                  points.map { |p|
                    [window(p.starts_at, p.starts_at + @report.timeline.step), p.provider, p.model, p.attempts,
                     p.failures, percent(p.rate)]
                  })
      end

      # @return [Table, Note]
      def spend_summary
        money_table(%w[spent spent_on_failed_attempts failover_premium cache_saved unpriced_attempts]) do
          s = @report.spend_summary
          [[usd(s[:cost]), usd(s[:failed]), usd(s[:premium]), usd(s[:cache_saved]), s[:unpriced]]]
        end
      end

      # @return [Table, Note]
      def spend
        money_table(%w[provider model spent failed_attempts failed_share cache_saved unpriced_attempts]) do
          @report.spend.map do |s|
            [s.provider, s.model, usd(s.cost), usd(s.failed), percent(s.failed_share), usd(s.cache_saved), s.unpriced]
          end
        end
      end

      # @return [Table, Note]
      def spend_by_feature
        money_table(%w[feature spent failed_attempts]) do
          @report.spend_by_feature.map { |f| [f.feature || "(none)", usd(f.cost), usd(f.failed)] }
        end
      end

      # @return [Table, Note]
      def spend_by_day
        money_table(%w[day provider spent]) do
          @report.spend_by_day.map { |d| [d.day.strftime("%Y-%m-%d"), d.provider, usd(d.cost)] }
        end
      end

      # @return [Table, Note]
      def failover_premium
        money_table(%w[from to calls spent at_first_target_price premium unpriced]) do
          @report.failover_premium.map do |p|
            [p.from, p.to, p.calls, usd(p.cost), usd(p.at_primary_price), usd(p.premium), p.unknown]
          end
        end
      end

      # @return [String] "$0.004200": dollars to the millionth (a token can cost less)
      def self.usd(amount)
        text = format("%.6f", amount.abs)
        amount.negative? ? "-$#{text}" : "$#{text}"
      end

      # @return [String] Tables.usd's
      def usd(amount)
        self.class.usd(amount)
      end

      # @return [String] "66.7%"
      def percent(fraction)
        format("%.1f%%", fraction * 100)
      end

      # @return [String] "2025-03-10 12:05-12:10"; the end's date too when the window
      #   lasts a day or more
      def window(starts_at, ends_at)
        starts_at = starts_at.getutc
        ends_at = ends_at.getutc
        last = ends_at - starts_at < 86_400 ? ends_at.strftime("%H:%M") : ends_at.strftime("%Y-%m-%d %H:%M")
        "#{starts_at.strftime('%Y-%m-%d %H:%M')}-#{last}"
      end

      # A table of money, or a note where the attempts table has no cost column.
      def money_table(headers)
        return Table.new(headers, yield) if @report.costs?

        Note.new("(no cost column in #{@report.table_name}: run `rails g llm_failover:upgrade` and migrate)")
      end

      # @return [String, nil] "2025-03-10 12:05:00"
      def clock(time)
        time&.utc&.strftime("%Y-%m-%d %H:%M:%S")
      end
    end
  end
end
