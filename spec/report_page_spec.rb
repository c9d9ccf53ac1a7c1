# frozen_string_literal: true

require "spec_helper"
require_relative "support/chat_ui_app"
require "capybara"
require "capybara/rspec/matchers"
require "json"
require "open3"

# The mounted report page (issue 27) in headless Chromium: the minimal Rails app set up by
# llm_failover:install, examples/rails/report_routes.rb as its config/routes.rb (the page
# behind a password), attempts made offline (LLM_FAILOVER_FAKE=1 bin/rails runner), the
# app under Puma. The app runs in its own processes, so this is tagged :rails_app.
RSpec.describe "the mounted report page", :rails_app do
  include Capybara::RSpecMatchers

  password = "report-SECRET-7"
  screenshots = File.expand_path("../tmp/screenshots", __dir__)

  # What the attempts are: two answers from the primary, one failover after the primary
  # was overloaded once (max_retries 0), counted by the app itself.
  calls = <<~RUBY
    fake = LlmFailover::Testing.fake
    chat = -> { LlmFailover.chat(model: "gpt-4o", provider: :openai, max_retries: 0, feature: "summaries",
                                 backup_model: "claude-sonnet-4-6", backup_provider: :anthropic) }
    2.times { |i| chat.call.ask("Question \#{i}") }
    fake.on(:openai).enqueue({ error: :overloaded })
    chat.call.ask("Question 2")
    puts "RESULT " + JSON.generate(attempts: LlmFailover::ActiveRecord::Attempt.count,
                                   failed: LlmFailover::ActiveRecord::Attempt.where(success: false).count)
  RUBY

  before(:context) do
    @app = ChatUiApp.new
    @app.rails!("generate", "llm_failover:install")
    @app.rails!("db:migrate")
    FileUtils.cp(File.expand_path("../examples/rails/report_routes.rb", __dir__), File.join(@app.dir, "config/routes.rb"))
    File.write(File.join(@app.dir, "script/calls.rb"), calls)
    output, status = Open3.capture2e(@app.env.merge("LLM_FAILOVER_FAKE" => "1"), RbConfig.ruby, "bin/rails", "runner",
                                     "script/calls.rb", chdir: @app.dir)
    raise "the calls failed:\n#{output}" unless status.success?

    @counts = JSON.parse(output[/^RESULT (.*)$/, 1])
    @app.env["LLM_FAILOVER_REPORT_PASSWORD"] = password
    @app.start_server(up_path: "/up")
  end

  after(:context) { @app&.stop }

  it "asks for the password and refuses a wrong one" do
    expect(@counts).to eq("attempts" => 4, "failed" => 1)
    expect(@app.get("/llm_failover").code).to eq("401")
    request = Net::HTTP::Get.new("/llm_failover")
    request.basic_auth("admin", "wrong")
    expect(Net::HTTP.start("127.0.0.1", URI(@app.url).port) { |http| http.request(request) }.code).to eq("401")
  end

  describe "in headless Chromium", :browser, skip: ChatUiBrowser.missing_reason do
    before(:context) do
      @session = ChatUiBrowser.session(@app.url)
      FileUtils.mkdir_p(screenshots)
    end

    after(:context) { @session&.driver&.quit }

    let(:page) { @session }

    it "shows the CLI's figures, styled and charted under its Content-Security-Policy, with no script" do
      page.driver.basic_authorize("admin", password)
      page.visit("/llm_failover")
      expect(page.status_code).to eq(200)
      expect(page).to have_css("h1", text: "llm_failover report: llm_failover_attempts, since ")
      summary = page.all("dl.summary div").to_h { |d| [d.find("dt").text, d.find("dd").text] }
      expect(summary.values_at(*summary.keys.grep(/\Aattempts\z/i))).to eq(["4"])
      expect(page.text).to include("summaries", "gpt-4o", "claude-sonnet-4-6")
      # page.css applied (allowed by style-src 'unsafe-inline'), the charts drawn.
      styles = page.evaluate_script(<<~JS)
        [getComputedStyle(document.body).maxWidth, getComputedStyle(document.querySelector("dl.summary")).display,
         Array.from(document.querySelectorAll("svg")).filter((svg) => svg.getBoundingClientRect().width > 0).length,
         document.scripts.length]
      JS
      expect(styles[0..1]).to eq(%w[1280px grid])
      expect(styles[2]).to be_positive
      expect(styles[3]).to eq(0)
      page.save_screenshot(File.join(screenshots, "report_page.png"), full: true)

      page.visit("/llm_failover/report.txt?since=24h")
      expect(page.text).to include("gpt-4o")
      page.visit("/llm_failover?since=forever")
      expect(page.status_code).to eq(400)
    end
  end
end
