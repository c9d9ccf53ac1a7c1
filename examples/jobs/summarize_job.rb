# frozen_string_literal: true

# An ActiveJob job that summarizes a document into a chat stored with ActiveRecord.
# In a Rails app it is app/jobs/summarize_job.rb and Chat is the app's model:
#
#   class Chat < ApplicationRecord
#     acts_as_llm_chat       # columns: model provider backup_model backup_provider quota feature
#   end
#   class Message < ApplicationRecord
#     acts_as_llm_message    # columns: role content model provider status input_tokens output_tokens
#                            #          idempotency_key
#   end
#
#   chat = Chat.create!(model: "gpt-4o", provider: "openai", feature: "summaries",
#                       backup_model: "claude-sonnet-4-6", backup_provider: "anthropic")
#   SummarizeJob.perform_later(chat.id, document.body)
#
# and config/initializers/llm_failover.rb declares the providers and
# `c.usage_log = LlmFailover::ActiveRecord::AttemptLog.new`.
#
# Each job runs on its worker thread's own connection from the pool: the gem checks
# one out per database call, so nothing here needs a connection of its own.
require "active_job"
require "llm_failover/active_record"
require "llm_failover/job"

class SummarizeJob < ActiveJob::Base
  queue_as :llm

  # The gem already retried and failed over; a retryable error here means every
  # target is down for now, and a later try may work. A wrong key or a bad request
  # will not get better: those fail the job where someone sees them.
  retry_on LlmFailover::RetryableError, wait: :polynomially_longer, attempts: 5
  # A call that would wait longer than max_wait_in_call (a long Retry-After, every
  # circuit open, an enforced quota used up) raises RetryLater: rescheduled at exactly
  # its retry_at. After retry_on: ActiveJob tries the last declared handler first.
  include LlmFailover::Job

  PROMPT = "Summarize this document in three sentences.\n\n%<document>s"

  # @return [String] the summary
  def perform(chat_id, document)
    chat = Chat.find(chat_id)
    # A retried job keeps its job_id, so the prompt is stored once: the retry answers
    # the same turn, and a job run twice after it succeeded returns the stored answer
    # without asking again (idempotency_key needs the messages' idempotency_key column,
    # which `rails g llm_failover:install` adds).
    # The block streams the answer, so the row fills in while it arrives (a page can
    # poll it); after a failover the row is emptied first and holds the backup's words.
    reply = chat.ask(format(PROMPT, document: document), idempotency_key: job_id) { |_chunk| }
    logger.info("summarized chat #{chat.id} with #{LlmFailover::Target.label(reply.provider, reply.model)}" \
                "#{' after failing over' if reply.failover?} (request #{reply.request_id})")
    reply.content
  end
end
