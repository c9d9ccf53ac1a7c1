# frozen_string_literal: true

# app/jobs/rerun_lost_answers_job.rb beside the AnswerJob of doc/rails.md ("A worker
# killed mid-answer"). spec/sidekiq_job_spec.rb copies it into a generated app and runs
# it there after a Sidekiq process was killed with SIGKILL mid-answer.
#
# A queue that loses the job of a killed process (Sidekiq without Pro's super_fetch)
# leaves its turn "answering": the prompt is stored, the answer is not. This runs the
# job of each such turn again with its job id, the turn's idempotency_key, so the new
# run answers that turn instead of storing the prompt again.
class RerunLostAnswersJob < ApplicationJob
  # A live call writes its claim's time every 3 seconds: a claim a minute old is a dead
  # one's. Rerunning a live one would do no harm either: it waits for its answer.
  def perform(older_than: 60)
    Message.where(role: "user", status: "answering", updated_at: ...older_than.seconds.ago).find_each do |prompt|
      AnswerJob.new(prompt.chat_id, prompt.content).tap { |job| job.job_id = prompt.idempotency_key }.enqueue
    end
  end
end
