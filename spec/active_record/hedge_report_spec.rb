# frozen_string_literal: true

require_relative "ar_spec_helper"
require "llm_failover/report"

# Hedged calls as the attempts table keeps them and the report counts them: both
# attempts of a race are rows (hedged), the loser is cancelled, neither is a failure,
# and the report says how many calls hedged and what the losers cost.
ArSpec.describe "hedged requests in the attempts table and the report" do
  include_context "with fake providers"

  before do
    LlmFailover.configuration.usage_log = attempt_log
    LlmFailover.configuration.first_token_timeout = 30
  end

  it "logs both attempts and counts the hedge, its winner and its loser's tokens" do
    primary.enqueue({ text: "late", delay_first_token: 20 })               # cut: the backup starts first
    backup.enqueue({ text: "on time", usage: { input: 9, output: 3 } })
    primary.enqueue({ text: "first", delay_first_token: 1 })               # answers first
    backup.enqueue({ text: "later", delay_first_token: 20, usage: { input: 6, output: 1 } })
    primary.enqueue({ text: "prompt" })                                    # no hedge
    chat = -> { failover_chat(hedge_after: 0.2) }
    3.times { chat.call.ask("Hi") { |_c| } }

    rows = LlmFailover::ActiveRecord::Attempt.order(:started_at, :attempt).to_a
    expect(rows.map { |r| [r.attempt, r.provider, r.success, r.cancelled, r.hedged] })
      .to contain_exactly([1, "openai", false, true, true], [2, "anthropic", true, false, true],
                          [1, "openai", true, false, true], [2, "anthropic", false, true, true],
                          [1, "openai", true, false, false])
    expect(rows.select(&:cancelled).map(&:error_class)).to all(be_nil)

    report = LlmFailover::Report.new
    expect(report.summary).to include(requests: 3, failures: 0, saves: 0, lost: 0)
    expect(report.hedged_calls).to eq(2)
    expect(report.hedges.map(&:to_h)).to contain_exactly(
      { provider: "openai", model: "gpt-4o", attempts: 2, answered: 1, cut: 1, cut_input: 0, cut_output: 0 },
      # Anthropic names its input tokens before its first text: the loser's 6 reached the gem.
      { provider: "anthropic", model: "claude-sonnet-4-6", attempts: 2, answered: 1, cut: 1, cut_input: 6,
        cut_output: 1 }
    )
    expect(report.to_s).to include("Hedged requests")
    expect(report.to_html).to include("2 calls sent their backup")
  end
end
