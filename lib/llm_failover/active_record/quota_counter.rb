# frozen_string_literal: true

module LlmFailover
  module ActiveRecord
    # How much of a model's quota is used, counted from the messages table: this
    # calendar month's completed assistant messages of the model on the provider
    # (one per request), or the sum of their tokens.
    #
    # Providers report dated snapshots ("gpt-4o-2024-08-06", "claude-sonnet-4-5-20250929")
    # for the alias a chat asks for, and the stored message names what the provider
    # reported, so a row counts when its model is the chat's model or that model
    # followed by "-20..." (a date). "gpt-4o-mini" does not count for "gpt-4o".
    class QuotaCounter
      BASES = %i[requests tokens].freeze

      # @param message_class [Class] the acts_as_llm_message model
      # @param columns [Hash{Symbol => String}] its column names
      def initialize(message_class, columns: MessageStore::DEFAULT_COLUMNS)
        @klass = message_class
        @columns = columns
      end

      # @param by [Symbol] :requests or :tokens (input + output)
      # @param scope [ActiveRecord::Relation, nil] narrower rows (one chat's), or all
      # @param since [Time] start of the period (default: this calendar month, Time.zone aware)
      # @return [Integer]
      def used(model:, provider:, by: :requests, scope: nil, since: Time.current.beginning_of_month)
        raise ArgumentError, "quota basis must be one of #{BASES.inspect}, got #{by.inspect}" unless BASES.include?(by)

        rows = relation(scope, model, provider, since)
        @klass.connection_pool.with_connection do
          if by == :requests
            rows.count
          else
            rows.sum(@columns[:input_tokens]).to_i + rows.sum(@columns[:output_tokens]).to_i
          end
        end
      end

      private

      def relation(scope, model, provider, since)
        table = @klass.arel_table
        model_column = table[@columns[:model]]
        snapshot = "#{@klass.sanitize_sql_like(model.to_s)}-20%"
        (scope || @klass.all)
          .where(@columns[:role] => "assistant", @columns[:status] => "complete", @columns[:provider] => provider.to_s)
          .where(table[:created_at].gteq(since))
          .where(model_column.eq(model.to_s).or(model_column.matches(snapshot, "\\", true)))
      end
    end
  end
end
