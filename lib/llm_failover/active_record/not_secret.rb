# frozen_string_literal: true

module LlmFailover
  module ActiveRecord
    # Rails' default filter_parameters (`:token`, `:_key`) also match input_tokens,
    # output_tokens, first_token_ms and idempotency_key, which are counts, timings and
    # job ids: ActiveRecord would print them as [FILTERED] in #inspect and in the SQL
    # log. NotSecret rewrites each filter so that it matches what it matched before
    # except those exact column names; a real secret (api_key, password_token) stays
    # filtered, and so does a Proc filter, which is left as it is.
    module NotSecret
      COLUMNS = %w[input_tokens output_tokens first_token_ms idempotency_key].freeze
      # At the start of a name: "not one of COLUMNS, whole".
      EXCEPT = "\\A(?!(?:#{COLUMNS.map { |c| Regexp.escape(c) }.join('|')})\\z)"
      private_constant :EXCEPT

      module_function

      # @param filters [Array<String, Symbol, Regexp, Proc>] filter_attributes
      # @return [Array] the same filters, leaving COLUMNS out (idempotent)
      def filters(filters)
        filters.map { |filter| rewrite(filter) }
      end

      def rewrite(filter)
        case filter
        when Regexp
          # Already rewritten, or a nested key ("credit_card.number") that never names a column.
          return filter if filter.source.start_with?(EXCEPT) || filter.source.include?("\\.")

          Regexp.new("#{EXCEPT}.*?(?:#{filter.source})", filter.options)
        when String, Symbol
          escaped = Regexp.escape(filter.to_s)
          # A String matches anywhere in the name, ignoring case (ActiveSupport::ParameterFilter).
          escaped.include?("\\.") ? filter : Regexp.new("#{EXCEPT}.*?#{escaped}", Regexp::IGNORECASE)
        else
          filter
        end
      end
    end
  end
end
