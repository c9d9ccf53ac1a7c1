# frozen_string_literal: true

require_relative "ar_spec_helper"

# The store interface for tool calls (MemoryStore's header), as the loop relies on it
# to resume after a crash: held by the memory store and by the ActiveRecord store on
# SQLite and PostgreSQL alike. The ActiveRecord store is read back through a fresh
# store over a freshly loaded record, as a retried job would.
RSpec.shared_examples "a store of tool calls" do
  def call(id, name = "weather", arguments = { "city" => "Oslo" })
    LlmFailover::ToolCall.new(id: id, name: name, arguments: arguments, provider: :openai, model: "gpt-4o")
  end

  def answer_with(store, *calls)
    store.add_user("Weather in Oslo and Bergen?")
    message = store.start_assistant(model: "gpt-4o", provider: :openai)
    store.finish_assistant(message, content: "", model: "gpt-4o", provider: :openai, input_tokens: 5,
                                    output_tokens: 7, tool_calls: calls)
  end

  it "stores an answer with its calls, pending, in the order the model gave them" do
    answer_with(store, call("call_1"), call("call_2", "time", {}))
    assistant = reread.conversation.find { |m| m.role == "assistant" }
    expect(assistant.tool_calls.map { |c| [c.id, c.name, c.status, c.arguments] })
      .to eq([["call_1", "weather", :pending, { "city" => "Oslo" }], ["call_2", "time", :pending, {}]])
    expect(assistant.tool_calls.first.provider).to eq(:openai)
  end

  it "keeps a call running before its result, then the result as a role tool message after the answer" do
    first = call("call_1")
    answer_with(store, first)
    store.save_tool_call(first.start!)
    expect(reread.tool_call("call_1").status).to eq(:running)
    expect(reread.conversation.map(&:role)).to eq(%w[user assistant]) # no result yet

    first.succeed!({ "temp" => 21 })
    result = store.add_tool_result(first)
    expect([result.role, result.content, result.tool_call_id, result.is_error]).to eq(["tool", '{"temp":21}', "call_1", false])
    conversation = reread.conversation
    expect(conversation.map(&:role)).to eq(%w[user assistant tool])
    expect(conversation.last.tool_call_id).to eq("call_1")
    expect(conversation[1].tool_calls.sole.status).to eq(:succeeded)
    expect(reread.tool_call("call_1").content).to eq('{"temp":21}')
  end

  it "stores a result once: given again it changes nothing" do
    first = call("call_1")
    answer_with(store, first)
    first.start!.succeed!("sunny")
    store.add_tool_result(first)
    store.add_tool_result(first)
    expect(reread.conversation.count { |m| m.role == "tool" }).to eq(1)
  end

  it "never writes a state over a result" do
    first = call("call_1")
    answer_with(store, first)
    first.start!
    store.save_tool_call(first)
    store.add_tool_result(first.succeed!("sunny"))
    stale = call("call_1").start! # a second process (or thread) that still saw it pending
    expect { store.save_tool_call(stale) }.to raise_error(ArgumentError, /is succeeded in the store/)
    parked = call("call_1")
    parked.await_approval! # a late decision on a call that has run
    expect { reread.save_tool_call(parked) }.to raise_error(ArgumentError, /is succeeded in the store/)
    expect { reread.save_tool_call(call("call_1").start!.succeed!("rainy")) }
      .to raise_error(ArgumentError, /is final \(succeeded\): store it with add_tool_result/)
    expect { reread.save_tool_call(call("call_9").start!) }.to raise_error(ArgumentError, /not stored/)
    expect(reread.tool_call("call_1").status).to eq(:succeeded)
    expect(reread.tool_call("call_1").content).to eq("sunny")
  end

  it "never approves a denied call, nor runs one" do
    first = call("call_1")
    first.await_approval!
    answer_with(store, first)
    store.add_tool_result(reread.tool_call("call_1").deny!("no"))
    late = call("call_1")
    expect { reread.save_tool_call(late.approve!) }.to raise_error(ArgumentError, /is denied in the store/)
    expect { reread.save_tool_call(call("call_1").start!) }.to raise_error(ArgumentError, /is denied in the store/)
    expect(reread.tool_call("call_1").status).to eq(:denied)
  end

  it "marks a failed, rejected or denied call's result message is_error" do
    calls = [call("a"), call("b"), call("c")]
    answer_with(store, *calls)
    store.add_tool_result(calls[0].start!.fail!(RuntimeError.new("boom")))
    store.add_tool_result(calls[1].reject!("bad arguments"))
    store.add_tool_result(calls[2].deny!("not now"))
    tools = reread.conversation.select { |m| m.role == "tool" }
    expect(tools.map { |m| [m.tool_call_id, m.is_error] }).to eq([["a", true], ["b", true], ["c", true]])
    expect(tools.first.content).to eq("RuntimeError: boom")
    expect(reread.tool_call("a").error.class_name).to eq("RuntimeError")
  end

  it "keeps a call awaiting approval, then approved, across stores" do
    first = call("call_1")
    first.await_approval!
    answer_with(store, first)
    stored = reread.tool_call("call_1")
    expect(stored.awaiting_approval?).to be(true)
    reread.save_tool_call(stored.approve!)
    expect(reread.tool_call("call_1").status).to eq(:approved)
    expect(reread.tool_call("nope")).to be_nil
  end
end

RSpec.shared_examples "decisions on stored tool calls" do
  let(:decisions) { LlmFailover::Tools::Decisions }

  def parked(store, id = "call_1")
    call = LlmFailover::ToolCall.new(id: id, name: "refund", arguments: { "order" => 7 })
    call.await_approval!
    store.add_user("Refund order 7")
    message = store.start_assistant(model: "gpt-4o", provider: :openai)
    store.finish_assistant(message, content: "", model: "gpt-4o", provider: :openai, input_tokens: 1,
                                    output_tokens: 1, tool_calls: [call])
    call
  end

  it "approves a parked call: approved, not awaiting, nothing run" do
    parked(store)
    decisions.approve(reread, "call_1")
    stored = reread.tool_call("call_1")
    expect([stored.status, stored.awaiting_approval?]).to eq([:approved, false])
    expect(reread.conversation.map(&:role)).to eq(%w[user assistant])
    expect { decisions.approve(reread, "call_1") }.to raise_error(ArgumentError, /approved, not awaiting approval/)
  end

  it "denies a parked call: its result says so, marked as an error" do
    parked(store)
    decisions.deny(reread, "call_1", reason: "over the limit")
    result = reread.conversation.last
    expect([result.role, result.tool_call_id, result.content, result.is_error])
      .to eq(["tool", "call_1", "The user denied this call: over the limit", true])
    expect { decisions.approve(reread, "call_1") }.to raise_error(ArgumentError, /denied, not awaiting/)
  end

  it "settles a call left running with a result or an error, and nothing else" do
    a = parked(store, "a")
    expect { decisions.settle(reread, "a", result: "done") }.to raise_error(ArgumentError, /only a call left running/)
    store.save_tool_call(a.approve!)
    store.save_tool_call(a.start!)
    expect { decisions.settle(reread, "a", result: 1, error: "x") }.to raise_error(ArgumentError, /one of them/)
    decisions.settle(reread, "a", error: "the refund bounced")
    expect(reread.tool_call("a").status).to eq(:failed)
    expect(reread.conversation.last.content).to eq("the refund bounced")
    expect { decisions.settle(reread, "nope", result: 1) }.to raise_error(ArgumentError, /no tool call "nope"/)
  end
end

RSpec.describe LlmFailover::MemoryStore do
  let(:store) { described_class.new }

  def reread = store

  it_behaves_like "a store of tool calls"
  it_behaves_like "decisions on stored tool calls"
end

ArSpec.describe LlmFailover::ActiveRecord::MessageStore do
  include_context "with fake providers"

  let(:chat) { Chat.create!(model: "gpt-4o", provider: "openai") }
  let(:store) { chat.llm_store }

  def reread = Chat.find(chat.id).llm_store

  it_behaves_like "a store of tool calls"
  it_behaves_like "decisions on stored tool calls"

  it "lets one process take a call: a second claim to run it, or a late approval, is refused" do
    call = LlmFailover::ToolCall.new(id: "call_1", name: "refund", arguments: "{}")
    call.await_approval!
    store.add_user("Refund")
    m = store.start_assistant(model: "gpt-4o", provider: :openai)
    store.finish_assistant(m, content: "", model: "gpt-4o", provider: :openai, input_tokens: 1, output_tokens: 1,
                              tool_calls: [call])
    chat.approve_tool_call("call_1") # the web request
    job_a = reread.tool_call("call_1")
    job_b = reread.tool_call("call_1")
    reread.save_tool_call(job_a.start!)
    expect { reread.save_tool_call(job_b.start!) }.to raise_error(ArgumentError, /is running in the store/)
    expect { Chat.find(chat.id).deny_tool_call("call_1", reason: "no") }.to raise_error(ArgumentError, /running/)
  end

  it "writes the calls to the tool_calls table and the result to messages" do
    call = LlmFailover::ToolCall.new(id: "toolu_1", provider_id: "toolu_1", name: "weather", arguments: '{"city":"Oslo"}',
                                     provider: :anthropic, model: "claude-sonnet-4-6")
    store.add_user("Oslo?")
    message = store.start_assistant(model: "claude-sonnet-4-6", provider: :anthropic)
    store.finish_assistant(message, content: "Let me look.", model: "claude-sonnet-4-6", provider: :anthropic,
                                    input_tokens: 1, output_tokens: 1, tool_calls: [call])
    store.save_tool_call(call.start!)
    row = raw_rows("SELECT * FROM tool_calls").sole
    expect(row.slice("message_id", "call_id", "name", "arguments", "status", "provider", "model"))
      .to eq("message_id" => message.id, "call_id" => "toolu_1", "name" => "weather", "arguments" => '{"city":"Oslo"}',
             "status" => "running", "provider" => "anthropic", "model" => "claude-sonnet-4-6")
    expect(row["started_at"]).not_to be_nil
    store.add_tool_result(call.succeed!("12 C"))
    row = raw_rows("SELECT * FROM tool_calls").sole
    expect(row.values_at("status", "result")).to eq(["succeeded", "12 C"])
    expect(row["finished_at"]).not_to be_nil
    expect(raw_rows("SELECT role, content, tool_call_id FROM messages ORDER BY id").last)
      .to eq("role" => "tool", "content" => "12 C", "tool_call_id" => "toolu_1")
  end

  it "says, when tools are added, that a table installed before tools lacks them, and which generator adds them" do
    ActiveRecord::Base.connection_pool.with_connection do |c|
      LlmFailover::ActiveRecord.create_tables!(connection: c, chats: "old_chats", messages: "old_messages",
                                               attempts: "old_attempts", force: true)
      c.drop_table(:old_message_tool_calls)
    end
    stub_const("OldMessage", Class.new(ActiveRecord::Base) { self.table_name = "old_messages" })
    stub_const("OldChat", Class.new(ActiveRecord::Base) { self.table_name = "old_chats" })
    OldChat.acts_as_llm_chat(messages: :old_messages, message_class: "OldMessage", foreign_key: "old_chat_id")
    OldMessage.acts_as_llm_message(chat: :old_chat, chat_class: "OldChat", foreign_key: "old_chat_id")
    weather = Class.new(LlmFailover::Tool) do
      tool_name "weather"
      def execute = "sunny"
    end
    old = OldChat.create!(model: "gpt-4o", provider: "openai")
    expect { old.with_tool(weather) }
      .to raise_error(LlmFailover::ConfigurationError, /no old_message_tool_calls table.*llm_failover:upgrade/)
    old.ask("Hi") # without tools it answers as before
  ensure
    ActiveRecord::Base.connection_pool.with_connection do |c|
      %w[old_message_tool_calls old_messages old_chats old_attempts].each { |t| c.drop_table(t, if_exists: true) }
    end
  end

  it "never sees another chat's calls" do
    other = Chat.create!(model: "gpt-4o", provider: "openai").llm_store
    other.add_user("Hi")
    m = other.start_assistant(model: "gpt-4o", provider: :openai)
    other.finish_assistant(m, content: "", model: "gpt-4o", provider: :openai, input_tokens: 1, output_tokens: 1,
                              tool_calls: [LlmFailover::ToolCall.new(id: "call_x", name: "weather", arguments: "{}")])
    expect(store.tool_call("call_x")).to be_nil
    expect { store.save_tool_call(LlmFailover::ToolCall.new(id: "call_x", name: "weather", arguments: "{}").start!) }
      .to raise_error(ArgumentError, /not stored in this chat/)
  end
end
