# frozen_string_literal: true

require "spec_helper"
require "active_support"
require "active_support/cache"

RSpec.describe "the response cache" do
  include_context "with fake providers"

  # A clock the spec moves: MemoryCache's expiry without sleeping.
  let(:clock) { [1000.0] }
  let(:cache) { LlmFailover::MemoryCache.new(max_entries: 100, clock: -> { clock[0] }) }
  let(:records) { [] }

  before do
    LlmFailover.configure do |c|
      c.cache = cache
      c.usage_log = ->(r) { records << r }
    end
  end

  def solo_chat(**options)
    LlmFailover.chat(model: "gpt-4o", provider: :openai, **options)
  end

  describe "a hit" do
    it "makes no request and says so, naming who produced the answer" do
      primary.enqueue({ text: "Paris is the capital", model: "gpt-4o-2024-08-06", usage: { input: 12, output: 5 } })
      first = solo_chat.ask("Capital of France?")
      expect(first.cached?).to be(false)
      expect(primary.request_count).to eq(1)

      chat = solo_chat(feature: "geo")
      chunks, sink = collect_chunks
      reply = chat.ask("Capital of France?", &sink)
      expect(primary.request_count).to eq(1)
      expect(solo_chat.ask("Capital of France?").chunk_count).to eq(0) # unstreamed: no chunks
      expect(reply.cached?).to be(true)
      expect(reply.content).to eq("Paris is the capital")
      expect(reply.model).to eq("gpt-4o") # the model asked, as on the chunks and the record
      expect(reply.response_model).to eq("gpt-4o-2024-08-06")
      expect(chunks.map(&:model).uniq).to eq(["gpt-4o"])
      expect(reply.provider).to eq(:openai)
      expect([reply.input_tokens, reply.output_tokens]).to eq([0, 0])
      expect(reply.failover?).to be(false)
      expect(reply.provider_request_id).to eq(first.provider_request_id)
      # The block gets the text in pieces, as from a stream.
      expect(chunks.size).to be > 1
      expect(chunks.map(&:content).join).to eq("Paris is the capital")
      expect(chunks.map(&:index)).to eq((0...chunks.size).to_a)
      expect(chunks.map(&:provider).uniq).to eq([:openai])
      expect(chunks.map(&:request_id).uniq).to eq([reply.request_id])
      expect(reply.chunk_count).to eq(chunks.size)
      # The stored assistant message as usual.
      message = chat.messages.last
      expect([message.role, message.content, message.model, message.provider, message.status])
        .to eq(["assistant", "Paris is the capital", "gpt-4o-2024-08-06", "openai", "complete"])
      # One record, cached, nothing billed.
      expect(reply.attempts.size).to eq(1)
      record = reply.attempts.first
      expect(record.cached).to be(true)
      expect(record.success?).to be(true)
      expect([record.provider, record.model, record.feature]).to eq([:openai, "gpt-4o", "geo"])
      expect([record.input_tokens, record.output_tokens]).to eq([0, 0])
      expect(record.to_h[:cached]).to be(true)
      expect(records.map(&:cached)).to eq([false, true, true])
      expect(records.first.input_tokens).to eq(12)
    end

    it "answers an unstreamed call from a streamed answer and the other way round" do
      primary.enqueue({ chunks: ["One ", "two"] })
      solo_chat.ask("Count") { |_| nil }
      expect(solo_chat.ask("Count").content).to eq("One two")
      primary.enqueue({ text: "Three four" })
      solo_chat.ask("Again")
      expect(solo_chat.ask("Again") { |_| nil }.content).to eq("Three four")
      expect(primary.request_count).to eq(2)
    end

    it "answers during an outage without touching the providers" do
      primary.enqueue({ text: "cached before the outage" })
      failover_chat.ask("Status?")
      primary.default = { error: :server }
      backup.default = { error: :overloaded }
      reply = failover_chat.ask("Status?")
      expect(reply.content).to eq("cached before the outage")
      expect(primary.request_count).to eq(1)
      expect(backup.request_count).to eq(0)
    end

    it "answers #complete after a failed #ask" do
      primary.enqueue({ text: "Hi" })
      solo_chat.ask("Hello")
      chat = solo_chat
      primary.enqueue({ error: :bad_request })
      expect { chat.ask("Hello", cache: false) }.to raise_error(LlmFailover::BadRequestError)
      reply = chat.complete
      expect([reply.cached?, reply.content]).to eq([true, "Hi"])
      # The cached answer takes the failed message: one per turn (issue 27, item 6).
      expect(chat.messages.map(&:role)).to eq(%w[user assistant])
      expect(chat.messages.map(&:status)).to eq(%w[complete complete])
      expect(primary.request_count).to eq(2)
    end
  end

  describe "the key" do
    before { primary.default = { text: "an answer" } }

    it "changes with the messages, the instructions, the model and every parameter that changes the answer" do
      solo_chat.ask("Hello")
      solo_chat.ask("Hello!")
      solo_chat(system: "Be brief").ask("Hello")
      solo_chat(system: "Be long").ask("Hello")
      solo_chat(temperature: 0.2).ask("Hello")
      solo_chat.ask("Hello", temperature: 0.3)
      solo_chat(max_tokens: 50).ask("Hello")
      LlmFailover.chat(model: "gpt-4o-mini", provider: :openai).ask("Hello")
      expect(primary.request_count).to eq(8)
      # ...and each of them is a hit the second time.
      solo_chat(system: "Be brief").ask("Hello")
      solo_chat.ask("Hello", temperature: 0.2)
      solo_chat(max_tokens: 50).ask("Hello")
      expect(primary.request_count).to eq(8)
    end

    it "holds the whole conversation, not only the last prompt" do
      chat = solo_chat
      chat.ask("First")
      chat.ask("Second")
      other = solo_chat
      other.ask("Second")
      expect(primary.request_count).to eq(3)
      again = solo_chat
      again.ask("First")
      expect(again.ask("Second").cached?).to be(true)
      expect(primary.request_count).to eq(3)
    end

    it "holds the protocol: an Anthropic target never reads an OpenAI answer" do
      primary.enqueue({ text: "from openai" })
      solo_chat.ask("Hello")
      backup.enqueue({ text: "from anthropic" })
      reply = LlmFailover.chat(model: "gpt-4o", provider: :anthropic).ask("Hello")
      expect(reply.cached?).to be(false)
      expect(reply.content).to eq("from anthropic")
    end

    it "keeps namespaces apart" do
      solo_chat(cache_namespace: "tenant-1").ask("Hello")
      expect(solo_chat(cache_namespace: "tenant-2").ask("Hello").cached?).to be(false)
      expect(solo_chat.ask("Hello").cached?).to be(false)
      expect(solo_chat(cache_namespace: "tenant-1").ask("Hello").cached?).to be(true)
      expect(solo_chat(cache_namespace: :"tenant-2").ask("Hello").cached?).to be(true)
      expect(primary.request_count).to eq(3)
    end
  end

  describe "bypass" do
    before { primary.default = { text: "an answer" } }

    it "cache: false on a chat neither reads nor writes" do
      solo_chat.ask("Hello")
      expect(solo_chat(cache: false).ask("Hello").cached?).to be(false)
      solo_chat(cache: false).ask("Other")
      expect(solo_chat.ask("Other").cached?).to be(false)
      expect(primary.request_count).to eq(4)
    end

    it "cache: false on one ask neither reads nor writes" do
      chat = solo_chat
      chat.ask("Hello")
      expect(solo_chat.ask("Hello", cache: false).cached?).to be(false)
      solo_chat.ask("Other", cache: false)
      expect(solo_chat.ask("Other").cached?).to be(false)
      expect(primary.request_count).to eq(4)
    end

    it "is off unless a cache is configured" do
      LlmFailover.configuration.cache = nil
      solo_chat.ask("Hello")
      expect(solo_chat.ask("Hello").cached?).to be(false)
      expect(primary.request_count).to eq(2)
    end

    it "takes a chat's own store" do
      own = LlmFailover::MemoryCache.new
      solo_chat(cache: own).ask("Hello")
      expect(own.size).to eq(1)
      expect(cache.size).to eq(0)
      expect(solo_chat(cache: own).ask("Hello").cached?).to be(true)
    end

    it "rejects what is not a store" do
      expect { solo_chat(cache: "yes") }.to raise_error(LlmFailover::ConfigurationError, /cache/)
      expect { LlmFailover.configuration.cache = Object.new }.to raise_error(LlmFailover::ConfigurationError, /read/)
      expect { solo_chat(cache_namespace: "") }.to raise_error(LlmFailover::ConfigurationError, /namespace/)
    end
  end

  describe "what is never cached" do
    it "a failure" do
      primary.enqueue({ error: :bad_request })
      expect { solo_chat.ask("Hello") }.to raise_error(LlmFailover::BadRequestError)
      primary.enqueue({ text: "fine" })
      expect(solo_chat.ask("Hello").cached?).to be(false)
      expect(cache.size).to eq(1)
    end

    it "an interrupted stream" do
      primary.enqueue({ text: "a b c d", cut_after: 2 })
      LlmFailover.configuration.max_retries = 0
      expect { solo_chat.ask("Hello") { |_| nil } }.to raise_error(LlmFailover::StreamInterruptedError)
      expect(cache.size).to eq(0)
    end

    it "an answer whose block raised (the caller went away)" do
      primary.enqueue({ chunks: %w[a b c] })
      expect { solo_chat.ask("Hello") { |_| raise IOError, "client gone" } }.to raise_error(IOError)
      expect(cache.size).to eq(0)
    end

    it "a cancelled answer" do
      primary.enqueue({ chunks: ["Once ", "upon ", "a ", "time"], stall_after: 2 })
      chat = solo_chat
      shown = +""
      asker = Thread.new { chat.ask("Tell me a story") { |c| shown << c.content } }
      Thread.pass until shown == "Once upon " || !asker.alive?
      chat.cancel!
      expect(asker.value).to be_cancelled
      expect(cache.size).to eq(0)
    end

    it "a content-policy refusal on either protocol" do
      primary.enqueue({ text: "I can't help with that", finish_reason: "content_filter" })
      solo_chat.ask("Hello")
      backup.enqueue({ text: "I won't", finish_reason: "refusal" })
      LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic).ask("Hello")
      expect(cache.size).to eq(0)
    end

    it "an answer cut by max_tokens unless the request set that limit" do
      primary.enqueue({ text: "cut", finish_reason: "length" })
      solo_chat.ask("Hello")
      backup.enqueue({ text: "cut", finish_reason: "max_tokens" })
      LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic).ask("Hello")
      expect(cache.size).to eq(0)
      primary.enqueue({ text: "asked to be short", finish_reason: "length" })
      solo_chat(max_tokens: 3).ask("Hello")
      expect(solo_chat(max_tokens: 3).ask("Hello").content).to eq("asked to be short")
      expect(primary.request_count).to eq(2)
    end

    it "an empty answer" do
      primary.enqueue({ text: "" })
      solo_chat.ask("Hello")
      expect(cache.size).to eq(0)
    end
  end

  describe "failover" do
    it "stores the backup's answer under the backup's key: the primary is asked again next time" do
      primary.enqueue({ error: :server }, { error: :server }, { error: :server },
                      { error: :server })
      backup.enqueue({ text: "from the backup", model: "claude-sonnet-4-6" })
      reply = failover_chat.ask("Hello")
      expect(reply.failover?).to be(true)

      primary.enqueue({ text: "from the primary" })
      again = failover_chat.ask("Hello")
      expect([again.cached?, again.content]).to eq([false, "from the primary"])

      claude = LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic).ask("Hello")
      expect([claude.cached?, claude.content, claude.provider]).to eq([true, "from the backup", :anthropic])
      expect(backup.request_count).to eq(1)
    end

    it "reads the primary's entry first when the quota sends the call to the backup" do
      primary.enqueue({ text: "the primary's answer" })
      failover_chat.ask("Hello")
      reply = failover_chat(quota: 10, quota_used: 10).ask("Hello")
      expect([reply.cached?, reply.provider]).to eq([true, :openai])
      backup.enqueue({ text: "the backup's answer" })
      failover_chat(quota: 10, quota_used: 10).ask("Other")
      reply = failover_chat(quota: 10, quota_used: 10).ask("Other")
      expect([reply.cached?, reply.content]).to eq([true, "the backup's answer"])
      expect(backup.request_count).to eq(1)
    end
  end

  describe "expiry" do
    it "ends an entry after cache_ttl" do
      LlmFailover.configuration.cache_ttl = 60
      primary.default = { text: "an answer" }
      solo_chat.ask("Hello")
      clock[0] += 59
      expect(solo_chat.ask("Hello").cached?).to be(true)
      clock[0] += 2
      expect(solo_chat.ask("Hello").cached?).to be(false)
      expect(primary.request_count).to eq(2)
    end
  end

  describe "stores" do
    it "works with ActiveSupport's MemoryStore and passes cache_ttl as expires_in" do
      store = ActiveSupport::Cache::MemoryStore.new
      LlmFailover.configure do |c|
        c.cache = store
        c.cache_ttl = 3600
      end
      primary.enqueue({ text: "kept by ActiveSupport" })
      solo_chat.ask("Hello")
      reply = solo_chat.ask("Hello")
      expect([reply.cached?, reply.content]).to eq([true, "kept by ActiveSupport"])
      key = store.instance_variable_get(:@data).keys.first
      expect(key).to start_with("llm_failover:response:v1:")
      entry = store.send(:read_entry, key)
      expect(entry.expires_at).to be_within(60).of(Time.now.to_f + 3600)
    end

    it "answers from the providers when the store raises, and says so once" do
      broken = Class.new do
        def read(_key) = raise(IOError, "store down")
        def write(_key, _value, expires_in: nil) = raise(IOError, "store down")
      end.new
      log = StringIO.new
      LlmFailover.configure do |c|
        c.cache = broken
        c.logger = Logger.new(log)
      end
      primary.default = { text: "an answer" }
      2.times { expect(solo_chat.ask("Hello").content).to eq("an answer") }
      expect(log.string.scan("cache read failed").size).to eq(1)
      expect(log.string).to include("store down")
    end

    it "treats an entry it cannot read as a miss" do
      primary.default = { text: "an answer" }
      solo_chat.ask("Hello")
      cache.instance_variable_get(:@entries).each_value { |e| e.value = "not json" }
      expect(solo_chat.ask("Hello").cached?).to be(false)
    end
  end
end

RSpec.describe LlmFailover::MemoryCache do
  let(:now) { [0.0] }
  let(:cache) { described_class.new(max_entries: 3, clock: -> { now[0] }) }

  it "evicts the least recently read entry past max_entries" do
    cache.write("a", 1)
    cache.write("b", 2)
    cache.write("c", 3)
    expect(cache.read("a")).to eq(1) # a is now the most recent
    cache.write("d", 4)
    expect(cache.read("b")).to be_nil
    expect([cache.read("a"), cache.read("c"), cache.read("d")]).to eq([1, 3, 4])
    expect(cache.size).to eq(3)
  end

  it "expires entries and overwrites in place" do
    cache.write("a", 1, expires_in: 10)
    cache.write("b", 2)
    now[0] = 9.9
    expect(cache.read("a")).to eq(1)
    now[0] = 10
    expect(cache.read("a")).to be_nil
    expect(cache.read("b")).to eq(2)
    cache.write("b", 3)
    expect(cache.read("b")).to eq(3)
    expect(cache.delete("b")).to be(true)
    expect(cache.read("b")).to be_nil
  end

  it "stays within max_entries and consistent under threads" do
    shared = described_class.new(max_entries: 50)
    threads = Array.new(8) do |t|
      Thread.new do
        500.times do |i|
          shared.write("k#{(t * 7 + i) % 120}", i)
          shared.read("k#{i % 120}")
        end
      end
    end
    threads.each(&:join)
    expect(shared.size).to eq(50)
  end

  it "rejects a bad max_entries" do
    expect { described_class.new(max_entries: 0) }.to raise_error(LlmFailover::ConfigurationError)
  end
end
