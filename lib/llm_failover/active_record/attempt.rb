# frozen_string_literal: true

require "active_record"
require_relative "../chat/target"

module LlmFailover
  module ActiveRecord
    # One row of llm_failover_attempts: one HTTP attempt (see AttemptRecord). Written
    # by AttemptLog, read by Report. Subclass it to use another table or database:
    #
    #   class AuditAttempt < LlmFailover::ActiveRecord::Attempt
    #     self.table_name = "audit_llm_attempts"
    #     connects_to database: { writing: :audit }
    #   end
    class Attempt < ::ActiveRecord::Base
      self.table_name = "llm_failover_attempts"

      # Every column AttemptLog writes, in the table's order.
      COLUMNS = %i[request_id attempt provider model feature success error_class error_message http_status
                   failover_eligible retry_after latency_ms first_token_ms input_tokens output_tokens
                   started_at provider_request_id cached cancelled scrubbed skipped hedged turn_id cache_tier
                   similarity cached_input_tokens cache_write_tokens cost cost_saved host].freeze
      # Columns added after the first release: written only when the table has them,
      # so that an app that migrated before keeps logging.
      LATER_COLUMNS = %i[cached cancelled scrubbed skipped hedged turn_id cache_tier similarity cached_input_tokens
                         cache_write_tokens cost cost_saved host].freeze

      # @return [Boolean] whether the table has the cost column (llm_failover:upgrade adds it)
      def self.cost_column?
        column_names.include?("cost")
      end

      # @return [Boolean] whether the table has the host column (llm_failover:upgrade adds it)
      def self.host_column?
        column_names.include?("host")
      end

      # @return [Boolean] whether the table has the cached column
      def self.cached_column?
        column_names.include?("cached")
      end

      # @return [String] "provider/model"
      def target
        Target.label(provider, model)
      end
    end
  end
end
