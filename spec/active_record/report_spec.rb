# frozen_string_literal: true

require_relative "ar_spec_helper"
require "llm_failover/report/cli"
require_relative "report_rows"

RSpec.describe LlmFailover::Report, :active_record do
  include ReportRows

  describe "numbers" do
    let(:t0) { Time.utc(2025, 3, 10, 12, 0, 0) }
    let(:report) { described_class.new(from: t0 - 86_400) }

    before { insert_rows(t0) }

    it "sums up the period" do
      expect(report.summary).to eq(attempts: 9, requests: 6, failures: 5, saves: 2, failover_saves: 1,
                                   cross_provider_saves: 1, lost: 2, cache_hits: 0, routed_around: 0,
                                   stopped: 0)
      expect(described_class.new.summary[:attempts]).to eq(10)
      expect(described_class.new(from: t0 - 86_400, to: t0 + 300).summary)
        .to include(attempts: 5, requests: 3, failures: 2)
    end

    it "counts calls routed around an open circuit, and not as failed attempts" do
      insert_skipped_rows(t0)
      report = described_class.new(from: t0 - 86_400)
      expect(report.summary).to include(routed_around: 2, failures: 5, attempts: 13)
      expect(report.failure_rates.first.to_h).to include(provider: "openai", model: "gpt-4o", attempts: 6, failures: 4)
      circuit = report.open_circuits.map(&:to_h)
      expect(circuit).to eq([{ provider: "openai", model: "gpt-4o", calls: 2, first_skip: t0 + 900, last_skip: t0 + 960 }])
      expect(report.to_s).to include("Calls routed around an open circuit")
    end

    it "gives the failure rate per provider and model" do
      rates = report.failure_rates.map { |r| [r.provider, r.model, r.attempts, r.failures, r.failover_eligible, r.top_error] }
      expect(rates).to eq([["openai", "gpt-4o", 6, 4, 3, "RateLimitError"],
                           ["anthropic", "claude-sonnet-4-6", 2, 1, 1, "OverloadedError"],
                           ["openai", "gpt-4o-mini", 1, 0, 0, nil]])
      expect(report.failure_rates.first.rate).to eq(4.0 / 6)
    end

    it "finds the calls failover saved, and where they went" do
      expect(report.saves.map { |s| [s.request_id, s.feature, s.from, s.to, s.attempts, s.cross_provider?] })
        .to contain_exactly(["req-A", "tailoring", "openai/gpt-4o", "anthropic/claude-sonnet-4-6", 2, true],
                            ["req-B", "tailoring", "openai/gpt-4o", "openai/gpt-4o", 2, false])
      expect(report.save_paths).to eq([["openai/gpt-4o", "anthropic/claude-sonnet-4-6", 1],
                                       ["openai/gpt-4o", "openai/gpt-4o", 1]])
    end

    it "tells which features fail over" do
      features = report.features.map do |f|
        [f.feature, f.requests, f.attempts, f.failed_attempts, f.failed_over, f.saved, f.lost]
      end
      expect(features).to eq([["summary", 3, 4, 2, 1, 0, 1],
                              ["tailoring", 2, 4, 2, 1, 2, 0],
                              [nil, 1, 1, 1, 0, 0, 1]])
    end

    it "buckets failures into 5-minute incident windows" do
      windows = report.incident_windows.map do |w|
        [w.starts_at, w.failures, w.attempts, w.providers, w.errors]
      end
      expect(windows).to eq([[t0, 2, 5, "openai 2", "RateLimitError 1, ServerError 1"],
                             [t0 + 300, 3, 3, "openai 2, anthropic 1",
                              "OverloadedError 1, StreamInterruptedError 1, UnauthorizedError 1"]])
      expect(report.incident_windows(limit: 1).map(&:starts_at)).to eq([t0 + 300])
    end

    it "counts tokens of failed attempts too" do
      tokens = report.tokens.map { |t| [t.provider, t.model, t.input, t.output, t.total, t.failed_input, t.failed_output] }
      expect(tokens).to eq([["anthropic", "claude-sonnet-4-6", 100, 50, 150, 0, 0],
                            ["openai", "gpt-4o", 60, 22, 82, 30, 7],
                            ["openai", "gpt-4o-mini", 5, 5, 10, 0, 0]])
    end

    it "prints aligned tables" do
      text = report.to_s
      expect(text).to include("Failure rate per provider and model\n" \
                              "provider   model              attempts  failures   rate  failover_eligible  top_error\n" \
                              "---------  -----------------  --------  --------  -----  -----------------  ---------------\n" \
                              "openai     gpt-4o                    6         4  66.7%                  3  RateLimitError\n" \
                              "anthropic  claude-sonnet-4-6         2         1  50.0%                  1  OverloadedError\n" \
                              "openai     gpt-4o-mini               1         0   0.0%                  0  -")
      expect(text).to include("2025-03-10 12:05-12:10         3         3")
    end
  end

  describe "cache hits" do
    let(:t0) { Time.utc(2025, 3, 10, 12, 0, 0) }
    let(:report) { described_class.new(from: t0 - 86_400) }

    before do
      insert_rows(t0)
      insert_cache_hits(t0)
    end

    it "counts them apart from the attempts a provider could fail, with the tokens they saved" do
      expect(report.summary).to include(attempts: 12, requests: 9, cache_hits: 3)
      gpt = report.failure_rates.find { |r| r.model == "gpt-4o" }
      expect([gpt.attempts, gpt.failures]).to eq([6, 4])
      # gpt-4o's uncached answers (B, C) averaged 15 in and 7.5 out.
      expect(report.cache_hits.map { |h| [h.provider, h.model, h.hits, h.saved_input, h.saved_output] })
        .to eq([["openai", "gpt-4o", 3, 45, 23]])
      expect(report.cache_hits.map { |h| [h.semantic, h.exact_rate, h.semantic_rate] }).to eq([[0, 3 / 5.0, 0.0]])
      expect(report.to_s).to include("Response cache hits",
                                     "openai    gpt-4o     3       60.0%         0           0.0%           45            23")
    end
  end

  describe LlmFailover::Report::Table do
    it "right-aligns numbers and left-aligns text" do
      expect(described_class.new(%w[name n], [["a", 5], ["bbb", 123], ["cc", nil]]).to_s)
        .to eq("name    n\n----  ---\na       5\nbbb   123\ncc      -")
      expect(described_class.new(%w[x], []).to_s).to eq("x\n-\n(none)")
    end

    it "keeps a String column text even when every cell looks like a number (a request id's prefix)" do
      expect(described_class.new(%w[id rate], [["12345678", "50.0%"], ["abcdef01", "5.0%"]]).to_s)
        .to eq("id         rate\n--------  -----\n12345678  50.0%\nabcdef01   5.0%")
      expect(described_class.new(%w[id], [["12345678"]]).to_s).to eq("id\n--------\n12345678")
    end
  end

  describe LlmFailover::Report::CLI do
    let(:out) { StringIO.new }
    let(:err) { StringIO.new }

    def summary_numbers(text)
      lines = text.lines
      index = lines.index { |l| l.start_with?("attempts  requests") }
      lines[index + 2].split.map(&:to_i)
    end

    it "prints the report of the last --since of a database" do
      insert_rows(Time.now - 3600)
      status = described_class.run(["--database", ArSpec::PATH, "--since", "7d"], out: out, err: err)
      expect([status, err.string]).to eq([0, ""])
      expect(summary_numbers(out.string)).to eq([9, 6, 5, 2, 1, 1, 2, 0, 0, 0])
      expect(out.string).to include("Incident windows", "Tokens (failed attempts included)", "tailoring")

      out.truncate(0)
      out.rewind
      expect(described_class.run(["--database", "sqlite3:#{ArSpec::PATH}", "--since", "30d"], out: out, err: err)).to eq(0)
      expect(summary_numbers(out.string)).to eq([10, 7, 6, 2, 1, 1, 3, 0, 0, 0])
      # The app's own connection is untouched.
      expect(LlmFailover::ActiveRecord::Attempt.count).to eq(10)
    end

    it "refuses bad arguments with the usage status" do
      expect(described_class.run(["--database", ArSpec::PATH, "--since", "7y"], out: out, err: err)).to eq(2)
      expect(err.string).to include("--since", "usage:")
      expect(described_class.run(["--since", "7d"], out: out, err: err)).to eq(ENV["DATABASE_URL"] ? 0 : 2)
      expect(described_class.duration("24h")).to eq(86_400)
      expect(described_class.duration("30m")).to eq(1800)
    end

    it "fails with 1 on a database without the table, and never creates a missing SQLite file" do
      missing = File.join(ArSpec::DIR, "nope.sqlite3")
      expect(described_class.run(["--database", missing], out: out, err: err)).to eq(2)
      expect(File.exist?(missing)).to be(false)
      expect(described_class.run(["--database", ArSpec::PATH, "--table", "no_such_table"], out: out, err: err)).to eq(1)
      expect(err.string).to include("no table no_such_table")
    end
  end
end
