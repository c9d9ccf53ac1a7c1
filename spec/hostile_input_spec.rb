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

    it "keeps a bounded part of a huge x-request-id, so that no record column refuses it" do
      primary.enqueue({ text: "hello", headers: { "x-request-id" => "r#{'é' * 5000}" } })
      reply = failover_chat.ask("hi")
      expect(reply.provider_request_id).to be_valid_encoding
      expect(reply.provider_request_id.bytesize).to be <= 200
      expect(reply.attempts.last.provider_request_id).to start_with("ré")
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

RSpec.describe "Hardening: JSON answers" do
  include_context "with fake providers"

  before { LlmFailover.configure { |c| c.max_retries = 0 } }

  it "takes exactly the objects a strict JSON reader takes: one rule, in the answer check" do
    texts = ['{"x": NaN}', '{"x": Infinity}', '{"x": -Infinity}', "{'x': 1}", %({"x": "a\tb"}), %({"x": "a\nb"}),
             '{"x": "\ud800"}', '{"x": "\udc00 "}', '{"x": 5.}', '{"x": .5}', '{"x": 01}', '{"x": +1}', '{"x": 1,}',
             '{"x": 1} // c', '{"x": "\ud83d\ude00"}', '{"x": 1e400}', '{"x": -0.5E-3}', '{"x": [true, false, null]}',
             '{"x": "\u00e9\\u00e9\\/"}', '{"x": 12345678901234567890123}', '{"x": nulll}', '{"x": tru}']
    verdicts = texts.map do |text|
      strict = begin
        JSON.parse(text)
        true
      rescue JSON::ParserError
        false
      end
      [text, !LlmFailover::AnswerFormat.json_mode.check(text).nil?, strict]
    end
    expect(verdicts.reject { |_, checked, strict| checked == strict }).to eq([])
  end

  it "fails an attempt whose object holds NaN or Infinity over to the backup, and never caches it" do
    LlmFailover.configure { |c| c.cache = LlmFailover::MemoryCache.new }
    primary.enqueue({ text: '{"x": NaN}' }, { text: '{"x": Infinity}' })
    backup.enqueue({ text: '{"x": 1}' })
    reply = failover_chat.with_json_mode.ask("x")
    expect(reply.json).to eq("x" => 1)
    expect(reply.attempts.first.error_class).to eq("LlmFailover::InvalidResponseError")
    expect(reply.attempts.first.error_message).to include("not standard JSON")

    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai).with_json_mode
    expect { chat.ask("y") }.to raise_error(LlmFailover::InvalidResponseError)
    primary.enqueue({ text: '{"x": 2}' })
    expect(chat.ask("y").json).to eq("x" => 2)
    expect(primary.request_count).to eq(3)
  end

  it "takes a cached object the answer check refuses (an older version cached NaN) for a miss" do
    entries = {}
    store = Object.new
    store.define_singleton_method(:read) { |key| entries[key] }
    store.define_singleton_method(:write) { |key, value, **| entries[key] = value }
    LlmFailover.configure { |c| c.cache = store }
    primary.enqueue({ text: '{"x": 1}' }, { text: '{"x": 2}' })
    chat = -> { LlmFailover.chat(model: "gpt-4o", provider: :openai).with_json_mode }
    chat.call.ask("x")
    entries.transform_values! do |value|
      JSON.generate(JSON.parse(value).merge("content" => '{"x": NaN}', "json_text" => '{"x":NaN}'))
    end
    expect(chat.call.ask("x").json).to eq("x" => 2)
    expect(primary.request_count).to eq(2)
  end

  it "gives integers beyond 64 bits exactly, from the answer, the cache and an idempotent replay" do
    LlmFailover.configure { |c| c.cache = LlmFailover::MemoryCache.new }
    big = 123_456_789_012_345_678_901_234_567_890
    primary.enqueue({ text: %({"n": #{big}, "m": -#{big}}) })
    chat = failover_chat.with_json_mode
    expect(chat.ask("n?", idempotency_key: "k").json).to eq("n" => big, "m" => -big)
    expect(failover_chat.with_json_mode.ask("n?").tap { |r| expect(r).to be_cached }.json).to eq("n" => big, "m" => -big)
    expect(chat.ask("n?", idempotency_key: "k").json).to eq("n" => big, "m" => -big)
    expect(primary.request_count).to eq(1)
  end
end

RSpec.describe "Hardening: placeholders restored into a JSON answer" do
  include_context "with fake providers"

  # A custom rule whose value holds what JSON must escape: a quote, a backslash, a newline.
  let(:secret) { "-----BEGIN KEY-----\nab\"c\\d\n-----END KEY-----" }
  let(:scrubber) do
    value = secret
    Class.new do
      define_method(:scrub) { |text| [text.gsub(value, "[KEY_1]"), text.include?(value) ? { "KEY_1" => value } : {}] }
    end.new
  end

  before { LlmFailover.configure { |c| c.scrubber = scrubber } }

  it "escapes the value, so content, the stored answer, reply.json and an idempotent replay agree" do
    primary.enqueue({ text: '{"key": "[KEY_1]", "[KEY_1]": 1}' }, { text: '{"key": "[KEY_1]"}' })
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai).with_json_mode
    reply = chat.ask("keep #{secret}", idempotency_key: "k1")
    expect(primary.requests.first.body).not_to include("BEGIN KEY")
    expect(reply.json).to eq("key" => secret, secret => 1)
    expect(JSON.parse(reply.content)).to eq(reply.json)
    expect(JSON.parse(chat.messages.last.content)).to eq(reply.json)
    expect(chat.ask("keep #{secret}", idempotency_key: "k1").json).to eq(reply.json)

    chunks, collect = collect_chunks
    streamed = chat.ask("again #{secret}", &collect)
    expect(chunks.map(&:content).join).to eq(streamed.content)
    expect(JSON.parse(streamed.content)).to eq("key" => secret)
  end
end

RSpec.describe "Hardening: schemas checked as the providers check them" do
  include_context "with fake providers"

  def strict(properties)
    { type: "object", additionalProperties: false, required: properties.keys.map(&:to_s), properties: properties }
  end

  it "takes a strict schema with a property or a $defs entry named like a keyword" do
    schema = strict(properties: { type: "string" }, items: { "$ref" => "#/$defs/properties" })
             .merge("$defs" => { "properties" => strict(type: { type: "string" }) })
    primary.enqueue({ text: '{"properties": "p", "items": {"type": "t"}}' })
    reply = LlmFailover.chat(model: "gpt-4o", provider: :openai).with_schema(schema).ask("x")
    expect(reply.json).to eq("properties" => "p", "items" => { "type" => "t" })
  end

  it "refuses, before any request, a root OpenAI's strict mode and Anthropic refuse" do
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
    [{ type: "array", items: { type: "string" } }, { type: "string" }, {},
     { anyOf: [strict(a: { type: "string" }), strict(b: { type: "string" })] }].each do |root|
      expect { chat.with_schema(root) }.to raise_error(ArgumentError, /root must be one object schema/)
    end
    expect { chat.with_schema(strict(a: { type: "object", properties: {} })) }
      .to raise_error(ArgumentError, /\$\.properties\.a: .*additionalProperties/)
    expect(primary.request_count).to eq(0)
  end
end

RSpec.describe "Hardening: a scrubber's values given back into the answer" do
  include_context "with fake providers"

  it "restores a value the scrubber gave as binary as text, after the answer" do
    binary = Class.new do
      def scrub(text)
        [text.sub("café", "[NAME_1]"), { "NAME_1" => "caf\xC3\xA9".b }]
      end
    end.new
    LlmFailover.configure { |c| c.scrubber = binary }
    primary.enqueue({ text: "Hello [NAME_1]" })
    expect(LlmFailover.chat(model: "gpt-4o", provider: :openai).ask("I am café").content).to eq("Hello café")
  end
end
