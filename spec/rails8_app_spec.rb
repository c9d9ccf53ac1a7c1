# frozen_string_literal: true

require "spec_helper"
require_relative "support/rails8_app"

# A new Rails 8 app (spec/fixtures/rails8_app: `rails new` with Rails 8.1's defaults,
# Propshaft, importmap, Turbo, Solid Queue, Solid Cable, SQLite) copied to a temp dir and
# used as its developer would: llm_failover:install and llm_failover:chat_ui, db:prepare,
# `bin/rails test` with no key, the doc's AnswerJob run by Solid Queue's supervisor
# (bin/jobs), a worker SIGKILLed mid-answer and its job run again, the report, the chat
# UI in headless Chromium. The providers are two FakeProviders of this process; every
# other setting is the gem's default. Rails 8 needs Ruby 3.2: on Debian 12's Ruby 3.1
# this is skipped. Each bin/rails command boots the app, so it is tagged :rails_app.
RSpec.describe "a new Rails 8 app", :rails_app, skip: Rails8App.missing_reason do
  gem_root = File.expand_path("..", __dir__)
  no_keys = { "RAILS_ENV" => nil, "OPENAI_API_KEY" => nil, "ANTHROPIC_API_KEY" => nil }

  # One app for the examples: each command boots Rails (seconds on a busy machine).
  before(:context) do
    @primary = LlmFailover::Testing::FakeProvider.start
    @backup = LlmFailover::Testing::FakeProvider.start
    @app = Rails8App.new
    @install = @app.rails!("generate", "llm_failover:install")
    @chat_ui = @app.rails!("generate", "llm_failover:chat_ui")
    # What the install generator asks for (rails new loads ActiveStorage), then every
    # database of config/database.yml: the app's, Solid Queue's and Solid Cable's.
    @prepared = @app.rails!("active_storage:install", "db:prepare")
    # The job doc/rails.md shows, as a reader copies it (test/jobs/answer_job_test.rb
    # of the fixture tests it).
    FileUtils.cp(File.join(gem_root, "examples/rails/answer_job.rb"), File.join(@app.dir, "app/jobs/answer_job.rb"))
    @tests = @app.run("bin/rails", "test", env: no_keys)
    @app.use_fake_providers(primary_url: @primary.base_url(:openai), backup_url: @backup.base_url(:anthropic))
    @app.start_jobs
  end

  after(:context) do
    @app&.stop
    [@primary, @backup].compact.each(&:stop)
  end

  before do
    [@primary, @backup].each(&:reset)
  end

  def new_chat(model: "gpt-4o")
    @app.console("Chat.create!(model: #{model.dump}, provider: 'openai', backup_model: 'claude-sonnet-4-6', " \
                 "backup_provider: 'anthropic').id")
  end

  # @return [String] the job's id
  def perform_later(chat_id, prompt)
    @app.console("AnswerJob.perform_later(#{chat_id}, #{prompt.dump}).job_id")
  end

  # [role, status, content, provider] of the chat's messages, in order.
  def rows(chat_id)
    @app.console("Message.where(chat_id: #{chat_id}).order(:id).pluck(:role, :status, :content, :provider)")
  end

  def answered?(chat_id)
    @app.console("Message.where(chat_id: #{chat_id}, role: 'assistant', status: 'complete').exists? && " \
                 "!Message.where(chat_id: #{chat_id}, status: %w[answering streaming]).exists?")
  end

  # Waits for the block to be true, at most +seconds+ (a bound against a hang, scaled
  # under valgrind), and says what the app's jobs logged when it never was.
  def wait_for(what, seconds: 90)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + SpecTime.scaled(seconds)
    until yield
      if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        raise "#{what}: not within #{seconds} s; the jobs' log:\n#{@app.jobs_log}"
      end

      sleep 0.2
    end
  end

  it "is set up by the generators and db:prepare; its tests run with no key" do
    expect(@install).to include("app/models/chat.rb", "app/models/message.rb", "config/initializers/llm_failover.rb",
                                "create  test/models/chat_test.rb")
      .and match(%r{create\s+db/migrate/\d+_create_llm_failover_tables\.rb})
    # `rails new` loads ActiveStorage: the messages' files are kept there, once its
    # tables are installed.
    asks = "ActiveStorage: Message has_many_attached :attachments; run bin/rails active_storage:install"
    expect(@install).to match(/attachments\s+#{Regexp.escape(asks)}/)
    # Rails 8 wrote config/cable.yml (Solid Cable): the chat UI leaves it as it is.
    expect(@chat_ui).to match(%r{skip\s+config/cable\.yml \(exists})
      .and include("app/controllers/chats_controller.rb", "app/jobs/chat_answer_job.rb")
    expect(File.read(File.join(@app.dir, "config/cable.yml"))).to include("adapter: solid_cable")
    databases = %w[development development_queue development_cable].map { |db| "#{@app.dir}/storage/#{db}.sqlite3" }
    expect(databases).to all(satisfy { |path| File.exist?(path) })
    expect(@prepared).to match(/create_active_storage_tables/)

    migrations = Dir.glob(File.join(@app.dir, "db/migrate/*_create_llm_failover_tables.rb"))
    expect(migrations.map { |m| File.read(m)[/< ActiveRecord::Migration\[[\d.]+\]/] })
      .to eq(["< ActiveRecord::Migration[8.1]"])

    # The generated test and the fixture's job test, with no key in the environment.
    output, status = @tests
    expect(status).to be_success, output
    expect(output).to match(/^3 runs, \d+ assertions, 0 failures, 0 errors, 0 skips$/)
  end

  it "runs the doc's AnswerJob on Solid Queue: a failover, a retry by retry_on, jobs at once on SQLite; the report" do
    # Every target down once: the job raises, retry_on runs it again (a scheduled job
    # of Solid Queue) with the same job id, which answers the same turn.
    @primary.enqueue(*Array.new(4) { { error: :unavailable } }, { chunks: ["primary ", "answer"] })
    @backup.enqueue(*Array.new(4) { { error: :overloaded } })
    retried = new_chat
    job_id = perform_later(retried, "Retry me")
    wait_for("the retried job's answer") { answered?(retried) }
    expect(rows(retried)).to eq([["user", "complete", "Retry me", nil],
                                 ["assistant", "complete", "primary answer", "openai"]])
    expect(@app.console("SolidQueue::Job.where(active_job_id: #{job_id.dump}).count")).to eq(2) # the run and its retry

    # The primary's stream is cut: the backup answers in the same run.
    @primary.enqueue({ chunks: ["lost ", "words ", "here"], cut_after: 2 })
    @backup.enqueue({ chunks: ["backup ", "answer"] })
    cut = new_chat
    perform_later(cut, "Hello")
    wait_for("the failover's answer") { answered?(cut) }
    expect(rows(cut)).to eq([["user", "complete", "Hello", nil],
                             ["assistant", "complete", "backup answer", "anthropic"]])

    # Six jobs on the worker's three threads, each writing its rows to SQLite as it
    # streams: Rails 8's adapter waits for the write lock with the GVL released.
    @primary.default = { chunks: %w[an answer in five words].map { |w| "#{w} " }, chunk_delay: 0.05 }
    chats = Array.new(6) { new_chat }
    chats.each_with_index { |chat, i| perform_later(chat, "Question #{i}") }
    wait_for("six answers") { chats.all? { |chat| answered?(chat) } }
    expect(chats.map { |chat| rows(chat) }).to eq(Array.new(6) do |i|
      [["user", "complete", "Question #{i}", nil], ["assistant", "complete", "an answer in five words ", "openai"]]
    end)
    expect(@app.console("SolidQueue::FailedExecution.count")).to eq(0)

    report = @app.rails!("llm_failover:report", "SINCE=1d")
    expect(report).to include("openai/gpt-4o", "anthropic/claude-sonnet-4-6")
  end

  it "answers a job whose worker was SIGKILLed mid-answer, once Solid Queue runs it again: one prompt, one answer" do
    words = %w[A slow answer that the killed worker never finishes streaming to the user]
    @primary.enqueue({ chunks: words.map { |w| "#{w} " }, chunk_delay: 0.5 }, # the killed run's
                     { chunks: ["The ", "rerun's ", "answer."] })               # the rerun's
    chat = new_chat(model: "gpt-4o-mini") # a target of its own: no other example's failures count for it
    job_id = perform_later(chat, "Tell me slowly")
    job = "SolidQueue::Job.find_by!(active_job_id: #{job_id.dump})"
    wait_for("the answer streaming") do
      rows(chat).any? { |role, status, content| [role, status] == %w[assistant streaming] && !content.to_s.empty? }
    end

    worker = @app.console("#{job}.claimed_execution.process.pid")
    Process.kill("KILL", worker)
    # The supervisor reaps its worker and marks the job failed; retry_on never sees
    # that error (the job's own process raised nothing). Solid Queue runs it again when
    # told to, with the same job id: here by the doc's script.
    wait_for("the killed job marked failed") { @app.console("#{job}.failed?") }
    expect(@app.console("#{job}.failed_execution.exception_class")).to eq("SolidQueue::Processes::ProcessExitError")
    @app.rails!("runner", File.join(gem_root, "examples/rails/retry_killed_jobs.rb"))
    expect(@app.console("#{job}.failed?")).to be(false)

    # Within seconds: the dead run's claim on the turn is taken over, not waited out
    # (LlmFailover.configuration.longest_call: 2,640 s with the defaults).
    wait_for("the rerun's answer", seconds: 30) { answered?(chat) }
    # The rerun answers into the killed run's row: one prompt, one answer.
    expect(rows(chat)).to eq([["user", "complete", "Tell me slowly", nil],
                              ["assistant", "complete", "The rerun's answer.", "openai"]])
    expect(@primary.request_count).to eq(2)
    expect(@backup.request_count).to eq(0)
  end

  describe "the chat UI in headless Chromium", :browser,
           skip: Rails8App.missing_reason || ChatUiBrowser.missing_reason do
    before(:context) do
      @app.start_server
      @session = ChatUiBrowser.session(@app.url)
    end

    after(:context) { @session&.driver&.quit }

    let(:page) { @session }
    let(:wait) { 60 } # seconds a matcher waits for the page: Chromium shares 2 cores with others

    it "streams the primary's words, clears them at the reset, shows the backup's answer (Solid Queue, Solid Cable)" do
      @primary.enqueue({ chunks: ["The ", "primary ", "was ", "saying"], chunk_delay: 0.3, cut_after: 3 })
      @backup.enqueue({ chunks: ["Backup ", "answers ", "in full."], delay_first_token: 0.5, chunk_delay: 0.2 })
      page.visit("/chats")
      page.click_button("New chat")
      expect(page).to have_css("turbo-cable-stream-source[connected]", visible: :all, wait: wait)
      ChatUiBrowser.record_answers(page)
      page.fill_in("prompt", with: "Where is the primary?")
      page.click_button("Send")

      turn = page.find("#turns .turn.complete", wait: wait)
      expect(turn).to have_css(".answer", exact_text: "Backup answers in full.")
      expect(turn).to have_css(".label", text: "Answered by anthropic/claude-sonnet-4-6 after 1 failed attempt")
      answers = ChatUiBrowser.shown_answers(page)
      primary_words = answers.rindex { |a| a.start_with?("The primary") }
      backup_words = answers.index { |a| a.start_with?("Backup") }
      expect(primary_words).not_to be_nil, "the primary's words never showed: #{answers.inspect}"
      expect(backup_words).to be > primary_words
      expect(answers[primary_words..backup_words]).to include("")
    end
  end
end
