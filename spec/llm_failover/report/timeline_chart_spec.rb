# frozen_string_literal: true

require "spec_helper"
require "nokogiri"
require "llm_failover/report"

# The HTML report's charts drawn from plain structs, as the query layer returns them.
RSpec.describe LlmFailover::Report::TimelineChart, :ruby_only do
  let(:t0) { Time.utc(2025, 3, 10, 12, 0, 0) }

  def svg_of(rates, model: ->(_) { "gpt-4o" })
    points = rates.each_with_index.map do |(failures, attempts), i|
      LlmFailover::Report::TimelinePoint.new(starts_at: t0 + (i * 60), provider: "openai", model: model.call(i),
                                             attempts: attempts, failures: failures)
    end
    timeline = LlmFailover::Report::Timeline.new(starts_at: t0, ends_at: t0 + (rates.size * 60), step: 60,
                                                 points: points)
    markup = LlmFailover::Report::Markup.new
    described_class.new(id: "t", title: "Failure rate", description: "Made up.", timeline: timeline, bands: [])
                   .render(markup)
    Nokogiri::HTML5.fragment(markup.to_s).at_css("svg")
  end

  it "ends the rate axis at the first of 10%, 20%, 50% and 100% that holds the highest rate" do
    low = svg_of([[3, 50], [0, 40]]) # 6%
    expect(low.css("text.y").map(&:text)).to eq(%w[0% 2.5% 5% 7.5% 10%])
    expect(low.at_css("desc").text).to end_with("The rate axis ends at 10%.")
    top = described_class::TOP
    height = described_class::HEIGHT - described_class::TOP - described_class::BOTTOM
    expect(low.css("circle").map { |c| c["cy"].to_f }).to eq([(top + (0.4 * height)).round(1), top + height])

    expect(svg_of([[1, 4]]).css("text.y").map(&:text).last).to eq("50%")
    expect(svg_of([[1, 1]]).css("text.y").map(&:text).last).to eq("100%")
    expect(svg_of([[0, 5]]).css("text.y").map(&:text).last).to eq("10%")
  end

  it "gives each target a colour the stylesheet has, reusing them past eight" do
    svg = svg_of(Array.new(10) { [1, 2] }, model: ->(i) { "m#{i}" })
    colors = svg.css("g.series").map { |g| g["class"].split.last }
    expect(colors).to eq(%w[c0 c1 c2 c3 c4 c5 c6 c7 c0 c1])
    expect(colors.uniq).to all(satisfy { |c| LlmFailover::Report::Html::STYLESHEET.include?(".#{c} { --c: var(--#{c}); }") })
  end
end
