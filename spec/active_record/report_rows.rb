# frozen_string_literal: true

# The attempts the report specs count, text and HTML alike.
module ReportRows
  GPT = %w[openai gpt-4o].freeze
  MINI = %w[openai gpt-4o-mini].freeze
  CLAUDE = %w[anthropic claude-sonnet-4-6].freeze

  # A known hour of traffic, starting at +t0+ (seconds are offsets from it):
  #   A tailoring: 429 on gpt-4o, then claude answers       (a save on another provider)
  #   B tailoring: 500 on gpt-4o, then gpt-4o answers       (a save by retrying)
  #   C summary:   gpt-4o answers
  #   D summary:   cut stream on gpt-4o (billed 30/7), claude overloaded   (lost)
  #   E (none):    401 on gpt-4o                           (lost, no failover)
  #   F summary:   gpt-4o-mini answers
  #   G tailoring: a failure ten days earlier
  def insert_rows(t0)
    rows = [
      ["A", 1, GPT, "tailoring", 10, false, "LlmFailover::RateLimitError", 429, true, nil, nil],
      ["A", 2, CLAUDE, "tailoring", 20, true, nil, 200, false, 100, 50],
      ["B", 1, GPT, "tailoring", 60, false, "LlmFailover::ServerError", 500, true, nil, nil],
      ["B", 2, GPT, "tailoring", 65, true, nil, 200, false, 10, 5],
      ["C", 1, GPT, "summary", 120, true, nil, 200, false, 20, 10],
      ["D", 1, GPT, "summary", 360, false, "LlmFailover::StreamInterruptedError", 200, true, 30, 7],
      ["D", 2, CLAUDE, "summary", 390, false, "LlmFailover::OverloadedError", 529, true, nil, nil],
      ["E", 1, GPT, nil, 420, false, "LlmFailover::UnauthorizedError", 401, false, nil, nil],
      ["F", 1, MINI, "summary", 720, true, nil, 200, false, 5, 5],
      ["G", 1, GPT, "tailoring", -10 * 86_400, false, "LlmFailover::ServerError", 500, true, nil, nil]
    ]
    rows.each do |id, attempt, (provider, model), feature, offset, success, error, status, eligible, input, output|
      LlmFailover::ActiveRecord::Attempt.create!(
        request_id: "req-#{id}", attempt: attempt, provider: provider, model: model, feature: feature,
        success: success, error_class: error, error_message: error && "failed", http_status: status,
        failover_eligible: eligible, latency_ms: 12.5, input_tokens: input, output_tokens: output,
        started_at: t0 + offset
      )
    end
  end

  # H and I at 15 and 16 minutes: gpt-4o's circuit is open, claude answers.
  def insert_skipped_rows(t0)
    [["H", t0 + 900], ["I", t0 + 960]].each do |id, at|
      LlmFailover::ActiveRecord::Attempt.create!(
        request_id: "req-#{id}", attempt: 1, provider: "openai", model: "gpt-4o", feature: "summary", success: false,
        error_class: "LlmFailover::CircuitOpenError", error_message: "circuit open: no request sent",
        failover_eligible: true, latency_ms: 0, started_at: at
      )
      LlmFailover::ActiveRecord::Attempt.create!(
        request_id: "req-#{id}", attempt: 2, provider: "anthropic", model: "claude-sonnet-4-6", feature: "summary",
        success: true, http_status: 200, latency_ms: 12.5, started_at: at
      )
    end
  end

  # Three calls gpt-4o's cached answers served, at 15 minutes.
  def insert_cache_hits(t0)
    %w[H1 H2 H3].each_with_index do |id, i|
      LlmFailover::ActiveRecord::Attempt.create!(
        request_id: "req-#{id}", attempt: 1, provider: "openai", model: "gpt-4o", feature: "summary",
        success: true, latency_ms: 0.1, input_tokens: 0, output_tokens: 0, started_at: t0 + 900 + i, cached: true
      )
    end
  end
end
