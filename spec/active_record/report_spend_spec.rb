# frozen_string_literal: true

require_relative "ar_spec_helper"
require "llm_failover/report"

# The report in money: real calls through the FakeProviders, their attempts written by
# the AttemptLog, read back by the Report. Every figure is worked out by hand from the
# scripted usage at the default table's prices (USD per million tokens):
#   claude-haiku-4-5 1.00 in / 5.00 out; gpt-4o 2.50 in / 10.00 out.
ArSpec.describe "The report in money" do
  include_context "with fake providers"

  before do
    LlmFailover::ActiveRecord::Attempt.delete_all
    LlmFailover.configure do |c|
      c.max_retries = 0
      c.logger = Logger.new(StringIO.new)
      c.usage_log = LlmFailover::ActiveRecord::AttemptLog.new
      c.cache = LlmFailover::MemoryCache.new
      c.provider :anthropic, api: :anthropic, api_key: "sk-ant", base_url: backup.base_url(:anthropic)
    end
    # A: claude's stream is cut after a chunk (billed its 2,000 input tokens and the 1
    #    output token it had named: 2,005 per million); gpt-4o answers, 100 in and 10 out
    #    (350 per million; at claude's price 150: a premium of 200 per million).
    backup.enqueue({ chunks: %w[a b c], cut_after: 1, usage: { input: 2_000, output: 3 } })
    primary.enqueue({ text: "answer", usage: { input: 100, output: 10 } })
    LlmFailover.chat(model: "claude-haiku-4-5", provider: :anthropic, backup_model: "gpt-4o", backup_provider: :openai,
                     feature: "tailoring").ask("first") { |_| }
    # B: gpt-4o answers, 1,000 in and 100 out (3,500 per million); C: the cache answers
    #    the same question again (saving 3,500); D: a model without a price.
    primary.enqueue({ text: "summary", usage: { input: 1_000, output: 100 } })
    2.times { LlmFailover.chat(model: "gpt-4o", provider: :openai, feature: "summary").ask("second") }
    primary.enqueue({ text: "house", usage: { input: 10, output: 10 } })
    LlmFailover.chat(model: "house-model", provider: :openai, feature: "summary").ask("third")
    # E: a day earlier, $0.01 on gpt-4o.
    LlmFailover::ActiveRecord::Attempt.create!(request_id: "req-E", attempt: 1, provider: "openai", model: "gpt-4o",
                                               feature: "summary", success: true, input_tokens: 1_000,
                                               output_tokens: 750, cost: BigDecimal("0.01"),
                                               started_at: Time.now - 86_400)
  end

  let(:report) { LlmFailover::Report.new(from: Time.now - (2 * 86_400)) }

  def usd(text)
    BigDecimal(text)
  end

  it "sums spend, spend on failed attempts, the failover premium and the cache's savings" do
    expect(report.spend_summary).to eq(cost: usd("0.015855"), failed: usd("0.002005"), premium: usd("0.0002"),
                                       cache_saved: usd("0.0035"), unpriced: 1)
  end

  it "gives spend by provider and model, feature and day" do
    expect(report.spend.map { |s| [s.provider, s.model, s.cost, s.failed, s.cache_saved, s.unpriced] })
      .to eq([["openai", "gpt-4o", usd("0.01385"), 0, usd("0.0035"), 0],
              ["anthropic", "claude-haiku-4-5", usd("0.002005"), usd("0.002005"), 0, 0],
              ["openai", "house-model", 0, 0, 0, 1]])
    expect(report.spend_by_feature.map { |f| [f.feature, f.cost, f.failed] })
      .to eq([["summary", usd("0.0135"), 0], ["tailoring", usd("0.002355"), usd("0.002005")]])
    days = report.spend_by_day
    expect(days.map(&:cost).sum).to eq(usd("0.015855"))
    expect(days.first.to_h).to include(provider: "openai", cost: usd("0.01"))
    expect(days.map(&:day).uniq.size).to eq(2)
    premium = report.failover_premium.map(&:to_h)
    expect(premium).to eq([{ from: "anthropic/claude-haiku-4-5", to: "openai/gpt-4o", calls: 1, cost: usd("0.00035"),
                             at_primary_price: usd("0.00015"), unknown: 0 }])
  end

  it "shows the money in the text report, and as a chart on the HTML page" do
    text = report.to_s
    expect(text).to include("Spend per provider and model", "Failover premium", "Spend per day (UTC)")
    expect(text).to match(/spent\s+spent_on_failed_attempts\s+failover_premium\s+cache_saved\s+unpriced_attempts\n.*\n\s*\$0\.015855\s+\$0\.002005\s+\$0\.000200\s+\$0\.003500\s+1/)
    html = report.to_html
    expect(html).to include('id="spend"', 'data-table="spend"', 'data-table="failover_premium"')
    expect(html).to match(/<svg class="chart bars"[^>]*aria-labelledby="spend-title spend-desc"/)
    expect(html).to include('data-value="$0.010000"')
  end
end
