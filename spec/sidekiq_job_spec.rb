# frozen_string_literal: true

require "spec_helper"
require "fileutils"
require "open3"
require "redis-client"
require "sqlite3"
require "tmpdir"
require_relative "support/redis_server"

# Issue 33: doc/rails.md's AnswerJob on Sidekiq (OSS) with a real redis-server, in the
# Rails 7.2 app of spec/rails_app_spec.rb set up by the generator, with the gem's
# default settings. The Sidekiq process is killed with SIGKILL mid-answer: Sidekiq
# loses its in-flight job (it took it off the queue with BRPOP), the doc's
# RerunLostAnswersJob enqueues it again with its job id, and a new Sidekiq process
# answers the turn at once: one prompt, one answer row.
RSpec.describe "the doc's AnswerJob on Sidekiq, its process killed mid-answer", :rails_app do
  fixture = File.expand_path("fixtures/rails_app", __dir__)
  gem_root = File.expand_path("..", __dir__)

  before(:all) { @redis = RedisServer.new.start if RedisServer.available? }
  after(:all) { @redis&.destroy }

  around do |example|
    skip "no redis-server (apt-get install redis-server)" unless @redis
    Dir.mktmpdir("llm_failover_sidekiq") do |dir|
      @app = dir
      FileUtils.cp_r(File.join(fixture, "."), dir)
      FileUtils.mkdir_p(%w[storage log tmp db].map { |d| File.join(dir, d) })
      # The jobs doc/rails.md shows, as a reader copies them.
      %w[examples/rails/answer_job.rb examples/rails/rerun_lost_answers_job.rb].each do |path|
        FileUtils.cp(File.join(gem_root, path), File.join(dir, "app/jobs", File.basename(path)))
      end
      # The app's jobs on Sidekiq, which reads REDIS_URL.
      application = File.join(dir, "config/application.rb")
      File.write(application, File.read(application)
        .sub("config.active_job.queue_adapter = :async", "config.active_job.queue_adapter = :sidekiq")
        .sub(%(require "llm_failover"\n), %(require "sidekiq"\nrequire "llm_failover"\n)))
      example.run
    ensure
      @sidekiq&.each { |pid| stop(pid) }
    end
  end

  let(:primary) { start_fake_provider }

  def env
    { "BUNDLE_GEMFILE" => File.expand_path("../Gemfile", __dir__), "RAILS_ENV" => "development",
      "OPENAI_API_KEY" => "sk-app-SECRET-1", "ANTHROPIC_API_KEY" => nil, "DATABASE_URL" => nil,
      "REDIS_URL" => @redis.url, "LLM_FAILOVER_REDIS_URL" => nil, "FAKE_OPENAI_URL" => primary.base_url(:openai) }
  end

  def rails(*args)
    output, status = Open3.capture2e(env, RbConfig.ruby, "bin/rails", *args, chdir: @app)
    expect(status).to be_success, "bin/rails #{args.join(' ')} failed:\n#{output}"
    output
  end

  # A Sidekiq process running the app's jobs (two threads), its log in log/sidekiq-N.log.
  def start_sidekiq
    @sidekiq ||= []
    log = File.join(@app, "log/sidekiq-#{@sidekiq.size}.log")
    pid = Process.spawn(env, RbConfig.ruby, Gem.bin_path("sidekiq", "sidekiq"), "-c", "2", "-e", "development",
                        chdir: @app, out: log, err: %i[child out])
    @sidekiq << pid
    pid
  end

  def stop(pid, signal = :KILL)
    Process.kill(signal, pid)
    Process.wait(pid)
  rescue Errno::ESRCH, Errno::ECHILD
    nil
  end

  def rows
    db = SQLite3::Database.new(File.join(@app, "storage/development.sqlite3"), readonly: true)
    db.execute("SELECT role, status, content, claimed_by FROM messages ORDER BY id")
  ensure
    db&.close
  end

  def redis
    @redis_client ||= RedisClient.new(url: @redis.url)
  end

  # Waits for a condition on what the app stored (bounded: a hang fails the example
  # with the Sidekiq logs).
  def wait_for(what, limit = SpecTime.scaled(90))
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + limit
    until yield
      if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        logs = Dir[File.join(@app, "log/sidekiq-*.log")].sort.map { |f| "#{f}:\n#{File.read(f)}" }.join("\n")
        raise "#{what} not seen after #{limit} s; rows: #{rows.inspect}\n#{logs}"
      end
      sleep 0.1
    end
  end

  it "loses the job with its process, and RerunLostAnswersJob has it answered at once" do
    # The generated initializer, then the FakeProvider's URL for the key it read.
    rails("generate", "llm_failover:install")
    File.write(File.join(@app, "config/initializers/zz_fake_provider.rb"), <<~RUBY)
      LlmFailover.configure do |c|
        c.provider :openai, api: :openai, api_key: ENV.fetch("OPENAI_API_KEY"), base_url: ENV.fetch("FAKE_OPENAI_URL")
      end
    RUBY
    rails("db:migrate")
    primary.enqueue({ text: "half an answer", stall_after: 1 }, { text: "The whole answer." })
    enqueued = rails("runner", <<~RUBY)
      chat = Chat.create!(model: "gpt-4o", provider: "openai")
      puts "JOB \#{AnswerJob.perform_later(chat.id, "Hello").job_id}"
    RUBY
    job_id = enqueued[/^JOB (\S+)$/, 1]

    worker = start_sidekiq
    wait_for("the answer streaming") { rows.map { |r| r.take(2) } == [%w[user answering], %w[assistant streaming]] }
    expect(rows.first[3]).to include(" #{worker} ") # the claim names the Sidekiq process
    stop(worker)

    # Sidekiq OSS took the job off the queue (BRPOP): nothing to run again, no retry.
    expect(%w[queue:default retry schedule].map { |key| redis.call(key.start_with?("queue") ? "LLEN" : "ZCARD", key) })
      .to eq([0, 0, 0])
    expect(rows.map { |r| r.take(2) }).to eq([%w[user answering], %w[assistant streaming]])

    # The doc's recipe (older_than: 0, not to wait a minute here): the job again, same id.
    rails("runner", "RerunLostAnswersJob.perform_now(older_than: 0)")
    queued = redis.call("LRANGE", "queue:default", 0, -1).map { |payload| JSON.parse(payload) }
    expect(queued.map { |job| job.dig("args", 0, "job_id") }).to eq([job_id])

    start_sidekiq
    wait_for("the answer") { rows.map { |r| r.take(2) } == [%w[user complete], %w[assistant complete]] }
    expect(rows).to eq([["user", "complete", "Hello", nil], ["assistant", "complete", "The whole answer.", nil]])
    expect(primary.request_count).to eq(2)
    expect(primary.requests.map { |r| r.json["messages"].map { |m| m["content"] } }).to eq([["Hello"], ["Hello"]])
  end
end
