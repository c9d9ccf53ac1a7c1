# frozen_string_literal: true

require "active_record"
require_relative "active_record/attempt"
require_relative "active_record/circuit_transition"
require_relative "report/values"
require_relative "report/table"
require_relative "report/rows"
require_relative "report/tally"
require_relative "report/calls"
require_relative "report/turns"
require_relative "report/circuit_windows"
require_relative "report/tables"
require_relative "report/text"
require_relative "report/html"
require_relative "chat/target"
require_relative "report/call_counting"
require_relative "report/circuits"
require_relative "report/timelines"
require_relative "report/spending"

module LlmFailover
  # What the attempts table says about a period: failure rates per provider and model,
  # traffic, failures and spend per host (a pool's hosts), the calls failover saved,
  # the features that fail over, incident windows, the tokens spent and what they cost (failed attempts included: a provider may bill a
  # call that failed), the failover premium and what the cache saved.
  #
  #   puts LlmFailover::Report.new(from: 7.days.ago)
  #
  # Counting is done by the database: one GROUP BY pass over the period (Tally) gives
  # every count and token sum, a second groups the calls that took more than one
  # attempt (Calls), the HTML page's timeline takes a third; only the failed attempts'
  # times are read into Ruby, row by row. On 200k rows in SQLite the text report takes
  # ~0.6 s of CPU, against ~11 s when each table had passes of its own
  # (bench/report.rb, bench/README.md).
  #
  # This class is the query layer (with Circuits, Timelines, Spending and CallCounting, which it includes):
  # its methods return the plain structs of report/values.rb. Report::Text (#to_s) and Report::Html (#to_html) render the same
  # numbers.
  class Report
    # The report as a page an app mounts; loaded when a route names it.
    autoload :Engine, File.expand_path("report/engine", __dir__)

    include CallCounting
    include Circuits
    include Spending
    include Timelines

    attr_reader :from, :to

    # @param from [Time, nil] first started_at included (nil: from the beginning)
    # @param to [Time, nil] started_at before this (nil: up to now)
    # @param attempts [Class] the Attempt model (or a subclass on another table/database)
    # @param circuit_events [Class] the CircuitTransition model (or a subclass)
    def initialize(from: nil, to: nil, attempts: LlmFailover::ActiveRecord::Attempt,
                   circuit_events: LlmFailover::ActiveRecord::CircuitTransition)
      @from = from
      @to = to
      @model = attempts
      @circuit_model = circuit_events
    end

    # @return [Hash] attempts, requests, failures, saves, failovers (saves on another
    #   target), lost (calls without any successful attempt whose turn no later call
    #   answered), cache_hits (calls the response cache answered, without a request),
    #   routed_around (calls that skipped an open circuit), stopped (calls their caller
    #   stopped: neither failed nor lost)
    def summary
      @summary ||= begin
        calls = call_counts.values
        { attempts: groups.sum(&:attempts), requests: calls.sum(&:requests), failures: groups.sum(&:failures),
          saves: saves.size, failover_saves: saves.count(&:failover?),
          cross_provider_saves: saves.count(&:cross_provider?), lost: calls.sum(&:lost),
          cache_hits: groups.sum(&:cached), routed_around: calls.sum(&:routed_around),
          stopped: calls.sum(&:stopped) }
      end
    end

    # @return [Array<CacheHits>] per provider and model, most hits first
    def cache_hits
      @cache_hits ||= by_target.filter_map do |(provider, model), list|
        hits = list.sum(&:cached)
        next if hits.zero?

        paid = list.sum(&:paid)
        semantic = list.sum(&:semantic)
        mean = ->(tokens) { paid.zero? ? 0 : (list.sum(&tokens).to_f / paid * hits).round }
        CacheHits.new(provider: provider, model: model, hits: hits, saved_input: mean.call(:paid_input),
                      saved_output: mean.call(:paid_output), semantic: semantic,
                      exact_rate: (hits - semantic).fdiv(paid + hits), semantic_rate: semantic.fdiv(paid + hits))
      end.sort_by { |h| [-h.hits, h.provider.to_s, h.model.to_s] }
    end

    # @return [Array<Hedges>] per provider and model, most hedged attempts first; empty
    #   for a table without the hedged column
    def hedges
      @hedges ||= query do
        next [] unless rows.hedged_column?

        t = rows.table
        cut = t[:cancelled].eq(true)
        rows.scope.where(t[:hedged].eq(true)).group(:provider, :model)
            .pluck(:provider, :model, Arel.star.count, rows.count_if(t[:success].eq(true)), rows.count_if(cut),
                   rows.sum_if(cut, :input_tokens), rows.sum_if(cut, :output_tokens))
            .map do |provider, model, attempts, answered, lost, input, output|
              Hedges.new(provider: provider, model: model, attempts: attempts.to_i, answered: answered.to_i,
                         cut: lost.to_i, cut_input: input.to_i, cut_output: output.to_i)
            end.sort_by { |h| [-h.attempts, h.provider.to_s, h.model.to_s] }
      end
    end

    # @return [Integer] calls that sent a hedge (two attempts side by side): each one
    #   extra request
    def hedged_calls
      @hedged_calls ||= query do
        rows.hedged_column? ? rows.scope.where(rows.table[:hedged].eq(true)).distinct.count(:request_id) : 0
      end
    end

    # @return [Array<FailureRate>] per provider and model, most failures first
    def failure_rates
      # A cache hit sent no request: it is not an attempt a provider could fail. A
      # skipped target sent no request either, and a stopped attempt was cut by its caller.
      @failure_rates ||= by_target.filter_map do |(provider, model), list|
        sent = list.sum(&:sent)
        next if sent.zero?

        errors = list.select { |g| g.failures.positive? }.group_by(&:error_class)
                     .transform_values { |l| l.sum(&:failures) }
        # The commonest error; ties go to the first name in alphabetical order.
        top = errors.min_by { |e, c| [-c, e.to_s] }
        FailureRate.new(provider: provider, model: model, attempts: sent, failures: list.sum(&:failures),
                        failover_eligible: list.sum(&:failed_eligible), top_error: top && short_error(top[0]))
      end.sort_by { |r| [-r.failures, r.provider.to_s, r.model.to_s] }
    end

    # Calls whose final attempt succeeded with attempt > 1 after a failed one.
    # @return [Array<Save>]
    def saves
      @saves ||= calls.select(&:save?).map do |c|
        Save.new(request_id: c.request_id, feature: c.to_feature, from: c.from, to: c.to, attempts: c.won_at)
      end
    end

    # @return [Array<HostUse>] per provider, host and model, for the attempts sent to a
    #   host (cache hits and skips sent nothing), in provider and host order
    def hosts
      @hosts ||= groups.select(&:host).group_by { |g| [g.provider, g.host, g.model] }
                       .filter_map do |(provider, host, model), list|
        attempts = list.sum(&:sent)
        next if attempts.zero?

        HostUse.new(provider: provider, host: host, model: model, attempts: attempts, failures: list.sum(&:failures),
                    input: list.sum(&:input), output: list.sum(&:output), cost: list.sum(BigDecimal("0"), &:cost),
                    failed: list.sum(BigDecimal("0"), &:failed_cost))
      end.sort_by { |h| [h.provider.to_s, h.model.to_s, -h.attempts, h.host.to_s] }
    end

    # @return [Boolean] whether a pool served any attempt of the period (a host other
    #   than its provider)
    def pooled?
      hosts.any? { |h| h.host != h.provider }
    end

    # @return [Array<Array(String, String, Integer)>] from, to, count: where saves went
    def save_paths
      saves.group_by { |s| [s.from, s.to] }.map { |(from, to), list| [from, to, list.size] }
           .sort_by { |from, to, n| [-n, from, to] }
    end

    # @return [Array<Feature>] per feature (nil for calls without one), most failed-over first
    def features
      @features ||= begin
        failed_over = calls.select(&:spread).map(&:feature).tally
        saved = saves.map(&:feature).tally
        groups.group_by(&:feature).map do |feature, list|
          counts = call_counts.fetch(feature)
          Feature.new(feature: feature, requests: counts.requests, attempts: list.sum(&:attempts),
                      failed_attempts: list.sum(&:failures), failed_over: failed_over.fetch(feature, 0),
                      saved: saved.fetch(feature, 0), lost: counts.lost, stopped: counts.stopped)
        end.sort_by { |f| [-f.failed_over, -f.failed_attempts, f.feature.to_s] }
      end
    end

    # Failures per 5-minute bucket (UTC, aligned on the epoch), for the buckets that
    # had any, in time order; the +limit+ worst when there are more.
    # @return [Array<Window>]
    def incident_windows(limit: 20)
      @incident_windows ||= {}
      @incident_windows[limit] ||= query do
        failed = rows.scan.where(rows.failed).pluck(:started_at, :provider, :error_class)
        buckets = failed.group_by do |started_at, _, _|
          t = started_at.to_i
          Time.at(t - (t % BUCKET_SECONDS)).utc
        end
        worst = buckets.sort_by { |start, list| [-list.size, start] }.first(limit).sort_by(&:first)
        worst.map do |start, list|
          Window.new(starts_at: start, failures: list.size, attempts: attempts_between(start, start + BUCKET_SECONDS),
                     providers: tally(list.map { |r| r[1] }), errors: tally(list.map { |r| short_error(r[2]) }))
        end
      end
    end

    # @return [Array<Tokens>] per provider and model, every attempt counted; failed_*
    #   the tokens of attempts that failed or that their caller stopped (billed, no answer)
    def tokens
      @tokens ||= by_target.map do |(provider, model), list|
        Tokens.new(provider: provider, model: model, input: list.sum(&:input), output: list.sum(&:output),
                   failed_input: list.sum(&:unanswered_input), failed_output: list.sum(&:unanswered_output))
      end.sort_by { |t| [-t.total, t.provider.to_s, t.model.to_s] }
    end

    # @return [Array<ErrorCount>] failed attempts per error class, commonest first
    def error_classes
      @error_classes ||= groups.select { |g| g.failures.positive? }.group_by(&:error_class).map do |name, list|
        ErrorCount.new(error_class: short_error(name) || "(none)", attempts: list.sum(&:failures),
                       failover_eligible: list.sum(&:failed_eligible))
      end.sort_by { |e| [-e.attempts, e.error_class] }
    end

    # The whole report as text tables.
    # @return [String]
    def to_s
      Text.new(self).to_s
    end

    # The whole report as one self-contained HTML page (inline SVG and CSS, no script).
    # @return [String]
    def to_html
      Html.new(self).to_s
    end

    # "llm_failover report: <table>, <period>"
    # @return [String]
    def title
      period = if @from && @to then "#{time(@from)} .. #{time(@to)}"
               elsif @from then "since #{time(@from)}"
               elsif @to then "before #{time(@to)}"
               else "all time"
               end
      "llm_failover report: #{@model.table_name}, #{period}"
    end

    def inspect
      "#<#{self.class.name} #{@model.table_name} from=#{@from.inspect} to=#{@to.inspect}>"
    end

    private

    # Calls of one feature: requests, lost, stopped by the caller, routed around a circuit.
    CallCount = Struct.new(:requests, :lost, :stopped, :routed_around)

    def rows
      @rows ||= Rows.new(@model, @from, @to)
    end

    # The one pass every count comes from.
    # @return [Array<Tally::Group>]
    def groups
      @groups ||= query { Tally.new(rows).groups }
    end

    # @return [Hash{Array(String, String) => Array<Tally::Group>}] by provider and model
    def by_target
      groups.group_by(&:target)
    end

    def calls
      @calls ||= query { Calls.new(rows).all }
    end

    # Attempts of the period from +first+ to before +last+, as one range: with the
    # period's bounds beside the window's, SQLite's index search started from the
    # period's (22 such counts took ~0.15 s on 200k rows, and 12 ms as one range).
    def attempts_between(first, last)
      first = [first, @from].max if @from
      last = [last, @to].min if @to
      @model.where(started_at: first...last).count
    end

    def query(&block)
      @model.connection_pool.with_connection(&block)
    end

    def tally(values)
      values.tally.sort_by { |v, n| [-n, v.to_s] }.map { |v, n| "#{v} #{n}" }.join(", ")
    end

    def short_error(name)
      name.to_s.delete_prefix("LlmFailover::").then { |s| s.empty? ? nil : s }
    end

    def time(t)
      t.getutc.strftime("%Y-%m-%d %H:%M UTC")
    end
  end
end
