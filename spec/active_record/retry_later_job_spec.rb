# frozen_string_literal: true

require_relative "ar_spec_helper"
require "active_job"
require "llm_failover/job"

# A job asking a chat: a RetryLater reschedules it at exactly its retry_at (the test
# adapter shows when), and the retry answers the same turn without a second prompt.
class AskLaterJob < ActiveJob::Base
  retry_on LlmFailover::RetryableError, wait: :polynomially_longer, attempts: 5
  include LlmFailover::Job # after retry_on: ActiveJob tries the last declared handler first

  def perform(chat_id, text)
    Chat.find(chat_id).ask(text, idempotency_key: llm_idempotency_key).content
  end
end

ArSpec.describe LlmFailover::Job do
  include_context "with fake providers"

  before do
    ActiveJob::Base.logger = Logger.new(nil)
    ActiveJob::Base.queue_adapter = :test
    LlmFailover.configuration.max_retries = 0
  end

  let(:chat) { Chat.create!(model: "gpt-4o", provider: "openai") }

  def stored
    Message.where(chat_id: chat.id).order(:id).map { |m| [m.role, m.status, m.content] }
  end

  it "reschedules at the provider's Retry-After, and the retry stores no second prompt" do
    primary.enqueue({ error: :rate_limit, retry_after: 40 })
    before = Time.now.to_f
    AskLaterJob.new(chat.id, "Summarize").perform_now
    after = Time.now.to_f

    retry_job = ActiveJob::Base.queue_adapter.enqueued_jobs.sole
    expect(retry_job[:job]).to eq(AskLaterJob)
    expect(retry_job[:at]).to be_between(before + 40, after + 40) # retry_at itself, not a guess
    expect(stored).to eq([%w[user complete Summarize], ["assistant", "failed", ""]])

    primary.enqueue({ text: "A summary." })
    expect(ActiveJob::Base.deserialize(retry_job).perform_now).to eq("A summary.")
    expect(stored.count { |role, _, _| role == "user" }).to eq(1)
    expect(stored.last).to eq(["assistant", "complete", "A summary."])
    expect(sent_messages(primary.requests.last)).to eq([%w[user Summarize]])
  end

  it "reschedules at the quota window's end when an enforced quota is used up" do
    quota_chat = Chat.create!(model: "gpt-4o", provider: "openai", quota: 1)
    job = Class.new(AskLaterJob) do
      def self.name = "QuotaJob"

      def perform(chat_id, text)
        LlmFailover.chat(model: "gpt-4o", provider: :openai, store: Chat.find(chat_id).llm_store, quota: 1,
                         quota_used: 1, enforce_quota: true, quota_window: :hour, max_wait_in_call: 0)
                   .ask(text, idempotency_key: llm_idempotency_key)
      end
    end
    job.new(quota_chat.id, "Later").perform_now
    at = ActiveJob::Base.queue_adapter.enqueued_jobs.sole[:at]
    expect(at).to be_within(1).of((Time.now.to_i / 3600 + 1) * 3600)
    expect(primary.request_count).to eq(0)
  end

  it "fails the job on a 401: never a RetryLater" do
    primary.enqueue({ error: :unauthorized, retry_after: 40 })
    expect { AskLaterJob.new(chat.id, "Hi").perform_now }.to raise_error(LlmFailover::UnauthorizedError)
    expect(ActiveJob::Base.queue_adapter.enqueued_jobs).to be_empty
  end
end
