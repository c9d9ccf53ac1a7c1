# frozen_string_literal: true

require "spec_helper"
require "fileutils"
require "json"
require "open3"
require "tmpdir"

# LLM_FAILOVER_FAKE=1 (issue 27, doc/rails.md): the minimal Rails app of
# spec/fixtures/rails_app, set up by the install generator with real provider URLs,
# boots and answers offline; in production it refuses to boot.
RSpec.describe "LLM_FAILOVER_FAKE=1 in a Rails app", :rails_app do
  fixture = File.expand_path("fixtures/rails_app", __dir__)
  app = nil
  base_env = { "BUNDLE_GEMFILE" => File.expand_path("../Gemfile", __dir__), "RAILS_ENV" => "development",
               "RACK_ENV" => nil, "OPENAI_API_KEY" => "sk-app-offline-1", "ANTHROPIC_API_KEY" => "sk-ant-offline-2",
               "DATABASE_URL" => nil, "REDIS_URL" => nil, "LLM_FAILOVER_REDIS_URL" => nil, "LLM_FAILOVER_FAKE" => nil }

  # What the app's code does: a failover chat, then what the fake saw.
  script = <<~RUBY
    LlmFailover::ActiveRecord::Attempt.delete_all # the examples share the app's database
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai,
                            backup_model: "claude-sonnet-4-6", backup_provider: :anthropic)
    streamed = +""
    reply = chat.ask("Hello offline") { |chunk| streamed << chunk.content.to_s }
    fake = LlmFailover::Testing.fake
    fake.on(:openai).enqueue({ error: :unauthorized })
    refused = begin
      LlmFailover.chat(model: "gpt-4o", provider: :openai).ask("Now a scripted error")
      nil
    rescue LlmFailover::UnauthorizedError => e
      e.class.name
    end
    puts "RESULT " + JSON.generate(content: reply.content, streamed: streamed, provider: reply.provider,
                                   base_urls: LlmFailover.configuration.providers.transform_values(&:base_url),
                                   paths: fake.requests.map(&:path), refused: refused,
                                   rows: LlmFailover::ActiveRecord::Attempt.count)
  RUBY

  before(:all) do
    app = Dir.mktmpdir("llm_failover_offline")
    FileUtils.cp_r(File.join(fixture, "."), app)
    FileUtils.mkdir_p(%w[storage log tmp db].map { |d| File.join(app, d) })
    %w[generate\ llm_failover:install db:migrate].each do |command|
      output, status = Open3.capture2e(base_env, RbConfig.ruby, "bin/rails", *command.split, chdir: app)
      raise "bin/rails #{command} failed:\n#{output}" unless status.success?
    end
    File.write(File.join(app, "script/offline.rb"), script)
  end

  after(:all) { FileUtils.rm_rf(app) if app }

  define_method(:rails_runner) do |env, code = "script/offline.rb"|
    Open3.capture3(base_env.merge(env), RbConfig.ruby, "bin/rails", "runner", code, chdir: app)
  end

  it "answers every call from the FakeProvider, each provider on its own lane, and says so at boot" do
    out, err, status = rails_runner("LLM_FAILOVER_FAKE" => "1")
    expect(status).to be_success, "#{out}\n#{err}"
    result = JSON.parse(out[/^RESULT (.*)$/, 1] || raise("no RESULT line:\n#{out}\n#{err}"))
    answer = LlmFailover::Testing::Offline::DEFAULT_ANSWER[:text]
    expect(result).to include("content" => answer, "streamed" => answer, "provider" => "openai",
                              "refused" => "LlmFailover::UnauthorizedError", "rows" => 2)
    expect(result["base_urls"].keys).to eq(%w[openai anthropic])
    expect(result["base_urls"].values).to all(match(%r{\Ahttp://127\.0\.0\.1:\d+/providers/(openai|anthropic)}))
    expect(result["paths"]).to eq(["/providers/openai/v1/chat/completions"] * 2)
    expect(err).to include("LLM_FAILOVER_FAKE=1: every call is answered offline by the FakeProvider")
    expect(File.read(File.join(app, "log/development.log"))).to include("answered offline by the FakeProvider")
  end

  it "answers what an initializer scripted (examples/rails/llm_failover_offline.rb)" do
    initializer = File.join(app, "config/initializers/llm_failover_offline.rb")
    FileUtils.cp(File.expand_path("../examples/rails/llm_failover_offline.rb", __dir__), initializer)
    out, err, status = rails_runner("LLM_FAILOVER_FAKE" => "1")
    expect(status).to be_success, "#{out}\n#{err}"
    result = JSON.parse(out[/^RESULT (.*)$/, 1])
    expect(result).to include("content" => LlmFailover::Testing::Offline::DEFAULT_ANSWER[:text], "provider" => "anthropic")
    expect(result["paths"].first(5)).to eq(["/providers/openai/v1/chat/completions"] * 4 + ["/providers/anthropic/v1/messages"])
  ensure
    FileUtils.rm_f(initializer)
  end

  it "leaves the providers alone without LLM_FAILOVER_FAKE, or with LLM_FAILOVER_FAKE=0" do
    [nil, "0"].each do |value|
      out, err, status = rails_runner({ "LLM_FAILOVER_FAKE" => value },
                                      "puts LlmFailover.configuration.providers.values.map(&:base_url).inspect")
      expect(status).to be_success, err
      expect(out.lines.last.chomp).to eq('["https://api.openai.com/v1", "https://api.anthropic.com"]')
      expect(err).not_to include("FakeProvider")
    end
  end

  { "RAILS_ENV" => { "RAILS_ENV" => "production", "SECRET_KEY_BASE" => "0" * 64 },
    "RACK_ENV" => { "RACK_ENV" => "production" } }.each do |name, env|
    it "refuses to boot with #{name}=production" do
      out, err, status = rails_runner(env.merge("LLM_FAILOVER_FAKE" => "1"))
      expect(status).not_to be_success
      expect(err).to include("LlmFailover::ConfigurationError")
      expect(err).to match(/LLM_FAILOVER_FAKE=1 is set but (Rails.env is production|#{name}=production)/)
      expect(out).not_to include("RESULT")
    end
  end
end
