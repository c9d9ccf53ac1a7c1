# frozen_string_literal: true

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
      Group = Struct.new(:provider, :model, :feature, :error_class, :attempts, :sent, :failures,
                         :failed_eligible, :cached, :semantic, :paid, :paid_input, :paid_output, :input, :output,
                         :unanswered_input, :unanswered_output, keyword_init: true) do
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
          @rows.scan.group(*KEYS).pluck(*KEYS, *measures.values).map do |values|
            Group.new(**[*KEYS, *measures.keys].zip(values).to_h).tap { |g| integers(g, measures.keys) }
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
        m
      end

      # Sums come back as Integer, BigDecimal (MySQL) or nil (no row to add).
      def integers(group, names)
        names.each { |name| group[name] = group[name].to_i }
        group.cached ||= 0
        group.semantic ||= 0
      end
    end
  end
end
