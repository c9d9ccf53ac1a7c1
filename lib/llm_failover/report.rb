# frozen_string_literal: true

require "active_record"
require "llm_failover/active_record/attempt"
require "llm_failover/active_record/circuit_transition"
require "llm_failover/report/table"

module LlmFailover
  # What the attempts table says about a period: failure rates per provider and model,
  # the calls failover saved, the features that fail over, incident windows and the
  # tokens spent (failed attempts included: a provider may bill a call that failed).
  #
  #   puts LlmFailover::Report.new(from: 7.days.ago)
  #
  # Counting is done by the database (GROUP BY); only the rows of calls that took more
  # than one attempt, and the failed attempts' times, are read into Ruby.
  #
  # This class is the query layer: its methods return plain structs. Report::Text
  # (#to_s) and Report::Html (#to_html) render the same numbers.
  class Report
    BUCKET_SECONDS = 300

    FailureRate = Struct.new(:provider, :model, :attempts, :failures, :failover_eligible, :top_error,
                             keyword_init: true) do
      def rate
        attempts.zero? ? 0.0 : failures.to_f / attempts
      end
    end

    # A call that succeeded after a failed attempt: from the first target that failed
    # to the one that answered.
    Save = Struct.new(:request_id, :feature, :from, :to, :attempts, keyword_init: true) do
      def cross_provider?
        from.split("/", 2).first != to.split("/", 2).first
      end

      def failover?
        from != to
      end
    end

    Feature = Struct.new(:feature, :requests, :attempts, :failed_attempts, :failed_over, :saved, :lost, :stopped,
                         keyword_init: true)
    Window = Struct.new(:starts_at, :failures, :attempts, :providers, :errors, keyword_init: true) do
      def ends_at
        starts_at + BUCKET_SECONDS
      end
    end
    Tokens = Struct.new(:provider, :model, :input, :output, :failed_input, :failed_output, keyword_init: true) do
      def total
        input + output
      end

      def failed_total
        failed_input + failed_output
      end
    end

    # Calls the response cache answered for one provider and model, and what they would
    # have cost: each hit counted at the mean tokens of that target's uncached successful
    # attempts in the period (an estimate: the hit's own record bills nothing).
    CacheHits = Struct.new(:provider, :model, :hits, :saved_input, :saved_output, keyword_init: true)

    # Calls routed around one target's open circuit (skipped records: no request sent),
    # and the span from the first to the last of them: the circuit was open at least
    # that long.
    OpenCircuit = Struct.new(:provider, :model, :calls, :first_skip, :last_skip, keyword_init: true)

    # One incident of one target's circuit, from the persisted transitions (CircuitLog):
    # opened_at the closed -> open change, closed_at the change back to closed (nil: still
    # open at the end of the period), reopens the failed probes in between, routed_around
    # the calls that skipped the target meanwhile.
    CircuitWindow = Struct.new(:provider, :model, :opened_at, :closed_at, :reason, :error_class, :reopens,
                               :routed_around, keyword_init: true) do
      # @return [Float, nil] seconds open; nil while still open
      def duration
        closed_at && closed_at - opened_at
      end
    end

    # Failed attempts of one error class (short name, without "LlmFailover::").
    ErrorCount = Struct.new(:error_class, :attempts, :failover_eligible, keyword_init: true)

    # The period cut into equal buckets, and each target's attempts and failures in the
    # buckets where it had any (Timeline#points, in time order).
    Timeline = Struct.new(:starts_at, :ends_at, :step, :points, keyword_init: true) do
      # @return [Array<String>] "provider/model" of every target with a point, by name
      def targets
        points.map(&:target).uniq.sort
      end
    end
    TimelinePoint = Struct.new(:starts_at, :provider, :model, :attempts, :failures, keyword_init: true) do
      def rate
        attempts.zero? ? 0.0 : failures.to_f / attempts
      end

      def target
        "#{provider}/#{model}"
      end
    end

    # Bucket lengths a timeline may use (seconds): the shortest that keeps the period
    # within the wanted number of buckets.
    TIMELINE_STEPS = [60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86_400, 7 * 86_400].freeze

    # The error_class of a skipped record (AttemptRecord#skipped).
    SKIPPED = "LlmFailover::CircuitOpenError"
    # The error_class of the attempt a call's caller cut (Timeout.timeout, Thread#kill,
    # task.stop, a raising block): neither a provider's failure nor a lost call.
    STOPPED = "LlmFailover::AbortedError"

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
    #   target), lost (calls without any successful attempt), cache_hits (calls the
    #   response cache answered, without a request), routed_around (calls that skipped
    #   an open circuit), stopped (calls their caller stopped: neither failed nor lost)
    def summary
      @summary ||= query do
        { attempts: scope.count, requests: scope.distinct.count(:request_id), failures: failed.count,
          saves: saves.size, failover_saves: saves.count(&:failover?),
          cross_provider_saves: saves.count(&:cross_provider?), lost: lost_scope.distinct.count(:request_id),
          cache_hits: cached_column? ? scope.where(cached: true).count : 0,
          routed_around: skipped.distinct.count(:request_id), stopped: stopped.distinct.count(:request_id) }
      end
    end

    # @return [Array<CacheHits>] per provider and model, most hits first
    def cache_hits
      @cache_hits ||= query do
        next [] unless cached_column?

        hits = scope.where(cached: true).group(:provider, :model).count
        paid = scope.where(success: true, cached: false).group(:provider, :model)
        counts = paid.count
        input = paid.sum(:input_tokens)
        output = paid.sum(:output_tokens)
        hits.map do |key, n|
          mean = ->(sums) { counts[key].to_i.zero? ? 0 : (sums[key].to_f / counts[key] * n).round }
          CacheHits.new(provider: key[0], model: key[1], hits: n, saved_input: mean.call(input),
                        saved_output: mean.call(output))
        end.sort_by { |h| [-h.hits, h.provider.to_s, h.model.to_s] }
      end
    end

    # @return [Array<OpenCircuit>] per provider and model, most calls first
    def open_circuits
      @open_circuits ||= query do
        calls = skipped.group(:provider, :model).distinct.count(:request_id)
        first = skipped.group(:provider, :model).minimum(:started_at)
        last = skipped.group(:provider, :model).maximum(:started_at)
        calls.map do |key, n|
          OpenCircuit.new(provider: key[0], model: key[1], calls: n, first_skip: first[key], last_skip: last[key])
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

        windows = spans(circuit_rows).reject { |w| @from && w.closed_at && w.closed_at < @from }
        windows.each do |w|
          span = w.opened_at...(w.closed_at || @to || Time.now)
          w.routed_around = query { skipped.where(provider: w.provider, model: w.model, started_at: span).count }
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
      @failure_rates ||= query do
        # A cache hit sent no request: it is not an attempt a provider could fail.
        # A skipped target sent no request either.
        attempts = provider_attempts.group(:provider, :model).count
        failures = failed.group(:provider, :model).count
        eligible = failed.where(failover_eligible: true).group(:provider, :model).count
        errors = failed.group(:provider, :model, :error_class).count
        attempts.map do |(provider, model), n|
          # The commonest error; ties go to the first name in alphabetical order.
          top = errors.select { |(p, m, _), _| p == provider && m == model }.min_by { |(_, _, e), c| [-c, e.to_s] }
          FailureRate.new(provider: provider, model: model, attempts: n, failures: failures.fetch([provider, model], 0),
                          failover_eligible: eligible.fetch([provider, model], 0),
                          top_error: top && short_error(top[0][2]))
        end.sort_by { |r| [-r.failures, r.provider.to_s, r.model.to_s] }
      end
    end

    # Calls whose final attempt succeeded with attempt > 1 after a failed one.
    # @return [Array<Save>]
    def saves
      @saves ||= multi_attempt_calls.filter_map do |request_id, rows|
        winner = rows.find { |r| r[:success] && r[:attempt] > 1 }
        next unless winner

        first_failure = rows.select { |r| !r[:success] && r[:attempt] < winner[:attempt] }.min_by { |r| r[:attempt] }
        next unless first_failure

        Save.new(request_id: request_id, feature: winner[:feature], from: target(first_failure), to: target(winner),
                 attempts: winner[:attempt])
      end
    end

    # @return [Array<Array(String, String, Integer)>] from, to, count: where saves went
    def save_paths
      saves.group_by { |s| [s.from, s.to] }.map { |(from, to), list| [from, to, list.size] }
           .sort_by { |from, to, n| [-n, from, to] }
    end

    # @return [Array<Feature>] per feature (nil for calls without one), most failed-over first
    def features
      @features ||= query do
        requests = scope.group(:feature).distinct.count(:request_id)
        attempts = scope.group(:feature).count
        failed_attempts = failed.group(:feature).count
        lost = lost_scope.group(:feature).distinct.count(:request_id)
        stopped_calls = stopped.group(:feature).distinct.count(:request_id)
        failed_over = Hash.new(0)
        multi_attempt_calls.each_value do |rows|
          failed_over[rows.first[:feature]] += 1 if rows.map { |r| target(r) }.uniq.size > 1
        end
        saved = saves.group_by(&:feature).transform_values(&:size)
        requests.map do |feature, n|
          Feature.new(feature: feature, requests: n, attempts: attempts.fetch(feature, 0),
                      failed_attempts: failed_attempts.fetch(feature, 0), failed_over: failed_over[feature],
                      saved: saved.fetch(feature, 0), lost: lost.fetch(feature, 0),
                      stopped: stopped_calls.fetch(feature, 0))
        end.sort_by { |f| [-f.failed_over, -f.failed_attempts, f.feature.to_s] }
      end
    end

    # Failures per 5-minute bucket (UTC, aligned on the epoch), for the buckets that
    # had any, in time order; the +limit+ worst when there are more.
    # @return [Array<Window>]
    def incident_windows(limit: 20)
      @incident_windows ||= {}
      @incident_windows[limit] ||= query do
        buckets = failed.pluck(:started_at, :provider, :error_class).group_by do |started_at, _, _|
          t = started_at.to_i
          Time.at(t - (t % BUCKET_SECONDS)).utc
        end
        worst = buckets.sort_by { |start, rows| [-rows.size, start] }.first(limit).sort_by(&:first)
        worst.map do |start, rows|
          Window.new(starts_at: start, failures: rows.size,
                     attempts: scope.where(started_at: start...(start + BUCKET_SECONDS)).count,
                     providers: tally(rows.map { |r| r[1] }), errors: tally(rows.map { |r| short_error(r[2]) }))
        end
      end
    end

    # @return [Array<Tokens>] per provider and model, every attempt counted; failed_*
    #   the tokens of attempts that failed or that their caller stopped (billed, no answer)
    def tokens
      @tokens ||= query do
        input = scope.group(:provider, :model).sum(:input_tokens)
        output = scope.group(:provider, :model).sum(:output_tokens)
        failed_input = unanswered.group(:provider, :model).sum(:input_tokens)
        failed_output = unanswered.group(:provider, :model).sum(:output_tokens)
        input.keys.map do |key|
          Tokens.new(provider: key[0], model: key[1], input: input[key].to_i, output: output[key].to_i,
                     failed_input: failed_input[key].to_i, failed_output: failed_output[key].to_i)
        end.sort_by { |t| [-t.total, t.provider.to_s, t.model.to_s] }
      end
    end

    # @return [Array<ErrorCount>] failed attempts per error class, commonest first
    def error_classes
      @error_classes ||= query do
        counts = failed.group(:error_class).count
        eligible = failed.where(failover_eligible: true).group(:error_class).count
        counts.map do |name, n|
          ErrorCount.new(error_class: short_error(name) || "(none)", attempts: n,
                         failover_eligible: eligible.fetch(name, 0))
        end.sort_by { |e| [-e.attempts, e.error_class] }
      end
    end

    # Attempts a provider could fail (the rows #failure_rates counts) and failures per
    # target in equal time buckets over the period: from +from+ (or the first attempt)
    # to +to+ (or now), buckets aligned on the epoch.
    # @param buckets [Integer] at most about this many buckets
    # @return [Timeline, nil] nil without +from+ when there is no attempt at all
    def timeline(buckets: 60)
      @timeline ||= {}
      return @timeline[buckets] if @timeline.key?(buckets)

      @timeline[buckets] = query do
        first = @from || scope.minimum(:started_at)
        next nil if first.nil?

        last = @to || Time.now
        span = [last - first, 1].max
        step = TIMELINE_STEPS.find { |s| span / s <= buckets } || (span / buckets / 86_400.0).ceil * 86_400
        start = Time.at(first.to_i - (first.to_i % step)).utc
        count = ((last - start) / step).ceil.clamp(1, nil)
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

    def scope
      rows = @model.all
      rows = rows.where(@model.arel_table[:started_at].gteq(@from)) if @from
      rows = rows.where(@model.arel_table[:started_at].lt(@to)) if @to
      rows
    end

    # Failed HTTP attempts: a skipped target (no request) is not one. A cancelled
    # attempt (Chat#cancel!) and one the caller stopped are the user's decision, not a
    # provider's failure either.
    def failed
      unanswered.where.not(error_class: STOPPED)
    end

    # Attempts that sent a request and got no answer: the failed ones and the stopped
    # ones (their tokens were billed all the same).
    def unanswered
      rows = scope.where(success: false).where.not(error_class: SKIPPED)
      cancelled_column? ? rows.where(cancelled: false) : rows
    end

    def stopped
      scope.where(error_class: STOPPED)
    end

    # Tables made before the cancelled column keep working.
    def cancelled_column?
      @cancelled_column = @model.column_names.include?("cancelled") if @cancelled_column.nil?
      @cancelled_column
    end

    def skipped
      scope.where(error_class: SKIPPED)
    end

    # Attempts a provider could fail: neither a cache hit, nor a skipped target (no
    # request), nor one its caller stopped (the provider was not done).
    def provider_attempts
      not_skipped_or_stopped(cached_column? ? scope.where(cached: false) : scope)
    end

    # @return [Array<TimelinePoint>] in time order, then by target
    def timeline_points(start, step, count)
      # One bucket needs no bucket column (and a constant would be read as GROUP BY's
      # column number).
      columns = count == 1 ? %i[provider model] : [bucket_of_started_at(start, step, 0, count - 1), :provider, :model]
      attempts = provider_attempts.group(*columns).count
      failures = failed.group(*columns).count
      attempts.map do |key, n|
        index, provider, model = count == 1 ? [0, *key] : key
        TimelinePoint.new(starts_at: start + (index.to_i * step), provider: provider, model: model, attempts: n,
                          failures: failures.fetch(key, 0))
      end.sort_by { |p| [p.starts_at, p.provider.to_s, p.model.to_s] }
    end

    # SQL for the index of a row's bucket among buckets +first+..+last+: CASE WHEN
    # started_at < (the middle bucket's start) THEN (the lower half) ELSE (the upper
    # half) END, nested. Comparisons rather than epoch arithmetic: every database has
    # them, and the times are quoted as ActiveRecord stores them. Halving rather than
    # one WHEN per bucket: a row takes ~6 comparisons instead of up to 60 (on 200k rows
    # in SQLite the GROUP BY took 0.42 s against 1.0 s, and 0.37 s without a bucket).
    def bucket_of_started_at(start, step, first, last)
      return Arel::Nodes.build_quoted(first) if first == last

      middle = (first + last + 1) / 2
      Arel::Nodes::Case.new
                       .when(@model.arel_table[:started_at].lt(start + (middle * step)))
                       .then(bucket_of_started_at(start, step, first, middle - 1))
                       .else(bucket_of_started_at(start, step, middle, last))
    end

    # NULL error classes (successes) included: SQL's NOT leaves them out.
    def not_skipped_or_stopped(rows)
      rows.where(error_class: nil).or(rows.where.not(error_class: [SKIPPED, STOPPED]))
    end

    # Tables made before the cached column keep working.
    def cached_column?
      @cached_column = @model.column_names.include?("cached") if @cached_column.nil?
      @cached_column
    end

    # The transitions that make the period's windows, in time order: from the opening of
    # the earliest incident still open when the period began.
    def circuit_rows
      rows = @circuit_model.all
      t = @circuit_model.arel_table[:occurred_at]
      start = carried_in_opening
      rows = rows.where(t.gteq(start)) if start
      rows = rows.where(t.lt(@to)) if @to
      rows.order(:occurred_at, :id).pluck(:provider, :model, :from_state, :to_state, :reason, :error_class, :occurred_at)
    end

    # When the earliest incident open at @from began (or @from itself, when none was).
    def carried_in_opening
      return nil unless @from

      before = @circuit_model.where(@circuit_model.arel_table[:occurred_at].lt(@from)).group(:provider, :model)
      opened = before.where(from_state: "closed").maximum(:occurred_at)
      closed = before.where(to_state: "closed").maximum(:occurred_at)
      ([@from] + opened.filter_map { |key, at| at if closed[key].nil? || closed[key] < at }).min
    end

    # Transitions into windows: a target's window opens on closed -> open and ends on
    # the change back to closed. While a fleet's Redis was unreachable each process kept
    # its own circuit: an opening inside an open window is part of that window.
    def spans(rows)
      open = {}
      rows.each_with_object([]) do |(provider, model, from_state, to_state, reason, error_class, at), windows|
        key = [provider, model]
        window = open[key]
        if window.nil? && to_state != "closed"
          window = open[key] = CircuitWindow.new(provider: provider, model: model, opened_at: at, reason: reason,
                                                 error_class: error_class, reopens: 0)
          windows << window
        elsif window && to_state == "closed"
          window.closed_at = at
          open.delete(key)
        elsif window && reason == "probe_failed"
          window.reopens += 1
        end
      end
    end

    # Calls with a failed attempt and no successful one, leaving out those the user
    # cancelled or stopped.
    def lost_scope
      lost = failed.where.not(request_id: scope.where(success: true).select(:request_id))
                   .where.not(request_id: stopped.select(:request_id))
      cancelled_column? ? lost.where.not(request_id: scope.where(cancelled: true).select(:request_id)) : lost
    end

    # Every attempt of the calls in the period that took more than one attempt.
    # @return [Hash{String => Array<Hash>}] request_id => rows in attempt order
    def multi_attempt_calls
      @multi_attempt_calls ||= query do
        ids = scope.where(@model.arel_table[:attempt].gt(1)).select(:request_id)
        @model.where(request_id: ids).order(:request_id, :attempt)
              .pluck(:request_id, :attempt, :provider, :model, :feature, :success)
              .map { |id, attempt, provider, model, feature, success|
                { request_id: id, attempt: attempt, provider: provider, model: model, feature: feature,
                  success: success ? true : false }
              }
              .group_by { |r| r[:request_id] }
      end
    end

    def target(row)
      "#{row[:provider]}/#{row[:model]}"
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

# The renderers read the constants above.
require "llm_failover/report/tables"
require "llm_failover/report/text"
require "llm_failover/report/html"
