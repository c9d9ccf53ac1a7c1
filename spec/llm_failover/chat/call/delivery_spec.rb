# frozen_string_literal: true

require "spec_helper"

# Call::Delivery: what the store and the user's block see of one answer.
RSpec.describe LlmFailover::Call::Delivery do
  let(:store) { LlmFailover::MemoryStore.new }
  let(:chunks) { [] }
  let(:block) { ->(chunk) { chunks << chunk } }

  before do
    LlmFailover.configure do |c|
      c.provider :openai, api: :openai, api_key: "sk-test", base_url: "http://127.0.0.1:9/v1"
      c.provider :anthropic, api: :anthropic, api_key: "sk-ant-test", base_url: "http://127.0.0.1:9/v1"
    end
  end

  def target(provider, model)
    LlmFailover.configuration.providers.fetch(provider).target(model)
  end

  let(:primary) { target(:openai, "gpt-4o") }
  let(:backup) { target(:anthropic, "claude-sonnet-4-6") }

  def delivery(block: self.block, store: self.store)
    described_class.new(store: store, block: block, request_id: "req-1")
  end

  def assistant
    store.messages.find { |m| m.role == "assistant" }
  end

  it "stores each delta before the block gets it, numbering the chunks" do
    seen_by_block = []
    d = delivery(block: ->(chunk) { seen_by_block << [chunk.content, assistant.content.dup] })
    d.delta("Hel", primary)
    d.delta("lo", primary)

    expect(seen_by_block).to eq([%w[Hel Hel], %w[lo Hello]])
    expect(d.chunk_count).to eq(2)
    expect(d).to be_streamed
  end

  it "hands the block chunks naming the target and the request" do
    d = delivery
    d.delta("Hi", primary)

    chunk = chunks.first
    expect([chunk.content, chunk.model, chunk.provider, chunk.index, chunk.request_id])
      .to eq(["Hi", "gpt-4o", :openai, 0, "req-1"])
  end

  it "starts no stored message until something needs one" do
    delivery
    expect(store.messages).to be_empty
  end

  it "empties the partial answer on a reset and tells the block, numbering from 0 again" do
    d = delivery
    d.delta("half an ans", primary)
    d.reset(backup)
    d.delta("Whole", backup)

    expect(chunks.map { |c| [c.content, c.index, c.reset?] })
      .to eq([["half an ans", 0, false], ["", 0, true], ["Whole", 0, false]])
    expect([assistant.content, assistant.provider, assistant.model]).to eq(["Whole", "anthropic", "claude-sonnet-4-6"])
  end

  it "finishes the stored message once, with its tokens" do
    d = delivery
    d.delta("Hello", primary)
    d.finish(primary, content: "Hello", model: "gpt-4o", provider: primary, input_tokens: 3, output_tokens: 1)
    d.mark_failed(primary) # settled already: no effect

    expect([assistant.status, assistant.content, assistant.input_tokens, assistant.output_tokens])
      .to eq(["complete", "Hello", 3, 1])
  end

  it "marks a failed answer failed, naming the target, and out of the conversation" do
    d = delivery
    d.delta("par", primary)
    d.mark_failed(primary)

    expect([assistant.status, assistant.provider, assistant.model]).to eq(["failed", "openai", "gpt-4o"])
    expect(store.conversation.map(&:role)).not_to include("assistant")
  end

  it "marks an answer the call was torn down in failed without naming a target" do
    d = delivery
    d.mark_failed(primary, named: false)

    expect(assistant.status).to eq("failed")
  end

  it "keeps a cancelled answer's partial text, and without a block still stores" do
    d = delivery(block: nil)
    d.delta("par", primary)
    d.cancel(primary, content: "par")

    expect(d).not_to be_streamed
    expect([assistant.status, assistant.content]).to eq(%w[cancelled par])
  end

  it "marks a cancelled answer failed in a store without #cancel_assistant" do
    list = SpecListStore.new
    d = delivery(store: list)
    d.delta("par", primary)
    d.cancel(primary, content: "par")

    expect(list.messages.last.status).to eq("failed")
  end

  it "hands a whole answer to a block in word-sized chunks, and to the store whole without one" do
    d = delivery
    d.whole("one two three", model: "gpt-4o", stored_model: "gpt-4o-2024", provider: primary)
    expect(chunks.map(&:content).join).to eq("one two three")
    expect(chunks.size).to be > 1
    expect(chunks.map(&:index)).to eq((0...chunks.size).to_a)
    expect([assistant.content, assistant.model]).to eq(["one two three", "gpt-4o-2024"])

    quiet = LlmFailover::MemoryStore.new
    delivery(store: quiet, block: nil).whole("one two three", model: "gpt-4o", stored_model: "gpt-4o",
                                                              provider: primary)
    expect(quiet.messages.last.content).to eq("one two three")
  end

  it "restores placeholders split across deltas before they are stored or shown" do
    session = LlmFailover::Scrubber::Session.new(LlmFailover::Scrubber.default(email: true))
    placeholder = session.scrub("write to bob@example.com")[/\[EMAIL_\d+\]/]
    d = delivery
    d.restore_with(session, json: false)
    d.delta("Mail #{placeholder[0, 4]}", primary)
    d.delta("#{placeholder[4..]} today", primary)
    d.flush

    expect(chunks.map(&:content).join).to eq("Mail bob@example.com today")
    expect(chunks.map(&:content)).to all(satisfy { |text| !text.include?("[EMAIL") })
    expect(assistant.content).to eq("Mail bob@example.com today")
  end
end
