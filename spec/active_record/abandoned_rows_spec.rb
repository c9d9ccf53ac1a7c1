# frozen_string_literal: true

require_relative "ar_spec_helper"

# Issue 23, item 12: an assistant row a dead process left "streaming" (a job's process
# killed mid-answer) is settled by a later call on the chat: failed, with the reason,
# its partial text kept. A real forked process, killed with SIGKILL while its
# FakeProvider stream stalls.
ArSpec.describe "an assistant row a dead process left streaming" do
  include_context "with fake providers"

  let(:chat) { Chat.create!(model: "gpt-4o", provider: "openai") }

  def read_line(io, limit = 60)
    raise "nothing from the child after #{limit} s" unless io.wait_readable(limit)

    io.gets
  end

  # Forks a process that asks +text+ on the chat and is killed with SIGKILL once its
  # answer streams (the FakeProvider stalls after the first word).
  def killed_mid_answer(text)
    primary.enqueue({ text: "half an answer", stall_after: 1 })
    id = chat.id # created here, not in the child
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      Chat.find(id).ask(text) { |_chunk| writer.puts("streaming") }
      exit!(0)
    rescue Exception # rubocop:disable Lint/RescueException
      exit!(1)
    end
    writer.close
    expect(read_line(reader)).to eq("streaming\n")
    Process.kill(:KILL, pid)
    Process.wait(pid)
  ensure
    reader&.close
  end

  def assistant_rows
    raw_rows("SELECT status, failure_reason FROM messages WHERE chat_id = ? AND role = 'assistant' ORDER BY id", chat.id)
      .map(&:values)
  end

  it "is settled as failed when a later complete answers the same turn" do
    killed_mid_answer("What is up?")
    expect(assistant_rows).to eq([["streaming", nil]])
    primary.default = { text: "the whole answer" }
    reply = Chat.find(chat.id).complete
    expect(reply.content).to eq("the whole answer")
    expect(assistant_rows.map(&:first)).to eq(%w[failed complete])
    expect(assistant_rows.first.last).to include("a later call answered the same turn")
    expect(Chat.find(chat.id).messages.map { |m| [m.role, m.status] })
      .to eq([%w[user complete], %w[assistant failed], %w[assistant complete]])
  end

  it "is settled as failed by a later ask once it is older than a call can last, and never sent" do
    LlmFailover.configure do |c|
      c.max_retries = 0
      c.request_timeout = 0.4
      c.first_token_timeout = 0.4
      c.idle_timeout = 0.4
      c.retry_max_interval = 0.1
    end
    killed_mid_answer("First question")
    primary.default = { text: "second answer" }
    sleep 1.1 # past 2 x (max_retries + 1) x (request_timeout + retry_max_interval)
    expect(Chat.find(chat.id).ask("Second question").content).to eq("second answer")
    expect(assistant_rows.map(&:first)).to eq(%w[failed complete])
    expect(assistant_rows.first.last).to include("longer than a call can last")
    expect(sent_messages(primary.requests.last)).to eq([%w[user First\ question], %w[user Second\ question]])
  end

  it "is left streaming while its call may still be running" do
    LlmFailover.configure do |c|
      c.request_timeout = 60
      c.first_token_timeout = 60
      c.idle_timeout = 60
    end
    killed_mid_answer("First question")
    primary.default = { text: "second answer" }
    Chat.find(chat.id).ask("Second question") # another turn: the first may still be answering elsewhere
    expect(assistant_rows.map(&:first)).to eq(%w[streaming complete])
  end
end
