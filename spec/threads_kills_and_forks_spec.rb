# frozen_string_literal: true

require "spec_helper"

# Interrupts and fork under load: eight threads stream answers (with failover) from
# two FakeProviders through the process-wide engine while the main thread forks
# children that make their own call, and kills workers at random points of their
# calls. Nothing may hang (every join and wait is bounded), crash, or hand back a
# wrong answer, and the engine's pool and the process's descriptors stay bounded.
module StressSpecLimits
  WORKERS = 8
  CALLS_WANTED = 160  # completed calls across the workers
  KILLS = 12
  FORKS = 6
  POOL_MAX_IDLE = 16  # LF_POOL_MAX_IDLE in lf_transport.c
  BOUND = 120         # seconds before a stuck run fails the example instead of the suite
end

RSpec.describe "stress: threads, kills and forks", :stress do
  include_context "with fake providers"

  let(:text) { "one two three four five six seven eight nine ten" }

  def open_fds
    Dir.children("/proc/self/fd").size
  end

  def deadline_passed?(deadline)
    Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
  end

  # One worker: streamed calls until enough have completed. Every completed call is
  # checked here; a killed call simply ends the thread.
  def worker(results, errors, done, rng_seed)
    rng = Random.new(rng_seed)
    Thread.new do
      until done.call
        chunks = []
        chat = failover_chat(feature: "stress#{rng.rand(4)}")
        begin
          reply = chat.ask("Hello") { |chunk| chunks << chunk }
          visible = chunks.each_with_object(+"") { |c, s| c.reset? ? s.clear : s << c.content }
          results << [reply.content, visible, reply.provider, reply.failover?]
        rescue LlmFailover::Error => e
          errors << e
        end
      end
    end
  end

  # Tagged :fork_beside_threads: rake sanitize:spec leaves it out (GCC 12's ASan takes no
  # allocator lock around fork, and a child forked while a worker is in malloc waits for
  # ever); it runs against the normal build in rake spec.
  it "keeps every surviving call correct while threads are killed and the process forks", :fork_beside_threads do
    skip "fork is not available here" unless Process.respond_to?(:fork)

    # Streams slow enough for kills and forks to land inside them. The primary fails
    # now and then (a 503 before the stream, or a stream cut after two words) so that
    # failovers and resets happen under the same load.
    primary.default = { text: text, chunk_delay: 0.002 }
    backup.default = { text: text, chunk_delay: 0.002 }
    20.times { primary.enqueue({ error: :overloaded }, { text: text, cut_after: 2 }, { text: text }) }

    fds_before = open_fds
    results = Queue.new
    errors = Queue.new
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + StressSpecLimits::BOUND
    done = -> { results.size >= StressSpecLimits::CALLS_WANTED || deadline_passed?(deadline) }
    seeds = Random.new(RSpec.configuration.seed)
    threads = Array.new(StressSpecLimits::WORKERS) { worker(results, errors, done, seeds.rand(2**31)) }

    kills = 0
    children = []
    until done.call
      sleep(seeds.rand * 0.02)
      if kills < StressSpecLimits::KILLS
        victim = seeds.rand(threads.size)
        threads[victim].kill
        expect(threads[victim].join(10)).not_to be_nil, "a killed worker did not end within 10 s"
        threads[victim] = worker(results, errors, done, seeds.rand(2**31))
        kills += 1
      end
      next unless children.size < StressSpecLimits::FORKS && seeds.rand < 0.3

      # The child has only this thread; it makes one call of its own and says how it went.
      reader, writer = IO.pipe
      pid = fork do
        reader.close
        status = 1
        begin
          reply = LlmFailover.chat(model: "gpt-4o", provider: :openai, backup_model: "claude-sonnet-4-6",
                                   backup_provider: :anthropic).ask("Hello from the child")
          status = reply.content == text ? 0 : 3
        rescue StandardError => e
          writer.write(e.full_message(highlight: false))
          status = 2
        ensure
          writer.close
          exit!(status)
        end
      end
      writer.close
      children << [pid, reader]
    end

    threads.each do |t|
      expect(t.join(StressSpecLimits::BOUND)).not_to be_nil, "a worker hung"
    end
    children.each do |pid, reader|
      status = nil
      50.times do
        break if (status = Process.wait2(pid, Process::WNOHANG)&.last)

        sleep 0.2
      end
      unless status
        Process.kill(:KILL, pid)
        Process.wait(pid)
      end
      expect(status).not_to be_nil, "a forked child hung"
      expect(status.exitstatus).to eq(0), "child failed: #{reader.read}"
      reader.close
    end

    expect(deadline_passed?(deadline)).to be(false), "the run did not finish within #{StressSpecLimits::BOUND} s"
    expect(kills).to eq(StressSpecLimits::KILLS)
    expect(children.size).to be_between(1, StressSpecLimits::FORKS)

    completed = []
    completed << results.pop until results.empty?
    expect(completed.size).to be >= StressSpecLimits::CALLS_WANTED
    completed.each do |content, visible, provider, failover|
      expect(content).to eq(text)
      expect(visible).to eq(text) # what the block showed, resets applied
      expect(provider).to eq(failover ? :anthropic : :openai)
    end
    # Every failure the primary was scripted with has a healthy backup or a retry
    # behind it; a call ending in an error would be a bug.
    failures = []
    failures << errors.pop until errors.empty?
    expect(failures.map { |e| "#{e.class}: #{e.message}" }).to eq([])

    engine = LlmFailover.engine
    expect(engine.idle_connections).to be <= StressSpecLimits::POOL_MAX_IDLE
    # Each idle slot holds a multi handle: its wakeup socket pair and at most 8 cached
    # connections (CURLMOPT_MAXCONNECTS). Killed calls must not leave more behind.
    expect(open_fds - fds_before).to be <= StressSpecLimits::POOL_MAX_IDLE * (2 + 8)
    # And the engine still works.
    expect(failover_chat.ask("Hello") { |_| }.content).to eq(text)
  end
end
