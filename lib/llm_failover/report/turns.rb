# frozen_string_literal: true

module LlmFailover
  class Report
    # Turns answered again: a job retried after a failed call, or a #complete after a
    # failed #ask, answers the same user message in a call of its own, and every call
    # of a turn records its turn_id. A failed call of the period whose turn a later
    # call answered did not lose the user's answer: the report does not count it lost.
    # Tables without the turn_id column (migrated before it) have none.
    class Turns
      # @param rows [Rows]
      def initialize(rows)
        @rows = rows
      end

      # Calls with a failed attempt in the period whose turn another call answered at
      # or after that attempt (at any time, the period's end included).
      # @return [Array<Array(String, String)>] request_id and feature of each
      def answered_later
        return [] unless @rows.turn_column?

        t = @rows.table
        answers = t.alias("answers")
        answer = answers[:turn_id].eq(t[:turn_id]).and(answers[:success].eq(true))
                                  .and(answers[:request_id].not_eq(t[:request_id]))
                                  .and(answers[:started_at].gteq(t[:started_at]))
        later = Arel::SelectManager.new.from(answers).project(Arel.sql("1")).where(answer)
        @rows.scope.where(@rows.failed.or(@rows.refused)).where(t[:turn_id].not_eq(nil)).where(later.exists)
             .distinct.pluck(:request_id, :feature)
      end
    end
  end
end
