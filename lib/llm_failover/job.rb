# frozen_string_literal: true

require "active_support/concern"
require_relative "errors"

module LlmFailover
  # For an ActiveJob that asks a chat: a call that would have to wait longer than
  # max_wait_in_call raises RetryLater, and this reschedules the job at exactly its
  # retry_at (the provider's Retry-After, the circuits' next probe, the quota window's
  # end) instead of a guess, for up to llm_retry_later_attempts executions (then the
  # RetryLater fails the job). Ask with llm_idempotency_key (the job's id, the same on
  # every retry) so that the retried job stores no second prompt:
  #
  #   class SummarizeJob < ApplicationJob
  #     include LlmFailover::Job
  #
  #     def perform(chat_id)
  #       Chat.find(chat_id).ask("Summarize this thread", idempotency_key: llm_idempotency_key)
  #     end
  #   end
  #
  # Not `retry_on RetryLater, wait: ->(executions, error) { ... }`: ActiveJob 7.2 calls a
  # wait proc with the execution count only (ActiveJob::Exceptions#determine_delay).
  module Job
    extend ActiveSupport::Concern

    included do
      class_attribute :llm_retry_later_attempts, instance_writer: false, default: 10

      rescue_from LlmFailover::RetryLater do |error|
        raise error if executions >= self.class.llm_retry_later_attempts

        retry_job(wait_until: error.retry_at, error: error)
      end
    end

    # @return [String] the idempotency key of this job's ask: its job_id, kept by retries
    def llm_idempotency_key
      "job:#{job_id}"
    end
  end
end
