# frozen_string_literal: true

require_relative "surviving_write"

module LlmFailover
  module ActiveRecord
    # A usage sink writing one llm_failover_attempts row per attempt.
    #
    #   LlmFailover.configure { |c| c.usage_log = LlmFailover::ActiveRecord::AttemptLog.new }
    #
    # Rows are written on the calling thread's connection from the pool, so inside the
    # app's transaction they join it. An attempt happened (and may have been billed)
    # whatever the app's transaction decides: when that transaction rolls back, the row
    # is written again after the rollback (ActiveRecord >= 7.2; older versions lose it
    # with the rollback).
    class AttemptLog
      include SurvivingWrite

      # Provider error bodies can be long; the report needs the gist.
      MAX_ERROR_MESSAGE = 4000

      # @param model [Class] an Attempt (sub)class: its table and connection are used
      # @param survive_rollback [Boolean] rewrite rows a caller's rollback took away
      # @param model [Class, nil] nil: Attempt, looked up at the first write (an
      #   initializer that builds the sink must not load ActiveRecord::Base)
      def initialize(model: nil, survive_rollback: true)
        @model = model
        @survive_rollback = survive_rollback
      end

      # Writes +record+ (an AttemptRecord, or a Hash with its fields).
      # @return [nil]
      def call(record)
        write(row(record))
        nil
      end

      def inspect
        @model ? "#<#{self.class.name} #{@model.name} table=#{@model.table_name}>" : "#<#{self.class.name} Attempt>"
      end

      private

      def model
        @model ||= Attempt
      end

      # Only the record's fields: no headers, no keys (the record holds none; Call
      # the C core redacts error messages before they reach it).
      def row(record)
        columns = Attempt::COLUMNS
        columns -= Attempt::LATER_COLUMNS.reject { |c| model.column_names.include?(c.to_s) }
        columns.to_h do |name|
          value = record.is_a?(Hash) ? record[name] : (record.public_send(name) if record.respond_to?(name))
          [name, convert(name, value)]
        end
      end

      def convert(name, value)
        case name
        when :provider, :error_class, :cache_tier, :host then value&.to_s
        when :error_message then value && value.to_s[0, MAX_ERROR_MESSAGE]
        when :success, :failover_eligible, :cached, :cancelled, :skipped, :hedged then value ? true : false
        when :started_at then started_at(value)
        else value
        end
      end

      def started_at(value)
        case value
        when Time then value
        when Numeric then Time.at(value)
        when String then Time.iso8601(value)
        else Time.now
        end
      end
    end
  end
end
