# frozen_string_literal: true

require_relative "../../active_record/ar_spec_helper"
require "support/redis_server"
require "llm_failover/report"

# Circuit changes persisted by CircuitLog, and the report's open -> closed windows read
# from them: real calls against FakeProviders, a real database (SQLite file and
# PostgreSQL), a real redis-server for the fleet.
ArSpec.describe LlmFailover::ActiveRecord::CircuitLog do
  include_context "with fake providers"

  let(:transitions) do
    LlmFailover::ActiveRecord::CircuitTransition.order(:occurred_at, :id)
                                                .pluck(:provider, :model, :from_state, :to_state, :reason)
  end

  before do
    LlmFailover.configure do |c|
      c.circuit_threshold = 2
      c.circuit_cooldown = 0.3
      c.max_retries = 0
      c.usage_log = LlmFailover::ActiveRecord::AttemptLog.new
      c.circuit_log = described_class.new
    end
    backup.default = { text: "backup" }
  end

  it "writes each change of a circuit, and the report shows the incident from open to closed", :timing do
    started = Time.now
    primary.default = { error: :unavailable }
    chat = failover_chat
    4.times { chat.ask("down") } # two failures open it, two calls skip it
    sleep 0.35
    chat.ask("probe fails")
    sleep 0.35
    primary.default = { text: "primary is back" }
    expect(chat.ask("probe succeeds").provider).to eq(:openai)

    expect(transitions).to eq([%w[openai gpt-4o closed open threshold],
                               %w[openai gpt-4o open half_open cooldown_elapsed],
                               %w[openai gpt-4o half_open open probe_failed],
                               %w[openai gpt-4o open half_open cooldown_elapsed],
                               %w[openai gpt-4o half_open closed success]])
    row = LlmFailover::ActiveRecord::CircuitTransition.first
    expect(row.error_class).to eq("LlmFailover::ServiceUnavailableError")

    report = LlmFailover::Report.new(from: started - 1)
    windows = report.circuit_windows
    expect(windows.size).to eq(1)
    w = windows.first
    expect(w.to_h).to include(provider: "openai", model: "gpt-4o", reason: "threshold", reopens: 1, routed_around: 2,
                              error_class: "LlmFailover::ServiceUnavailableError")
    expect(w.closed_at).to be > w.opened_at
    expect(w.duration).to be_positive
    expect(report.to_s).to match(/Circuit incidents \(open -> closed.*\n.*\n-+.*\nopenai\s+gpt-4o\s+\S+ \S+\s+\S+ \S+\s+[\d.]+\s+threshold\s+1\s+2/)
  end

  it "keeps an incident that was open when the period began, and one still open at its end" do
    t0 = Time.utc(2026, 3, 1, 12, 0, 0)
    rows = [[-600, "closed", "open", "threshold"], [-300, "half_open", "closed", "success"], # before the period
            [-100, "closed", "open", "retry_after"], [50, "open", "half_open", "cooldown_elapsed"],
            [51, "half_open", "closed", "success"], [200, "closed", "open", "threshold"]]
    rows.each do |offset, from, to, reason|
      LlmFailover::ActiveRecord::CircuitTransition.create!(provider: "openai", model: "gpt-4o", from_state: from,
                                                           to_state: to, reason: reason, occurred_at: t0 + offset)
    end
    windows = LlmFailover::Report.new(from: t0, to: t0 + 3600).circuit_windows
    expect(windows.map { |w| [w.opened_at, w.closed_at, w.reason] })
      .to eq([[t0 - 100, t0 + 51, "retry_after"], [t0 + 200, nil, "threshold"]])
    expect(windows.last.duration).to be_nil
    expect(LlmFailover::Report.new(from: t0 + 60, to: t0 + 100).circuit_windows).to eq([])
  end

  it "is written once per change by a fleet sharing a RedisStateStore" do
    skip "redis-server is not installed (bin/setup installs it)" unless RedisServer.available?
    redis = RedisServer.new.start
    namespace = "circuit_log#{rand(1 << 30)}"
    primary.default = { error: :unavailable }
    pids = Array.new(4) do
      fork do
        LlmFailover.configure do |c|
          c.circuit_cooldown = 60
          c.state_store = LlmFailover::RedisStateStore.new(url: redis.url, namespace: namespace, budget: 1.0) # not 50 ms: a loaded CI
        end
        3.times { failover_chat.ask("down") }
        exit!(0)
      rescue StandardError
        exit!(1)
      end
    end
    expect(pids.map { |pid| Process.wait2(pid).last.exitstatus }).to eq([0, 0, 0, 0])
    expect(transitions).to eq([%w[openai gpt-4o closed open threshold]])
  ensure
    redis&.destroy
  end

  it "says so in the report when the table is missing (an app that migrated before it)" do
    missing = Class.new(LlmFailover::ActiveRecord::CircuitTransition) { self.table_name = "no_circuit_events" }
    report = LlmFailover::Report.new(circuit_events: missing)
    expect(report.circuit_windows).to eq([])
    expect(report.to_s).to include("(no no_circuit_events table: run `rails g llm_failover:install` again and migrate)")
  end
end
