# frozen_string_literal: true

require "spec_helper"

RSpec.describe "the semantic cache" do
  include_context "with fake providers"

  let(:index) { LlmFailover::MemoryIndex.new }
  let(:embedder) { start_fake_provider }
  let(:records) { [] }
  let(:log) { StringIO.new }
  let(:question) { "What is the capital city of France?" }
  let(:paraphrase) { "Tell me the capital city of France" }
  # What the FakeProvider's embeddings make of the two: the spec's thresholds sit on
  # either side of it.
  let(:similarity) do
    answer = LlmFailover::Testing::FakeProvider::EmbeddingAnswer
    answer.vector(question).zip(answer.vector(paraphrase)).sum { |a, b| a * b }
  end

  def semantic(threshold: similarity - 0.01, **options)
    LlmFailover::SemanticCache.new(embed_model: "text-embedding-3-small", provider: :embedder, index: index,
                                   threshold: threshold, **options)
  end

  before do
    LlmFailover.configure do |c|
      c.provider :embedder, api: :openai, api_key: "sk-embed-SECRET000", base_url: embedder.base_url(:openai)
      c.usage_log = ->(r) { records << r }
      c.logger = Logger.new(log)
      c.semantic_cache = semantic
    end
  end

  def solo_chat(**options)
    LlmFailover.chat(model: "gpt-4o", provider: :openai, **options)
  end

  # Asks +text+ in a new chat and waits for the semantic write of its answer.
  def ask(text, chat: solo_chat, **options, &block)
    reply = chat.ask(text, **options, &block)
    LlmFailover.configuration.semantic_cache.flush
    reply
  end

  def chat_requests
    primary.requests.size + backup.requests.size
  end

  it "answers a paraphrase above the threshold from the cache, recorded as a semantic hit" do
    expect(similarity).to be_between(0.5, 0.9) # a paraphrase, not the same words
    primary.enqueue({ text: "Paris", model: "gpt-4o-2024-08-06" })
    first = ask(question)
    expect([first.cached?, first.cache_tier, first.similarity]).to eq([false, nil, nil])
    expect(index.size).to eq(1)

    chat = solo_chat(feature: "geo")
    reply = chat.ask(paraphrase)
    expect(chat_requests).to eq(1)
    expect([reply.content, reply.cached?, reply.cache_tier]).to eq(["Paris", true, :semantic])
    expect(reply.similarity).to be_within(1e-5).of(similarity) # the index keeps float32
    expect([reply.provider, reply.model, reply.response_model]).to eq([:openai, "gpt-4o", "gpt-4o-2024-08-06"])
    message = chat.messages.last
    expect([message.role, message.content, message.status]).to eq(%w[assistant Paris complete])
    expect(reply.attempts.size).to eq(1)
    record = reply.attempts.first
    expect([record.cached?, record.cache_tier, record.feature, record.input_tokens]).to eq([true, :semantic, "geo", 0])
    expect(record.similarity).to eq(reply.similarity)
    expect(record.to_h).to include(cache_tier: "semantic", similarity: reply.similarity)
    # Both embeddings are recorded as the attempts they are, under the cache's feature.
    embedding_records = records.select { |r| r.model == "text-embedding-3-small" }
    expect(embedding_records.map { |r| [r.provider, r.feature, r.success?] })
      .to eq([[:embedder, "semantic_cache", true]] * 2)
    # The last user message is what was embedded.
    expect(embedder.requests.map { |r| r.json["input"] }).to eq([[question], [paraphrase]])
  end

  it "embeds the last user message as its chat sends it: scrubbed once, or as given with scrub: false" do
    LlmFailover.configuration.scrubber = LlmFailover::Scrubber.default
    card = "4111 1111 1111 1111"
    primary.enqueue({ text: "Refunded." }, { text: "Refunded too." })
    ask("Refund card #{card} please")
    ask("Refund card #{card} please", chat: solo_chat(scrub: false, cache_namespace: "raw"))
    expect(embedder.requests.map { |r| r.json["input"] })
      .to eq([["Refund card [CARD_1] please"], ["Refund card #{card} please"]])
  end

  it "misses below the threshold and asks the provider" do
    LlmFailover.configuration.semantic_cache = semantic(threshold: similarity + 0.01)
    primary.enqueue({ text: "Paris" }, { text: "Paris, again" })
    ask(question)
    reply = ask(paraphrase)
    expect([reply.content, reply.cached?]).to eq(["Paris, again", false])
    expect(chat_requests).to eq(2)
  end

  it "comes after the exact tier, which answers the same question without an embedding" do
    LlmFailover.configuration.cache = LlmFailover::MemoryCache.new
    primary.enqueue({ text: "Paris" })
    ask(question)
    embeddings = embedder.request_count
    reply = ask(question)
    expect([reply.cache_tier, reply.similarity, reply.attempts.first.cache_tier]).to eq([:exact, nil, :exact])
    expect(embedder.request_count).to eq(embeddings)
    expect(ask(paraphrase).cache_tier).to eq(:semantic)
  end

  it "never answers across tenants (cache_namespace)" do
    primary.enqueue({ text: "for tenant a" }, { text: "for tenant b" })
    ask(question, chat: solo_chat(cache_namespace: "a"))
    reply = ask(question, chat: solo_chat(cache_namespace: "b"))
    expect([reply.content, reply.cached?]).to eq(["for tenant b", false])
    expect(ask(paraphrase, chat: solo_chat(cache_namespace: "a")).content).to eq("for tenant a")
    expect(ask(paraphrase, chat: solo_chat(cache_namespace: "b")).content).to eq("for tenant b")
  end

  describe "everything but the last user message must be equal" do
    it "misses after another earlier message" do
      chat = solo_chat
      primary.enqueue({ text: "Hello" }, { text: "Paris" })
      ask("Hi, I am planning a trip", chat: chat)
      ask(question, chat: chat) # the cache holds this question after that first turn
      primary.enqueue({ text: "Paris, without the trip" })
      expect(ask(paraphrase).content).to eq("Paris, without the trip")
      other = solo_chat
      primary.enqueue({ text: "Lyon" }, { text: "Paris, after another turn" })
      ask("Hi, I am planning a holiday", chat: other, cache: false)
      expect(ask(paraphrase, chat: other).content).to eq("Paris, after another turn")
      # The same first turn (its answer served from the cache too): a hit.
      follow = solo_chat
      expect(ask("Hi, I am planning a trip", chat: follow).content).to eq("Hello")
      expect(ask(paraphrase, chat: follow).cache_tier).to eq(:semantic)
      expect(chat_requests).to eq(5)
    end

    it "misses for another model, other instructions or another temperature" do
      primary.enqueue({ text: "Paris" })
      ask(question)
      primary.enqueue({ text: "mini" }, { text: "instructed" }, { text: "warm" })
      expect(ask(paraphrase, chat: LlmFailover.chat(model: "gpt-4o-mini", provider: :openai)).content).to eq("mini")
      expect(ask(paraphrase, chat: solo_chat(instructions: "Answer in French")).content).to eq("instructed")
      expect(ask(paraphrase, chat: solo_chat(temperature: 0.9)).content).to eq("warm")
      expect(ask(paraphrase).cache_tier).to eq(:semantic)
    end

    it "misses for another schema or JSON mode" do
      schema = { "type" => "object", "properties" => { "city" => { "type" => "string" } }, "required" => ["city"],
                 "additionalProperties" => false }
      other = { "type" => "object", "properties" => { "town" => { "type" => "string" } }, "required" => ["town"],
                "additionalProperties" => false }
      primary.enqueue({ json: { "city" => "Paris" } }, { json: { "town" => "Paris" } }, { json: { "x" => 1 } })
      ask(question, chat: solo_chat.with_schema(schema))
      expect(ask(paraphrase, chat: solo_chat.with_schema(other)).json).to eq("town" => "Paris")
      expect(ask(paraphrase, chat: solo_chat.with_json_mode).json).to eq("x" => 1)
      hit = ask(paraphrase, chat: solo_chat.with_schema(schema))
      expect([hit.cache_tier, hit.json]).to eq([:semantic, { "city" => "Paris" }])
    end
  end

  describe "answers it never writes" do
    def expect_nothing_written
      expect(index.size).to eq(0)
    end

    it "a refusal" do
      primary.enqueue({ text: "I can't help with that", finish_reason: "content_filter" })
      ask(question)
      expect_nothing_written
    end

    it "an answer cut by a token limit, even one the caller set" do
      primary.enqueue({ text: "Par", finish_reason: "length" })
      ask(question, max_tokens: 1)
      expect_nothing_written
    end

    it "a call for tools" do
      primary.enqueue({ text: "Let me look that up", finish_reason: "tool_calls" })
      ask(question)
      expect_nothing_written
    end

    it "a failed call" do
      LlmFailover.configuration.max_retries = 0
      primary.enqueue({ error: :server })
      expect { ask(question) }.to raise_error(LlmFailover::ServerError)
      expect_nothing_written
    end

    it "a cancelled one" do
      chat = solo_chat
      primary.enqueue({ chunks: %w[Par is is the capital], chunk_delay: 0.05 })
      reply = ask(question, chat: chat) { |_chunk| chat.cancel! }
      expect(reply.cancelled?).to be(true)
      expect_nothing_written
    end

    it "an answer that is not the JSON asked for" do
      LlmFailover.configuration.max_retries = 0
      primary.enqueue({ text: "Paris, surely" })
      expect { ask(question, chat: solo_chat.with_json_mode) }.to raise_error(LlmFailover::InvalidResponseError)
      expect_nothing_written
    end
  end

  it "is skipped with cache: false, reads and writes alike" do
    primary.enqueue({ text: "Paris" }, { text: "Paris, fresh" }, { text: "Paris, fresh again" })
    ask(question, cache: false)
    expect([index.size, embedder.request_count]).to eq([0, 0])
    ask(question)
    reply = ask(paraphrase, cache: false)
    expect([reply.content, reply.cached?]).to eq(["Paris, fresh again", false])
    expect(embedder.request_count).to eq(1)
  end

  it "is skipped while the embedder fails: the call goes on, with one warning for the outage" do
    LlmFailover.configuration.max_retries = 0
    embedder.enqueue_embeddings({ error: :server }, { error: :server })
    primary.enqueue({ text: "Paris" }, { text: "Paris, again" }, { text: "Paris, once more" })
    expect(ask(question).content).to eq("Paris")
    expect(ask(paraphrase).content).to eq("Paris, again")
    expect(index.size).to eq(0) # no vector, nothing to write
    expect(log.string.scan("semantic cache skipped").size).to eq(1)
    # Back: the tier works again, and the next outage is warned about again.
    ask(question)
    expect(ask(paraphrase).cache_tier).to eq(:semantic)
    embedder.enqueue_embeddings({ error: :server })
    ask("Something else entirely")
    expect(log.string.scan("semantic cache skipped").size).to eq(2)
  end

  it "is skipped when the embedder is slower than its budget" do
    LlmFailover.configuration.semantic_cache = semantic(budget: 0.2)
    embedder.enqueue_embeddings({ delay_headers: SpecTime.scaled(5) })
    primary.enqueue({ text: "Paris" })
    reply = ask(question)
    expect([reply.content, reply.cached?]).to eq(["Paris", false])
    expect(log.string).to include("semantic cache skipped", "LlmFailover::TimeoutError")
  end

  it "is skipped for a chat whose last message is not the user's" do
    chat = solo_chat
    primary.enqueue({ text: "Paris" }, { text: "Paris, completed" })
    ask(question, chat: chat)
    chat.complete
    expect(embedder.request_count).to eq(1)
  end

  it "survives an index that raises: a miss, warned once" do
    broken = Class.new do
      def add(**) = nil
      def nearest(**) = raise(IOError, "index down")
      def clear = nil
      def size = 0
    end.new
    LlmFailover.configuration.semantic_cache = semantic.tap { |s| s.instance_variable_set(:@index, broken) }
    primary.enqueue({ text: "Paris" }, { text: "Paris, again" })
    ask(question)
    expect(ask(paraphrase).content).to eq("Paris, again")
    expect(log.string.scan("semantic cache read failed").size).to eq(1)
  end

  it "validates its options" do
    expect { semantic(threshold: 1.5) }.to raise_error(LlmFailover::ConfigurationError, /threshold/)
    expect { LlmFailover::SemanticCache.new(embed_model: "e", provider: :embedder, index: Object.new) }
      .to raise_error(LlmFailover::ConfigurationError, /#add, #nearest/)
    expect { LlmFailover.configuration.semantic_cache = Object.new }.to raise_error(LlmFailover::ConfigurationError)
  end
end
