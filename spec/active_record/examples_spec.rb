# frozen_string_literal: true

require_relative "ar_spec_helper"
require "open3"
require "active_job"
require_relative "../../examples/jobs/summarize_job"

ArSpec.describe SummarizeJob do
  include_context "with fake providers"

  before do
    ActiveJob::Base.logger = Logger.new(nil)
    ActiveJob::Base.queue_adapter = :test
    LlmFailover.configuration.max_retries = 0
    LlmFailover.configuration.usage_log = attempt_log
  end

  let(:chat) do
    Chat.create!(model: "gpt-4o", provider: "openai", backup_model: "claude-sonnet-4-6",
                 backup_provider: "anthropic", feature: "summaries")
  end
  let(:prompt) { "Summarize this document in three sentences.\n\nThe quick brown fox." }

  def stored
    Message.where(chat_id: chat.id).order(:id).map { |m| [m.role, m.status, m.provider, m.content] }
  end

  it "summarizes into the chat with perform_now, the backup's words only after a failover" do
    primary.enqueue({ chunks: ["A ", "fox ", "jumps."], cut_after: 2 })
    backup.enqueue({ chunks: ["A fox ", "is quick."] })

    expect(described_class.perform_now(chat.id, "The quick brown fox.")).to eq("A fox is quick.")
    expect(stored).to eq([["user", "complete", nil, prompt], ["assistant", "complete", "anthropic", "A fox is quick."]])
    expect(LlmFailover::ActiveRecord::Attempt.order(:attempt).pluck(:provider, :success))
      .to eq([["openai", false], ["anthropic", true]])
  end

  it "is retried by ActiveJob when every target is down, and the retry answers the same turn" do
    primary.enqueue({ error: :unavailable })
    backup.enqueue({ error: :overloaded })
    described_class.perform_now(chat.id, "The quick brown fox.")

    expect(stored).to eq([["user", "complete", nil, prompt], ["assistant", "failed", "anthropic", ""]])
    retry_job = ActiveJob::Base.queue_adapter.enqueued_jobs.sole
    expect(retry_job[:job]).to eq(described_class)

    primary.enqueue({ text: "A quick fox." })
    retried = ActiveJob::Base.deserialize(retry_job) # the same job_id, as a queue runs it
    expect(retried.perform_now).to eq("A quick fox.")
    # The failed run's row is the answer's: one assistant row for the turn.
    expect(stored).to eq([["user", "complete", nil, prompt], ["assistant", "complete", "openai", "A quick fox."]])
    expect(sent_messages(primary.requests.last)).to eq([["user", prompt]])
    # The failed run stays in the attempt log.
    expect(LlmFailover::ActiveRecord::Attempt.order(:started_at, :attempt).pluck(:provider, :success))
      .to eq([["openai", false], ["anthropic", false], ["openai", true]])

    # Run once more (a queue that delivers twice): the stored answer, no request.
    expect(ActiveJob::Base.deserialize(retry_job).perform_now).to eq("A quick fox.")
    expect(primary.request_count).to eq(2)
    expect(stored.size).to eq(2)
  end

  it "lets a wrong key fail the job instead of retrying it" do
    primary.enqueue({ error: :unauthorized })
    expect { described_class.perform_now(chat.id, "doc") }.to raise_error(LlmFailover::UnauthorizedError)
    expect(ActiveJob::Base.queue_adapter.enqueued_jobs).to be_empty
    expect(backup.request_count).to eq(0)
  end
end

RSpec.describe "examples/active_record_chat.rb" do
  it "runs start to end against its FakeProviders" do
    script = File.expand_path("../../examples/active_record_chat.rb", __dir__)
    output, status = Open3.capture2e(RbConfig.ruby, script)
    expect(status).to be_success, output
    expect(output).to include("Paris is  [reset] The capital is Paris.",
                              'assistant complete  anthropic/claude-sonnet-4-6  "The capital is Paris."',
                              '"Rome." (the provider saw 3 messages)')
  end
end
