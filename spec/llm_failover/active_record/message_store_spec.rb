# frozen_string_literal: true

require_relative "../../active_record/ar_spec_helper"

module StoreQueriesSpec
  # A lookup the model calls.
  class Weather < LlmFailover::Tool
    description "Current weather"
    param :city, type: :string
    def execute(city:) = "sunny in #{city}"
  end
end

# What the ActiveRecord store asks the database for in one ask, counted from the
# sql.active_record events: the messages are read with one query whether or not the
# chat has tool calls (the tool_calls table is read only once some message has calls),
# and the answer's row is started from what that read saw, without a SELECT of its own.
ArSpec.describe "The ActiveRecord store's queries" do
  include_context "with fake providers"

  let(:chat) { Chat.create!(model: "gpt-4o", provider: "openai") }

  # The statements of the block, schema lookups and transaction markers left out.
  def statements
    sqls = []
    subscriber = ActiveSupport::Notifications.subscribe("sql.active_record") do |*, payload|
      sqls << payload[:sql] unless %w[SCHEMA TRANSACTION].include?(payload[:name])
    end
    yield
    sqls
  ensure
    ActiveSupport::Notifications.unsubscribe(subscriber)
  end

  def messages_reads(sqls) = sqls.grep(/\ASELECT "messages"\.\*.* FROM "messages" WHERE "messages"\."chat_id" = \S+ ORDER BY "messages"\."id" ASC\z/)
  def tool_call_reads(sqls) = sqls.grep(/\ASELECT "tool_calls"\.\*/)
  def last_row_reads(sqls) = sqls.grep(/ORDER BY "messages"\."id" DESC LIMIT/)
  def streaming_checks(sqls) = sqls.grep(/\ASELECT 1 AS one FROM "messages" .*"status" = /)

  it "reads a chat without tool calls once per ask, and never the tool_calls table" do
    primary.enqueue({ text: "Hello." }, { text: "Fine." })
    chat.ask("Hi") # a chat with history
    sqls = statements { Chat.find(chat.id).ask("How are you?") }

    expect(messages_reads(sqls).size).to eq(1)
    expect(tool_call_reads(sqls)).to eq([])
    expect(last_row_reads(sqls)).to eq([]) # start_assistant knew the last row from the read
    expect(streaming_checks(sqls)).to eq([]) # nor asked whether an answer streams: the read said
    expect(Chat.find(chat.id).messages.map(&:role)).to eq(%w[user assistant user assistant])
  end

  it "reads the messages once per model turn, the tool_calls table only once a message has calls" do
    primary.enqueue({ tool_calls: [{ name: "weather", arguments: { "city" => "Oslo" }, id: "call_w" }] },
                    { text: "Sunny in Oslo." })
    sqls = statements { Chat.find(chat.id).with_tool(StoreQueriesSpec::Weather).ask("Weather in Oslo?") }

    reads = sqls.each_index.select { |i| messages_reads([sqls[i]]).any? }
    expect(reads.size).to eq(2) # once per model turn: the turn's results join the read, not a new one
    stored = sqls.index { |s| s.start_with?('INSERT INTO "tool_calls"') }
    # every read after the calls were stored brings them, none before
    expect(tool_call_reads(sqls).size).to eq(reads.count { |i| i > stored })
    expect(tool_call_reads(sqls).size).to be_positive
    expect(last_row_reads(sqls)).to eq([])
    expect(streaming_checks(sqls)).to eq([])
    expect(Chat.find(chat.id).messages.map { |m| [m.role, m.content] })
      .to eq([["user", "Weather in Oslo?"], ["assistant", ""], ["tool", "sunny in Oslo"], ["assistant", "Sunny in Oslo."]])
    expect(Chat.find(chat.id).messages[1].tool_calls.map(&:status)).to eq([:succeeded])
  end

  it "keeps the flag it reads off the records the app gets" do
    primary.enqueue({ text: "Hello." })
    chat.ask("Hi")
    message = chat.llm_store.messages.first
    expect(message.attributes.keys).to eq(Message.column_names)
  end
end
