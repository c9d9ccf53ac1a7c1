# frozen_string_literal: true

require_relative "../chat/target"

module LlmFailover
  class Report
    # The calls of the period that took more than one attempt, one row each, summed up
    # by the database: what their attempts in the period say (for the call counts) and
    # what all their attempts say (saves, failovers), with the targets of the first
    # failed and the saving attempt joined in.
    #
    # A call with a single attempt in the period has exactly one row there (attempts
    # count from 1, and request_id + attempt is unique): Tally's per-row counts are
    # already its call's, so only these calls need grouping by request_id, which is what
    # costs (200k rows in SQLite: 0.38 s for every call, against this).
    class Calls
      # In the period: attempts, failures, stops, skips and refusals (attempts failed,
      # stopped by the caller, skipped past an open circuit, left out for attachments
      # their target cannot take), whether one answered or was cancelled. Over the whole call:
      # won_at, the first successful attempt after the first; failed_at, the first
      # unsuccessful one; spread, whether it went to more than one target; from and to,
      # those two attempts' targets; to_feature, the saving attempt's feature. feature:
      # the call's (a call's attempts share it).
      Call = Struct.new(:request_id, :feature, :attempts, :failures, :stops, :skips, :refusals, :answered,
                        :cancelled, :won_at, :failed_at, :spread, :from, :to, :to_feature) do
        # No answer: a provider's failure, or no target could take the attachments.
        def lost?
          (failures.positive? || refusals.positive?) && !answered && stops.zero? && !cancelled
        end

        def save?
          !won_at.nil? && !failed_at.nil? && failed_at < won_at
        end
      end

      FIELDS = %i[attempts failures stops skips refusals answered cancelled spread won_at failed_at].freeze

      # @param rows [Rows]
      def initialize(rows)
        @rows = rows
      end

      # @return [Array<Call>] by request_id
      def all
        @all ||= begin
          model = @rows.model
          table = model.quoted_table_name
          relation = model.unscoped.from(per_call, "calls")
                          .joins("LEFT JOIN #{table} failing ON failing.request_id = calls.request_id " \
                                 "AND failing.attempt = calls.failed_at")
                          .joins("LEFT JOIN #{table} saving ON saving.request_id = calls.request_id " \
                                 "AND saving.attempt = calls.won_at")
                          .order("calls.request_id").select(*COLUMNS)
          # select_rows, not pluck: no per-value casting (7.5k calls in the bench: 0.18 s
          # to 0.05 s); the counts come back as numbers or numeric text.
          model.connection.select_rows(relation.to_sql).map { |values| call(*values) }
        end
      end

      private

      COLUMNS = ["calls.request_id", "calls.feature", *FIELDS.map { |f| "calls.#{f}" }, "failing.provider",
                 "failing.model", "saving.provider", "saving.model", "saving.feature"].freeze

      def call(request_id, feature, attempts, failures, stops, skips, refusals, answered, cancelled, spread, won_at,
               failed_at, from_provider, from_model, to_provider, to_model, to_feature)
        Call.new(request_id, feature, attempts.to_i, failures.to_i, stops.to_i, skips.to_i, refusals.to_i,
                 answered.to_i == 1,
                 cancelled.to_i == 1, won_at&.to_i, failed_at&.to_i, spread.to_i == 1,
                 from_provider && Target.label(from_provider, from_model), to_provider && Target.label(to_provider, to_model),
                 to_feature)
      end

      # One row per call with an attempt after the first in the period, over all its
      # attempts (the saves look at the whole call), the period's marked apart.
      def per_call
        r = @rows
        t = r.table
        in_period = r.period
        inside = ->(condition) { in_period ? in_period.and(condition) : condition }
        ids = r.scan.where(t[:attempt].gt(1)).select(:request_id)
        cancelled = r.cancelled_column? ? r.any(inside.call(t[:cancelled].eq(true))) : Arel.sql("0")
        attempts = in_period ? r.count_if(in_period) : Arel.star.count
        r.model.unscoped.where(request_id: ids).group(:request_id).select(
          t[:request_id], t[:feature].minimum.as("feature"), attempts.as("attempts"),
          r.count_if(inside.call(r.failed)).as("failures"), r.count_if(inside.call(r.stopped)).as("stops"),
          r.count_if(inside.call(r.skipped)).as("skips"), r.count_if(inside.call(r.refused)).as("refusals"),
          r.any(inside.call(t[:success].eq(true))).as("answered"),
          Arel::Nodes::As.new(cancelled, Arel.sql("cancelled")),
          Arel::Nodes::Case.new.when(t[:provider].minimum.not_eq(t[:provider].maximum)
                                      .or(t[:model].minimum.not_eq(t[:model].maximum))).then(1).else(0).as("spread"),
          first_attempt(t[:success].eq(true).and(t[:attempt].gt(1))).as("won_at"),
          first_attempt(unsuccessful).as("failed_at")
        )
      end

      # An attempt that did not answer and was not cut by a cancel: a hedged request's
      # loser (cancelled) never makes the winner a save, nor does a target left out for
      # attachments it cannot take (the call went where it could, nothing was saved).
      def unsuccessful
        t = @rows.table
        failed = t[:success].eq(false).and(t[:error_class].eq(nil).or(@rows.refused.not))
        @rows.cancelled_column? ? failed.and(t[:cancelled].eq(false)) : failed
      end

      # MIN(CASE WHEN condition THEN attempt END)
      def first_attempt(condition)
        Arel::Nodes::Min.new([Arel::Nodes::Case.new.when(condition).then(@rows.table[:attempt])])
      end
    end
  end
end
