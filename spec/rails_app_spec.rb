# frozen_string_literal: true

require "spec_helper"
require "digest"
require "fileutils"
require "open3"
require "tmpdir"
require_relative "support/postgres_server"

# A minimal Rails 7.2 app (spec/fixtures/rails_app, copied to a temp dir), driven
# the way its developer would: `bin/rails generate llm_failover:install`, db:migrate,
# jobs with a failover, the report. Every command is its own process (each boots the
# app: ~2 s), so these examples are tagged :rails_app (rake sanitize leaves them out).
RSpec.describe "a Rails 7.2 app", :rails_app do
  fixture = File.expand_path("fixtures/rails_app", __dir__)
  gem_root = File.expand_path("..", __dir__)

  around do |example|
    Dir.mktmpdir("llm_failover_app") do |dir|
      @app = dir
      FileUtils.cp_r(File.join(fixture, "."), dir)
      FileUtils.mkdir_p(%w[storage log tmp db].map { |d| File.join(dir, d) })
      # The job doc/rails.md shows, as a reader copies it.
      FileUtils.cp(File.join(gem_root, "examples/rails/answer_job.rb"), File.join(dir, "app/jobs/answer_job.rb"))
      example.run
    end
  end

  def env
    @env ||= { "BUNDLE_GEMFILE" => File.expand_path("../Gemfile", __dir__), "RAILS_ENV" => "development",
               "OPENAI_API_KEY" => "sk-app-SECRET-1", "ANTHROPIC_API_KEY" => "sk-ant-app-SECRET-2",
               "DATABASE_URL" => nil, "REDIS_URL" => nil, "LLM_FAILOVER_REDIS_URL" => nil }
  end

  def run_in_app(*command)
    output, status = Open3.capture2e(env, RbConfig.ruby, *command, chdir: @app)
    expect(status).to be_success, "#{command.join(' ')} failed:\n#{output}"
    output
  end

  def rails(*args)
    run_in_app("bin/rails", *args)
  end

  def app_files
    Dir.glob("**/*", base: @app).sort.reject { |f| f.start_with?("log/", "tmp/", "storage/") }
       .select { |f| File.file?(File.join(@app, f)) }
       .to_h { |f| [f, [File.read(File.join(@app, f)), File.mtime(File.join(@app, f))]] }
  end

  def exercise
    output = rails("runner", "script/exercise.rb")
    JSON.parse(output[/^RESULT (.*)$/, 1] || raise("no RESULT line in:\n#{output}"))
  end

  def expect_jobs_worked(result)
    expect(result["partial_inserts"]).to be(true) # a default set after llm_failover's initializer
    expect(result["acts_as"]).to eq([true, "has_many"])
    expect(result["perform_now"]).to eq("backup answer")
    expect(result["perform_now_rows"]).to eq([%w[user complete Hello], ["assistant", "complete", "backup answer"]])
    # The retried job answered the same turn: one user row.
    # The failed run's row became the answer: one assistant row per turn (issue 27, item 6).
    expect(result["retried_rows"]).to eq([["user", "complete", "Retry me"], ["assistant", "complete", "primary answer"]])
    expect(result["async_rows"]).to eq(Array.new(8) do |i|
      [["user", "complete", "Question #{i}"], ["assistant", "complete", "primary answer"]]
    end)
    expect(result["attempts"].count { |_, success| success }).to eq(10)
    expect(result["started_at_classes"]).to eq(["Time"])
    expect(result["inspect"]).to match(/input_tokens: \d+, output_tokens: \d+/)
  end

  it "is set up by the generator on SQLite (run twice), and runs jobs, the report and the CLI" do
    output = rails("generate", "llm_failover:install")
    expect(output).to include("db/migrate/", "app/models/chat.rb", "app/models/message.rb",
                              "config/initializers/llm_failover.rb")
    # No ActiveStorage here: the files of ask(text, with:) go to messages.attachments_data.
    expect(output).to match(/attachments\s+in messages\.attachments_data \(no ActiveStorage in this app\)$/)
    expect(File.read(File.join(@app, "app/models/message.rb"))).not_to match(/^\s*has_many_attached/)
    before = app_files
    again = rails("generate", "llm_failover:install")
    expect(again).to match(/exist.*create_llm_failover_tables/).and include("skip")
    # Rails finds the upgrade generator by its name; a fresh install lacks nothing.
    expect(rails("generate", "llm_failover:upgrade")).to include("nothing to add")
    expect(app_files).to eq(before)

    rails("db:migrate")
    expect(File).to exist(File.join(@app, "storage/development.sqlite3"))
    result = exercise
    expect(result["adapter"]).to eq("sqlite3")
    expect_jobs_worked(result)

    log = File.read(File.join(@app, "log/development.log"))
    expect(log).to match(/\["input_tokens", \d+\]/)
    expect(log).not_to include('["input_tokens", "[FILTERED]"]')
    expect(log).not_to include("SECRET")

    report = rails("llm_failover:report", "SINCE=1d")
    expect(report).to include("openai/gpt-4o", "anthropic/claude-sonnet-4-6")
    cli = run_in_app(File.join(gem_root, "exe/llm_failover"), "report", "--since", "1d")
    # The same report, but for its first line ("since" the minute each one started).
    expect(cli.lines.drop(1)).to eq(report.lines.drop(1))
    expect(cli.lines.first).to start_with("llm_failover report: llm_failover_attempts, since ")

    # The gem's warnings in the app's log; a null cache said at boot, until dev:cache.
    initializer = File.join(@app, "config/initializers/llm_failover.rb")
    File.write(initializer, File.read(initializer).sub("# c.cache = Rails.cache", "c.cache = Rails.cache"))
    null_cache = /llm_failover: c\.cache is ActiveSupport::Cache::NullStore, which keeps nothing.*dev:cache/
    # The gem's own Redis before the job queue's (nothing is asked of either here).
    env.merge!("LLM_FAILOVER_REDIS_URL" => "redis://127.0.0.1:6390/3", "REDIS_URL" => "redis://127.0.0.1:6391/0")
    # The report mounted behind the app's own check (here a header; Devise's authenticate
    # in a real app), the figures of `bin/rails llm_failover:report`.
    File.write(File.join(@app, "config/routes.rb"), <<~RUBY)
      Rails.application.routes.draw do
        constraints ->(request) { request.headers["X-Admin"] == "yes" } do
          mount LlmFailover::Report::Engine => "/llm_failover"
        end
      end
    RUBY
    boot = rails("runner", <<~RUBY)
      puts "STORE \#{LlmFailover.configuration.state_store.inspect}"
      puts "LOGGER \#{LlmFailover.configuration.logger.equal?(Rails.logger)}"
      request = ActionDispatch::Request.new(Rails.application.env_config.merge(
        "REQUEST_METHOD" => "GET", "QUERY_STRING" => "input_tokens=12&idempotency_key=job-1&api_key=sk-x&token=t"))
      puts "PARAMS \#{request.filtered_parameters.to_json}"
      require "rack/mock"
      app = Rack::MockRequest.new(Rails.application)
      puts "OUTSIDER \#{app.get("/llm_failover/report.txt?since=1d", "HTTP_HOST" => "localhost").status}"
      page = app.get("/llm_failover/report.txt?since=1d", "HTTP_HOST" => "localhost", "HTTP_X_ADMIN" => "yes")
      puts "ADMIN \#{page.status}"
      puts page.body
    RUBY
    env.merge!("LLM_FAILOVER_REDIS_URL" => nil, "REDIS_URL" => nil)
    expect(boot).to include("STORE #<LlmFailover::RedisStateStore redis://127.0.0.1:6390/3", "LOGGER true")
    expect(JSON.parse(boot[/^PARAMS (.*)$/, 1]))
      .to eq("input_tokens" => "12", "idempotency_key" => "job-1", "api_key" => "[FILTERED]", "token" => "[FILTERED]")
    expect(boot).to include("OUTSIDER 404", "ADMIN 200")
    expect(boot[/^ADMIN 200\n(.*)\z/m, 1].lines.drop(1).take(report.lines.size - 1)).to eq(report.lines.drop(1))
    expect(boot).not_to match(null_cache) # not on stderr: in the log
    expect(File.read(File.join(@app, "log/development.log")).scan(null_cache).size).to eq(1)
    rails("dev:cache")
    rails("runner", "nil")
    expect(File.read(File.join(@app, "log/development.log")).scan(null_cache).size).to eq(1)

    page = File.join(@app, "tmp/llm_failover_report.html")
    expect(rails("llm_failover:report", "SINCE=1d", "FORMAT=html")).to eq("llm_failover:report: wrote #{page}\n")
    html = File.read(page)
    expect(html).to include("<svg", "openai/gpt-4o", "anthropic/claude-sonnet-4-6")
    expect(html).not_to include("<script")
  end

  # What `rails new` (without --skip-active-storage) gives an app: the engine loaded,
  # the Disk service under storage/.
  def add_active_storage
    application = File.join(@app, "config/application.rb")
    source = File.read(application)
    source = source.sub(%(require "llm_failover"\n)) { |line| %(require "active_storage/engine"\n#{line}) }
    source = source.sub("config.load_defaults 7.2\n") { |line| "#{line}    config.active_storage.service = :local\n" }
    File.write(application, source)
    File.write(File.join(@app, "config/storage.yml"), <<~YAML)
      local:
        service: Disk
        root: <%= Rails.root.join("storage") %>
    YAML
  end

  it "keeps a job's image and PDF with ActiveStorage on PostgreSQL: once, across a failover, resent by complete",
     skip: PostgresServer.missing_reason do
    c = PostgresServer.config
    env["DATABASE_URL"] = "postgres://#{c[:username]}@#{c[:host]}:#{c[:port]}/llm_failover_app_files"
    add_active_storage
    # `bin/rails active_storage:install` and `bin/rails generate llm_failover:install`
    # in one boot.
    installed = rails("runner", <<~RUBY)
      Rails.application.load_tasks
      Rake::Task["active_storage:install"].invoke
      require "rails/generators"
      Rails.application.load_generators
      Rails::Generators.invoke("llm_failover:install", [], behavior: :invoke, destination_root: Rails.root.to_s)
    RUBY
    expect(installed).to match(/create_active_storage_tables\.active_storage\.rb/)
      .and match(/attachments\s+ActiveStorage: Message has_many_attached :attachments$/)
    expect(File.read(File.join(@app, "app/models/message.rb"))).to include("  has_many_attached :attachments\n")

    photo, pdf = %w[photo.png report.pdf].map { |f| File.join(gem_root, "spec/fixtures/files", f) }
    output = rails("runner", "script/attachments.rb", photo, pdf)
    result = JSON.parse(output[/^RESULT (.*)$/, 1] || raise("no RESULT line in:\n#{output}"))
    digest = ->(path) { Digest::SHA256.file(path).hexdigest }
    md5 = ->(path) { Digest::MD5.file(path).base64digest }
    expect(result.values_at("adapter", "attached", "service")).to eq(%w[postgresql has_many_attached ActiveStorage::Service::DiskService])

    # The primary had the files in OpenAI's form, the backup in Anthropic's; the backup answered.
    expect(result["answer"]).to eq("A gradient and a quarterly report.")
    expect(result["sent"]).to eq([[["image_url", "image/png", nil, digest[photo]],
                                   ["file", "application/pdf", "report.pdf", digest[pdf]]],
                                  [["image", "image/png", nil, digest[photo]],
                                   ["document", "application/pdf", nil, digest[pdf]]]])
    expect(result["attempts"]).to eq([["openai", false], ["anthropic", true]])
    # Stored once: a blob and an attachment row each, uploaded once, on the Disk service.
    expect(result["stored"]).to eq([["photo.png", "image/png", md5[photo]], ["report.pdf", "application/pdf", md5[pdf]]])
    expect(result["read_back"]).to eq([["photo.png", "image/png", digest[photo]], ["report.pdf", "application/pdf", digest[pdf]]])
    expect(result["after_ask"]).to eq(
      "blobs" => [["photo.png", "image/png", md5[photo]], ["report.pdf", "application/pdf", md5[pdf]]],
      "attachments" => [%w[Message attachments]] * 2, "files_on_disk" => 2
    )
    expect(result["uploads_by_ask"]).to eq(2)

    # A failed ask keeps its files (two more blobs); complete resends them, reads them
    # from the service and uploads nothing.
    expect(result["failed"]).to start_with("LlmFailover::")
    expect(result["after_failure"]["blobs"].size).to eq(4)
    expect(result["completed"]).to eq("Answered on the second try.")
    expect(result["complete_sent"]).to eq([["image_url", "image/png", nil, digest[photo]],
                                           ["file", "application/pdf", "report.pdf", digest[pdf]]])
    expect(result["complete_service_calls"]["upload"]).to eq(0)
    expect(result["complete_service_calls"]["download"]).to be >= 2
    expect(result["after_complete"]).to eq(result["after_failure"])

    # A blob the app uploaded is attached to the message as it is: no second blob or upload.
    expect(result["blob_sent"]).to eq([["image_url", "image/png", nil, digest[photo]]])
    expect(result["blob_stored"]).to eq([true])
    expect(result["blob_service_calls"]["upload"]).to eq(0)
    expect(result["after_blob"]["blobs"].size).to eq(5)
    expect(result["after_blob"]["attachments"].size).to eq(5)
  end

  it "migrates and runs the same jobs on PostgreSQL", skip: PostgresServer.missing_reason do
    c = PostgresServer.config
    env["DATABASE_URL"] = "postgres://#{c[:username]}@#{c[:host]}:#{c[:port]}/llm_failover_app"
    rails("generate", "llm_failover:install")
    rails("db:create", "db:migrate")
    result = exercise
    expect(result["adapter"]).to eq("postgresql")
    expect_jobs_worked(result)
  end
end
