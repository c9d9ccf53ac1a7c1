# frozen_string_literal: true

require "spec_helper"

# Issue 33: the name a claim on an idempotency_key's turn carries, and what this
# process can tell from it. Real child processes: alive, killed, killed and not yet
# reaped (a zombie).
RSpec.describe LlmFailover::Idempotency::Owner, :ruby_only do
  owner = described_class

  # A forked child that names a claim of its own, then sleeps until killed.
  # @return [Array(Integer, String)] its pid and the name
  def child_claim
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      writer.puts(LlmFailover::Idempotency::Owner.claim_name)
      writer.close
      sleep
    end
    writer.close
    raise "nothing from the child" unless reader.wait_readable(SpecTime.scaled(30))

    [pid, reader.gets.chomp]
  ensure
    reader&.close
  end

  def waiting_for(limit = SpecTime.scaled(10))
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + limit
    sleep 0.01 until yield || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
  end

  after do
    Process.kill(:KILL, @pid)
    Process.wait(@pid)
  rescue Errno::ESRCH, Errno::ECHILD, TypeError
    nil
  end

  it "names the host and the pid first, and a claim of this process is alive" do
    name = owner.claim_name
    expect(name).to start_with("#{Socket.gethostname[0, 64]} #{Process.pid} ")
    expect(name.split(" ").size).to eq(5)
    expect(owner.claim_name).not_to eq(name) # one token per claim
    expect(owner.dead?(name)).to be(false)
  end

  it "tells a process of this machine that ended dead, before and after it is reaped",
     skip: (File.exist?("/proc/self/stat") ? nil : "no /proc here: only heartbeats tell") do
    @pid, name = child_claim
    expect(name.split(" ")[1]).to eq(@pid.to_s)
    expect(owner.dead?(name)).to be(false)

    Process.kill(:KILL, @pid)
    waiting_for { File.read("/proc/#{@pid}/stat").rpartition(")").last.split.first == "Z" }
    expect(owner.dead?(name)).to be(true) # a zombie: killed, its parent has not waited yet
    Process.wait(@pid)
    expect(owner.dead?(name)).to be(true)
  end

  it "tells dead a name whose pid another process has now (another start time)",
     skip: (File.exist?("/proc/self/stat") ? nil : "no /proc here") do
    @pid, name = child_claim
    host, pid, start, machine, token = name.split(" ")
    expect(owner.dead?([host, pid, Integer(start) + 1, machine, token].join(" "))).to be(true)
    expect(owner.dead?(name)).to be(false)
  end

  it "cannot tell about a process of another machine, nor about a name it cannot read" do
    @pid, name = child_claim
    host, pid, start, machine, token = name.split(" ")
    Process.kill(:KILL, @pid)
    Process.wait(@pid)
    elsewhere = [host, pid, start, "00000000-0000-0000-0000-000000000000/1", token].join(" ")
    unreadable = [host, "x", start, machine, token].join(" ")
    expect([owner.dead?(elsewhere), owner.dead?(unreadable), owner.dead?(nil), owner.dead?("")])
      .to eq([false, false, false, false])
  end
end
