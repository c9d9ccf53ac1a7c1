# frozen_string_literal: true

require_relative "ar_spec_helper"
require "active_job"
require "globalid"
require "logger"
require "stringio"

# The ChatAnswerJob that `rails g llm_failover:chat_ui` writes, loaded as written, on
# ActiveJob's test adapter: what it retries and what it never retries (issue 27). The
# browser examples of spec/chat_ui_spec.rb run it in a generated app.
ArSpec.describe "the generated ChatAnswerJob" do
  include_context "with fake providers"

  templates = File.expand_path("../../lib/generators/llm_failover/chat_ui/templates", __dir__)

  before(:context) do
    # What the app around the job provides: records as job arguments (globalid's
    # railtie), ApplicationJob, and turbo-rails' broadcast (recorded here; the page is
    # spec/chat_ui_spec.rb's).
    GlobalID.app ||= "llm-failover-spec"
    ActiveRecord::Base.include(GlobalID::Identification) unless ActiveRecord::Base < GlobalID::Identification
    stub = Module.new do
      def self.broadcasts
        @broadcasts ||= []
      end

      def self.broadcast_append_to(*args, **kwargs)
        broadcasts << [args, kwargs]
      end
    end
    @defined = []
    unless defined?(::Turbo::StreamsChannel)
      Object.const_set(:Turbo, Module.new) unless defined?(::Turbo)
      ::Turbo.const_set(:StreamsChannel, stub)
      @defined << :Turbo
    end
    unless defined?(::ApplicationJob)
      Object.const_set(:ApplicationJob, Class.new(ActiveJob::Base))
      @defined << :ApplicationJob
    end
    load File.join(templates, "chat_turn.rb.tt")
    load File.join(templates, "chat_answer_job.rb.tt")
    @defined.push(:ChatTurn, :ChatAnswerJob)
    # The chat UI's migration (add_request_id_to_messages) adds this column.
    ActiveRecord::Base.connection_pool.with_connection do |c|
      c.add_column(:messages, :request_id, :string) unless c.column_exists?(:messages, :request_id)
    end
    Message.reset_column_information
  end

  after(:context) do
    ActiveRecord::Base.connection_pool.with_connection do |c|
      c.remove_column(:messages, :request_id) if c.column_exists?(:messages, :request_id)
    end
    Message.reset_column_information
    @defined.each { |name| Object.send(:remove_const, name) if Object.const_defined?(name) }
  end

  let(:log) { StringIO.new }
  let(:adapter) { ActiveJob::QueueAdapters::TestAdapter.new }

  before do
    ChatAnswerJob.queue_adapter = adapter
    ChatAnswerJob.logger = Logger.new(log)
    LlmFailover.configuration.max_retries = 0
  end

  def chat
    @chat ||= Chat.create!(model: "gpt-4o", provider: "openai", backup_model: "claude-sonnet-4-6",
                           backup_provider: "anthropic")
  end

  it "runs again later, as the same job, when every target failed on something that may pass" do
    primary.enqueue({ error: :unavailable })
    backup.enqueue({ error: :overloaded })
    job = ChatAnswerJob.new(chat, "Hello")
    job.perform_now

    retry_job = adapter.enqueued_jobs.sole
    expect(retry_job).to include("job_id" => job.job_id, "executions" => 1)
    expect(retry_job[:at]).to be > Time.now.to_f # later, not at once
    primary.enqueue({ text: "Hi there" })
    ActiveJob::Base.execute(retry_job.select { |k, _| k.is_a?(String) })
    expect(Message.where(chat_id: chat.id).order(:id).pluck(:role, :status, :content).last)
      .to eq(["assistant", "complete", "Hi there"])
    expect(Message.where(chat_id: chat.id, role: "user").count).to eq(1)
  end

  it "never runs again on a 401 or a 400: discarded, said in the log" do
    [{ error: :unauthorized }, { error: :bad_request }].each do |refusal|
      primary.enqueue(refusal)
      expect { ChatAnswerJob.perform_now(chat, "Hello") }.not_to raise_error
    end
    expect(adapter.enqueued_jobs).to eq([])
    expect(log.string.scan(/ChatAnswerJob \S+: LlmFailover::(\w+) is not retried/).flatten)
      .to eq(%w[UnauthorizedError BadRequestError])
    expect(backup.request_count).to eq(0)
  end
end
