# frozen_string_literal: true

require_relative "ar_spec_helper"
require "llm_failover/report"

# A pool's hosts in the attempt log and the report: real calls through a pool of two
# FakeProvider lanes, written by the AttemptLog, read back per host. At the prices set
# here (USD per million tokens: east 2.50 in / 10.00 out, west 3.00 / 15.00) every
# figure is worked out by hand from the scripted usage (the 500s bill nothing).
ArSpec.describe "The report per host" do
  let(:fp) { start_fake_provider }

  before do
    LlmFailover::ActiveRecord::Attempt.delete_all
    LlmFailover.configure do |c|
      c.provider :east, api: :openai, api_key: "sk-east-0123456789", base_url: fp.on(:east).base_url(:openai)
      c.provider :west, api: :openai, api_key: "sk-west-0123456789", base_url: fp.on(:west).base_url(:openai)
      c.pool :gpt, hosts: [{ provider: :east }, { provider: :west }]
      c.price :east, "gpt-4o", input: 2.50, output: 10.00
      c.price :west, "gpt-4o", input: 3.00, output: 15.00
      c.usage_log = LlmFailover::ActiveRecord::AttemptLog.new
      fast_policy(c)
    end
    # West answers once and says it has nothing left for a minute, so that each call
    # goes to east first; east fails the first two with a 500, which sends them to west,
    # their last hope (the pool has no backup): west answers them (1,000 in, 100 out:
    # $0.0045 each), east the third (the same tokens: $0.0035).
    fp.on(:west).rate_limit(requests: 1, per: 60)
    20.times do
      break if fp.on(:west).request_count.positive?

      LlmFailover.chat(model: "gpt-4o", provider: :gpt).ask("warm up")
    end
    LlmFailover::ActiveRecord::Attempt.delete_all
    fp.on(:west).rate_limit(off: true)
    fp.on(:east).enqueue({ error: :server }, { error: :server }, { text: "east", usage: { input: 1_000, output: 100 } })
    fp.on(:west).default = { text: "west", usage: { input: 1_000, output: 100 } }
  end

  it "keeps each attempt's host in the log, and reports traffic, failures and spend per host" do
    replies = Array.new(3) { LlmFailover.chat(model: "gpt-4o", provider: :gpt).ask("hello") }
    expect(replies.map(&:host)).to eq(%i[west west east])
    rows = LlmFailover::ActiveRecord::Attempt.order(:id).pluck(:provider, :host, :success)
    expect(rows).to eq([["gpt", "east", false], ["gpt", "west", true], ["gpt", "east", false], ["gpt", "west", true],
                        ["gpt", "east", true]])

    report = LlmFailover::Report.new(from: Time.now - 60)
    expect(report.pooled?).to be(true)
    expect(report.hosts.map { |h| [h.provider, h.host, h.attempts, h.failures, h.cost, h.failed] })
      .to eq([["gpt", "east", 3, 2, BigDecimal("0.0035"), BigDecimal("0")],
              ["gpt", "west", 2, 0, BigDecimal("0.009"), BigDecimal("0")]])
    text = report.to_s
    expect(text).to include("Traffic, failures and spend per host")
    expect(text).to match(/gpt\s+east\s+gpt-4o\s+3\s+60\.0%\s+2\s+66\.7%/)
    expect(report.to_html).to include('data-table="hosts"')
  end
end

# A pool as the primary of a failover: the premium is reckoned at the pool's price, its
# dearest host's (Pricing), as a call to it can cost at most that.
ArSpec.describe "The failover premium of a pool" do
  let(:fp) { start_fake_provider }

  before do
    LlmFailover::ActiveRecord::Attempt.delete_all
    LlmFailover.configure do |c|
      c.provider :east, api: :openai, api_key: "sk-east-0123456789", base_url: fp.on(:east).base_url(:openai)
      c.provider :west, api: :openai, api_key: "sk-west-0123456789", base_url: fp.on(:west).base_url(:openai)
      c.provider :backup, api: :anthropic, api_key: "sk-ant-backup-0123", base_url: fp.on(:backup).base_url(:anthropic)
      c.pool :gpt, hosts: [{ provider: :east }, { provider: :west }]
      c.price :east, "gpt-4o", input: 2.50, output: 10.00
      c.price :west, "gpt-4o", input: 3.00, output: 15.00
      c.price :backup, "claude-x", input: 1.00, output: 5.00
      c.max_retries = 1 # each host once
      c.usage_log = LlmFailover::ActiveRecord::AttemptLog.new
      fast_policy(c)
    end
    fp.on(:east).default = { error: :server }
    fp.on(:west).default = { error: :server }
    fp.on(:backup).default = { text: "backup", usage: { input: 1_000, output: 100 } }
  end

  it "prices what the backup's answer would have cost at the pool's dearest host" do
    reply = LlmFailover.chat(model: "gpt-4o", provider: :gpt, backup_model: "claude-x", backup_provider: :backup)
                       .ask("hello")
    expect([reply.host, reply.failover?]).to eq([:backup, true])
    premium = LlmFailover::Report.new(from: Time.now - 60).failover_premium.map(&:to_h)
    # The backup's 1,000 in and 100 out: $0.0015; at west's price $0.0045.
    expect(premium).to eq([{ from: "gpt/gpt-4o", to: "backup/claude-x", calls: 1, cost: BigDecimal("0.0015"),
                             at_primary_price: BigDecimal("0.0045"), unknown: 0 }])
  end
end
