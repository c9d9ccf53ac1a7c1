# frozen_string_literal: true

require_relative "values"
require_relative "turns"

module LlmFailover
  class Report
    # The calls per feature: requests, lost, stopped, routed around, from the tally's
    # rows and the calls with more attempts, less the lost calls a later call of their
    # turn answered. Uses Report's groups, calls, rows, query and CallCount.
    #
    # @api private: included by Report
    module CallCounting
      private

      # Per feature. A call with one attempt in the period is one row of the tally, whose
      # counts are its own: a failed attempt is a lost call, and so is one whose target
      # could not take the attachments (no other target could), a stopped one a stopped
      # call, a skipped one a call routed around. The calls with more attempts (#calls) replace
      # their rows' share by their own verdict. A lost call whose turn a later call
      # answered (a retried job's) is not lost (Turns).
      # @return [Hash{String, nil => CallCount}]
      def call_counts
        @call_counts ||= begin
          counts = groups.group_by(&:feature).transform_values do |list|
            stopped = list.select { |g| g.error_class == STOPPED }.sum(&:attempts)
            skipped = list.select { |g| g.error_class == SKIPPED }.sum(&:attempts)
            refused = list.select { |g| g.error_class == REFUSED }.sum(&:attempts)
            CallCount.new(list.sum(&:attempts), list.sum(&:failures) + refused, stopped, skipped)
          end
          calls.each do |c|
            count = counts[c.feature] ||= CallCount.new(0, 0, 0, 0)
            count.requests += 1 - c.attempts
            count.lost += (c.lost? ? 1 : 0) - c.failures - c.refusals
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
    end
  end
end
