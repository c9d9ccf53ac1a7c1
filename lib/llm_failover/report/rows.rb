# frozen_string_literal: true

require_relative "values"

module LlmFailover
  class Report
    # The attempts of a period and the rules that sort them (failed, skipped, stopped,
    # ...), each written once as an Arel condition: the report's scopes filter with it
    # and its one-pass queries (Tally, Calls) count with it.
    class Rows
      # A row fetched through an index costs SQLite ~14 times a row of a plain table scan
      # (200k rows: 853 ms through index_..._on_started_at, 61 ms scanned; bench/report.rb):
      # when the period holds more than this share of the table, its passes scan.
      SCAN_SHARE = 0.1

      attr_reader :model

      # @param model [Class] the Attempt model
      # @param from [Time, nil]
      # @param to [Time, nil]
      def initialize(model, from, to)
        @model = model
        @from = from
        @to = to
      end

      # @return [ActiveRecord::Relation] the period's rows, the database picking its way
      def scope
        @scope ||= within(@model.all)
      end

      # The period's rows for a pass over all of them: on SQLite, without an index when
      # the period holds most of the table (its planner takes the started_at index
      # whatever the range, and for GROUP BY the provider/model one).
      # @return [ActiveRecord::Relation]
      def scan
        @scan ||= scan? ? within(@model.from(Arel.sql("#{@model.quoted_table_name} NOT INDEXED"))) : scope
      end

      # @return [Arel::Nodes::Node, nil] started_at within the period; nil: no bounds
      def period
        bounds = []
        bounds << table[:started_at].gteq(@from) if @from
        bounds << table[:started_at].lt(@to) if @to
        bounds.reduce { |a, b| a.and(b) }
      end

      def table
        @model.arel_table
      end

      # Attempts that sent a request and got no answer, the user's cancels left out: the
      # failed ones and those their caller stopped (billed all the same).
      def unanswered
        condition = table[:success].eq(false).and(table[:error_class].not_in(NOT_SENT))
        cancelled_column? ? condition.and(table[:cancelled].eq(false)) : condition
      end

      # Failed HTTP attempts: a skipped target (no request) is not one, nor a cancelled
      # attempt (Chat#cancel!) or one the caller stopped: the user's decisions, not a
      # provider's failure. Its error class is never NULL (SQL's NOT IN leaves NULL out).
      def failed
        unanswered.and(table[:error_class].not_in([*NOT_SENT, STOPPED]))
      end

      # Attempts a provider could fail: neither a cache hit, nor a skipped target (no
      # request), nor one its caller stopped (the provider was not done). NULL error
      # classes (successes) included.
      def sent
        condition = table[:error_class].eq(nil).or(table[:error_class].not_in([*NOT_SENT, STOPPED]))
        cached_column? ? table[:cached].eq(false).and(condition) : condition
      end

      # Successful answers a provider sent (cache hits left out).
      def paid
        cached_column? ? table[:success].eq(true).and(table[:cached].eq(false)) : table[:success].eq(true)
      end

      # Targets skipped past their open circuit (a call routed around it). A target left
      # out for the attachments it cannot take (REFUSED) is none: the call went where
      # it could.
      def skipped
        table[:error_class].eq(SKIPPED)
      end

      # Targets left out because they cannot take the message's attachments.
      def refused
        table[:error_class].eq(REFUSED)
      end

      def stopped
        table[:error_class].eq(STOPPED)
      end

      # SUM(CASE WHEN condition THEN 1 ELSE 0 END)
      def count_if(condition)
        Arel::Nodes::Sum.new([Arel::Nodes::Case.new.when(condition).then(1).else(0)])
      end

      # SUM(CASE WHEN condition THEN column END): NULL when no row matched.
      def sum_if(condition, column)
        Arel::Nodes::Sum.new([Arel::Nodes::Case.new.when(condition).then(table[column])])
      end

      # Dollars a column's sum counts in on SQLite: its decimals are floats, added as
      # floats (differently since SQLite 3.43), so there each row counts as an integer of
      # the column's scale (1e-10 dollars) and the sum is exact. Elsewhere SUM is exact.
      MONEY_SCALE = 10**10

      # SUM of a money column (of its rows matching +condition+, if given); read it with #money.
      def money_sum(column, condition = nil)
        value = condition ? Arel::Nodes::Case.new.when(condition).then(table[column]) : table[column]
        return Arel::Nodes::Sum.new([value]) unless sqlite?

        scaled = Arel::Nodes::NamedFunction.new("ROUND", [Arel::Nodes::Multiplication.new(value, MONEY_SCALE)])
        Arel::Nodes::Sum.new([Arel::Nodes::NamedFunction.new("CAST", [scaled.as(Arel.sql("INTEGER"))])])
      end

      # @return [BigDecimal] a #money_sum's value (0 when no row matched)
      def money(value)
        return BigDecimal("0") if value.nil?

        sqlite? ? BigDecimal(value.to_i) / MONEY_SCALE : BigDecimal(value.to_s)
      end

      def sqlite?
        @sqlite = @model.connection.adapter_name.match?(/sqlite/i) if @sqlite.nil?
        @sqlite
      end

      # MAX(CASE WHEN condition THEN 1 ELSE 0 END): whether any row of a group matched.
      def any(condition)
        Arel::Nodes::Max.new([Arel::Nodes::Case.new.when(condition).then(1).else(0)])
      end

      # Tables made before the cached column keep working.
      def cached_column?
        @cached_column = @model.column_names.include?("cached") if @cached_column.nil?
        @cached_column
      end

      # Tables made before the hedged column keep working (and have no hedges).
      def hedged_column?
        @hedged_column = @model.column_names.include?("hedged") if @hedged_column.nil?
        @hedged_column
      end

      # Tables made before the cache_tier column keep working (every hit was exact then).
      def cache_tier_column?
        @cache_tier_column = @model.column_names.include?("cache_tier") if @cache_tier_column.nil?
        @cache_tier_column
      end

      # Tables made before the cancelled column keep working.
      def cancelled_column?
        @cancelled_column = @model.column_names.include?("cancelled") if @cancelled_column.nil?
        @cancelled_column
      end

      # Tables made before the host column keep working (every attempt's host its provider).
      def host_column?
        @host_column = @model.column_names.include?("host") if @host_column.nil?
        @host_column
      end

      # Tables made before the cost column keep working (and show no money).
      def cost_column?
        @cost_column = @model.column_names.include?("cost") if @cost_column.nil?
        @cost_column
      end

      # Attempts billed tokens at a price not known: a cost of NULL where tokens were.
      def unpriced
        table[:cost].eq(nil).and(table[:input_tokens].gt(0).or(table[:output_tokens].gt(0)))
      end

      # Tables made before the turn_id column keep working (each call its own turn).
      def turn_column?
        @turn_column = @model.column_names.include?("turn_id") if @turn_column.nil?
        @turn_column
      end

      # SQL for the index of a row's bucket among buckets +first+..+last+ of +step+
      # seconds from +start+: CASE WHEN started_at < (the middle bucket's start) THEN (the
      # lower half) ELSE (the upper half) END, nested. Comparisons rather than epoch
      # arithmetic: every database has them, and the times are quoted as ActiveRecord
      # stores them. Halving rather than one WHEN per bucket: a row takes ~6 comparisons
      # instead of up to 60 (on 200k rows in SQLite the GROUP BY took 0.42 s against
      # 1.0 s, and 0.37 s without a bucket).
      def bucket_of_started_at(start, step, first, last)
        return Arel::Nodes.build_quoted(first) if first == last

        middle = (first + last + 1) / 2
        Arel::Nodes::Case.new
                         .when(table[:started_at].lt(start + (middle * step)))
                         .then(bucket_of_started_at(start, step, first, middle - 1))
                         .else(bucket_of_started_at(start, step, middle, last))
      end

      # A started_at value as the database gave it (SQLite's aggregates come back as text).
      def time(value)
        value && @model.type_for_attribute(:started_at).deserialize(value)
      end

      private

      def within(relation)
        condition = period
        condition ? relation.where(condition) : relation
      end

      # Whether a pass should scan the table: on SQLite, when the period is all of it or
      # most of it (both counts read the started_at index alone).
      def scan?
        return @scan_table unless @scan_table.nil?

        @scan_table = @model.connection.adapter_name.match?(/sqlite/i) &&
                      (period.nil? || scope.count > SCAN_SHARE * @model.count)
      end
    end
  end
end
