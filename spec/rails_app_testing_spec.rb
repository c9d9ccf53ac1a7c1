# frozen_string_literal: true

require "spec_helper"
require "fileutils"
require "open3"
require "tmpdir"

# LlmFailover::Testing.minitest! in a Rails app's own suite (issue 27): the minimal app of
# spec/fixtures/rails_app set up by llm_failover:install (its providers at the real URLs),
# examples/rails/test/ as its test/ folder, `bin/rails test` in random orders. Each command
# boots the app in its own process, so this is tagged :rails_app.
RSpec.describe "a Rails app's test suite with LlmFailover::Testing", :rails_app do
  fixture = File.expand_path("fixtures/rails_app", __dir__)
  gem_root = File.expand_path("..", __dir__)
  tests = %w[examples/rails/test/test_helper.rb examples/rails/test/models/chat_test.rb]
  app = nil
  env = { "BUNDLE_GEMFILE" => File.expand_path("../Gemfile", __dir__), "RAILS_ENV" => "test", "RACK_ENV" => nil,
          "OPENAI_API_KEY" => "sk-app-tests-1", "ANTHROPIC_API_KEY" => "sk-ant-app-tests-2", "DATABASE_URL" => nil,
          "REDIS_URL" => nil, "LLM_FAILOVER_REDIS_URL" => nil, "LLM_FAILOVER_FAKE" => nil }

  before(:all) do
    app = Dir.mktmpdir("llm_failover_app_tests")
    FileUtils.cp_r(File.join(fixture, "."), app)
    FileUtils.mkdir_p(%w[storage log tmp db].map { |d| File.join(app, d) })
    ["generate llm_failover:install", "db:migrate"].each do |command|
      output, status = Open3.capture2e(env, RbConfig.ruby, "bin/rails", *command.split, chdir: app)
      raise "bin/rails #{command} failed:\n#{output}" unless status.success?
    end
    tests.each do |path|
      target = File.join(app, path.delete_prefix("examples/rails/"))
      FileUtils.mkdir_p(File.dirname(target))
      FileUtils.cp(File.join(gem_root, path), target)
    end
  end

  after(:all) { FileUtils.rm_rf(app) if app }

  [3, 4].each do |seed|
    it "passes `bin/rails test --seed #{seed}`: records answered by the fake, no circuit carried over" do
      output, status = Open3.capture2e(env, RbConfig.ruby, "bin/rails", "test", "--seed", seed.to_s, chdir: app)
      expect(status).to be_success, output
      expect(output).to include("4 runs, 11 assertions, 0 failures, 0 errors, 0 skips")
    end
  end
end
