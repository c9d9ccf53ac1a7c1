# frozen_string_literal: true

require "spec_helper"

# Call::Records: the attempt records of one call, fed the engine's Engine::Attempt
# values as the attempt loop makes them.
RSpec.describe LlmFailover::Call::Records do
  let(:emitted) { [] }

  before do
    LlmFailover.configure do |c|
      c.provider :openai, api: :openai, api_key: "sk-test", base_url: "http://127.0.0.1:9/v1"
      c.provider :anthropic, api: :anthropic, api_key: "sk-ant-test", base_url: "http://127.0.0.1:9/v1"
      c.usage_log = ->(record) { emitted << record }
    end
  end

  let(:config) { LlmFailover.configuration }
  let(:primary) { config.providers.fetch(:openai).target("gpt-4o") }
  let(:backup) { config.providers.fetch(:anthropic).target("claude-sonnet-4-6") }
  let(:records) do
    described_class.new(request_id: "req-1", feature: "support", usage_log: config.usage_log_emitter,
                        turn_id: "turn-1", pricing: config.pricing)
  end

  # An Engine::Attempt as the engine makes one: a plain answered request unless told.
  def attempt(number, target, **fields)
    defaults = { attempt: number, target: target.engine, success: true, failover_eligible: false, latency_ms: 12.0,
                 input_tokens: 1000, output_tokens: 1000, started_at: Time.now, skipped: false, reached: true,
                 hedge: false, lost: false, cancelled: false, stopped: false }
    LlmFailover::Engine::Attempt.new(*LlmFailover::Engine::Attempt.members.map { |m| fields.fetch(m, defaults[m]) })
  end

  def failed(number, target, error_class: LlmFailover::ServiceUnavailableError, **fields)
    attempt(number, target, success: false, error_class: error_class, http_status: 503, failover_eligible: true,
                            input_tokens: nil, output_tokens: nil, **fields)
  end

  it "records each attempt in order, hands each to the usage log, and prices it" do
    records.engine_attempt(failed(1, primary), primary)
    records.engine_attempt(attempt(2, backup), backup)

    list = records.to_a
    expect(list).to be_frozen
    expect(list.map { |r| [r.attempt, r.provider, r.model, r.success?, r.feature, r.turn_id] })
      .to eq([[1, :openai, "gpt-4o", false, "support", "turn-1"],
              [2, :anthropic, "claude-sonnet-4-6", true, "support", "turn-1"]])
    expect(emitted).to eq(list)
    expect(list.last.cost).to eq(config.pricing.cost(backup, input_tokens: 1000, output_tokens: 1000))
    expect(list.last.cost).to be_positive
  end

  it "answers #to_a with every record so far, however often it was asked before" do
    records.engine_attempt(failed(1, primary), primary)
    first = records.to_a
    records.engine_attempt(attempt(2, backup), backup)

    expect(first.map(&:attempt)).to eq([1])
    expect(records.to_a.map(&:attempt)).to eq([1, 2])
    expect(records.to_a).to equal(records.to_a)
  end

  it "keeps the failures by target, and numbers on from an earlier turn's attempts" do
    records.attempt_offset = 2
    records.engine_attempt(failed(1, primary), primary)

    expect(records.to_a.map(&:attempt)).to eq([3])
    expect(records.failures.map { |a, t| [a.error_class, t] }).to eq([[LlmFailover::ServiceUnavailableError, primary]])
  end

  it "records a target skipped past its open circuit as CircuitOpenError, with no latency" do
    records.engine_attempt(failed(1, primary, error_class: LlmFailover::ServiceUnavailableError, skipped: true,
                                              reached: false), primary)

    record = records.to_a.first
    expect([record.error_class, record.latency_ms, record.skipped]).to eq(["LlmFailover::CircuitOpenError", 0.0, true])
  end

  it "tells a chain exhausted only when every target tried ended on an error a backup could fix" do
    records.engine_attempt(failed(1, primary), primary)
    records.engine_attempt(failed(2, backup), backup)
    expect(records.chain_exhausted?).to be(true)

    fixable_then_not = described_class.new(request_id: "r", feature: nil, usage_log: config.usage_log_emitter)
    fixable_then_not.engine_attempt(failed(1, primary), primary)
    fixable_then_not.engine_attempt(failed(2, backup, error_class: LlmFailover::BadRequestError,
                                                      failover_eligible: false), backup)
    expect(fixable_then_not.chain_exhausted?).to be(false)
  end

  it "never calls a chain exhausted when no target could take the attachments" do
    refused = failed(1, primary, error_class: LlmFailover::AttachmentRefusedError, skipped: true, reached: false)
    records.engine_attempt(refused, primary)

    expect(records.to_a.first.error_class).to eq("LlmFailover::AttachmentRefusedError")
    expect(records.chain_exhausted?).to be(false)
  end

  it "finds the last failure of a target tried before the final one" do
    records.engine_attempt(failed(1, primary), primary)
    records.engine_attempt(failed(2, primary, http_status: 500), primary)
    records.engine_attempt(attempt(3, backup), backup)

    earlier, target = records.earlier_failure(backup, [primary, backup])
    expect([earlier.attempt, earlier.http_status, target]).to eq([2, 500, primary])
    expect(records.earlier_failure(primary, [primary, backup])).to be_nil
  end

  it "sums what the requests that may have reached a target used, not skips" do
    records.engine_attempt(attempt(1, primary, input_tokens: 10, output_tokens: 5), primary)
    records.engine_attempt(failed(2, backup, skipped: true, reached: false), backup)

    sent, tokens, cost = records.sent_to(primary)
    expect([sent, tokens]).to eq([true, 15])
    expect(cost).to eq(config.pricing.cost(primary, input_tokens: 10, output_tokens: 5))
    expect(records.sent_to(backup)).to eq([false, 0, LlmFailover::Pricing::ZERO])
  end

  it "records a hedge's loser as cancelled and hedged, never as its target's failure" do
    records.engine_attempt(attempt(1, primary, success: false, lost: true, hedge: true), primary)

    record = records.to_a.first
    expect([record.cancelled, record.hedged, record.error_class]).to eq([true, true, nil])
    expect(records.failures).to be_empty
  end

  it "holds back Chat#cancel!'s records until #cancelled emits them" do
    records.engine_attempt(attempt(1, primary, success: false, cancelled: true), primary)
    expect(records.size).to eq(1)
    expect(emitted).to be_empty

    records.cancelled
    expect(emitted.map(&:cancelled)).to eq([true])
  end

  it "records an attempt an exception cut as AbortedError naming the exception" do
    records.engine_attempt(attempt(1, primary, success: false, stopped: true, stopped_by: Timeout::Error), primary)

    record = records.to_a.first
    expect(record.error_class).to eq("LlmFailover::AbortedError")
    expect(record.error_message).to include("Timeout::Error")
  end

  it "records a cache hit as one free, successful attempt" do
    records.scrubbed = { "email" => 1 }
    records.cache_hit(provider: :openai, model: "gpt-4o", latency_ms: 0.5, started_at: Time.now,
                      provider_request_id: "chatcmpl-1", cost_saved: BigDecimal("0.01"))

    record = records.to_a.first
    expect([record.cached, record.success?, record.cost, record.input_tokens, record.scrubbed])
      .to eq([true, true, LlmFailover::Pricing::ZERO, 0, { "email" => 1 }])
  end

  it "records a cancel that came before the call started" do
    records.cancelled_before_start(primary, latency_ms: 0.1)

    record = records.to_a.first
    expect([record.cancelled, record.success?, record.provider]).to eq([true, false, :openai])
    expect(records).not_to be_empty
  end
end
