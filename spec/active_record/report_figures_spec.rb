# frozen_string_literal: true

require_relative "ar_spec_helper"
require "llm_failover/report"

# The report's figures come from a few aggregating queries (Report::Tally, Report::Calls).
# Here a fixed, seeded data set with every kind of call (retries, failovers, skipped,
# stopped, cancelled and cached attempts, calls cut by the period's edges) is counted
# again in plain Ruby from every row, by the definitions the report documents, and the
# two must agree: on SQLite (a period that holds most of the table, read by a scan, and
# a short one, read through the index) and on PostgreSQL.
# The data set: 400 calls, each of one of these plans.
module ReportFigures
  T0 = Time.utc(2025, 3, 10, 12, 0, 0)
  GPT = %w[openai gpt-4o].freeze
  CLAUDE = %w[anthropic claude-sonnet-4-6].freeze
  MINI = %w[openai gpt-4o-mini].freeze
  SKIPPED = LlmFailover::Report::SKIPPED
  STOPPED = LlmFailover::Report::STOPPED

  # [target, outcome] per attempt: :ok, :cached, :cancelled, or an error class.
  PLANS = [
    [[GPT, :ok]], [[GPT, :cached]], [[MINI, :ok]], [[CLAUDE, :ok]],
    [[GPT, "RateLimitError"], [GPT, :ok]],
    [[GPT, "ServerError"], [CLAUDE, :ok]],
    [[GPT, "StreamInterruptedError"], [CLAUDE, "OverloadedError"]],
    [[GPT, "UnauthorizedError"]],
    [[GPT, SKIPPED], [CLAUDE, :ok]],
    [[GPT, SKIPPED], [CLAUDE, SKIPPED]],
    [[GPT, STOPPED]],
    [[GPT, "ServiceUnavailableError"], [GPT, STOPPED]],
    [[CLAUDE, :cancelled]],
    [[GPT, "ServerError"], [GPT, :cancelled]],
    [[MINI, "RateLimitError"], [MINI, "RateLimitError"], [GPT, :ok]],
    [[CLAUDE, "OverloadedError"], [CLAUDE, :ok], [GPT, :ok]]
  ].freeze
  FEATURES = ["summary", "tailoring", nil].freeze

  # Inside the module: its constants in the examples' lexical scope.
  ArSpec.describe "LlmFailover::Report's figures" do
    def rows
      @rows ||= begin
        random = Random.new(2025)
        Array.new(400) do |i|
          at = T0 + random.rand(7200) + (random.rand(1000) / 1000.0)
          feature = FEATURES[random.rand(FEATURES.size)]
          PLANS[random.rand(PLANS.size)].each_with_index.map do |((provider, model), outcome), n|
            error = outcome.is_a?(String) ? "LlmFailover::#{outcome.delete_prefix('LlmFailover::')}" : nil
            success = %i[ok cached].include?(outcome)
            cached = outcome == :cached
            semantic = cached && i.odd? # every other hit from the semantic tier
            { request_id: format("req-%04d", i), attempt: n + 1, provider: provider, model: model, feature: feature,
              success: success, error_class: error, error_message: error && "x", http_status: success ? 200 : 500,
              failover_eligible: error ? n.even? : false, latency_ms: 10.0, started_at: at + (n * 40),
              input_tokens: cached || error == SKIPPED ? nil : random.rand(50),
              output_tokens: cached ? 0 : random.rand(20), cached: cached,
              cancelled: outcome == :cancelled, cache_tier: (semantic ? "semantic" : ("exact" if cached)),
              similarity: semantic ? 0.95 : nil }
          end
        end.flatten
      end
    end

    before { LlmFailover::ActiveRecord::Attempt.insert_all!(rows) }

    # ---- the figures by their definitions, from every row ----------------------------

    def failed?(r) = !r[:success] && r[:error_class] && ![SKIPPED, STOPPED].include?(r[:error_class]) && !r[:cancelled]
    def unanswered?(r) = !r[:success] && r[:error_class] && r[:error_class] != SKIPPED && !r[:cancelled]
    def sent?(r) = !r[:cached] && ![SKIPPED, STOPPED].include?(r[:error_class])
    def target(r) = "#{r[:provider]}/#{r[:model]}"
    def short(name) = name.delete_prefix("LlmFailover::")
    def ids(list) = list.map { |r| r[:request_id] }.uniq

    def expected(from, to)
      period = rows.select { |r| r[:started_at] >= from && r[:started_at] < to }
      calls = period.group_by { |r| r[:request_id] }
      lost = calls.select do |_, list|
        list.any? { |r| failed?(r) } && list.none? { |r| r[:success] || r[:error_class] == STOPPED || r[:cancelled] }
      end
      multi = ids(period.select { |r| r[:attempt] > 1 }).to_h do |id|
        [id, rows.select { |r| r[:request_id] == id }.sort_by { |r| r[:attempt] }]
      end
      saves = multi.filter_map do |id, list|
        won = list.find { |r| r[:success] && r[:attempt] > 1 }
        first = won && list.select { |r| !r[:success] && r[:attempt] < won[:attempt] }.min_by { |r| r[:attempt] }
        [id, won[:feature], target(first), target(won), won[:attempt]] if first
      end
      by_target = period.group_by { |r| [r[:provider], r[:model]] }
      {
        summary: { attempts: period.size, requests: calls.size, failures: period.count { |r| failed?(r) },
                   saves: saves.size, failover_saves: saves.count { |s| s[2] != s[3] },
                   cross_provider_saves: saves.count { |s| s[2].split("/").first != s[3].split("/").first },
                   lost: lost.size, cache_hits: period.count { |r| r[:cached] },
                   routed_around: ids(period.select { |r| r[:error_class] == SKIPPED }).size,
                   stopped: ids(period.select { |r| r[:error_class] == STOPPED }).size },
        saves: saves.sort,
        failure_rates: by_target.filter_map do |(provider, model), list|
          sent = list.select { |r| sent?(r) }
          next if sent.empty?

          failed = list.select { |r| failed?(r) }
          top = failed.map { |r| short(r[:error_class]) }.tally.min_by { |e, n| [-n, e] }&.first
          [provider, model, sent.size, failed.size, failed.count { |r| r[:failover_eligible] }, top]
        end.sort,
        features: period.group_by { |r| r[:feature] }.map do |feature, list|
          spread = multi.count { |_, l| l.first[:feature] == feature && l.map { |r| target(r) }.uniq.size > 1 }
          [feature, ids(list).size, list.size, list.count { |r| failed?(r) }, spread,
           saves.count { |s| s[1] == feature }, lost.count { |_, l| l.first[:feature] == feature },
           ids(list.select { |r| r[:error_class] == STOPPED }).size]
        end.sort_by(&:to_s),
        tokens: by_target.map do |(provider, model), list|
          sum = ->(l, k) { l.sum { |r| r[k].to_i } }
          failed = list.select { |r| unanswered?(r) }
          [provider, model, sum[list, :input_tokens], sum[list, :output_tokens], sum[failed, :input_tokens],
           sum[failed, :output_tokens]]
        end.sort,
        cache_hits: by_target.filter_map do |(provider, model), list|
          hits = list.count { |r| r[:cached] }
          next if hits.zero?

          paid = list.select { |r| r[:success] && !r[:cached] }
          mean = ->(k) { paid.empty? ? 0 : (paid.sum { |r| r[k].to_i }.to_f / paid.size * hits).round }
          semantic = list.count { |r| r[:cache_tier] == "semantic" }
          [provider, model, hits, mean[:input_tokens], mean[:output_tokens], semantic,
           (hits - semantic).fdiv(paid.size + hits), semantic.fdiv(paid.size + hits)]
        end.sort,
        open_circuits: period.select { |r| r[:error_class] == SKIPPED }.group_by { |r| [r[:provider], r[:model]] }
                             .map do |(provider, model), list|
                               times = list.map { |r| r[:started_at] }
                               [provider, model, ids(list).size, times.min.to_f.round(2), times.max.to_f.round(2)]
                             end.sort,
        error_classes: period.select { |r| failed?(r) }.group_by { |r| short(r[:error_class]) }.map do |name, list|
          [name, list.size, list.count { |r| r[:failover_eligible] }]
        end.sort,
        incident_windows: period.select { |r| failed?(r) }.group_by { |r| r[:started_at].to_i / 300 * 300 }
                                .map do |start, list|
                                  in_bucket = period.count { |r| r[:started_at].to_i / 300 * 300 == start }
                                  [Time.at(start).utc, list.size, in_bucket]
                                end.sort
      }
    end

    # ---- what the report says ----------------------------------------------------------

    def actual(report)
      {
        summary: report.summary,
        saves: report.saves.map { |s| [s.request_id, s.feature, s.from, s.to, s.attempts] }.sort,
        failure_rates: report.failure_rates.map { |r| r.to_h.values }.sort,
        features: report.features.map { |f| f.to_h.values }.sort_by(&:to_s),
        tokens: report.tokens.map { |t| t.to_h.values }.sort,
        cache_hits: report.cache_hits.map { |h| h.to_h.values }.sort,
        open_circuits: report.open_circuits.map do |c|
          [c.provider, c.model, c.calls, c.first_skip.to_f.round(2), c.last_skip.to_f.round(2)]
        end.sort,
        error_classes: report.error_classes.map { |e| e.to_h.values }.sort,
        incident_windows: report.incident_windows(limit: 1000).map { |w| [w.starts_at, w.failures, w.attempts] }.sort
      }
    end

    def timeline_expected(timeline, from, to)
      rows.select { |r| r[:started_at] >= from && r[:started_at] < to && sent?(r) }
          .group_by { |r| [((r[:started_at] - timeline.starts_at) / timeline.step).floor, r[:provider], r[:model]] }
          .map do |(i, p, m), list|
            [timeline.starts_at + (i * timeline.step), p, m, list.size, list.count { |r| failed?(r) }]
          end
          .sort_by { |a| [a[0], a[1], a[2]] }
    end

    [[T0 + 600, T0 + 6000, "most of the table"], [T0 + 3600, T0 + 3900, "five minutes of it"]].each do |from, to, what|
      it "match the rows counted one by one, over #{what}" do
        report = LlmFailover::Report.new(from: from, to: to)
        got = actual(report)
        want = expected(from, to)
        want.each_key do |key|
          expect(got[key]).to eq(want[key]), "#{key}:\n  got  #{got[key].inspect}\n  want #{want[key].inspect}"
        end
        # The long period has every kind of call.
        if to - from > 3600
          expect(want[:summary].values_at(:saves, :lost, :stopped, :routed_around, :cache_hits)).to all(be_positive)
        end
        timeline = report.timeline
        expect(timeline.points.map { |p| [p.starts_at, p.provider, p.model, p.attempts, p.failures] })
          .to eq(timeline_expected(timeline, from, to))
      end
    end
  end
end
