# frozen_string_literal: true

require_relative "ar_spec_helper"

ArSpec.describe "ActiveRecord chats under threads" do
  include_context "with fake providers"

  threads = 6
  turns = 3

  before do
    LlmFailover.configuration.max_retries = 0
    LlmFailover.configuration.usage_log = attempt_log
    primary.default = { chunks: ["primary ", "answer"] }
    backup.default = { chunks: ["backup ", "answer"] }
    # Three requests, whichever threads send them, fail over mid-stream.
    3.times { primary.enqueue({ chunks: ["lost ", "words ", "here"], cut_after: 2 }) }
  end

  it "writes six chats from six threads, each on its own connection, with nothing lost or doubled" do
    results = Array.new(threads) do |i|
      Thread.new do
        ActiveRecord::Base.connection_pool.with_connection do
          chat = Chat.create!(model: "gpt-4o", provider: "openai", backup_model: "claude-sonnet-4-6",
                              backup_provider: "anthropic", feature: "thread-#{i}")
          replies = Array.new(turns) do |turn|
            shown = +""
            reply = chat.ask("chat #{i} turn #{turn}") { |c| c.reset? ? shown.clear : shown << c.content }
            [reply, shown]
          end
          [chat.id, replies]
        end
      end
    end.map(&:value)

    results.each do |chat_id, replies|
      replies.each { |reply, shown| expect(shown).to eq(reply.content) }
      stored = Message.where(chat_id: chat_id).order(:id).map { |m| [m.role, m.content, m.status] }
      i = Chat.find(chat_id).feature.delete_prefix("thread-")
      expected = replies.each_with_index.flat_map do |(reply, _), turn|
        [["user", "chat #{i} turn #{turn}", "complete"], ["assistant", reply.content, "complete"]]
      end
      expect(stored).to eq(expected)
    end

    expect(Message.count).to eq(threads * turns * 2)
    expect(Message.where(role: "assistant").group(:provider, :content).count)
      .to eq(%w[openai primary\ answer] => 15, %w[anthropic backup\ answer] => 3)
    expect(primary.request_count).to eq(threads * turns)
    expect(backup.request_count).to eq(3)

    # Every request carried one chat's own history, in order.
    (primary.requests + backup.requests).each do |request|
      users = sent_messages(request).select { |role, _| role == "user" }.map(&:last)
      chat = users.first[/\Achat \d+/]
      expect(users).to eq(Array.new(users.size) { |turn| "#{chat} turn #{turn}" })
      expect(sent_messages(request).map(&:first)).to eq((%w[user assistant] * users.size)[0..-2])
    end

    attempts = LlmFailover::ActiveRecord::Attempt
    expect(attempts.count).to eq(threads * turns + 3)
    expect(attempts.distinct.count(:request_id)).to eq(threads * turns)
    expect(attempts.where(success: true).count).to eq(threads * turns)
    expect(attempts.where(success: false).pluck(:provider, :attempt).uniq).to eq([["openai", 1]])
  end
end
