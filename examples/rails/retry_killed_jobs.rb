# frozen_string_literal: true

# `bin/rails runner examples/rails/retry_killed_jobs.rb` in an app whose jobs run on Solid
# Queue (doc/rails.md, "A worker killed mid-answer"), or the body of a recurring task: the
# AnswerJobs of killed workers, which Solid Queue marked failed, run again with their job
# ids, so each answers the turn its killed run left.
killed = %w[SolidQueue::Processes::ProcessExitError SolidQueue::Processes::ProcessPrunedError]
SolidQueue::FailedExecution.includes(:job).find_each do |failed|
  failed.retry if failed.job.class_name == "AnswerJob" && killed.include?(failed.exception_class)
end
