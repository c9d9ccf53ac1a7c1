# frozen_string_literal: true

require "spec_helper"

RSpec.describe "Observability", :ruby_only do
  include_context "with fake providers"

  describe "attempt records" do
    it "carries every field of DESIGN.md, JSON-able" do
      primary.enqueue({ error: :rate_limit, retry_after: 0 }, { text: "ok", usage: { input: 3, output: 1 },
                                                                headers: { "x-request-id" => "req_42" } })
      reply = failover_chat(feature: "tailoring").ask("Hi")
      failed, ok = reply.attempts

      expect(failed.to_h.keys).to include(*%i[request_id attempt provider model feature success error_class
                                              error_message http_status failover_eligible retry_after latency_ms
                                              first_token_ms input_tokens output_tokens started_at])
      expect([failed.attempt, failed.provider, failed.model, failed.feature]).to eq([1, :openai, "gpt-4o", "tailoring"])
      expect([failed.success?, failed.error_class, failed.http_status, failed.failover_eligible?])
        .to eq([false, "LlmFailover::RateLimitError", 429, true])
      expect(failed.error_message).to be_a(String).and(satisfy { |m| !m.empty? })
      expect(failed.started_at).to be_a(Time)
      expect(failed.latency_ms).to be_a(Float)

      expect([ok.attempt, ok.success?, ok.error_class, ok.input_tokens, ok.output_tokens]).to eq([2, true, nil, 3, 1])
      expect(ok.provider_request_id).to eq("req_42")
      expect(ok.started_at).to be >= failed.started_at

      round_trip = JSON.parse(JSON.generate(reply.attempts.map(&:to_h)))
      expect(round_trip.map { |h| h["attempt"] }).to eq([1, 2])
      expect(round_trip.first["provider"]).to eq("openai")
      expect(round_trip.first["error_class"]).to eq("LlmFailover::RateLimitError")
      expect(Time.iso8601(round_trip.first["started_at"])).to be_a(Time)
      expect(JSON.parse(reply.attempts.first.to_json)["request_id"]).to eq(reply.request_id)
    end

    it "gives every call its own request_id" do
      chat = failover_chat
      ids = [chat.ask("a"), chat.ask("b")].map(&:request_id)
      expect(ids.uniq.size).to eq(2)
    end
  end

  describe "usage_log sinks" do
    it "hands each record to a callable as the attempts happen, in order" do
      seen = []
      LlmFailover.configuration.usage_log = lambda { |record|
        # What the backup had received when this record went out.
        seen << [record.attempt, record.provider, backup.request_count]
      }
      primary.default = { error: :server }
      reply = failover_chat(max_retries: 1).ask("Hi")
      expect(seen).to eq([[1, :openai, 0], [2, :openai, 0], [3, :anthropic, 1]])
      expect(reply.attempts.map(&:attempt)).to eq([1, 2, 3])
    end

    it "hands over the records of a call that fails" do
      seen = []
      LlmFailover.configuration.usage_log = ->(record) { seen << record }
      primary.enqueue({ error: :unauthorized })
      expect { failover_chat.ask("Hi") }.to raise_error(LlmFailover::UnauthorizedError) { |e|
        expect(seen).to eq(e.attempts)
      }
      expect(seen.map(&:http_status)).to eq([401])
      expect(seen.first.failover_eligible?).to be(false)
    end

    it "accepts an object with #record, a Logger and an Array of sinks, per chat too" do
      recorder = Class.new do
        attr_reader :records

        def initialize
          @records = []
        end

        def record(record)
          @records << record
        end
      end.new
      io = StringIO.new
      logger = Logger.new(io)
      primary.enqueue({ error: :server })
      failover_chat(usage_log: [recorder, logger]).ask("Hi")

      expect(recorder.records.map(&:success?)).to eq([false, true])
      lines = io.string.lines.map { |l| l[/\{.*\}/] }
      expect(lines.size).to eq(2)
      expect(io.string.lines).to all(include("INFO"))
      expect(lines.map { |l| JSON.parse(l)["attempt"] }).to eq([1, 2])
    end

    it "survives a sink that raises, warning once per sink class" do
      io = StringIO.new
      LlmFailover.configure do |c|
        c.logger = Logger.new(io)
        c.usage_log = [->(_) { raise "sink down" }, ->(r) { (@good ||= []) << r }]
      end
      primary.enqueue({ error: :server })
      chat = failover_chat
      reply = chat.ask("one")
      chat.ask("two")
      expect(reply.content).to eq("Hello from FakeProvider")
      expect(@good.size).to eq(3)
      expect(io.string.scan("sink down").size).to eq(1)
    end

    it "warns through Kernel#warn without a logger" do
      LlmFailover.configuration.usage_log = ->(_) { raise ArgumentError, "broken sink" }
      expect { failover_chat.ask("Hi") }.to output(/broken sink/).to_stderr
    end

    it "instruments attempt.llm_failover when ActiveSupport::Notifications is loaded" do
      begin
        require "active_support"
        require "active_support/notifications"
      rescue LoadError
        skip "activesupport is not installed"
      end
      payloads = []
      subscriber = ActiveSupport::Notifications.subscribe("attempt.llm_failover") do |*, payload|
        payloads << payload
      end
      begin
        primary.enqueue({ error: :unavailable })
        reply = failover_chat.ask("Hi")
        mine = payloads.select { |p| p[:request_id] == reply.request_id }
        expect(mine.map { |p| p[:attempt] }).to eq([1, 2])
        expect(mine.first[:error_class]).to eq("LlmFailover::ServiceUnavailableError")
        expect(mine.map { |p| p[:started_at] }).to eq(reply.attempts.map(&:started_at))
        expect(mine.first[:started_at]).to be_a(Time)
      ensure
        ActiveSupport::Notifications.unsubscribe(subscriber)
      end
    end
  end

  describe "on_chain_exhausted" do
    let(:alerts) { [] }

    before do
      primary.default = { error: :unavailable }
      backup.default = { error: :overloaded }
      LlmFailover.configure do |c|
        c.max_retries = 0
        c.on_chain_exhausted = ->(alert) { alerts << alert }
      end
    end

    def fail_once(feature)
      failover_chat(feature: feature).ask("Hi")
    rescue LlmFailover::Error => e
      e
    end

    it "alerts once per feature and error class within the window" do
      first = fail_once("summaries")
      fail_once("summaries")
      expect(alerts.size).to eq(1)
      alert = alerts.first
      expect(alert.feature).to eq("summaries")
      expect(alert.error_class).to eq("LlmFailover::OverloadedError")
      expect(alert.request_id).to eq(first.request_id)
      expect(alert.providers).to eq(%i[openai anthropic])
      expect(alert.models).to eq(["gpt-4o", "claude-sonnet-4-6"])
      expect(alert.attempts.size).to eq(2)
      expect(alert.first_seen).to be_a(Time)
      expect(alert[:feature]).to eq("summaries")

      fail_once("tailoring")
      expect(alerts.map(&:feature)).to eq(%w[summaries tailoring])
    end

    it "alerts again once the window has passed" do
      LlmFailover.configuration.alert_window = 0
      fail_once("summaries")
      fail_once("summaries")
      expect(alerts.size).to eq(2)
    end

    it "does not alert when the failure is one no backup could fix" do
      primary.default = { error: :unauthorized }
      fail_once("summaries")
      expect(alerts).to be_empty
    end

    it "does not alert when the backup saved the call" do
      backup.default = { text: "fine" }
      failover_chat(feature: "summaries").ask("Hi")
      expect(alerts).to be_empty
    end

    it "is thread-safe: concurrent failures of one kind raise one alert" do
      threads = Array.new(4) { Thread.new { fail_once("bulk") } }
      threads.each(&:join)
      expect(alerts.size).to eq(1)
    end
  end
end
