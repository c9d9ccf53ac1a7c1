# frozen_string_literal: true

require "active_record" # Arel
require_relative "values"

module LlmFailover
  class Report
    # The HTML page's timeline: attempts a provider could fail and failures per target,
    # in equal time buckets over the period, counted in one pass. Uses Report's rows and
    # query.
    #
    # @api private: included by Report
    module Timelines
      # Bucket lengths a timeline may use (seconds): the shortest that keeps the period
      # within the wanted number of buckets.
      TIMELINE_STEPS = [60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86_400, 7 * 86_400].freeze
      # The HTML page's timeline: at most about this many buckets.
      TIMELINE_BUCKETS = 60

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

      private

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
    end
  end
end
