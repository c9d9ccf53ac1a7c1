# frozen_string_literal: true

require_relative "ar_spec_helper"
require "json"
require "tempfile"

# Issue 33: a rerun after a crash answers at once. The claim on an idempotency_key's
# turn names its process and is kept fresh while the call runs, so a rerun takes over
# a dead call's claim at once when that process was on this machine, and once the
# claim's heartbeat stopped when it was not; a live call is never taken over, however
# slow. Real processes (spec/support/asking_process.rb) killed with SIGKILL while
# their FakeProvider stream stalls.
ArSpec.describe "a rerun of an ask whose process was killed mid-answer" do
  include_context "with fake providers"

  let(:asker) { File.expand_path("../support/asking_process.rb", __dir__) }
  heartbeat = LlmFailover::Idempotency::Heartbeat
  # Another PID namespace stands for another host: a process this one cannot see.
  elsewhere_missing = if !Process.uid.zero? then "needs root (unshare --pid)"
                      elsif !system("unshare --pid --fork --mount-proc true", out: File::NULL, err: File::NULL)
                        "unshare --pid --mount-proc fails here"
                      end

  let(:chat) { Chat.create!(model: "gpt-4o", provider: "openai") }

  after { @processes&.each { |pid, _| stop(pid) } }

  # Starts a process that asks "Hi" with +key+ on the chat; in a PID namespace of its
  # own when +elsewhere+. +options+ are configuration values for it (none: the defaults).
  # @return [Integer] its pid
  def asking_process(key, elsewhere: false, **options)
    reader, writer = IO.pipe
    log = Tempfile.new("asking_process")
    args = JSON.generate(database: ArSpec.config(ArSpec.current), chat_id: chat.id, prompt: "Hi", key: key,
                         base_url: primary.base_url(:openai), options: options)
    command = [RbConfig.ruby, asker, args]
    command = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", *command] if elsewhere
    pid = Process.spawn(*command, out: writer, err: log.path)
    writer.close
    (@processes ||= {})[pid] = [reader, log]
    pid
  end

  # The next line +pid+ prints (bounded: a hang fails the example with its stderr).
  def line_of(pid, limit = SpecTime.scaled(60))
    reader, log = @processes.fetch(pid)
    raise "nothing from the asking process after #{limit} s; its stderr:\n#{File.read(log.path)}" unless reader.wait_readable(limit)

    reader.gets || raise("the asking process ended; its stderr:\n#{File.read(log.path)}")
  end

  def kill(pid)
    Process.kill(:KILL, pid)
    Process.wait(pid)
  end

  def stop(pid)
    Process.kill(:KILL, pid)
    Process.wait(pid)
  rescue Errno::ESRCH, Errno::ECHILD
    nil
  end

  def rows
    Message.where(chat_id: chat.id).order(:id).map { |m| [m.role, m.status, m.content] }
  end

  def user_row
    raw_rows("SELECT status, claimed_by FROM messages WHERE chat_id = ? AND role = 'user'", chat.id).sole
  end

  def defaults
    LlmFailover.configure do |c|
      LlmFailover::Configuration::DEFAULTS.slice(*LlmFailover::Configuration::ENGINE_POLICY, :idempotency_wait)
                                          .each { |name, value| c.public_send(:"#{name}=", value) }
    end
  end

  it "answers in another process with the default settings: one prompt, one answer" do
    primary.enqueue({ text: "half an answer", stall_after: 1 }, { text: "The whole answer." })
    killed = asking_process("job-1")
    expect(line_of(killed)).to eq("streaming\n")
    expect(user_row["claimed_by"]).to start_with("#{Socket.gethostname[0, 64]} #{killed} ")
    kill(killed)

    rerun = asking_process("job-1")
    expect(line_of(rerun)).to eq("streaming\n")
    expect(line_of(rerun)).to eq("answered The whole answer.\n")
    expect(primary.request_count).to eq(2)
    # The killed call's row is the answer's: one turn, one row.
    expect(rows).to eq([%w[user complete Hi], ["assistant", "complete", "The whole answer."]])
    expect(user_row.values).to eq(["complete", nil])
  end

  # idempotency_wait 1: a claim taken only once its heartbeat stopped (15 s) would
  # raise IdempotencyConflict here.
  it "takes a dead process's claim at once, without waiting for its heartbeat to stop" do
    primary.enqueue({ text: "half an answer", stall_after: 1 }, { text: "At once." })
    killed = asking_process("job-2")
    expect(line_of(killed)).to eq("streaming\n")
    kill(killed)
    defaults
    LlmFailover.configure { |c| c.idempotency_wait = 1 }

    reply = Chat.find(chat.id).ask("Hi", idempotency_key: "job-2")
    expect([reply.content, primary.request_count]).to eq(["At once.", 2])
    expect(rows).to eq([%w[user complete Hi], ["assistant", "complete", "At once."]])
  end

  it "keeps a live call's claim fresh while it runs, and leaves it alone" do
    primary.enqueue({ text: "Alive." })
    primary.hold
    owner = asking_process("job-3")
    sleep 0.01 until primary.request_count == 1
    # As if its last beat were older than a dead call's: the next beat writes it again.
    claim = Message.where(chat_id: chat.id, role: "user")
    claim.update_all(updated_at: Time.current - heartbeat::STALE - 1)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + SpecTime.scaled(4 * heartbeat::BEAT)
    sleep 0.05 until claim.pick(:updated_at) > Time.current - heartbeat::STALE ||
                     Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    LlmFailover.configure { |c| c.idempotency_wait = 0.5 }
    expect { Chat.find(chat.id).ask("Hi", idempotency_key: "job-3") }.to raise_error(LlmFailover::IdempotencyConflict)

    primary.release
    expect(line_of(owner)).to eq("streaming\n")
    expect(line_of(owner)).to eq("answered Alive.\n")
    expect(primary.request_count).to eq(1)
    expect(rows).to eq([%w[user complete Hi], %w[assistant complete Alive.]])
  end

  # An install from before claimed_by: its claims name no owner and keep the older rule.
  # The dead process's claim is made old by writing its time back, not by waiting.
  it "keeps the older rule where the table has no claimed_by: a claim older than the longest call is dead" do
    ActiveRecord::Base.connection.remove_column(:messages, :claimed_by)
    Message.reset_column_information
    LlmFailover.configure { |c| c.idempotency_wait = 0.2 }
    store = chat.llm_store
    store.add_user_once("Hi", "job-5")
    expect(store.claim_turn("job-5", stale_after: 60)).to be(true) # the dead process's claim, never released
    primary.enqueue({ text: "Answered." })
    longest = LlmFailover.configuration.longest_call
    claim = Message.where(chat_id: chat.id, role: "user")
    claim.update_all(updated_at: Time.current - (longest / 2))
    expect { Chat.find(chat.id).ask("Hi", idempotency_key: "job-5") }.to raise_error(LlmFailover::IdempotencyConflict)
    expect(primary.request_count).to eq(0)
    claim.update_all(updated_at: Time.current - (longest + 1))
    reply = Chat.find(chat.id).ask("Hi", idempotency_key: "job-5")
    expect([reply.content, primary.request_count]).to eq(["Answered.", 1])
    expect(rows).to eq([%w[user complete Hi], %w[assistant complete Answered.]])
  ensure
    ActiveRecord::Base.connection.add_column(:messages, :claimed_by, :string)
    Message.reset_column_information
  end

  # Each waits past the heartbeat's window (15 s and more): on one database only, the
  # claims' SQL being the same on both (the examples above run on both).
  next unless metadata[:db] == :sqlite

  it "never takes over a live call, however long it outlasts the heartbeat's window" do
    primary.enqueue({ text: "Slow, but alive." })
    primary.hold
    owner = asking_process("job-6")
    sleep 0.01 until primary.request_count == 1
    defaults
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    # Let the owner answer once its claim is older than a dead one's would be.
    releaser = Thread.new do
      sleep 0.1 until Process.clock_gettime(Process::CLOCK_MONOTONIC) - started > heartbeat::STALE + (2 * heartbeat::BEAT)
      primary.release
    end

    reply = Chat.find(chat.id).ask("Hi", idempotency_key: "job-6")
    releaser.join
    expect([reply.content, reply.attempts, primary.request_count]).to eq(["Slow, but alive.", [], 1])
    expect(line_of(owner)).to eq("streaming\n")
    expect(line_of(owner)).to eq("answered Slow, but alive.\n")
    expect(rows).to eq([%w[user complete Hi], ["assistant", "complete", "Slow, but alive."]])
  end

  it "takes over the claim of a process it cannot see once that claim's heartbeat stopped",
     skip: elsewhere_missing do
    primary.enqueue({ text: "half an answer", stall_after: 1 }, { text: "Taken over." })
    gone = asking_process("job-4", elsewhere: true)
    expect(line_of(gone)).to eq("streaming\n")
    LlmFailover.configure { |c| c.idempotency_wait = 1 }
    # Alive, as far as this process can tell: its claim is left alone, no request sent.
    expect { Chat.find(chat.id).ask("Hi", idempotency_key: "job-4") }.to raise_error(LlmFailover::IdempotencyConflict)
    expect(primary.request_count).to eq(1)

    kill(gone)
    defaults
    reply = Chat.find(chat.id).ask("Hi", idempotency_key: "job-4")
    expect([reply.content, primary.request_count]).to eq(["Taken over.", 2])
    expect(rows).to eq([%w[user complete Hi], ["assistant", "complete", "Taken over."]])
  end
end
