# frozen_string_literal: true

require "time"
require_relative "tables"
require_relative "markup"
require_relative "bar_chart"
require_relative "html/timeline_section"
require_relative "../chat/target"

module LlmFailover
  class Report
    # The report as one self-contained HTML page: inline SVG charts and inline CSS, no
    # script and no URL, so it opens from disk and can be mailed. Beside each chart is a
    # table of its numbers (the text report's tables, from Report::Tables). Light and
    # dark follow prefers-color-scheme.
    #
    # The timeline section is Html::TimelineSection (html/timeline_section.rb).
    class Html
      include TimelineSection

      STYLESHEET = File.read(File.join(__dir__, "page.css")).freeze

      # Summary figures shown as tiles, in order.
      TILES = { attempts: "attempts", requests: "requests", failures: "failed attempts", saves: "saves",
                failover_saves: "failover saves", lost: "lost calls", cache_hits: "cache hits",
                routed_around: "routed around an open circuit", stopped: "stopped by the caller" }.freeze

      # @param report [Report]
      def initialize(report)
        @report = report
        @tables = Tables.new(report)
      end

      # @return [String]
      def to_s
        m = Markup.new
        m.raw("<!DOCTYPE html>\n")
        m.tag(:html, lang: "en") do
          m.tag(:head) do
            m.tag(:meta, charset: "utf-8")
            m.tag(:meta, name: "viewport", content: "width=device-width, initial-scale=1")
            m.tag(:meta, name: "color-scheme", content: "light dark")
            m.tag(:title, @report.title)
            m.tag(:style) { m.raw(STYLESHEET) }
          end
          m.tag(:body) { body(m) }
        end
        m.to_s << "\n"
      end

      private

      def body(m)
        m.tag(:header) do
          m.tag(:h1, @report.title)
          m.tag(:p, "Generated #{Time.now.utc.strftime('%Y-%m-%d %H:%M UTC')}. Times are UTC.")
        end
        m.tag(:main) do
          if @report.summary[:attempts].zero?
            m.tag(:p, "No attempts in this period: nothing to chart.", class: "empty")
          else
            summary(m)
            timeline(m)
            saves(m)
            error_classes(m)
            tokens(m)
            spending(m)
            hosts(m) if @report.pooled?
            cache_hits(m)
            hedges(m)
            features(m)
          end
        end
      end

      # A section: a heading, a sentence, then its content.
      def section(m, id, heading, note)
        m.tag(:section, id: id, aria_labelledby: "#{id}-heading") do
          m.tag(:h2, heading, id: "#{id}-heading")
          m.tag(:p, note, class: "note") if note
          yield
        end
      end

      # A chart (or a sentence when there is nothing to draw) beside its tables.
      def pair(m, chart, *tables, empty:, legend: nil)
        m.tag(:div, class: "pair") do
          m.tag(:figure) do
            if chart
              chart.render(m)
              legend&.call
            else
              m.tag(:p, empty, class: "note")
            end
          end
          m.tag(:div, class: "numbers") { tables.each { |name| table(m, name) } }
        end
      end

      def table(m, name)
        data = @tables.public_send(name)
        return m.tag(:p, "#{Tables::TITLES.fetch(name)}: #{data}", class: "note") if data.is_a?(Tables::Note)

        m.tag(:table, data_table: name) do
          m.tag(:caption, Tables::TITLES.fetch(name))
          m.tag(:thead) do
            m.tag(:tr) { data.headers.each_with_index { |h, i| m.tag(:th, h, scope: "col", class: cell_class(data, i)) } }
          end
          m.tag(:tbody) do
            m.tag(:tr) { m.tag(:td, "(none)", colspan: data.headers.size) } if data.rows.empty?
            data.rows.each do |row|
              m.tag(:tr) { row.each_with_index { |cell, i| m.tag(:td, cell, class: cell_class(data, i)) } }
            end
          end
        end
      end

      def cell_class(data, index)
        data.numeric?(index) ? "num" : nil
      end

      def legend(m, entries)
        m.tag(:ul, class: "legend") { entries.each { |label, css| m.tag(:li, label, class: css) } }
      end

      def summary(m)
        s = @report.summary
        section(m, "summary", "Summary", nil) do
          m.tag(:dl, class: "summary") do
            TILES.each do |key, label|
              m.tag(:div) do
                m.tag(:dt, label)
                m.tag(:dd, s.fetch(key), data_key: key)
              end
            end
          end
          m.tag(:div, class: "numbers") { table(m, :summary) }
        end
      end

      def saves(m)
        s = @report.summary
        section(m, "saves", "Failovers that saved a call",
                "#{s[:saves]} calls answered after a failed attempt (#{s[:failover_saves]} by another target); " \
                "#{s[:lost]} calls lost; #{s[:stopped]} stopped by their caller, neither failed nor lost.") do
          pair(m, saves_chart, :saves, empty: "No call needed a second attempt to succeed.")
        end
      end

      def saves_chart
        paths = @report.save_paths
        return nil if paths.empty?

        BarChart.new(id: "saves", title: "Failovers that saved a call",
                     description: "Calls that succeeded after a failed attempt, by the target that failed first " \
                                  "and the one that answered.",
                     bars: paths.map { |from, to, n| bar("#{from} → #{to}", n) })
      end

      def error_classes(m)
        section(m, "errors", "Attempts by error class", nil) do
          pair(m, error_classes_chart, :error_classes, empty: "No failed attempt in this period.")
        end
      end

      def error_classes_chart
        counts = @report.error_classes
        return nil if counts.empty?

        BarChart.new(id: "errors", title: "Failed attempts by error class",
                     description: "Failed attempts (skipped, cancelled and caller-stopped ones left out) per " \
                                  "error class.",
                     bars: counts.map { |e| bar(e.error_class, e.attempts, color: "failed") })
      end

      def tokens(m)
        failed = @report.tokens.sum(&:failed_total)
        section(m, "tokens", "Tokens spent on failed attempts",
                "#{failed} of #{@report.tokens.sum(&:total)} tokens were billed on attempts that failed or that " \
                "their caller stopped.") do
          pair(m, tokens_chart, :tokens, empty: "No tokens recorded in this period.",
                                         legend: -> { legend(m, [%w[succeeded ok], %w[failed failed]]) })
        end
      end

      def tokens_chart
        tokens = @report.tokens.reject { |t| t.total.zero? }
        return nil if tokens.empty?

        BarChart.new(id: "tokens", title: "Tokens per provider and model, failed attempts apart",
                     description: "Input and output tokens per target: those of successful attempts and those " \
                                  "billed on attempts that failed or were stopped.",
                     bars: tokens.map { |t|
                       BarChart::Bar.new(label: Target.label(t.provider, t.model), segments: [
                         BarChart::Segment.new(name: "succeeded", value: t.total - t.failed_total, color: "ok"),
                         BarChart::Segment.new(name: "failed", value: t.failed_total, color: "failed")
                       ])
                     })
      end

      def spending(m)
        unless @report.costs?
          return section(m, "spend", "Spend", nil) { table(m, :spend_summary) }
        end

        s = @report.spend_summary
        section(m, "spend", "Spend",
                "#{@tables.usd(s[:cost])} spent, #{@tables.usd(s[:failed])} of it on attempts that failed or were " \
                "stopped; failing over cost #{@tables.usd(s[:premium])} beyond the first targets' prices; the cache " \
                "saved #{@tables.usd(s[:cache_saved])}.") do
          pair(m, spend_chart, :spend_summary, :spend, :failover_premium, :spend_by_feature,
               empty: "No attempt with a cost in this period.", legend: -> { legend(m, spend_legend) })
        end
      end

      # Per UTC day, each provider's spend stacked.
      def spend_chart
        days = @report.spend_by_day
        return nil if days.empty?

        colors = spend_colors
        BarChart.new(id: "spend", title: "Spend per day (UTC), by provider",
                     description: "USD spent per day, every attempt counted (failed ones included), stacked by " \
                                  "provider.",
                     shown: ->(value) { @tables.usd(value) },
                     bars: days.group_by(&:day).map { |day, list|
                       BarChart::Bar.new(label: day.strftime("%Y-%m-%d"), segments: list.map { |d|
                         BarChart::Segment.new(name: d.provider.to_s, value: d.cost, color: colors.fetch(d.provider.to_s))
                       })
                     })
      end

      # A color class per provider, c0 .. c7 in order of name.
      def spend_colors
        @report.spend_by_day.map { |d| d.provider.to_s }.uniq.sort.each_with_index.to_h { |p, i| [p, "c#{i % 8}"] }
      end

      def spend_legend
        spend_colors.map { |provider, css| [provider, css] }
      end

      # A pool's hosts: how its calls spread, what failed where, what each cost.
      def hosts(m)
        section(m, "hosts", "Hosts", "Each pool's attempts by the host that served them.") do
          table(m, :hosts)
        end
      end

      def cache_hits(m)
        section(m, "cache", "Cache hits", nil) do
          pair(m, cache_chart, :cache_hits, empty: "No call was answered from the response cache.")
        end
      end

      def cache_chart
        hits = @report.cache_hits
        return nil if hits.empty?

        BarChart.new(id: "cache", title: "Response cache hits per provider and model",
                     description: "Calls the response cache answered without a request.",
                     bars: hits.map { |h| bar(Target.label(h.provider, h.model), h.hits, color: "ok") })
      end

      def hedges(m)
        section(m, "hedges", "Hedged requests",
                "#{@report.hedged_calls} calls sent their backup beside a primary whose first token was late " \
                "(hedge_after): one extra request each, and the tokens of the attempts cut.") do
          m.tag(:div, class: "numbers") { table(m, :hedges) }
        end
      end

      def features(m)
        section(m, "features", "Features",
                "Calls per feature: how many failed over, were saved, lost or stopped by their caller.") do
          m.tag(:div, class: "numbers") { table(m, :features) }
        end
      end

      def bar(label, value, color: "c0")
        BarChart::Bar.new(label: label, segments: [BarChart::Segment.new(name: label, value: value, color: color)])
      end

      def duration(seconds)
        return "bucket" if seconds.nil?
        return "#{seconds / 86_400}-day bucket".sub(/\A1-day/, "day") if (seconds % 86_400).zero?
        return "#{seconds / 3600}-hour bucket".sub(/\A1-hour/, "hour") if (seconds % 3600).zero?

        "#{seconds / 60}-minute bucket"
      end
    end
  end
end
