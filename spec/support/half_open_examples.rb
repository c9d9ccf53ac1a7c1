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

# Every success resets the count and closes the circuit, whenever its call began
# (issue 23, item 11), and a call takes a backup's probe only when it sends to it.
RSpec.shared_examples "a breaker that every success resets" do
  def circuit_of(model)
    LlmFailover.health.find { |t| t[:model] == model }
  end

  it "resets the count on a success whose slow stream began before other calls' cuts" do
    LlmFailover.configure do |c|
      c.circuit_threshold = 3
      c.circuit_cooldown = 60
    end
    backup.default = { text: "backup" }
    # the slow stream's words come a while apart: the cuts below begin and end meanwhile
    primary.enqueue({ text: "a slow answer in six words", chunk_delay: SpecTime.scaled(0.5) })
    primary.default = { text: "cut short here", cut_after: 1 }
    slow = Thread.new { failover_chat.ask("slow") { |_chunk| nil } }
    wait_for { primary.request_count == 1 }
    2.times { expect(failover_chat.ask("cut") { |_chunk| nil }.provider).to eq(:anthropic) }
    expect(slow).to be_alive # the premise: the cuts ended while the slow stream went on
    expect(circuit_of("gpt-4o")).to include(state: :closed, failures: 2)
    expect(slow.value).to have_attributes(provider: :openai, content: "a slow answer in six words")
    expect(circuit_of("gpt-4o")).to include(state: :closed, failures: 0)
    2.times { failover_chat.ask("cut") { |_chunk| nil } }
    expect(circuit_of("gpt-4o")).to include(state: :closed, failures: 2) # not 4: no open circuit on a healthy primary
    primary.default = { text: "fine" }
    expect(failover_chat.ask("healthy").attempts.size).to eq(1)
  ensure
    slow&.join
  end

  it "closes a circuit that opened meanwhile on a late success whose call knew of no failure" do
    LlmFailover.configure do |c|
      c.circuit_threshold = 2
      c.circuit_cooldown = 60
    end
    backup.default = { text: "backup" }
    primary.enqueue({ text: "late but whole", delay_headers: SpecTime.scaled(1.5) })
    primary.default = { error: :unavailable }
    late = Thread.new { failover_chat.ask("slow") }
    wait_for { primary.request_count == 1 }
    2.times { expect(failover_chat.ask("fails over").provider).to eq(:anthropic) }
    expect(circuit_of("gpt-4o")).to include(state: :open)
    expect(late).to be_alive # the premise: it began before any failure and is still under way
    expect(late.value.provider).to eq(:openai)
    expect(circuit_of("gpt-4o")).to include(state: :closed, failures: 0)
  ensure
    late&.join
  end

  it "takes a recovering backup's probe only when the call sends to it" do
    LlmFailover.configure do |c|
      c.circuit_threshold = 1
      c.circuit_cooldown = 0.3
      c.request_timeout = 10
    end
    reversed = -> { LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic, backup_model: "gpt-4o", backup_provider: :openai) }
    backup.enqueue({ error: :unavailable }) # opens claude's circuit
    backup.default = { text: "claude is back" }
    primary.enqueue({ text: "gpt-4o answers it" }, { text: "slow gpt-4o", delay_headers: SpecTime.scaled(1.5) })
    primary.default = { text: "gpt-4o" }
    expect(reversed.call.ask("opens claude's circuit").provider).to eq(:openai)
    sleep 0.35 # claude's circuit is half-open: its probe is free

    slow = Thread.new { failover_chat.ask("its primary answers, slowly") }
    wait_for { primary.request_count == 2 }
    probe = reversed.call.ask("probes claude")
    expect(probe.provider).to eq(:anthropic)
    expect(probe.attempts.map(&:skipped?)).to eq([false])
    expect(slow).to be_alive # the premise: the slow call was under way
    expect(slow.value.provider).to eq(:openai)
    expect(circuit_of("claude-sonnet-4-6")).to include(state: :closed, failures: 0)
  ensure
    slow&.join
  end
end
