# frozen_string_literal: true

require_relative "ar_spec_helper"

# An answer's reasoning state (Reasoning; a call's ToolCall#signature), kept by the store
# with the assistant message and its calls and handed back by the transcript with the
# protocol and origin that made it: in the memory store, and in the ActiveRecord store
# read back through a fresh store, as a retried job would.
RSpec.shared_examples "a store of reasoning state" do
  let(:reasoning) { LlmFailover::Reasoning.new(state: "[{\"type\":\"reasoning\"}]", api: "responses", origin: "openai") }

  def answer(store, reasoning:, calls: [])
    store.add_user("Weather?")
    message = store.start_assistant(model: "gpt-5", provider: :openai)
    extra = calls.empty? ? {} : { tool_calls: calls }
    store.finish_assistant(message, content: "Let me look.", model: "gpt-5", provider: :openai, input_tokens: 1,
                                    output_tokens: 1, reasoning: reasoning, **extra)
  end

  it "keeps an answer's reasoning state and its calls' signatures, and hands them to the engine with their origin" do
    call = LlmFailover::ToolCall.new(id: "call_1", name: "weather", arguments: "{}", signature: "c2lnbmVk")
    answer(store, reasoning: reasoning, calls: [call])
    store.add_tool_result(call.start!.succeed!("sunny"))
    assistant = reread.conversation.find { |m| m.role == "assistant" }
    expect([assistant.reasoning, assistant.reasoning_api, assistant.reasoning_origin])
      .to eq(["[{\"type\":\"reasoning\"}]", "responses", "openai"])
    expect(assistant.tool_calls.sole.signature).to eq("c2lnbmVk")
    expect(LlmFailover::Chat::Transcript.engine_messages(reread.conversation)[1])
      .to eq(["assistant", "Let me look.", [["call_1", "weather", "{}", "c2lnbmVk"]], "[{\"type\":\"reasoning\"}]",
              :responses, "openai"])
  end

  it "keeps the origin of calls signed without a state of the answer's own (Gemini's)" do
    call = LlmFailover::ToolCall.new(id: "call_1", name: "weather", arguments: "{}", signature: "c2ln")
    answer(store, reasoning: LlmFailover::Reasoning.new(state: nil, api: "gemini", origin: "google"), calls: [call])
    store.add_tool_result(call.start!.succeed!("sunny"))
    expect(LlmFailover::Chat::Transcript.engine_messages(reread.conversation)[1])
      .to eq(["assistant", "Let me look.", [["call_1", "weather", "{}", "c2ln"]], nil, :gemini, "google"])
  end

  it "hands a plain answer back as it was when it carried none, and as text without its state" do
    answer(store, reasoning: nil)
    expect(LlmFailover::Chat::Transcript.engine_messages(reread.conversation)[1]).to eq(["assistant", "Let me look."])
    store.add_user("And tomorrow?")
    answer(store, reasoning: reasoning)
    expect(LlmFailover::Chat::Transcript.engine_messages(reread.conversation, tools: false).map(&:size).uniq).to eq([2])
  end
end

RSpec.describe LlmFailover::MemoryStore do
  let(:store) { described_class.new }

  def reread = store

  it_behaves_like "a store of reasoning state"
end

ArSpec.describe "The ActiveRecord store's reasoning state" do
  let(:chat) { Chat.create!(model: "gpt-4o", provider: "openai") }
  let(:store) { chat.llm_store }

  def reread = Chat.find(chat.id).llm_store

  it_behaves_like "a store of reasoning state"

  it "keeps it out of a row's #inspect" do
    call = LlmFailover::ToolCall.new(id: "call_1", name: "weather", arguments: "{}", signature: "c2lnbmVkLXNlY3JldA")
    store.add_user("Weather?")
    message = store.start_assistant(model: "gpt-5", provider: :openai)
    store.finish_assistant(message, content: "", model: "gpt-5", provider: :openai, input_tokens: 1, output_tokens: 1,
                                    tool_calls: [call], reasoning: LlmFailover::Reasoning.new(state: "ZW5jcnlwdGVk",
                                                                                              api: "responses", origin: "openai"))
    row = LlmFailover::ActiveRecord::ToolCallRow.for(Message).sole
    expect([Message.find(message.id).inspect, row.inspect].join).not_to include("ZW5jcnlwdGVk", "c2lnbmVkLXNlY3JldA")
    expect(Message.find(message.id).inspect).to include('reasoning_api: "responses"')
  end

  it "answers on a table installed before reasoning state, keeping none" do
    ActiveRecord::Base.connection_pool.with_connection do |c|
      LlmFailover::ActiveRecord.create_tables!(connection: c, chats: "old_chats", messages: "old_messages",
                                               attempts: "old_attempts", force: true)
      %i[reasoning reasoning_api reasoning_origin].each { |column| c.remove_column(:old_messages, column) }
      c.remove_column(:old_message_tool_calls, :signature)
    end
    stub_const("OldMessage", Class.new(ActiveRecord::Base) { self.table_name = "old_messages" })
    stub_const("OldChat", Class.new(ActiveRecord::Base) { self.table_name = "old_chats" })
    OldChat.acts_as_llm_chat(messages: :old_messages, message_class: "OldMessage", foreign_key: "old_chat_id")
    OldMessage.acts_as_llm_message(chat: :old_chat, chat_class: "OldChat", foreign_key: "old_chat_id")
    old = OldChat.create!(model: "gpt-5", provider: "openai").llm_store
    call = LlmFailover::ToolCall.new(id: "call_1", name: "weather", arguments: "{}", signature: "c2ln")
    old.add_user("Weather?")
    message = old.start_assistant(model: "gpt-5", provider: :openai)
    old.finish_assistant(message, content: "", model: "gpt-5", provider: :openai, input_tokens: 1, output_tokens: 1,
                                  tool_calls: [call], reasoning: LlmFailover::Reasoning.new(state: "x", api: "gemini",
                                                                                            origin: "google"))
    old.add_tool_result(call.start!.succeed!("sunny"))
    reread = OldChat.last.llm_store.conversation
    expect(LlmFailover::Chat::Transcript.engine_messages(reread)[1]).to eq(["assistant", "", [["call_1", "weather", "{}"]]])
  ensure
    ActiveRecord::Base.connection_pool.with_connection do |c|
      %w[old_message_tool_calls old_messages old_chats old_attempts].each { |t| c.drop_table(t, if_exists: true) }
    end
  end

  describe "through a chat record, across a reload" do
    let(:fp) { start_fake_provider(strict_transcript: true) }

    weather = Class.new(LlmFailover::Tool) do
      tool_name "weather"
      def execute = "sunny"
    end

    before do
      LlmFailover.configure do |c|
        c.provider :google, api: :gemini, api_key: "AIza-reload-key", base_url: fp.on(:google).base_url(:gemini)
        c.max_retries = 0
        fast_policy(c)
      end
    end

    it "sends the signatures a process stored back from another" do
      fp.on(:google).enqueue({ tool_calls: [{ name: "weather" }] }, { error: :server })
      record = Chat.create!(model: "gemini-3-pro-preview", provider: "google")
      expect { record.with_tool(weather).ask("Weather?") }.to raise_error(LlmFailover::ServerError)

      fp.on(:google).enqueue({ text: "Sunny." })
      expect(Chat.find(record.id).with_tool(weather).complete.content).to eq("Sunny.")
      signatures = fp.on(:google).requests.last.json["contents"].flat_map { |c| c["parts"] }.filter_map { |p| p["thoughtSignature"] }
      expect(signatures.size).to eq(1)
      expect(LlmFailover::Testing::FakeProvider::SealedState.returns_to?(signatures[0], api: :gemini, lane: :google)).to be(true)
    end
  end
end
