# frozen_string_literal: true

require "spec_helper"
require "logger"
require "stringio"

# Issue 23: hostile providers and hostile input against what the gem promises
# (doc/guarantees.md links each promise to its example here).
RSpec.describe "Hardening against hostile input" do
  include_context "with fake providers"

  describe "headers and records" do
    let(:bad_id) { "req-\xFF\xFE-1".b }

    it "keeps a non-UTF-8 x-request-id as valid text: the answer is cached and every attempt is logged" do
      cache = LlmFailover::MemoryCache.new
      log = StringIO.new
      LlmFailover.configure do |c|
        c.cache = cache
        c.usage_log = Logger.new(log)
      end
      primary.enqueue({ status: 503, headers: { "x-request-id" => bad_id } },
                      { text: "hello", headers: { "x-request-id" => bad_id } })
      reply = failover_chat.ask("hi")
      expect(reply.content).to eq("hello")
      expect(reply.provider_request_id).to be_valid_encoding
      expect(reply.attempts.map(&:provider_request_id)).to all(start_with("req-"))
      lines = log.string.lines.grep(/"request_id"/)
      expect(lines.size).to eq(2)
      again = failover_chat.ask("hi")
      expect(again).to be_cached
      expect(primary.request_count).to eq(2)
    end
  end
end

RSpec.describe "Hardening: chat options that become keys and records" do
  include_context "with fake providers"

  before { LlmFailover.configure { |c| c.cache = LlmFailover::MemoryCache.new } }

  it "takes a binary cache_namespace (a Rack header value) as UTF-8 text, sharing the UTF-8 name's entries" do
    primary.enqueue({ text: "hello" })
    first = failover_chat(cache_namespace: "tenant-\xC3\xA9".b).ask("hi")
    second = failover_chat(cache_namespace: "tenant-é").ask("hi")
    expect([first.cached?, second.cached?]).to eq([false, true])
    expect(primary.request_count).to eq(1)
  end

  it "refuses a cache_namespace or feature that is not text when the chat is made, before anything is stored" do
    expect { failover_chat(cache_namespace: "tenant-\xFF".b) }
      .to raise_error(LlmFailover::ConfigurationError, /cache_namespace/)
    expect { failover_chat(feature: "f\xFF".b) }.to raise_error(LlmFailover::ConfigurationError, /feature/)
  end

  it "writes a binary feature into every log line" do
    log = StringIO.new
    LlmFailover.configure { |c| c.usage_log = Logger.new(log) }
    primary.enqueue({ text: "hello" })
    failover_chat(feature: "r\xC3\xA9sum\xC3\xA9".b).ask("hi")
    expect(JSON.parse(log.string.lines.grep(/request_id/).last[/\{.*\}/])["feature"]).to eq("résumé")
  end
end
