# frozen_string_literal: true

require "support/engine_helpers"

# The half-open probe against real FakeProviders, with whichever state store the
# including spec configured (MemoryStateStore in circuit_breaker_spec.rb, a
# RedisStateStore in fleet_spec.rb). Needs the "with fake providers" context.
RSpec.shared_examples "a half-open probe that a late failure leaves alone" do
  it "keeps the probe the only request to a half-open target when a call sent before it opened fails late" do
    LlmFailover.configure do |c|
      c.circuit_threshold = 1
      c.circuit_cooldown = 0.3
      c.request_timeout = 10
    end
    backup.default = { text: "backup" }
    primary.enqueue({ error: :unavailable, delay_headers: 1.5 }, # the late call's, sent while closed
                    { error: :unavailable },                     # opens the circuit
                    { text: "back", delay_headers: 3 })          # the probe's
    primary.default = { text: "a second probe" }

    late = Thread.new { failover_chat.ask("sent while closed") }
    wait_for { primary.request_count == 1 }
    failover_chat.ask("opens it")
    sleep 0.35 # half-open
    probe = Thread.new { failover_chat.ask("probe") }
    wait_for { primary.request_count == 3 }
    expect(late.value.provider).to eq(:anthropic) # its 503 landed while the probe was out
    sleep 0.35 # a cooldown: had that failure reopened the circuit, the next call would probe now
    expect(failover_chat.ask("while the probe is out").attempts.map(&:skipped?)).to eq([true, false])
    expect(probe.value.provider).to eq(:openai)
    expect(primary.request_count).to eq(3)
    expect(LlmFailover.health.find { |t| t[:model] == "gpt-4o" }).to include(state: :closed)
  ensure
    [late, probe].compact.each(&:join)
  end
end
