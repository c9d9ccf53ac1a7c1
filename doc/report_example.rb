# frozen_string_literal: true

# Writes doc/report_example.html: the HTML report of a made-up day of traffic, so the
# README can show what the page looks like. The rows are invented (a seeded random
# day), written to a throwaway SQLite file through the gem's own models:
#
#   bundle exec ruby doc/report_example.rb
#   chromium --headless --window-size=1280,1060 --screenshot=doc/report_example.png doc/report_example.html
#
# - summary asks openai/gpt-4o, backed by anthropic/claude-sonnet-4-6; support_reply
#   the other way round; tailoring asks openai/gpt-4o-mini, backed by openai/gpt-4o.
# - Around the clock a few rate limits (a retry answers) and cut streams (billed, the
#   backup answers).
# - 10:20-10:54 gpt-4o answers 503: calls fail four times, then claude answers; at
#   10:24 its circuit opens, probes fail until 10:54, and meanwhile calls go straight
#   to claude (skipped records).
# - 16:00-16:20 claude is overloaded (529) on four calls in ten: twice, then gpt-4o.
# - 18:05 a wrong key (401): not failed over, lost.
# - One summary in ten is answered from the response cache.
# - Every attempt's cost at the gem's price table (Prices.default).
require "fileutils"
require "tmpdir"
require "active_record"
require "llm_failover/active_record"
require "llm_failover/report"

module ReportExample
  DAY = Time.utc(2026, 3, 2)
  GPT = %w[openai gpt-4o].freeze
  CLAUDE = %w[anthropic claude-sonnet-4-6].freeze
  MINI = %w[openai gpt-4o-mini].freeze
  ROUTES = { "summary" => [GPT, CLAUDE], "support_reply" => [CLAUDE, GPT], "tailoring" => [MINI, GPT] }.freeze
  OUTAGE = (DAY + (10 * 3600) + (20 * 60))...(DAY + (10 * 3600) + (54 * 60))
  CIRCUIT_OPEN = (DAY + (10 * 3600) + (24 * 60))...(DAY + (10 * 3600) + (54 * 60))
  OVERLOAD = (DAY + (16 * 3600))...(DAY + (16 * 3600) + (20 * 60))

  module_function

  def write(path)
    Dir.mktmpdir("llm_failover_report_example") do |dir|
      ActiveRecord::Base.establish_connection(adapter: "sqlite3", database: File.join(dir, "example.sqlite3"))
      ActiveRecord::Migration.verbose = false
      LlmFailover::ActiveRecord.create_tables!
      random = Random.new(2026)
      rows = call_times(random).each_with_index.flat_map { |at, i| call(random, "req-#{i}", at) }
      rows.each_slice(1000) { |slice| LlmFailover::ActiveRecord::Attempt.insert_all!(slice) }
      circuit_transitions.each { |row| LlmFailover::ActiveRecord::CircuitTransition.create!(row) }
      File.write(path, LlmFailover::Report.new(from: DAY, to: DAY + 86_400).to_html)
    ensure
      ActiveRecord::Base.remove_connection
    end
  end

  # About 2800 calls, busier in the working hours.
  def call_times(random)
    (0...(24 * 60)).flat_map do |minute|
      busy = (8...20).cover?(minute / 60) ? 3.5 : 0.6
      Array.new((busy + random.rand).floor) { DAY + (minute * 60) + random.rand(60) }
    end
  end

  # The attempt rows of one call at +at+.
  def call(random, request_id, at)
    feature = ROUTES.keys[random.rand(ROUTES.size)]
    plan(random, feature, at).each_with_index.map do |(target, outcome), i|
      attempt_row(random, request_id, i + 1, target, feature, at + i, outcome)
    end
  end

  # [target, outcome] per attempt: nil answered, :cached, or an error class.
  def plan(random, feature, at)
    primary, backup = ROUTES.fetch(feature)
    return [[primary, :cached]] if feature == "summary" && random.rand(10).zero?
    return [[primary, "UnauthorizedError"]] if at.hour == 18 && at.min == 5
    return [[primary, "CircuitOpenError"], [backup, nil]] if primary == GPT && CIRCUIT_OPEN.cover?(at)
    return [*[[primary, "ServiceUnavailableError"]] * 4, [backup, nil]] if primary == GPT && OUTAGE.cover?(at)
    if primary == CLAUDE && OVERLOAD.cover?(at) && random.rand(10) < 4
      return [[primary, "OverloadedError"], [primary, "OverloadedError"], [backup, nil]]
    end

    case random.rand(400)
    when 0, 1 then [[primary, "RateLimitError"], [primary, nil]]
    when 2 then [[primary, "StreamInterruptedError"], [backup, nil]]
    else [[primary, nil]]
    end
  end

  STATUS = { "UnauthorizedError" => 401, "ServiceUnavailableError" => 503, "OverloadedError" => 529,
             "RateLimitError" => 429, "StreamInterruptedError" => 200 }.freeze

  def attempt_row(random, request_id, attempt, (provider, model), feature, at, outcome)
    error = outcome.is_a?(String) ? outcome : nil
    success = error.nil?
    # A cut stream was billed for what it sent; an answer for the whole of it.
    input, output = if outcome == :cached then [0, 0]
                    elsif success then [300 + random.rand(900), 80 + random.rand(400)]
                    elsif error == "StreamInterruptedError" then [600, 120]
                    end
    price = LlmFailover::Prices.default[provider, model]
    { request_id: request_id, attempt: attempt, provider: provider, model: model, feature: feature, success: success,
      cached: outcome == :cached, error_class: error && "LlmFailover::#{error}", error_message: error && "example",
      http_status: success ? 200 : STATUS[error], failover_eligible: !success && error != "UnauthorizedError",
      latency_ms: success && outcome != :cached ? 900 : 0, input_tokens: input, output_tokens: output, started_at: at,
      # At the gem's table; a cache hit saved what a typical answer of its target costs.
      cost: price.cost(input_tokens: input, output_tokens: output),
      cost_saved: outcome == :cached ? price.cost(input_tokens: 750, output_tokens: 280) : nil }
  end

  # gpt-4o's circuit: opened by the outage, a failed probe every minute, closed at 10:54.
  def circuit_transitions
    opened = CIRCUIT_OPEN.begin
    probes = (1...((CIRCUIT_OPEN.end - opened) / 60).to_i).flat_map do |i|
      [["open", "half_open", "cooldown_elapsed", opened + (i * 60)],
       ["half_open", "open", "probe_failed", opened + (i * 60) + 1]]
    end
    [["closed", "open", "threshold", opened], *probes,
     ["open", "half_open", "cooldown_elapsed", CIRCUIT_OPEN.end], ["half_open", "closed", "success", CIRCUIT_OPEN.end + 1]]
      .map do |from, to, reason, at|
        { provider: GPT[0], model: GPT[1], from_state: from, to_state: to, reason: reason, occurred_at: at,
          error_class: reason == "success" ? nil : "LlmFailover::ServiceUnavailableError" }
      end
  end
end

ReportExample.write(File.join(__dir__, "report_example.html")) if $PROGRAM_NAME == __FILE__
