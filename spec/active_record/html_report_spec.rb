# frozen_string_literal: true

require_relative "ar_spec_helper"
require_relative "report_rows"
require "nokogiri" # in the bundle through railties
require "llm_failover/report/cli"

# The HTML report, parsed as a browser parses it (Nokogiri's HTML5 parser): each chart is
# there with the numbers the query layer returns, the tables say what the text report
# says, and nothing in the page runs or loads anything.
ArSpec.describe "LlmFailover::Report#to_html" do
  include ReportRows

  let(:t0) { Time.utc(2025, 3, 10, 12, 0, 0) }
  let(:report) { LlmFailover::Report.new(from: t0, to: t0 + 3600) }
  let(:html) { report.to_html }
  let(:page) { Nokogiri::HTML5(html) }

  before do
    insert_rows(t0)
    insert_skipped_rows(t0)
    insert_cache_hits(t0)
  end

  def chart(title)
    svg = page.css("svg").find { |s| s.at_css("> title")&.text == title }
    expect(svg).not_to be_nil, "no chart titled #{title.inspect}"
    svg
  end

  def bars(svg)
    svg.css("g.bar").map { |g| [g["data-label"], g["data-value"].to_i] }
  end

  # A table's rows as the page shows them (data-table names Report::Tables' methods).
  def table(name)
    page.css("table[data-table=#{name}] tbody tr").map { |tr| tr.css("td").map(&:text) }
  end

  # The rows under a title in the text report, cells split where columns are apart.
  def text_table(text, title)
    lines = text.split("\n\n").find { |block| block.start_with?("#{title}\n") }.lines.map(&:chomp)
    rows = lines.drop(3)
    rows == ["(none)"] ? [] : rows.map { |line| line.strip.split(/\s{2,}/) }
  end

  it "parses as HTML5 without an error, with a title and light and dark styles" do
    expect(page.errors).to be_empty
    expect(page.at_css("html")["lang"]).to eq("en")
    expect(page.at_css("title").text).to eq(report.title)
    expect(page.at_css("meta[name=color-scheme]")["content"]).to eq("light dark")
    expect(page.at_css("style").text).to include("@media (prefers-color-scheme: dark)")
  end

  it "needs nothing beyond itself: no script, no link, no URL" do
    expect(page.css("script, link, iframe, object, embed, img, foreignObject")).to be_empty
    attributes = page.css("*").flat_map { |e| e.attribute_nodes.map(&:name) }.uniq
    expect(attributes.grep(/\Aon/i)).to be_empty
    expect(attributes & %w[src href xlink:href action srcset]).to be_empty
    expect(html).not_to match(%r{https?://|url\(|@import}i)
  end

  it "counts the summary as the query layer does" do
    tiles = page.css("dl.summary dd").to_h { |dd| [dd["data-key"].to_sym, dd.text.to_i] }
    expect(tiles).to eq(report.summary.slice(*LlmFailover::Report::Html::TILES.keys))
    expect(tiles).to include(attempts: 16, failures: 5, saves: 4, cache_hits: 3, routed_around: 2)
  end

  it "draws every chart as an accessible image with a table of its numbers beside it" do
    svgs = page.css("svg")
    expect(svgs.size).to eq(5)
    svgs.each do |svg|
      expect(svg["role"]).to eq("img")
      labels = svg["aria-labelledby"].split.map { |id| page.at_css("##{id}") }
      expect(labels.map(&:name)).to eq(%w[title desc])
      expect(labels.map { |l| l.text.strip }).to all(satisfy { |t| !t.empty? })
      expect(svg.ancestors("section").first.css("table")).not_to be_empty
    end
  end

  it "draws the failure rate of each target per time bucket" do
    svg = chart("Failure rate over time per provider and model")
    # One hour: one-minute buckets. Attempts and failures per target and minute.
    expect(report.timeline.step).to eq(60)
    drawn = svg.css("g.series").to_h do |g|
      [g["data-target"], g.css("circle").map { |c| [Time.iso8601(c["data-at"]), c["data-attempts"].to_i, c["data-failures"].to_i] }]
    end
    minute = ->(n) { t0 + (n * 60) }
    expect(drawn).to eq(
      "anthropic/claude-sonnet-4-6" => [[minute[0], 1, 0], [minute[6], 1, 1], [minute[15], 1, 0], [minute[16], 1, 0]],
      "openai/gpt-4o" => [[minute[0], 1, 1], [minute[1], 2, 1], [minute[2], 1, 0], [minute[6], 1, 1], [minute[7], 1, 1]],
      "openai/gpt-4o-mini" => [[minute[12], 1, 0]]
    )
    # The points add up to the failure-rate table.
    totals = drawn.transform_values { |points| [points.sum { |p| p[1] }, points.sum { |p| p[2] }] }
    expect(totals).to eq(report.failure_rates.to_h { |r| ["#{r.provider}/#{r.model}", [r.attempts, r.failures]] })

    # A rate of 1 sits on the top of the plot, 0 on its base, 1/2 halfway.
    top = LlmFailover::Report::TimelineChart::TOP
    base = LlmFailover::Report::TimelineChart::HEIGHT - LlmFailover::Report::TimelineChart::BOTTOM
    heights = svg.css("g.series circle").map do |c|
      [Rational(c["data-failures"].to_i, c["data-attempts"].to_i), c["cy"].to_f]
    end.uniq
    expect(heights).to contain_exactly([1, top], [0, base], [Rational(1, 2), (top + base) / 2.0])
    # Consecutive minutes are joined; a minute without attempts breaks the line.
    gpt = svg.at_css("g.series[data-target='openai/gpt-4o']")
    expect(gpt.css("polyline").map { |l| l["points"].split.size }).to eq([3, 2])
    expect(page.css("ul.legend li").map(&:text)).to include("openai/gpt-4o", "incident window", "circuit open")
  end

  it "sizes the buckets to the period, down to a single one" do
    day = LlmFailover::Report.new(from: t0 - 86_400, to: t0 + 3600).timeline
    expect([day.step, day.starts_at, day.ends_at]).to eq([1800, t0 - 86_400, t0 + 3600])
    expect(day.points.map { |p| [p.target, p.starts_at, p.attempts, p.failures] })
      .to eq([["anthropic/claude-sonnet-4-6", t0, 4, 1], ["openai/gpt-4o", t0, 6, 4], ["openai/gpt-4o-mini", t0, 1, 0]])
    minute = LlmFailover::Report.new(from: t0 + 60, to: t0 + 120).timeline
    expect([minute.step, minute.starts_at, minute.ends_at]).to eq([60, t0 + 60, t0 + 120])
    expect(minute.points.map { |p| [p.target, p.attempts, p.failures] }).to eq([["openai/gpt-4o", 2, 1]])
  end

  it "shades the incident windows and the circuit opening on the time axis" do
    svg = chart("Failure rate over time per provider and model")
    incidents = svg.css("rect.band.incident").map { |r| [Time.iso8601(r["data-from"]), Time.iso8601(r["data-to"])] }
    expect(incidents).to eq(report.incident_windows.map { |w| [w.starts_at, w.ends_at] })
    expect(incidents).to eq([[t0, t0 + 300], [t0 + 300, t0 + 600]])
    circuits = svg.css("rect.band.circuit")
    expect(circuits.map { |r| [Time.iso8601(r["data-from"]), Time.iso8601(r["data-to"])] })
      .to eq([[t0 + 900, t0 + 960]])
    expect(circuits.first.at_css("title").text).to include("openai/gpt-4o", "2 calls")
    # An app that migrated before the circuit log: the same bands, and a word instead of its table.
    missing = Class.new(LlmFailover::ActiveRecord::CircuitTransition) { self.table_name = "no_circuit_events" }
    older = Nokogiri::HTML5(LlmFailover::Report.new(from: t0, to: t0 + 3600, circuit_events: missing).to_html)
    expect(older.css("rect.band.circuit").map { |r| r["data-from"] }).to eq(circuits.map { |r| r["data-from"] })
    expect(older.css("p.note").map(&:text)).to include(/no no_circuit_events table/)
    # Five minutes of an hour's axis.
    width = ->(r) { r["width"].to_f }
    plot = LlmFailover::Report::TimelineChart::WIDTH - LlmFailover::Report::TimelineChart::LEFT -
           LlmFailover::Report::TimelineChart::RIGHT
    expect(svg.css("rect.band.incident").map(&width)).to all(be_within(0.2).of(plot / 12.0))
  end

  it "shades the circuit log's open -> closed windows when it has any" do
    [[850, "closed", "open", "threshold"], [910, "open", "half_open", "cooldown_elapsed"],
     [911, "half_open", "open", "probe_failed"], [1000, "half_open", "closed", "success"],
     [3000, "closed", "open", "retry_after"]].each do |offset, from, to, reason|
      LlmFailover::ActiveRecord::CircuitTransition.create!(provider: "openai", model: "gpt-4o", from_state: from,
                                                           to_state: to, reason: reason, occurred_at: t0 + offset)
    end
    svg = chart("Failure rate over time per provider and model")
    bands = svg.css("rect.band.circuit").map do |r|
      [Time.iso8601(r["data-from"]), Time.iso8601(r["data-to"]), r.at_css("title").text]
    end
    expect(bands.map { |b| b.first(2) }).to eq([[t0 + 850, t0 + 1000], [t0 + 3000, report.timeline.ends_at]])
    expect(bands.map(&:last)).to match([include("closed", "1 failed probes, 2 calls routed around"),
                                        include("still open", "0 calls routed around")])
    expect(table(:circuit_windows)).to eq(text_table(report.to_s, LlmFailover::Report::Tables::TITLES[:circuit_windows]))
    expect(table(:circuit_windows).size).to eq(2)
  end

  it "draws the failovers that saved a call, the error classes and the cache hits as bars of their counts" do
    expect(bars(chart("Failovers that saved a call")))
      .to eq(report.save_paths.map { |from, to, n| ["#{from} → #{to}", n] })
    expect(bars(chart("Failovers that saved a call")).map(&:last)).to eq([3, 1]) # A, H and I; B

    errors = chart("Failed attempts by error class")
    expect(bars(errors)).to eq([["OverloadedError", 1], ["RateLimitError", 1], ["ServerError", 1],
                                ["StreamInterruptedError", 1], ["UnauthorizedError", 1]])
    expect(bars(errors)).to eq(report.error_classes.map { |e| [e.error_class, e.attempts] })

    expect(bars(chart("Response cache hits per provider and model"))).to eq([["openai/gpt-4o", 3]])
  end

  it "draws the tokens of failed attempts apart, bar lengths to scale" do
    svg = chart("Tokens per provider and model, failed attempts apart")
    segments = svg.css("g.bar").to_h do |g|
      [g["data-label"], g.css("rect").to_h { |r| [r["data-series"], r["data-value"].to_i] }]
    end
    expect(segments).to eq("anthropic/claude-sonnet-4-6" => { "succeeded" => 150, "failed" => 0 },
                           "openai/gpt-4o" => { "succeeded" => 45, "failed" => 37 },
                           "openai/gpt-4o-mini" => { "succeeded" => 10, "failed" => 0 })
    lengths = svg.css("g.bar rect").map { |r| [r["data-value"].to_i, r["width"].to_f] }
    longest = lengths.max_by(&:first)
    lengths.each { |value, width| expect(width).to be_within(0.1).of(longest[1] * value / longest[0]) }
  end

  it "shows the text report's numbers in its tables" do
    text = report.to_s
    LlmFailover::Report::Text::SECTIONS.each do |name|
      rows = table(name)
      rows = [] if rows == [["(none)"]]
      expect(rows).to eq(text_table(text, LlmFailover::Report::Tables::TITLES.fetch(name))), name.to_s
    end
    expect(table(:summary)).to eq([text.lines[4].split])
    expect(table(:failure_rates).first).to eq(%w[openai gpt-4o 6 4 66.7% 3 RateLimitError])
  end

  it "escapes what the database holds" do
    evil = { feature: %(<script>alert("feature")</script>), model: %(<img src=x onerror=alert(1)>),
             error: %("><svg onload=alert(2)>&amp;) }
    LlmFailover::ActiveRecord::Attempt.create!(
      request_id: "req-X", attempt: 1, provider: "openai", model: evil[:model], feature: evil[:feature],
      success: false, error_class: evil[:error], http_status: 500, failover_eligible: true, latency_ms: 1,
      input_tokens: 3, output_tokens: 4, started_at: t0 + 1800
    )
    expect(page.errors).to be_empty
    expect(page.css("script, img")).to be_empty
    expect(page.css("svg").size).to eq(5) # no <svg> but the charts
    expect(page.css("*").flat_map { |e| e.attribute_nodes.map(&:name) }.grep(/\Aon/i)).to be_empty
    expect(table(:features).map(&:first)).to include(evil[:feature])
    expect(table(:error_classes).map(&:first)).to include(evil[:error])
    expect(page.css("g.series").map { |g| g["data-target"] }).to include("openai/#{evil[:model]}")
    expect(bars(chart("Failed attempts by error class")).map(&:first)).to include(evil[:error])
    expect(html).to include("&lt;script&gt;alert(&quot;feature&quot;)&lt;/script&gt;")
  end

  it "says there were no attempts when the period is empty" do
    empty = Nokogiri::HTML5(LlmFailover::Report.new(from: t0 + 86_400, to: t0 + (2 * 86_400)).to_html)
    expect(empty.errors).to be_empty
    expect(empty.at_css("main").text.strip).to eq("No attempts in this period: nothing to chart.")
    expect(empty.css("svg, table")).to be_empty
  end

  it "is written by `llm_failover report --html`" do
    clean_tables # the same calls, an hour ago
    insert_rows(Time.now - 3600)
    path = File.join(ArSpec::DIR, "report.html")
    database = if postgresql?
                 c = PostgresServer.config
                 "postgres://#{c[:username]}@#{c[:host]}:#{c[:port]}/#{c[:database]}"
               else
                 ArSpec::PATH
               end
    out = StringIO.new
    err = StringIO.new
    status = LlmFailover::Report::CLI.run(["--database", database, "--since", "1d", "--html", path], out: out, err: err)
    expect([status, err.string, out.string]).to eq([0, "", "llm_failover report: wrote #{path}\n"])
    written = Nokogiri::HTML5(File.read(path))
    expect(written.at_css("title").text).to start_with("llm_failover report: llm_failover_attempts, since ")
    expect(written.at_css("dd[data-key=attempts]").text).to eq("9")
    expect(written.css("svg").size).to eq(4) # the hour of ReportRows has no cache hit
  ensure
    FileUtils.rm_f(path)
  end
end
