# frozen_string_literal: true

require "bigdecimal"

module LlmFailover
  class Report
    # The period's attempts counted in one pass (one GROUP BY): per provider, model,
    # feature and error class, every count and token sum the report's tables show. On
    # 200k rows in SQLite it costs ~0.4 s of CPU; the dozen passes it replaces took
    # ~4 s (bench/report.rb).
    class Tally
      # One group. Counts of attempts: all of them, sent (a provider could fail them), failed (and of those
      # failover_eligible), cached; paid (uncached successes) and their tokens; tokens
      # of every attempt and of the unanswered ones (failed or stopped).
      # Money (tables with the cost column; BigDecimal USD, else 0): cost of every attempt,
      # of the unanswered ones, what cache hits saved; unpriced: attempts billed tokens at
      # a price not known (NULL cost).
      # host: the provider entry that served (a pool's host; nil for a cache hit, or
      # before the host column).
      Group = Struct.new(:provider, :model, :feature, :error_class, :host, :attempts, :sent, :failures,
                         :failed_eligible, :cached, :semantic, :paid, :paid_input, :paid_output, :input, :output,
                         :unanswered_input, :unanswered_output, :cost, :failed_cost, :saved, :unpriced,
                         keyword_init: true) do
        def target
          [provider, model]
        end
      end

      KEYS = %i[provider model feature error_class].freeze

      # @param rows [Rows]
      def initialize(rows)
        @rows = rows
      end

      # @return [Array<Group>]
      def groups
        @groups ||= begin
          measures = self.measures
          keys = @rows.host_column? ? [*KEYS, :host] : KEYS
          @rows.scan.group(*keys).pluck(*keys, *measures.values).map do |values|
            Group.new(**[*keys, *measures.keys].zip(values).to_h).tap { |g| integers(g, measures.keys) }
          end
        end
      end

      private

      def measures
        r = @rows
        m = { attempts: Arel.star.count, sent: r.count_if(r.sent), failures: r.count_if(r.failed),
              failed_eligible: r.count_if(r.failed.and(r.table[:failover_eligible].eq(true))),
              paid: r.count_if(r.paid), paid_input: r.sum_if(r.paid, :input_tokens),
              paid_output: r.sum_if(r.paid, :output_tokens), input: r.table[:input_tokens].sum,
              output: r.table[:output_tokens].sum, unanswered_input: r.sum_if(r.unanswered, :input_tokens),
              unanswered_output: r.sum_if(r.unanswered, :output_tokens) }
        m[:cached] = r.count_if(r.table[:cached].eq(true)) if r.cached_column?
        m[:semantic] = r.count_if(r.table[:cache_tier].eq("semantic")) if r.cache_tier_column?
        m.merge!(money) if r.cost_column?
        m
      end

      def money
        r = @rows
        { cost: r.money_sum(:cost), failed_cost: r.money_sum(:cost, r.unanswered), saved: r.money_sum(:cost_saved),
          unpriced: r.count_if(r.unpriced) }
      end

      # Sums come back as Integer, BigDecimal, Float or text, or nil (no row to add);
      # money as Rows#money reads it.
      def integers(group, names)
        names.each { |name| group[name] = DECIMALS.include?(name) ? @rows.money(group[name]) : group[name].to_i }
        group.cached ||= 0
        group.semantic ||= 0
        DECIMALS.each { |name| group[name] ||= BigDecimal("0") }
        group.unpriced ||= 0
      end

      DECIMALS = %i[cost failed_cost saved].freeze
      private_constant :DECIMALS
    end
  end
end
