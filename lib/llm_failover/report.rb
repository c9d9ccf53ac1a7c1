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

module LlmFailover
  # What the attempts table says about a period: failure rates per provider and model,
  # the calls failover saved, the features that fail over, incident windows and the
  # tokens spent (failed attempts included: a provider may bill a call that failed).
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
  # This class is the query layer: its methods return the plain structs of
  # report/values.rb. Report::Text (#to_s) and Report::Html (#to_html) render the same
  # numbers.
  class Report
    # The report as a page an app mounts; loaded when a route names it.
    autoload :Engine, File.expand_path("report/engine", __dir__)

    # Bucket lengths a timeline may use (seconds): the shortest that keeps the period
    # within the wanted number of buckets.
    TIMELINE_STEPS = [60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86_400, 7 * 86_400].freeze
    # The HTML page's timeline: at most about this many buckets.
    TIMELINE_BUCKETS = 60

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
        mean = ->(tokens) { paid.zero? ? 0 : (list.sum(&tokens).to_f / paid * hits).round }
        CacheHits.new(provider: provider, model: model, hits: hits, saved_input: mean.call(:paid_input),
                      saved_output: mean.call(:paid_output))
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

    # @return [Array<OpenCircuit>] per provider and model, most calls first
    def open_circuits
      @open_circuits ||= query do
        t = rows.table
        rows.scan.where(rows.skipped).group(:provider, :model)
            .pluck(:provider, :model, t[:request_id].count(true), t[:started_at].minimum, t[:started_at].maximum)
            .map do |provider, model, calls, first, last|
              OpenCircuit.new(provider: provider, model: model, calls: calls.to_i, first_skip: rows.time(first),
                              last_skip: rows.time(last))
            end.sort_by { |c| [-c.calls, c.provider.to_s, c.model.to_s] }
      end
    end

    # Open -> closed spans of every target's circuit that overlap the period, in the order
    # they opened (an incident already open when the period began included); empty when
    # the circuit events table does not exist (an app that migrated before it).
    # @return [Array<CircuitWindow>]
    def circuit_windows
      @circuit_windows ||= @circuit_model.connection_pool.with_connection do
        next [] unless circuit_log?

        windows = CircuitWindows.new(events: @circuit_model, from: @from, to: @to).to_a
        windows.each do |w|
          span = w.opened_at...(w.closed_at || @to || Time.now)
          w.routed_around = query do
            rows.scope.where(rows.skipped).where(provider: w.provider, model: w.model, started_at: span).count
          end
        end
      end
    end

    # @return [Boolean] whether the circuit events table exists (apps that migrated
    #   before it have none)
    def circuit_log?
      @circuit_log = @circuit_model.connection_pool.with_connection { @circuit_model.table_exists? } if @circuit_log.nil?
      @circuit_log
    end

    # @return [String] the circuit events table's name
    def circuit_table_name
      @circuit_model.table_name
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

    # Attempts a provider could fail (the rows #failure_rates counts) and failures per
    # target in equal time buckets over the period: from +from+ (or the first attempt)
    # to +to+ (or now), buckets aligned on the epoch.
    # @param buckets [Integer] at most about this many buckets
    # @return [Timeline, nil] nil without +from+ when there is no attempt at all
    def timeline(buckets: TIMELINE_BUCKETS)
      @timeline ||= {}
      return @timeline[buckets] if @timeline.key?(buckets)

      frame = timeline_frame(buckets)
      @timeline[buckets] = frame && begin
        start, step, count = frame
        Timeline.new(starts_at: start, ends_at: start + (count * step), step: step,
                     points: timeline_points(start, step, count))
      end
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

    # Per feature. A call with one attempt in the period is one row of the tally, whose
    # counts are its own: a failed attempt is a lost call, a stopped one a stopped call,
    # a skipped one a call routed around. The calls with more attempts (#calls) replace
    # their rows' share by their own verdict. A lost call whose turn a later call
    # answered (a retried job's) is not lost (Turns).
    # @return [Hash{String, nil => CallCount}]
    def call_counts
      @call_counts ||= begin
        counts = groups.group_by(&:feature).transform_values do |list|
          stopped = list.select { |g| g.error_class == STOPPED }.sum(&:attempts)
          skipped = list.select { |g| g.error_class == SKIPPED }.sum(&:attempts)
          CallCount.new(list.sum(&:attempts), list.sum(&:failures), stopped, skipped)
        end
        calls.each do |c|
          count = counts[c.feature] ||= CallCount.new(0, 0, 0, 0)
          count.requests += 1 - c.attempts
          count.lost += (c.lost? ? 1 : 0) - c.failures
          count.stopped += (c.stops.positive? ? 1 : 0) - c.stops
          count.routed_around += (c.skips.positive? ? 1 : 0) - c.skips
        end
        answered_later(counts)
        counts
      end
    end

    # Takes the calls a later call of their turn answered out of the lost ones: a call
    # of #calls when its verdict was lost, any other (its one row in the period failed,
    # so the tally counted it lost).
    def answered_later(counts)
      by_id = calls.to_h { |c| [c.request_id, c] }
      query { Turns.new(rows).answered_later }.each do |request_id, feature|
        call = by_id[request_id]
        next if call && !call.lost?

        counts.fetch(call ? call.feature : feature).lost -= 1
      end
    end

    # Attempts of the period from +first+ to before +last+, as one range: with the
    # period's bounds beside the window's, SQLite's index search started from the
    # period's (22 such counts took ~0.15 s on 200k rows, and 12 ms as one range).
    def attempts_between(first, last)
      first = [first, @from].max if @from
      last = [last, @to].min if @to
      @model.where(started_at: first...last).count
    end

    # [start, step, count] of the timeline's buckets; nil without +from+ when there is no
    # attempt at all.
    def timeline_frame(buckets)
      query do
        first = @from || rows.scope.minimum(:started_at)
        next nil if first.nil?

        last = @to || Time.now
        span = [last - first, 1].max
        step = TIMELINE_STEPS.find { |s| span / s <= buckets } || (span / buckets / 86_400.0).ceil * 86_400
        start = Time.at(first.to_i - (first.to_i % step)).utc
        [start, step, ((last - start) / step).ceil.clamp(1, nil)]
      end
    end

    # Attempts a provider could fail and failures per bucket and target, in one pass.
    # @return [Array<TimelinePoint>] in time order, then by target
    def timeline_points(start, step, count)
      # One bucket needs no bucket column (and a constant would be read as GROUP BY's
      # column number).
      keys = count == 1 ? %i[provider model] : [rows.bucket_of_started_at(start, step, 0, count - 1), :provider, :model]
      points = query do
        rows.scan.where(rows.sent).group(*keys).pluck(*keys, Arel.star.count, rows.count_if(rows.failed))
      end
      points.map do |values|
        values.unshift(0) if count == 1
        index, provider, model, attempts, failures = values
        TimelinePoint.new(starts_at: start + (index.to_i * step), provider: provider, model: model,
                          attempts: attempts.to_i, failures: failures.to_i)
      end.sort_by { |p| [p.starts_at, p.provider.to_s, p.model.to_s] }
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
