# frozen_string_literal: true

require "test_helper"

# A Rails app's model test against the FakeProvider: `bin/rails test --seed 3` passes in
# any order (doc/rails.md, "Testing the app").
class ChatTest < ActiveSupport::TestCase
  def new_chat
    Chat.create!(model: "gpt-4o", provider: "openai", backup_model: "claude-sonnet-4-6", backup_provider: "anthropic")
  end

  # Four failures each: two of these tests would open the primary's circuit for the tests
  # after them, had each test not a state store of its own.
  3.times do |i|
    test "fails over when OpenAI is overloaded (#{i + 1})" do
      fake_llm.on(:openai).enqueue(*Array.new(4) { { error: :overloaded } })
      fake_llm.on(:anthropic).enqueue({ text: "Hi from the backup" })
      chat = new_chat
      assert_equal "Hi from the backup", chat.ask("Hello").content
      assert_equal 4, fake_llm.on(:openai).request_count # the first try and 3 retries
      assert_equal [%w[user complete], %w[assistant complete anthropic]],
                   chat.messages.map { |m| [m.role, m.status, m.provider].compact }
    end
  end

  test "the primary answers" do
    fake_llm.on(:openai).enqueue({ text: "Hi from OpenAI" })
    chat = new_chat
    chat.ask("Hello")
    assert_equal "openai", chat.messages.last.provider
    assert_equal 1, fake_llm.on(:openai).request_count
  end
end
