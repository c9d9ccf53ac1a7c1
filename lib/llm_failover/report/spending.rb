# frozen_string_literal: true

require "bigdecimal"
require "active_record" # Arel
require_relative "values"
require_relative "../money/pricing"

module LlmFailover
  class Report
    # The report in money, from the attempts' cost column (llm_failover:upgrade adds it
    # to an earlier install): spend by provider and model, feature and day, the spend on
    # unanswered attempts, the failover premium and what the cache saved. The sums come
    # from the one Tally pass, the days from one GROUP BY, the premium from the saves'
    # answering attempts priced again at the target that failed first (the
    # configuration's prices: the report prices them as this process would).
    #
    # @api private: included by Report
    module Spending
      ZERO = BigDecimal("0")

      # @return [Boolean] whether the attempts table has the cost column
      def costs?
        query { rows.cost_column? }
      end

      # @return [String] the attempts table's name
      def table_name
        @model.table_name
      end

      # @return [Hash] cost, failed (unanswered attempts), premium (failing over beyond
      #   the primary's price), cache_saved, unpriced (attempts billed at a price not known)
      def spend_summary
        @spend_summary ||= { cost: spend.sum(ZERO, &:cost), failed: spend.sum(ZERO, &:failed),
                             premium: failover_premium.sum(ZERO, &:premium),
                             cache_saved: spend.sum(ZERO, &:cache_saved), unpriced: spend.sum(&:unpriced) }
      end

      # @return [Array<Spend>] per provider and model, most spent first
      def spend
        @spend ||= by_target.map do |(provider, model), list|
          Spend.new(provider: provider, model: model, cost: list.sum(ZERO, &:cost),
                            failed: list.sum(ZERO, &:failed_cost), cache_saved: list.sum(ZERO, &:saved),
                            unpriced: list.sum(&:unpriced))
        end.reject { |s| s.cost.zero? && s.cache_saved.zero? && s.unpriced.zero? }
                         .sort_by { |s| [-s.cost, s.provider.to_s, s.model.to_s] }
      end

      # @return [Array<FeatureSpend>] per feature (nil: calls without one), most spent first
      def spend_by_feature
        @spend_by_feature ||= groups.group_by(&:feature).map do |feature, list|
          FeatureSpend.new(feature: feature, cost: list.sum(ZERO, &:cost), failed: list.sum(ZERO, &:failed_cost))
        end.reject { |f| f.cost.zero? }.sort_by { |f| [-f.cost, f.feature.to_s] }
      end

      # @return [Array<DaySpend>] per UTC day and provider, in time order
      def spend_by_day
        @spend_by_day ||= query do
          next [] unless costs?

          first = @from || rows.scope.minimum(:started_at)
          next [] if first.nil?

          start = Time.at(first.to_i - (first.to_i % 86_400)).utc
          count = (((@to || Time.now) - start) / 86_400).ceil.clamp(1, nil)
          keys = count == 1 ? [:provider] : [rows.bucket_of_started_at(start, 86_400, 0, count - 1), :provider]
          rows.scan.where(rows.table[:cost].not_eq(nil)).group(*keys).pluck(*keys, rows.money_sum(:cost))
              .map do |values|
                values.unshift(0) if count == 1
                index, provider, cost = values
                DaySpend.new(day: start + (index.to_i * 86_400), provider: provider,
                             cost: rows.money(cost))
              end.reject { |d| d.cost.zero? }.sort_by { |d| [d.day, d.provider.to_s] }
        end
      end

      # @return [Array<Premium>] per path of the saves that failed over, largest premium first
      def failover_premium
        @failover_premium ||= begin
          saves = self.saves.select(&:failover?)
          answers = costs? ? saving_attempts(saves) : {}
          saves.group_by { |s| [s.from, s.to] }.map do |(from, to), list|
            premium_of(from, to, list.map { |s| answers[[s.request_id, s.attempts]] })
          end.sort_by { |p| [-p.premium, p.from, p.to] }
        end
      end

      private

      # [request_id, attempt] => [input, output, cached, written, cost] of each save's answer.
      def saving_attempts(saves)
        wanted = saves.to_h { |s| [[s.request_id, s.attempts], true] }
        query do
          saves.map(&:request_id).uniq.each_slice(500).flat_map do |ids|
            @model.where(request_id: ids, success: true)
                  .pluck(:request_id, :attempt, :input_tokens, :output_tokens, :cached_input_tokens,
                         :cache_write_tokens, :cost)
          end
        end.each_with_object({}) do |(id, attempt, *tokens, cost), out|
          out[[id, attempt]] = [*tokens, cost && BigDecimal(cost.to_s)] if wanted[[id, attempt]]
        end
      end

      def premium_of(from, to, answers)
        primary = price_of(from)
        cost = at_primary = ZERO
        unknown = 0
        answers.each do |input, output, cached, written, paid|
          if primary.nil? || paid.nil?
            unknown += 1
            next
          end
          cost += paid
          at_primary += primary.cost(input_tokens: input, output_tokens: output, cached_input_tokens: cached,
                                     cache_write_tokens: written)
        end
        Premium.new(from: from, to: to, calls: answers.size, cost: cost, at_primary_price: at_primary,
                    unknown: unknown)
      end

      # The price of a "provider/model" label: as this process's configuration has it,
      # or the gem's table where the report runs without one (the CLI).
      def price_of(label)
        provider, model = label.split("/", 2)
        if LlmFailover.respond_to?(:configuration)
          config = LlmFailover.configuration
          # A pool's label is priced as the pool (its dearest host), not as an unknown provider.
          config.pricing.for_name(provider, model, providers: config.providers.merge(config.pools))
        else
          (@default_pricing ||= Pricing.new(prices: Prices.default, overrides: Prices.new)).for_name(provider, model)
        end
      end
    end
  end
end
