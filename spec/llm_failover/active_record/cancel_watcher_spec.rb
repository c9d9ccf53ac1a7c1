# frozen_string_literal: true

require_relative "../../active_record/ar_spec_helper"
require "support/engine_helpers"

# cancel! from another process reaches a chat record's running call through one
# watcher thread per process (LlmFailover::ActiveRecord::CancelWatcher), whatever the
# number of calls: a Sidekiq process with 25 jobs answering must not run 25 pollers,
# each taking a connection from a pool sized for the job threads.
ArSpec.describe "the cancel watcher" do
  include_context "with fake providers"

  jobs = 6

  before do
    LlmFailover.configuration.max_retries = 0
    # The stalls end with cancel!, however loaded the machine.
    LlmFailover.configuration.idle_timeout = 300
    LlmFailover.configuration.request_timeout = 600
    # Two words, then the provider says nothing until the call goes away.
    primary.default = { chunks: ["Part ", "one ", "never sent"], stall_after: 2 }
  end

  def read_line(io, limit = 60)
    raise "nothing from the child after #{limit} s" unless io.wait_readable(limit)

    io.gets
  end

  def watcher_name
    "llm_failover cancel watcher"
  end

  def job_name(index)
    "cancel watcher spec job #{index}"
  end

  def watcher_threads
    Thread.list.select { |t| t.name == watcher_name && t.alive? }
  end

  # A job: answers on its own thread, holding its own connection for the whole call
  # (as a Sidekiq or ActiveJob thread does); +streaming+ gets its index once the
  # provider has stalled after two words. The thread is named before its first query:
  # a spec telling the jobs' SQL from other threads' by the Thread objects it was handed
  # back would miss the queries a job ran before Thread.new returned.
  def start_job(chat, index, streaming)
    Thread.new do
      Thread.current.name = job_name(index)
      ActiveRecord::Base.connection_pool.with_connection do
        words = 0
        Chat.find(chat.id).ask("Question #{index}") { |_c| streaming << index if (words += 1) == 2 }
      end
    end
  end

  it "serves many calls with one thread, one query per poll and one connection beside the jobs'" do
    db = ArSpec.current
    # The pool holds the jobs' connections and one more: a watcher that kept one, or
    # took one per call, would leave none for the Stop button's cancel! below.
    ActiveRecord::Base.establish_connection(ArSpec.config(db).merge(pool: jobs + 1, checkout_timeout: 20))
    chats = Array.new(jobs) { Chat.create!(model: "gpt-4o", provider: "openai") }
    streaming = Queue.new
    threads = []
    others = Hash.new { |h, k| h[k] = [] } # SQL run by threads other than the jobs and this one
    job_names = Array.new(jobs) { |i| job_name(i) }
    subscriber = ActiveSupport::Notifications.subscribe("sql.active_record") do |*, payload|
      thread = Thread.current
      others[thread] << payload[:sql] unless thread == Thread.main || job_names.include?(thread.name)
    end

    threads.concat(Array.new(jobs) { |i| start_job(chats[i], i, streaming) })
    jobs.times { streaming.pop }
    expect(watcher_threads.size).to eq(1)

    # The first job's Stop: its call ends, cancelled; the others go on.
    Chat.find(chats[0].id).cancel!
    first = threads[0].value
    expect([first.cancelled?, first.content]).to eq([true, "Part one "])
    polls = others.values.sum(&:size)
    wait_for(limit: 60) { others.values.sum(&:size) >= polls + 2 } # two more looks at the row of every chat
    expect(threads.drop(1).map(&:alive?)).to all(be(true))

    chats.drop(1).each { |chat| Chat.find(chat.id).cancel! }
    replies = threads.drop(1).map(&:value)
    expect(replies.map { |r| [r.cancelled?, r.content] }).to all(eq([true, "Part one "]))
    expect(Message.where(role: "assistant").pluck(:status)).to eq(["cancelled"] * jobs)

    # Every look came from one thread (a new connection's setup aside), each a single
    # query over the chats in flight: the one that found the first Stop named all six.
    expect(others.keys.map(&:name)).to eq([watcher_name])
    looks = others.values.first.grep(/FROM "chats"/)
    expect(looks).to all(match(/WHERE "chats"."id" (IN \(|= )/))
    expect(looks.map { |sql| sql.scan(/\?|\$\d+/).size }.max).to eq(jobs)

    # Idle, it ends; the next call starts it again.
    wait_for(limit: 60) { watcher_threads.empty? }
  ensure
    ActiveSupport::Notifications.unsubscribe(subscriber) if subscriber
    threads&.each { |t| t.join(30) }
    ActiveRecord::Base.establish_connection(ArSpec.config(db))
  end

  it "is started afresh in a forked child, and a cancel! of the child's chat reaches the child's call" do
    skip "fork is not available here" unless Process.respond_to?(:fork)

    parent_chat, child_chat = Array.new(2) { Chat.create!(model: "gpt-4o", provider: "openai") }
    streaming = Queue.new
    parent_job = start_job(parent_chat, 0, streaming)
    streaming.pop
    expect(watcher_threads.size).to eq(1) # the fork happens while the parent's watcher runs

    reader, writer = IO.pipe
    pid = fork do
      reader.close
      words = 0
      reply = Chat.find(child_chat.id).ask("In the child") { |_c| writer.puts("streaming") if (words += 1) == 2 }
      writer.puts([reply.cancelled?, reply.content, Process.pid].inspect)
      exit!(0)
    rescue Exception => e # rubocop:disable Lint/RescueException
      writer.puts(e.inspect)
      exit!(1)
    end
    writer.close

    expect(read_line(reader)).to eq("streaming\n")
    Chat.find(child_chat.id).cancel!
    expect(read_line(reader)).to eq("#{[true, 'Part one ', pid].inspect}\n")
    expect(Process.wait2(pid).last.exitstatus).to eq(0)

    # The parent's call was not the child's chat: it is still answering.
    expect(parent_job).to be_alive
    Chat.find(parent_chat.id).cancel!
    expect(parent_job.value.cancelled?).to be(true)
    expect(Message.where(role: "assistant").order(:chat_id).pluck(:status, :content))
      .to eq([["cancelled", "Part one "], ["cancelled", "Part one "]])
  ensure
    reader&.close
  end
end
