# frozen_string_literal: true

require_relative "ar_spec_helper"
require "async"
require "timeout"

# A call its caller stopped (spec/stopped_call_spec.rb) through AttemptLog: the cut
# attempt's row is in the table, committed, whatever stopped the call. On SQLite the
# sqlite3 gem raised the caller's own exception back at the write (it takes $! for an
# error of its own), and a killed thread's write was rolled back on every database.
ArSpec.describe "a stopped call's attempt row" do
  include_context "with fake providers"

  before do
    LlmFailover.configure do |c|
      c.usage_log = attempt_log
      c.first_token_timeout = 60
      c.idle_timeout = 60
      c.request_timeout = 60
    end
  end

  let(:chat) { Chat.create!(model: "gpt-4o", provider: "openai") }

  # What another process reads: committed rows only.
  def attempt_rows
    raw_rows("SELECT attempt, provider, success, error_class, error_message FROM llm_failover_attempts ORDER BY id")
      .map(&:values)
  end

  def assistant_status(record = chat)
    raw_rows("SELECT status FROM messages WHERE chat_id = ? AND role = 'assistant'", record.id).map { |r| r["status"] }
  end

  # The timeout must land while the attempt is out: the provider has sent a word and
  # says nothing more. On a loaded machine the call may not have got that far in the
  # time given (storing the prompt, connecting): then it is asked again, on a new chat,
  # with twice the time, until the timeout did land mid-attempt.
  it "is written when Timeout.timeout stops the call" do
    primary.default = { text: "a b c", stall_after: 1 }
    limit = 0.25
    loop do
      record = Chat.create!(model: "gpt-4o", provider: "openai")
      streamed = false
      expect { Timeout.timeout(limit) { record.ask("Hi") { |_| streamed = true } } }.to raise_error(Timeout::Error)
      if streamed
        expect(attempt_rows)
          .to eq([[1, "openai", 0, "LlmFailover::AbortedError", "stopped by its caller: Timeout::ExitException"]])
        expect(assistant_status(record)).to eq(["failed"])
        break
      end
      raise "no word streamed within #{limit} s" if limit > SpecTime.scaled(30)

      limit *= 2
      ActiveRecord::Base.connection.execute("DELETE FROM llm_failover_attempts")
    end
  end

  it "is written when the block raises, after the failed attempt before it" do
    LlmFailover.configuration.max_retries = 1
    LlmFailover.configuration.retry_interval = 0.01
    primary.enqueue({ error: :unavailable }, { chunks: %w[x y z] })
    expect { chat.ask("Hi") { |c| raise ArgumentError, "enough" if c.content == "y" } }
      .to raise_error(ArgumentError, "enough")
    expect(attempt_rows).to eq([[1, "openai", 0, "LlmFailover::ServiceUnavailableError", attempt_rows[0][4]],
                                [2, "openai", 0, "LlmFailover::AbortedError", "stopped by its caller: ArgumentError"]])
  end

  it "is written when the thread is killed, inside the app's transaction too" do
    primary.default = { delay_headers: 30 }
    jobs = [false, true].map do |in_transaction|
      Thread.new do
        ActiveRecord::Base.connection_pool.with_connection do
          record = Chat.find(chat.id)
          in_transaction ? Chat.transaction { record.ask("Hi") } : record.ask("Hi")
        end
      end.tap { |job| sleep 0.01 until primary.request_count == (in_transaction ? 2 : 1) }
    end
    jobs.each(&:kill)
    expect(jobs.map { |job| job.join(10) }).to eq(jobs)
    expect(attempt_rows).to eq([[1, "openai", 0, "LlmFailover::AbortedError", "stopped by its caller: the thread was killed"]] * 2)
  end

  it "is written when an Async task is stopped", :fiber_scheduler do
    # A first call outside the reactor, as in an eager-loaded app: ActiveRecord's lazy
    # requires read their files through the scheduler, which async 2.24 cannot do on
    # Ruby 3.1 (it asks for IO#timeout).
    primary.enqueue({ text: "warm" }, { text: "a b c", stall_after: 1 })
    plain = LlmFailover.chat(model: "gpt-4o", provider: :openai)
    plain.ask("Hi")
    seen = Queue.new
    Async do |task|
      call = task.async { plain.ask("Hi") { |c| seen << c.content } }
      task.sleep(0.01) while seen.empty?
      call.stop
    end.wait
    expect(attempt_rows).to eq([[1, "openai", 1, nil, nil],
                                [1, "openai", 0, "LlmFailover::AbortedError", "stopped by its caller: Async::Stop"]])
  end
end
