# frozen_string_literal: true

require_relative "ar_spec_helper"
require_relative "../support/engine_helpers"

# Issue 24, durable in jobs: the tool loop on chat records, on SQLite and PostgreSQL.
# A call is stored running before the tool runs and its result before the next turn
# is sent; a job retried after a crash resumes from the stored transcript. The crashes
# are real: a forked job process killed with SIGKILL. Every tool run appends a line to
# a file, which is how the parent counts runs across processes.
module DurableToolSpec
  # Charges a card: not idempotent. Each run is a line in RUNS.
  class Charge < LlmFailover::Tool
    description "Charges the customer's card"
    param :amount, type: :integer

    class << self
      attr_accessor :runs_file, :after_run
    end

    def execute(amount:)
      File.open(Charge.runs_file, "a") { |f| f.puts("charge #{amount} by #{Process.pid}") }
      Charge.after_run&.call
      "charged #{amount}"
    end
  end

  # Looks a parcel up: safe to run again.
  class Track < LlmFailover::Tool
    description "Where a parcel is"
    param :parcel, type: :string
    idempotent!

    def execute(parcel:)
      File.open(Charge.runs_file, "a") { |f| f.puts("track #{parcel} by #{Process.pid}") }
      Charge.after_run&.call
      "#{parcel}: in Oslo"
    end
  end

  # Refunds: a person approves first.
  class Refund < LlmFailover::Tool
    description "Refunds an order"
    param :order, type: :integer
    requires_approval!

    def execute(order:)
      File.open(Charge.runs_file, "a") { |f| f.puts("refund #{order} by #{Process.pid}") }
      "refunded #{order}"
    end
  end
end

ArSpec.describe "The tool loop on chat records" do
  let(:primary) { start_fake_provider(strict_transcript: true) }
  let(:backup) { start_fake_provider(strict_transcript: true) }
  let(:dir) { Dir.mktmpdir("llm_failover_tools") }
  let(:chat) { Chat.create!(model: "gpt-4o", provider: "openai", backup_model: "claude-sonnet-4-6", backup_provider: "anthropic") }

  before do
    LlmFailover.configure do |c|
      c.provider :openai, api: :openai, api_key: FakeProviderHelpers::PRIMARY_KEY, base_url: primary.base_url(:openai)
      c.provider :anthropic, api: :anthropic, api_key: FakeProviderHelpers::BACKUP_KEY,
                             base_url: backup.base_url(:anthropic)
      fast_policy(c)
      c.max_retries = 0
    end
    DurableToolSpec::Charge.runs_file = File.join(dir, "runs")
    DurableToolSpec::Charge.after_run = nil
  end

  after { FileUtils.remove_entry(dir) }

  def runs
    File.exist?(DurableToolSpec::Charge.runs_file) ? File.readlines(DurableToolSpec::Charge.runs_file, chomp: true) : []
  end

  def job_chat
    Chat.find(chat.id).with_tools(DurableToolSpec::Charge, DurableToolSpec::Track, DurableToolSpec::Refund)
  end

  def call_rows
    raw_rows("SELECT call_id, name, status, result FROM tool_calls ORDER BY id").map(&:values)
  end

  def read_line(io, limit = 60)
    raise "nothing from the child after #{limit} s" unless io.wait_readable(limit)

    io.gets
  end

  # Forks a job that asks +text+ with +key+ and is killed with SIGKILL once +moment+
  # (a block run in the parent) says so. The child tells the parent when its tool ran
  # through a pipe (Charge.after_run).
  def killed_job(text, key, stop_in_tool: false)
    id = chat.id
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      DurableToolSpec::Charge.after_run = lambda do
        writer.puts("ran")
        sleep 60 if stop_in_tool # killed here, inside execute, after its effect
      end
      begin
        Chat.find(id).with_tools(DurableToolSpec::Charge, DurableToolSpec::Track).ask(text, idempotency_key: key)
        writer.puts("finished")
      rescue Exception => e # rubocop:disable Lint/RescueException
        writer.puts("raised #{e.class}: #{e.message}") rescue nil # rubocop:disable Style/RescueModifier
      ensure
        exit!(1) # never the parent's spec run
      end
    end
    writer.close
    begin
      expect(read_line(reader)).to eq("ran\n")
      yield if block_given?
    ensure
      Process.kill(:KILL, pid)
      Process.wait(pid)
    end
  ensure
    reader&.close
  end

  it "stores the calls, their results as role tool messages, and sends them on the next ask" do
    primary.enqueue({ text: "Charging.", tool_calls: [{ name: "charge", arguments: { "amount" => 5 }, id: "call_a" }] },
                    { text: "Done: charged 5." }, { text: "You paid 5." })
    reply = job_chat.ask("Charge me 5")
    expect(reply.content).to eq("Done: charged 5.")
    expect(reply.tool_calls.map { |c| [c.id, c.status, c.result] }).to eq([["call_a", :succeeded, "charged 5"]])
    expect(call_rows).to eq([["call_a", "charge", "succeeded", "charged 5"]])
    expect(Chat.find(chat.id).messages.map { |m| [m.role, m.content] })
      .to eq([["user", "Charge me 5"], ["assistant", "Charging."], ["tool", "charged 5"], ["assistant", "Done: charged 5."]])

    job_chat.ask("How much?") # another job: the transcript is read back and sent whole
    sent = primary.requests.last.json["messages"]
    expect(sent.map { |m| m["role"] }).to eq(%w[user assistant tool assistant user])
    expect(sent[1]["tool_calls"].sole["id"]).to eq("call_a")
    expect(sent[2]["tool_call_id"]).to eq("call_a")
    expect(runs.size).to eq(1)
  end

  it "takes the tool methods on the record, as a plain chat does" do
    record = Chat.find(chat.id).with_tool(DurableToolSpec::Charge).with_tools(DurableToolSpec::Track)
                 .with_tool_choice(:required)
    expect(record.tools.map(&:name)).to eq(%w[charge track])
    expect(record.tool_choice).to eq(:required)
    expect { record.with_tool(Object) }.to raise_error(ArgumentError, /LlmFailover::Tool subclass/)
    expect(record.tools.size).to eq(2)
    primary.enqueue({ tool_calls: [{ name: "track", arguments: { "parcel" => "P1" } }] }, { text: "In Oslo." })
    expect(record.ask("Where is P1?").content).to eq("In Oslo.")
    expect(primary.requests.first.json["tool_choice"]).to eq("required")
    expect(record.with_tools(replace: true).tools).to eq([])
  end

  describe "a job killed with SIGKILL and retried" do
    it "after the tool ran and its result was stored, never runs it again" do
      primary.enqueue({ tool_calls: [{ name: "charge", arguments: { "amount" => 5 }, id: "call_a" }] },
                      { text: "never seen", delay_headers: 30 })
      # Killed while the next turn is on its way: the result was stored before it was sent.
      killed_job("Charge me 5", "job-1") { wait_for { primary.request_count == 2 } }
      expect(call_rows).to eq([["call_a", "charge", "succeeded", "charged 5"]])

      stale_soon
      primary.enqueue({ text: "Charged 5, done." })
      reply = retry_until_claimable { job_chat.ask("Charge me 5", idempotency_key: "job-1") }
      expect(reply.content).to eq("Charged 5, done.")
      expect(runs.size).to eq(1)
      expect(primary.requests.last.tool_results.map { |r| r[:content] || r["content"] }.to_s).to include("charged 5")
      expect(Chat.find(chat.id).messages.map(&:role)).to eq(%w[user assistant tool assistant])
    end

    it "mid-execute, raises ToolInterruptedError naming the call; settled, complete goes on without running it" do
      primary.enqueue({ tool_calls: [{ name: "charge", arguments: { "amount" => 7 }, id: "call_b" }] })
      killed_job("Charge me 7", "job-2", stop_in_tool: true)
      expect(call_rows).to eq([["call_b", "charge", "running", nil]])

      stale_soon
      error = retry_until_claimable(LlmFailover::ToolInterruptedError) do
        job_chat.ask("Charge me 7", idempotency_key: "job-2")
      end
      expect(error.tool_call.id).to eq("call_b")
      expect(error.message).to include("call_b", "charge")
      expect(runs.size).to eq(1)

      # The app checks with the card processor, then settles the call.
      Chat.find(chat.id).settle_tool_call("call_b", result: "charged 7 (checked with the processor)")
      primary.enqueue({ text: "Charged 7." })
      expect(job_chat.complete.content).to eq("Charged 7.")
      expect(runs.size).to eq(1)
      expect(call_rows).to eq([["call_b", "charge", "succeeded", "charged 7 (checked with the processor)"]])
    end

    it "mid-execute of an idempotent! tool, runs it again" do
      primary.enqueue({ tool_calls: [{ name: "track", arguments: { "parcel" => "P9" }, id: "call_c" }] })
      killed_job("Where is P9?", "job-3", stop_in_tool: true)
      expect(call_rows).to eq([["call_c", "track", "running", nil]])

      stale_soon
      primary.enqueue({ text: "P9 is in Oslo." })
      reply = retry_until_claimable { job_chat.ask("Where is P9?", idempotency_key: "job-3") }
      expect(reply.content).to eq("P9 is in Oslo.")
      expect(runs.size).to eq(2) # declared safe to run again, and run again
      expect(call_rows).to eq([["call_c", "track", "succeeded", "P9: in Oslo"]])
    end
  end

  describe "approval" do
    it "parks the loop; a second process approves; complete in a third runs the call once" do
      primary.enqueue({ tool_calls: [{ name: "refund", arguments: { "order" => 42 }, id: "call_r" }] },
                      { text: "Refunded order 42." })
      reply = job_chat.ask("Refund order 42")
      expect(reply.pending_tool_calls.map { |c| [c.id, c.name] }).to eq([%w[call_r refund]])
      expect(runs).to eq([])
      expect(call_rows).to eq([["call_r", "refund", "pending", nil]])
      expect(raw_rows("SELECT awaiting_approval FROM tool_calls").sole["awaiting_approval"]).to eq(1)

      in_child { Chat.find(chat.id).approve_tool_call("call_r") } # the web request
      expect(call_rows).to eq([["call_r", "refund", "approved", nil]])
      in_child { job_chat.complete } # the job goes on
      expect(runs.size).to eq(1)
      expect(runs.first).not_to end_with(" by #{Process.pid}")
      expect(call_rows).to eq([["call_r", "refund", "succeeded", "refunded 42"]])
      expect(Chat.find(chat.id).messages.last.content).to eq("Refunded order 42.")
    end

    it "says no answer is pending while the turn is parked on an approval, and yes once a person decided" do
      primary.enqueue({ text: "Two refunds.", tool_calls: [{ name: "refund", arguments: { "order" => 1 }, id: "call_1" },
                                                           { name: "refund", arguments: { "order" => 2 }, id: "call_2" }] },
                      { text: "Refunded order 1 only." })
      job_chat.ask("Refund orders 1 and 2")
      record = Chat.find(chat.id)
      expect(record.answer_pending?).to be(false) # complete would only park it again
      expect(record.tool_calls_awaiting_approval.map(&:id)).to eq(%w[call_1 call_2])

      record.deny_tool_call("call_2", reason: "no") # a result stored, call_1 still parked
      expect(Chat.find(chat.id).answer_pending?).to be(false)
      expect(Chat.find(chat.id).tool_calls_awaiting_approval.map(&:id)).to eq(%w[call_1])

      Chat.find(chat.id).approve_tool_call("call_1")
      expect(Chat.find(chat.id).answer_pending?).to be(true) # complete runs it and answers
      expect(Chat.find(chat.id).tool_calls_awaiting_approval).to eq([])
      expect(job_chat.complete.content).to eq("Refunded order 1 only.")
      expect(Chat.find(chat.id).answer_pending?).to be(false)
    end

    it "says an answer is pending for a turn stopped inside its tool loop" do
      primary.enqueue({ tool_calls: [{ name: "charge", arguments: { "amount" => 3 }, id: "call_c" }] },
                      { error: :bad_request }, { text: "Charged 3." })
      expect { job_chat.ask("Charge me 3") }.to raise_error(LlmFailover::BadRequestError)
      expect(Chat.find(chat.id).messages.map(&:role)).to eq(%w[user assistant tool assistant]) # the last one failed
      expect(Chat.find(chat.id).answer_pending?).to be(true)
      expect(job_chat.complete.content).to eq("Charged 3.")
      expect(Chat.find(chat.id).answer_pending?).to be(false)
    end

    it "sends a denial as the call's result, and never runs it" do
      primary.enqueue({ tool_calls: [{ name: "refund", arguments: { "order" => 43 }, id: "call_d" }] },
                      { text: "The refund was declined." })
      expect(job_chat.ask("Refund order 43").pending_tool_calls.size).to eq(1)
      Chat.find(chat.id).deny_tool_call("call_d", reason: "outside the refund window")
      expect(job_chat.complete.content).to eq("The refund was declined.")
      expect(runs).to eq([])
      sent = primary.requests.last.json["messages"].find { |m| m["role"] == "tool" }
      expect(sent["content"]).to eq("The user denied this call: outside the refund window")
    end
  end

  # The dead job's claim on its turn is taken once it is older than a call can last
  # (Configuration#longest_call): a couple of seconds with these settings. The retried
  # ask waits for that itself (idempotency_wait).
  def stale_soon
    LlmFailover.configure do |c|
      c.request_timeout = SpecTime.scaled(1)
      c.retry_max_interval = 0.1
    end
  end

  # The block's value, or the error it raised when that is +expected_error+.
  def retry_until_claimable(expected_error = nil)
    result = yield
    raise "expected #{expected_error}, got a Reply" if expected_error

    result
  rescue expected_error || Class.new(StandardError) => e
    e
  end

  # Runs the block in a forked process (its own connections), raising here what it raised.
  def in_child
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      begin
        yield
        writer.puts("ok")
      rescue Exception => e # rubocop:disable Lint/RescueException
        writer.puts("#{e.class}: #{e.message}") rescue nil # rubocop:disable Style/RescueModifier
      ensure
        exit!(0)
      end
    end
    writer.close
    line = read_line(reader)
    Process.wait(pid)
    expect(line).to eq("ok\n")
  ensure
    reader&.close
  end
end
