# frozen_string_literal: true

require_relative "ar_spec_helper"
require "nokogiri"
require "timeout"
require "llm_failover/report"

# Calls their caller stopped (Timeout.timeout here), written by AttemptLog as a real
# call writes them: the report counts them apart, neither as a provider's failure nor as
# a lost call, and both renderers show that count.
ArSpec.describe "a call its caller stopped, in the report" do
  include_context "with fake providers"

  before do
    LlmFailover.configure do |c|
      c.usage_log = attempt_log
      c.first_token_timeout = 60
      c.idle_timeout = 60
      c.request_timeout = 60
      c.max_retries = 1
      c.retry_interval = 0.01
    end
  end

  let(:report) { LlmFailover::Report.new }
  let(:text) { report.to_s }
  let(:page) { Nokogiri::HTML5(report.to_html) }

  def stop_call(feature)
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, feature: feature)
    expect { Timeout.timeout(0.5) { chat.ask("Hi") { |_| nil } } }.to raise_error(Timeout::Error)
  end

  # The rows under a title in the text report, cells split where columns are apart.
  def text_rows(title)
    lines = text.split("\n\n").find { |block| block.start_with?("#{title}\n") }.lines.map(&:chomp)
    rows = lines.drop(3)
    rows == ["(none)"] ? [] : rows.map { |line| line.strip.split(/\s{2,}/) }
  end

  # The summary table of the text report: header => cell.
  def text_summary
    lines = text.split("\n\n")[1].lines
    lines[0].split.zip(lines[2].split).to_h
  end

  def tiles
    page.css("dl.summary dd").to_h { |dd| [dd["data-key"].to_sym, dd.text.to_i] }
  end

  def html_rows(name)
    page.css("table[data-table=#{name}] tbody tr").map { |tr| tr.css("td").map(&:text) }
  end

  it "counts one stopped call as a request, stopped by the caller, neither failed nor lost" do
    primary.enqueue({ text: "a b c", stall_after: 1 })
    stop_call("summary")
    expect(raw_rows("SELECT error_class FROM llm_failover_attempts").map(&:values))
      .to eq([["LlmFailover::AbortedError"]])

    expect(report.summary).to eq(attempts: 1, requests: 1, failures: 0, saves: 0, failover_saves: 0,
                                 cross_provider_saves: 0, lost: 0, cache_hits: 0, routed_around: 0, stopped: 1)
    expect([report.failure_rates, report.error_classes, report.incident_windows]).to eq([[], [], []])
    expect(report.features.map(&:to_h))
      .to eq([{ feature: "summary", requests: 1, attempts: 1, failed_attempts: 0, failed_over: 0, saved: 0, lost: 0,
                stopped: 1 }])

    expect(text_summary).to include("attempts" => "1", "requests" => "1", "failed_attempts" => "0", "lost" => "0",
                                    "stopped_by_caller" => "1")
    features = text_rows(LlmFailover::Report::Tables::TITLES[:features])
    expect(features).to eq([%w[summary 1 1 0 0 0 0 1]])
    expect(text_rows(LlmFailover::Report::Tables::TITLES[:failure_rates])).to eq([])

    expect(page.errors).to be_empty
    expect(tiles).to include(attempts: 1, requests: 1, failures: 0, lost: 0, stopped: 1)
    label = page.at_css("dd[data-key=stopped]").parent.at_css("dt").text
    expect(label).to eq("stopped by the caller")
    expect(html_rows(:summary)).to eq([text_summary.values])
    expect(html_rows(:features)).to eq(features)
    expect(html_rows(:failure_rates)).to eq([["(none)"]])
  end

  it "counts the failed attempt before the stop as a failure, the call as stopped and not lost" do
    primary.enqueue({ error: :unavailable }, { text: "a b c", stall_after: 1 })
    stop_call("tailoring")
    expect(raw_rows("SELECT attempt, error_class FROM llm_failover_attempts ORDER BY attempt").map(&:values))
      .to eq([[1, "LlmFailover::ServiceUnavailableError"], [2, "LlmFailover::AbortedError"]])

    expect(report.summary).to include(attempts: 2, requests: 1, failures: 1, lost: 0, stopped: 1)
    expect(report.failure_rates.map { |r| [r.provider, r.model, r.attempts, r.failures, r.top_error] })
      .to eq([["openai", "gpt-4o", 1, 1, "ServiceUnavailableError"]])
    expect(report.error_classes.map { |e| [e.error_class, e.attempts] }).to eq([["ServiceUnavailableError", 1]])
    expect(report.timeline.points.map { |p| [p.target, p.attempts, p.failures] }).to eq([["openai/gpt-4o", 1, 1]])

    expect(text_summary).to include("attempts" => "2", "failed_attempts" => "1", "lost" => "0",
                                    "stopped_by_caller" => "1")
    rates = text_rows(LlmFailover::Report::Tables::TITLES[:failure_rates])
    expect(rates).to eq([%w[openai gpt-4o 1 1 100.0% 1 ServiceUnavailableError]])
    expect(text_rows(LlmFailover::Report::Tables::TITLES[:features])).to eq([%w[tailoring 1 2 1 0 0 0 1]])

    expect(tiles).to include(attempts: 2, failures: 1, lost: 0, stopped: 1)
    expect(html_rows(:failure_rates)).to eq(rates)
    errors = page.css("svg").find { |s| s.at_css("> title")&.text == "Failed attempts by error class" }
    expect(errors.css("g.bar").map { |g| [g["data-label"], g["data-value"].to_i] })
      .to eq([["ServiceUnavailableError", 1]])
    expect(page.at_css("section#saves p.note").text).to include("0 calls lost; 1 stopped by their caller")
  end
end
