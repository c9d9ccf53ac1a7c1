# frozen_string_literal: true

require_relative "../../active_record/ar_spec_helper"
require_relative "../../active_record/report_rows"
require "rack/mock"
require "nokogiri" # in the bundle through railties
require "llm_failover/report/engine"

# The report as a page an app mounts (issue 27): the figures of the CLI's report, over
# Rack as `mount LlmFailover::Report::Engine => "/llm_failover"` calls it.
ArSpec.describe LlmFailover::Report::Engine do
  include ReportRows

  let(:t0) { Time.now.utc - 3600 } # the last hour: within the default 7 days
  let(:request) { Rack::MockRequest.new(described_class) }

  before do
    insert_rows(t0)
    insert_skipped_rows(t0)
  end

  it "serves the text report with the CLI's figures, and the HTML page with the same numbers" do
    text = request.get("/report.txt")
    expect(text.status).to eq(200)
    expect(text.content_type).to eq("text/plain; charset=utf-8")
    cli = LlmFailover::Report.new(from: Time.now - LlmFailover::Report::CLI.duration("7d")).to_s
    expect(text.body.lines.drop(1)).to eq(cli.lines.drop(1)) # but for the minute "since"
    expect(text.body).to include("gpt-4o", "claude-sonnet-4-6")

    page = request.get("/")
    expect(page.status).to eq(200)
    expect(page.content_type).to eq("text/html; charset=utf-8")
    expect(page.headers["content-security-policy"]).to start_with("default-src 'none'")
    expect(page.headers["cache-control"]).to eq("no-store")
    html = Nokogiri::HTML5(page.body)
    expect(html.css("script")).to be_empty
    expect(html.at_css("h1").text).to start_with("llm_failover report: llm_failover_attempts, since ")
    summary = LlmFailover::Report.new(from: Time.now - 86_400 * 7).summary
    expect(page.body).to include(">#{summary[:attempts]}<", ">#{summary[:requests]}<")
  end

  it "reads the period from ?since= and refuses one it cannot read" do
    LlmFailover::ActiveRecord::Attempt.create!( # three days ago: in the week, not in the day
      request_id: "req-old", attempt: 1, provider: "openai", model: "gpt-4o", success: false,
      error_class: "LlmFailover::ServerError", http_status: 500, failover_eligible: true, latency_ms: 9.5,
      started_at: Time.now.utc - 3 * 86_400
    )
    week = request.get("/report.txt").body
    day = request.get("/report.txt?since=24h").body
    expect(day).not_to eq(week)
    expect(day.lines.drop(1)).to eq(LlmFailover::Report.new(from: Time.now - 86_400).to_s.lines.drop(1))

    bad = request.get("/?since=forever")
    expect(bad.status).to eq(400)
    expect(bad.body).to include("since wants a number and d, h or m")
  end

  it "answers only GET and HEAD on its two pages, and reads another table when given one" do
    expect(request.post("/").status).to eq(405)
    expect(request.get("/other").status).to eq(404)
    head = request.request("HEAD", "/report.txt")
    expect([head.status, head.body]).to eq([200, ""])

    other = Class.new(LlmFailover::ActiveRecord::Attempt) do
      self.table_name = "llm_failover_attempts"
      def self.name = "OtherAttempt"
    end
    app = described_class.new(attempts: other)
    expect(Rack::MockRequest.new(app).get("/report.txt").body.lines.drop(1))
      .to eq(request.get("/report.txt").body.lines.drop(1))
  end
end
