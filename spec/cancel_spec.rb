# frozen_string_literal: true

require "spec_helper"

RSpec.describe "Chat#cancel!" do
  include_context "with fake providers"

  before { LlmFailover.configuration.max_retries = 0 }

  # Asks on a thread and calls cancel! from this one once +ready+ says so.
  def ask_and_cancel(chat, ready:)
    shown = +""
    asker = Thread.new { chat.ask("Tell me a long story") { |c| shown << c.content } }
    Thread.pass until ready.call(shown) || !asker.alive?
    chat.cancel!
    [asker.value, shown]
  end

  it "stops a stalled stream from another thread: a cancelled Reply with the partial text, no failover" do
    primary.enqueue({ chunks: ["Once ", "upon ", "a ", "time"], stall_after: 2 })
    chat = failover_chat
    reply, shown = ask_and_cancel(chat, ready: ->(s) { s == "Once upon " })

    expect(reply).to be_cancelled
    expect([reply.content, shown, reply.provider, reply.failover?]).to eq(["Once upon ", "Once upon ", :openai, false])
    expect(reply.attempts.map { |a| [a.cancelled?, a.success?, a.provider] }).to eq([[true, false, :openai]])
    expect(chat.messages.map { |m| [m.role, m.status, m.content] })
      .to eq([["user", "complete", "Tell me a long story"], ["assistant", "cancelled", "Once upon "]])
    expect(backup.request_count).to eq(0)
  end

  it "stops a provider that has sent nothing yet, and the chat answers the next ask" do
    primary.enqueue({ chunks: ["late"], delay_first_token: 30 })
    chat = failover_chat
    reply, = ask_and_cancel(chat, ready: ->(_) { primary.request_count == 1 })
    expect([reply.cancelled?, reply.content]).to eq([true, ""])
    expect(chat.messages.last.status).to eq("cancelled")

    primary.enqueue({ chunks: ["Hello"] })
    again = chat.ask("Short one") { |_c| }
    expect([again.cancelled?, again.content]).to eq([false, "Hello"])
    # The cancelled answer is not sent back to the provider.
    expect(sent_messages(primary.requests.last).map(&:first)).to eq(%w[user user])
  end

  it "stops a stream that keeps coming, at the next delta" do
    primary.enqueue({ chunks: Array.new(400) { |i| "w#{i} " }, chunk_delay: 0.01 })
    chat = failover_chat
    reply, shown = ask_and_cancel(chat, ready: ->(s) { s.length > 20 })
    expect(reply).to be_cancelled
    expect(reply.content).to eq(shown)
    expect(reply.content.split.size).to be < 400
  end

  it "polls a cancel_check callable while the call runs, and stops the call when it says so" do
    primary.enqueue({ chunks: ["Once ", "upon ", "a ", "time"], stall_after: 2 })
    stop = Queue.new # the "other process": says yes once the call has streamed
    polls = Queue.new
    chat = failover_chat(cancel_check: -> { polls << true && !stop.empty? })
    shown = +""
    reply = chat.ask("Tell me a long story") { |c| stop << true if (shown << c.content) == "Once upon " }

    expect([reply.cancelled?, reply.content]).to eq([true, "Once upon "])
    expect(polls.size).to be >= 1
    expect(Thread.list.map(&:name)).not_to include("llm_failover cancel check") # its thread ended with the call
  end

  it "warns through the configured logger, not stderr, when the cancel check raises" do
    log = StringIO.new
    LlmFailover.configuration.logger = Logger.new(log)
    primary.enqueue({ chunks: ["Once ", "upon ", "a ", "time"], stall_after: 2 })
    raised = Queue.new
    chat = failover_chat(cancel_check: lambda {
      raised << true
      raise "database down"
    }, cancel_poll_interval: 0.01)
    asker = Thread.new { chat.ask("Tell me a long story") { |_c| nil } }
    expect do
      raised.pop
      Thread.pass until log.string.include?("database down") || !asker.alive?
      chat.cancel!
      asker.join
    end.not_to output.to_stderr
    expect(log.string).to include("llm_failover: the cancel check raised RuntimeError: database down")
  end

  it "does nothing to a chat with no call running, nor to a finished answer" do
    chat = failover_chat
    expect(chat.cancel!).to be(chat)
    primary.enqueue({ chunks: ["Done"] })
    reply = chat.ask("Hi")
    expect([reply.cancelled?, reply.content]).to eq([false, "Done"])
  end
end
