# frozen_string_literal: true

require "spec_helper"
require "bigdecimal"
require "llm_failover/cli/attempts_table"

RSpec.describe LlmFailover::CLI::AttemptsTable do
  def record(attempt, provider:, success:, host: nil, cost: nil, **rest)
    LlmFailover::AttemptRecord.new(request_id: "0123456789abcdef", attempt: attempt, provider: provider,
                                   host: host, model: "m", success: success, latency_ms: 12.4, cost: cost, **rest)
  end

  let(:records) do
    [record(1, provider: :gpt, host: :azure_east, success: false, error_class: "LlmFailover::RateLimitError",
               http_status: 429, cost: BigDecimal("0")),
     record(2, provider: :claude, success: true, cost: BigDecimal("0.00043"))]
  end

  it "prints the call's attempts under the default headers" do
    expect(described_class.new(records).lines.map(&:split))
      .to eq([%w[request_id attempt provider model success error latency ms],
              %w[01234567 1 gpt m no RateLimitError 429 12], %w[01234567 2 claude m yes 12]])
  end

  it "adds each attempt's protocol by the host that served it, and its cost ('-' where unpriced)" do
    records << record(3, provider: :claude, success: true)
    table = described_class.new(records, protocols: { azure_east: :azure, claude: :bedrock }, costs: true)
    expect(table.lines.map { |l| l.split(/\s{2,}/) })
      .to eq([["request_id", "attempt", "provider", "model", "protocol", "success", "error", "latency ms", "cost"],
              ["01234567", "1", "gpt", "m", "azure", "no", "RateLimitError 429", "12", "$0.000000"],
              ["01234567", "2", "claude", "m", "bedrock", "yes", "12", "$0.000430"],
              ["01234567", "3", "claude", "m", "bedrock", "yes", "12", "-"]])
  end

  it "colors success and error wherever the optional columns put them" do
    lines = described_class.new(records, color: true, protocols: { azure_east: :azure, claude: :bedrock },
                                         costs: true).lines
    expect(lines[1]).to include("\e[31mno", "\e[31mRateLimitError 429")
    expect(lines[1]).not_to include("\e[31mazure", "\e[31m$")
    expect(lines[2]).to include("\e[32myes")
  end
end
