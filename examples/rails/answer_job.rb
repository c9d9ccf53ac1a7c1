# frozen_string_literal: true

# app/jobs/answer_job.rb in a Rails app set up by `bin/rails generate llm_failover:install`
# (doc/rails.md, "Jobs"). spec/rails_app_spec.rb copies this file into a generated app and
# runs it there: a failover, a retry that answers the same turn, eight jobs at once;
# spec/sidekiq_job_spec.rb runs it on Sidekiq, killed mid-answer and run again.
#
# The job id is the idempotency key: a retried job answers the same turn instead of storing
# the prompt again. RetryableError is what another try may fix (rate limits, 5xx, timeouts,
# cut streams); a wrong key or a bad request fails the job at once.
class AnswerJob < ApplicationJob
  retry_on LlmFailover::RetryableError, wait: :polynomially_longer, attempts: 5

  def perform(chat_id, prompt, asked_at: nil)
    chat = Chat.find(chat_id)
    reply = chat.ask(prompt, idempotency_key: job_id, asked_at: asked_at) do |chunk|
      # The assistant row fills as the answer streams. Show the chunks wherever the user
      # looks (the generated ChatAnswerJob broadcasts them over Turbo Streams); a reset
      # chunk means: empty what was shown, the backup answers from the start.
      logger.debug(chunk.reset? ? "llm_failover: the backup answers" : "llm_failover: +#{chunk.content.size} chars")
    end
    reply.content
  end
end
