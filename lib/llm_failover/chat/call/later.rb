# frozen_string_literal: true

require "time"
require_relative "../../errors"

module LlmFailover
  class Call
    # When trying a failed call again may help, and whether that is further away than
    # the call may wait (max_wait_in_call): then the call raises a RetryLater a job
    # reschedules on (LlmFailover::Job) instead of its error.
    #
    # @api private: built by Call#fail_with
    class Later
      # @param breaker [Boolean] the call has circuits (circuit_threshold > 0)
      # @param log [#call] (level, message)
      def initialize(config:, targets:, breaker:, log:)
        @config = config
        @targets = targets
        @breaker = breaker
        @log = log
      end

      # The final error's Retry-After, or the end of the cooldown of the call's circuits
      # when every one of them is open (the later of the two). Only for errors that mean
      # "later" (Error#retryable?, the core's rule): a 4xx never gets one.
      # @return [Array(Time, Symbol), nil] retry_at, and :retry_after or :circuits_open
      def at(error)
        return nil unless error.retryable?

        now = Time.now.to_f
        after = now + error.retry_after if error.retry_after.is_a?(Numeric) && error.retry_after.positive?
        circuits = circuits_reopen_at(now)
        return nil unless after || circuits
        return [Time.at(after), :retry_after] if circuits.nil? || (after && after >= circuits - 1)

        [Time.at([circuits, after.to_f].max), :circuits_open]
      end

      # @return [Boolean] +error+'s retry_at is further away than max_wait_in_call
      def too_far?(error)
        !error.retry_at.nil? && error.retry_at - Time.now > @config.max_wait_in_call
      end

      # The error a job reschedules on: the same details, the time to come back. Raise
      # it while +error+ is being handled, so that +error+ is its cause.
      # @return [RetryLater]
      def retry_later(error, reason)
        RetryLater.new("#{error.message} (try again at #{error.retry_at.utc.iso8601}, " \
                       "past max_wait_in_call #{@config.max_wait_in_call}s)",
                       retry_at: error.retry_at, reason: reason, status: error.status, body: error.body,
                       provider: error.provider, model: error.model, request_id: error.request_id,
                       retry_after: error.retry_after, attempts: error.attempts,
                       provider_request_id: error.provider_request_id, error_type: error.error_type,
                       error_code: error.error_code)
      end

      private

      # When the first of the call's targets (a pool's hosts each) lets a request through,
      # when all are open.
      def circuits_reopen_at(now)
        store = @config.state_store
        return nil unless @breaker && store.respond_to?(:reopens_at)

        times = store.reopens_at(@targets.flat_map(&:hosts).map(&:circuit_key))
        times.any?(&:nil?) ? nil : [times.min, now].max
      rescue StandardError => e
        @log.call(:warn, "state store failed (#{e.class}: #{e.message}); no retry_at from the circuits")
        nil
      end
    end
  end
end
