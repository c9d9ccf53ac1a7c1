# frozen_string_literal: true

require_relative "../../active_record/ar_spec_helper"
require "llm_failover/report"

ArSpec.describe LlmFailover::ActiveRecord::AttemptLog do
  include_context "with fake providers"

  before { LlmFailover.configuration.usage_log = attempt_log }

  it "writes one row per attempt of a failover, with every field of the attempt record" do
    LlmFailover.configuration.max_retries = 1
    primary.enqueue({ error: :rate_limit, retry_after: 0 },
                    { chunks: ["half ", "an ", "answer"], cut_after: 2, usage: { input: 7, output: 2 } })
    backup.enqueue({ text: "whole answer", usage: { input: 11, output: 4 } })
    chat = Chat.create!(model: "gpt-4o", provider: "openai", backup_model: "claude-sonnet-4-6",
                        backup_provider: "anthropic", feature: "tailoring")
    reply = chat.ask("Go") { |_c| }

    rows = LlmFailover::ActiveRecord::Attempt.order(:attempt).to_a
    expect(rows.map(&:attributes).map { |a| a.except("id") }.map(&:keys).uniq)
      .to eq([LlmFailover::ActiveRecord::Attempt::COLUMNS.map(&:to_s)])
    expect(rows.map { |r| [r.request_id, r.attempt, r.provider, r.model, r.feature, r.success, r.failover_eligible] })
      .to eq([[reply.request_id, 1, "openai", "gpt-4o", "tailoring", false, true],
              [reply.request_id, 2, "openai", "gpt-4o", "tailoring", false, true],
              [reply.request_id, 3, "anthropic", "claude-sonnet-4-6", "tailoring", true, false]])
    expect(rows.map { |r| [r.error_class, r.http_status] })
      .to eq([["LlmFailover::RateLimitError", 429], ["LlmFailover::StreamInterruptedError", 200], [nil, 200]])
    expect(rows[0].retry_after).to eq(0)
    expect(rows[0].error_message).to be_a(String).and(satisfy { |m| !m.empty? })
    expect(rows[2].error_message).to be_nil
    expect(rows.map { |r| [r.input_tokens, r.output_tokens] }.last).to eq([11, 4])
    expect(rows.map(&:latency_ms)).to all(be_a(Float))
    expect(rows[1].first_token_ms).to be_a(Float)
    expect(rows.map(&:started_at)).to all(be_a(Time))
    expect(rows.map(&:started_at)).to eq(rows.map(&:started_at).sort)
    expect(reply.attempts.map { |a| [a.attempt, a.provider.to_s, a.success?] })
      .to eq(rows.map { |r| [r.attempt, r.provider, r.success] })
  end

  it "writes what the scrubber replaced and the attempts an open circuit skipped" do
    LlmFailover.configure do |c|
      c.scrubber = LlmFailover::Scrubber.default
      c.max_retries = 0
      c.circuit_threshold = 1
    end
    primary.enqueue({ error: :server })
    chat = Chat.create!(model: "gpt-4o", provider: "openai", backup_model: "claude-sonnet-4-6",
                        backup_provider: "anthropic")
    chat.ask("card 4111 1111 1111 1111")
    chat.ask("card 5555 5555 5555 4444") # the primary's circuit is open: skipped, the backup answers

    rows = LlmFailover::ActiveRecord::Attempt.order(:started_at, :attempt).to_a
    expect(rows.map { |r| [r.provider, r.success, r.skipped, r.scrubbed] })
      .to eq([["openai", false, false, { "card" => 1 }], ["anthropic", true, false, { "card" => 1 }],
              ["openai", false, true, { "card" => 2 }], ["anthropic", true, false, { "card" => 2 }]])
  end

  it "writes a cache hit as a cached row without tokens, which the report counts" do
    LlmFailover.configuration.cache = LlmFailover::MemoryCache.new
    primary.enqueue({ text: "once", usage: { input: 8, output: 2 } })
    2.times { LlmFailover.chat(model: "gpt-4o", provider: :openai).ask("Same question") }
    rows = LlmFailover::ActiveRecord::Attempt.order(:started_at).to_a
    expect(rows.map { |r| [r.cached, r.success, r.input_tokens, r.output_tokens] })
      .to eq([[false, true, 8, 2], [true, true, 0, 0]])
    expect(primary.request_count).to eq(1)
    report = LlmFailover::Report.new
    expect(report.summary).to include(requests: 2, cache_hits: 1)
    expect(report.cache_hits.map { |h| [h.hits, h.saved_input, h.saved_output] }).to eq([[1, 8, 2]])
  end

  it "writes each hit's tier and a semantic hit's similarity, which the report shows as hit rates by tier" do
    LlmFailover.configure do |c|
      c.cache = LlmFailover::MemoryCache.new
      c.semantic_cache = LlmFailover::SemanticCache.new(embed_model: "text-embedding-3-small", provider: :openai,
                                                        threshold: 0.6, index: LlmFailover::MemoryIndex.new, feature: "semantic")
    end
    primary.enqueue({ text: "Paris", usage: { input: 8, output: 2 } })
    ask = lambda do |text|
      LlmFailover.chat(model: "gpt-4o", provider: :openai, feature: "geo").ask(text)
      LlmFailover.configuration.semantic_cache.flush
    end
    ask.call("What is the capital city of France?")
    ask.call("What is the capital city of France?")
    ask.call("Tell me the capital city of France")
    rows = LlmFailover::ActiveRecord::Attempt.where(feature: "geo").order(:started_at).to_a
    expect(rows.map { |r| [r.cached, r.cache_tier] }).to eq([[false, nil], [true, "exact"], [true, "semantic"]])
    expect(rows.last.similarity).to be_between(0.6, 1.0)
    hits = LlmFailover::Report.new.cache_hits.find { |h| h.model == "gpt-4o" }
    expect([hits.hits, hits.semantic, hits.exact_rate, hits.semantic_rate]).to eq([2, 1, 1 / 3.0, 1 / 3.0])
  end

  it "keeps logging to a table made before the cached column" do
    old = Class.new(LlmFailover::ActiveRecord::Attempt) do
      self.table_name = "old_llm_attempts"
      def self.name = "OldAttempt"
    end
    ActiveRecord::Base.connection_pool.with_connection do |c|
      LlmFailover::ActiveRecord::Schema.define(c, chats: "old_chats", messages: "old_messages",
                                                  attempts: "old_llm_attempts", force: true)
      c.remove_column(:old_llm_attempts, :cached)
    end
    old.reset_column_information
    LlmFailover.configure do |c|
      c.usage_log = LlmFailover::ActiveRecord::AttemptLog.new(model: old)
      c.cache = LlmFailover::MemoryCache.new
    end
    primary.enqueue({ text: "once" })
    2.times { LlmFailover.chat(model: "gpt-4o", provider: :openai).ask("Same question") }
    expect(old.count).to eq(2)
    expect(LlmFailover::Report.new(attempts: old).summary).to include(attempts: 2, cache_hits: 0)
  ensure
    ActiveRecord::Base.connection_pool.with_connection do |c|
      %w[old_message_tool_calls old_messages old_chats old_llm_attempts].each { |t| c.drop_table(t, if_exists: true) }
    end
  end

  it "never stores an API key, even one a provider's error body quotes back" do
    LlmFailover.configuration.max_retries = 0
    key = FakeProviderHelpers::PRIMARY_KEY
    primary.enqueue({ status: 500, body: { error: { message: "upstream rejected key #{key}", type: "server_error" } } })
    chat = Chat.create!(model: "gpt-4o", provider: "openai", backup_model: "claude-sonnet-4-6",
                        backup_provider: "anthropic")
    chat.ask("Hi")

    failed = LlmFailover::ActiveRecord::Attempt.find_by(success: false)
    expect(failed.error_message).to include("upstream rejected key")
    bytes =
      if postgresql? # every row of every table, as text
        ArSpec::TABLES.map { |t| raw_rows("SELECT * FROM #{t}").map(&:values).join("|") }.join
      else # the database file itself
        ActiveRecord::Base.connection_pool.with_connection { |c| c.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
        # Read by another process: closing a file SQLite has open, in this one, would drop
        # every lock it holds on it (POSIX locks are per process), and a later connection
        # would take itself for the last and remove the -shm under the others.
        IO.popen(["cat", *Dir[File.join(ArSpec::DIR, "*")]], "rb", &:read)
      end
    expect(bytes).to include("upstream rejected key") # the row is in the file ...
    [key, FakeProviderHelpers::BACKUP_KEY].each { |k| expect(bytes).not_to include(k) } # ... the key is not
  end

  it "accepts a Hash record and an Attempt subclass on another table" do
    ActiveRecord::Base.connection_pool.with_connection do |c|
      LlmFailover::ActiveRecord.create_tables!(connection: c, chats: "audit_chats", messages: "audit_messages",
                                               attempts: "audit_attempts", force: true)
    end
    audit = Class.new(LlmFailover::ActiveRecord::Attempt) do
      self.table_name = "audit_attempts"
      def self.name = "AuditAttempt"
    end
    described_class.new(model: audit).call(
      { request_id: "r-1", attempt: 1, provider: :groq, model: "llama", success: false,
        error_class: LlmFailover::ServerError, error_message: "x" * 10_000, started_at: "2025-03-10T12:00:00.250Z" }
    )
    row = audit.sole
    expect([row.provider, row.error_class, row.error_message.length, row.started_at.utc.iso8601(3)])
      .to eq(["groq", "LlmFailover::ServerError", described_class::MAX_ERROR_MESSAGE, "2025-03-10T12:00:00.250Z"])
    expect(LlmFailover::ActiveRecord::Attempt.count).to eq(0)
  end

  it "is left out of the rollback only when asked to be" do
    log = described_class.new(survive_rollback: false)
    record = LlmFailover::AttemptRecord.new(request_id: "r-2", attempt: 1, provider: :openai, model: "gpt-4o",
                                            success: true, started_at: Time.now)
    Chat.transaction do
      log.call(record)
      raise ActiveRecord::Rollback
    end
    expect(LlmFailover::ActiveRecord::Attempt.count).to eq(0)

    Chat.transaction do
      attempt_log.call(record)
      raise ActiveRecord::Rollback
    end
    expect(LlmFailover::ActiveRecord::Attempt.pluck(:request_id)).to eq(["r-2"])
  end
end
