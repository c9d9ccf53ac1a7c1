# frozen_string_literal: true

require "spec_helper"
require_relative "support/engine_helpers"
require "async"

# Calls made inside Async (a Fiber scheduler) wait through the scheduler: the other
# fibers of the thread run meanwhile. Each example is built so that a call holding the
# thread in its waits cannot pass it: the provider holds its answers until something
# only another fiber of the same thread can do has happened.
RSpec.describe "calls under a Fiber scheduler (Async)", :fiber_scheduler do
  include_context "with fake providers"

  let(:mono) { -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) } }

  def openai_chat
    LlmFailover.chat(model: "gpt-4o", provider: :openai)
  end

  it "runs 200 streamed asks at once on one thread" do
    LlmFailover.configure do |c| # the first requests wait at the gate until the last has arrived
      c.first_token_timeout = 60
      c.request_timeout = 120
    end
    primary.default = { chunks: ["Hel", "lo ", "there"], delay_first_token: 1 }
    started = mono.call
    expect(openai_chat.ask("one") { |_| nil }.content).to eq("Hello there")
    single = mono.call - started
    primary.clear

    n = 200
    primary.hold # no answer before every request has arrived
    replies = []
    chunk_counts = Array.new(n, 0)
    held_at_once = nil
    # Calls that held the thread would each wait out their first-token timeout before
    # the next could start: stop the server instead, so that they fail fast.
    watchdog = Thread.new do
      deadline = mono.call + 60
      sleep 0.05 until primary.request_count == n || mono.call > deadline
      primary.stop if primary.request_count < n
    end
    started = mono.call
    Async do |task|
      calls = Array.new(n) do |i|
        task.async { replies << openai_chat.ask("q#{i}") { |_chunk| chunk_counts[i] += 1 }.content }
      end
      wait_for(limit: 30, task: task) { primary.request_count == n }
      held_at_once = primary.request_count
      primary.release
      calls.each(&:wait)
    end.wait
    all = mono.call - started
    watchdog.join

    expect(held_at_once).to eq(n)
    expect(replies.size).to eq(n)
    expect(replies.uniq).to eq(["Hello there"])
    expect(chunk_counts.uniq).to eq([3])
    puts format("\n    %d concurrent streamed asks on one thread: %.2f s; one ask alone: %.2f s (%.2fx)",
                n, all, single, all / single)
  end

  # libcurl's multi handle is ~40 kB with the socket API (a 911-slot socket hash among
  # them) and opens a wakeup socketpair: the thread's calls share one. Counted here by
  # descriptors: a call in flight holds its connection (and the provider's end of it,
  # in this process), its epoll set, its timerfd and its cancel pipe, and no socketpair.
  it "shares one libcurl multi handle among the thread's calls" do
    LlmFailover.configure { |c| c.first_token_timeout = 60 }
    n = 40
    primary.hold
    sockets = lambda do
      Dir.children("/proc/self/fd").count { |fd| File.readlink("/proc/self/fd/#{fd}").start_with?("socket:") rescue false }
    end
    before = sockets.call
    held = nil
    replies = Async do |task|
      calls = Array.new(n) { task.async { openai_chat.ask("Hi") { |_| nil }.content } }
      wait_for(limit: 30, task: task) { primary.request_count == n }
      held = sockets.call
      primary.release
      calls.map(&:wait)
    end.wait
    expect(replies).to eq(["Hello from FakeProvider"] * n)
    # Two sockets a call (its connection, the provider's end) and the thread's multi
    # handle's socketpair; a socketpair a call was four a call.
    expect(held - before).to be <= 2 * n + 2
  end

  it "keeps a ticker fiber ticking while calls wait" do
    ticks = 0
    primary.hold
    replies = nil
    Async do |task|
      ticker = task.async do
        loop do
          task.sleep 0.01
          ticks += 1
          primary.release if ticks == 10 # the provider answers only once the ticker has run
        end
      end
      begin
        replies = Array.new(3) { task.async { openai_chat.ask("tick?") { |_| nil }.content } }.map(&:wait)
      ensure
        ticker.stop
      end
    end.wait
    expect(replies).to eq(["Hello from FakeProvider"] * 3)
    expect(ticks).to be >= 10
  end

  it "fails over with a reset in many fibers at once" do
    n = 10
    primary.enqueue(*Array.new(n) { { text: "partial words here", cut_after: 2 } })
    backup.default = { text: "from the backup" }
    results = Async do |task|
      Array.new(n) do
        task.async do
          chunks, collect = collect_chunks
          chat = failover_chat
          reply = chat.ask("Hi", &collect)
          [reply, chunks, chat.messages.map { |m| [m.role, m.status, m.content] }]
        end
      end.map(&:wait)
    end.wait

    results.each do |reply, chunks, messages|
      expect(reply.content).to eq("from the backup")
      expect(reply.failover?).to be(true)
      expect(reply.attempts.map(&:success?)).to eq([false, true])
      resets = chunks.each_index.select { |i| chunks[i].reset? }
      expect(resets.size).to eq(1)
      expect(chunks[0...resets[0]].map(&:content).join).to eq("partial words ")
      expect(chunks[(resets[0] + 1)..].map(&:content).join).to eq("from the backup")
      expect(messages).to eq([["user", "complete", "Hi"], ["assistant", "complete", "from the backup"]])
    end
    expect(primary.request_count).to eq(n)
    expect(backup.request_count).to eq(n)
  end

  it "sleeps between retries through the scheduler" do
    primary.enqueue({ error: :rate_limit, retry_after: 1 }, { text: "after the wait" })
    ticks_during_retry = 0
    reply = nil
    Async do |task|
      call = task.async { reply = openai_chat.ask("Hi") }
      wait_for(limit: 30, task: task) { primary.request_count == 1 }
      # The call now sleeps the Retry-After second: this fiber runs meanwhile.
      while primary.request_count == 1
        ticks_during_retry += 1
        task.sleep 0.01
      end
      call.wait
    end.wait
    expect(reply.content).to eq("after the wait")
    expect(reply.attempts.size).to eq(2)
    expect(ticks_during_retry).to be > 10
  end

  it "ends a call on a silent provider at with_timeout, and the thread goes on" do
    primary.enqueue({ delay_headers: 30 })
    LlmFailover.configure do |c|
      c.first_token_timeout = 60
      c.request_timeout = 60
    end
    chat = openai_chat
    outcome = nil
    Async do |task|
      task.with_timeout(0.3) { chat.ask("Hi") }
    rescue Async::TimeoutError => e
      outcome = e
    end.wait
    expect(outcome).to be_a(Async::TimeoutError)
    expect(chat.messages.map { |m| [m.role, m.status] }).to eq([%w[user complete], %w[assistant failed]])

    reply = Async { chat.complete }.wait
    expect(reply.content).to eq("Hello from FakeProvider")
    expect(primary.request_count).to eq(2)
  end

  it "ends a stream at task.stop, discards its connection, then calls normally on the same thread" do
    primary.enqueue({ text: Array.new(200) { |i| "w#{i}" }.join(" "), chunk_delay: 0.02 })
    chat = openai_chat
    seen = []
    stopped = nil
    next_reply = nil
    Async do |task|
      call = task.async { chat.ask("Hi") { |chunk| seen << chunk.content } }
      wait_for(limit: 30, task: task) { seen.size >= 3 }
      call.stop
      stopped = call
      wait_for(limit: 30, task: task) { primary.connection_count.zero? } # the server saw it closed
      next_reply = chat.ask("again") { |_| nil }
    end.wait
    expect(stopped).to be_stopped
    expect(seen.size).to be < 200
    expect(chat.messages.map { |m| [m.role, m.status] })
      .to eq([%w[user complete], %w[assistant failed], %w[user complete], %w[assistant complete]])
    expect(next_reply.content).to eq("Hello from FakeProvider")
  end

  describe "Chat#cancel!" do
    before do
      LlmFailover.configure do |c|
        c.first_token_timeout = 3 # without a wake, the silent provider ends the call here
        c.request_timeout = 10
      end
    end

    it "ends the wait on a silent provider at once, from another fiber" do
      primary.enqueue({ chunks: ["late"], delay_first_token: 30 })
      chat = openai_chat
      reply = nil
      Async do |task|
        call = task.async { reply = chat.ask("Hi") { |_| nil } }
        wait_for(limit: 30, task: task) { primary.request_count == 1 }
        task.sleep 0.05
        chat.cancel!
        call.wait
      end.wait
      expect([reply.cancelled?, reply.content]).to eq([true, ""])
      expect(reply.attempts.map { |a| [a.cancelled?, a.success?, a.error_message] })
        .to eq([[true, false, "cancelled by Chat#cancel!"]])
      expect(reply.attempts[0].latency_ms).to be > 0
      expect(chat.messages.map { |m| [m.role, m.status] }).to eq([%w[user complete], %w[assistant cancelled]])
    end

    it "ends the wait on a silent provider from another thread, and the next call works" do
      primary.enqueue({ chunks: ["late"], delay_first_token: 30 })
      chat = openai_chat
      replies = []
      canceller = Thread.new do
        sleep 0.01 until primary.request_count == 1
        sleep 0.05
        chat.cancel!
      end
      Async do
        replies << chat.ask("Hi") { |_| nil }
        replies << chat.ask("again") { |_| nil }
      end.wait
      canceller.join
      expect(replies.map(&:cancelled?)).to eq([true, false])
      expect(replies.last.content).to eq("Hello from FakeProvider")
    end

    it "ends a sleep before a retry" do
      primary.enqueue({ error: :rate_limit, retry_after: 5 }, { text: "after the wait" })
      LlmFailover.configure { |c| c.max_retries = 1 }
      chat = openai_chat
      reply = nil
      Async do |task|
        call = task.async { reply = chat.ask("Hi") { |_| nil } }
        wait_for(limit: 30, task: task) { primary.request_count == 1 }
        task.sleep 0.1
        chat.cancel!
        call.wait
      end.wait
      expect(reply).to be_cancelled
      expect(reply.attempts.map { |a| [a.error_class, a.cancelled?] })
        .to eq([["LlmFailover::RateLimitError", false], [nil, true]])
      expect(primary.request_count).to eq(1) # the retry was never sent
    end
  end

  it "lets the streaming block wait through the scheduler itself" do
    primary.enqueue({ chunks: %w[a b c d], chunk_delay: 0.01 })
    handoff = Thread::Queue.new
    echoed = []
    Async do |task|
      # Another fiber of the thread, woken by the block through the scheduler's hooks.
      echo = task.async { 4.times { echoed << handoff.pop } }
      openai_chat.ask("Hi") do |chunk|
        handoff << chunk.content
        task.sleep 0.001 # the block itself sleeps through the scheduler, inside the call
      end
      echo.wait
    end.wait
    expect(echoed.join).to eq("abcd")
  end

  it "serves threads and fibers at once" do
    primary.default = { text: "shared", chunk_delay: 0.005 }
    thread_replies = Queue.new
    threads = Array.new(3) do
      Thread.new { 3.times { thread_replies << openai_chat.ask("t") { |_| nil }.content } }
    end
    fiber_replies = Async do |task|
      Array.new(10) { task.async { openai_chat.ask("f") { |_| nil }.content } }.map(&:wait)
    end.wait
    threads.each(&:join)
    expect(fiber_replies).to eq(["shared"] * 10)
    expect(Array.new(9) { thread_replies.pop }).to eq(["shared"] * 9)
  end

  it "works in a child forked under a scheduler, and in the parent after it" do
    status = nil
    after = nil
    Async do
      expect(openai_chat.ask("before").content).to eq("Hello from FakeProvider")
      pid = fork do
        # The inherited reactor shares its epoll instance with the parent's (async's
        # business, not the gem's): a wakeup meant for it may be taken by the parent's
        # reactor, and a wait through it then never ends. So the call runs under a
        # reactor of its own in a new thread, and this thread waits for that one
        # outside the inherited scheduler (a blocking fiber).
        ok = Fiber.new(blocking: true) do
          Thread.new { Async { openai_chat.ask("in the child") { |_| nil }.content }.wait }.value
        end.resume
        exit!(ok == "Hello from FakeProvider" ? 0 : 1)
      ensure
        exit!(2) # never back into the parent's examples
      end
      _, status = Process.wait2(pid)
      after = openai_chat.ask("after").content
    end.wait
    expect(status.exitstatus).to eq(0)
    expect(after).to eq("Hello from FakeProvider")
    expect(primary.request_count).to eq(3)
  end

  it "keeps the thread's own waits outside a scheduler (a blocking fiber)" do
    primary.enqueue({ text: "blocking", delay_first_token: 0.05 })
    reply = Async { Fiber.new(blocking: true) { openai_chat.ask("Hi") { |_| nil } }.resume }.wait
    expect(reply.content).to eq("blocking")
  end
end
