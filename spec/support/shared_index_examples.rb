# frozen_string_literal: true

# The contract of a semantic index shared by processes (RedisIndex, ActiveRecordIndex):
# what one process adds, another finds, from its own mirror, brought up to date
# incrementally. The including group defines new_index (a fresh index object, as a
# new process would build it) and reconnect (called first in a forked child).
RSpec.shared_examples "a shared semantic index" do
  # Runs the block in a forked child with an index of its own; returns what the
  # block returned (through a pipe, as JSON).
  def in_other_process
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      reconnect
      result = yield new_index
      writer.write(JSON.generate([:ok, result]))
    rescue Exception => e # rubocop:disable Lint/RescueException -- reported to the parent
      writer.write(JSON.generate([:error, "#{e.class}: #{e.message}"]))
    ensure
      writer.close
      exit!(0)
    end
    writer.close
    status, result = JSON.parse(reader.read)
    Process.wait(pid)
    raise "the other process failed: #{result}" unless status == "ok"

    result
  ensure
    reader&.close
  end

  # A forked process that keeps one index across steps: each call of the returned
  # lambda runs the next of +steps+ (each given the child's index) there and returns
  # what it returned. The child is waited for once its steps are done.
  def long_lived_process(*steps)
    to_child, child_in = IO.pipe
    child_out, from_child = IO.pipe
    pid = fork do
      child_in.close
      child_out.close
      reconnect
      index = new_index
      steps.each do |step|
        to_child.gets
        reply = begin
          [:ok, step.call(index)]
        rescue Exception => e # rubocop:disable Lint/RescueException -- reported to the parent
          [:error, "#{e.class}: #{e.message}"]
        end
        from_child.puts(JSON.generate(reply))
      end
    ensure
      exit!(0)
    end
    to_child.close
    from_child.close
    left = steps.size
    lambda do
      child_in.puts("go")
      status, result = JSON.parse(child_out.gets || '["error","the other process died"]')
      Process.wait(pid) if (left -= 1).zero? || status != "ok"
      raise "the other process failed: #{result}" unless status == "ok"

      result
    end
  end

  def axis(i, dim = 8)
    Array.new(dim) { |k| k == i ? 1.0 : 0.01 * k }
  end

  it "finds what another process added, and then what it adds next (only the new entries fetched)" do
    here = new_index
    expect(here.nearest(partition: "acme|m|d", vector: axis(0), threshold: 0.9)).to be_nil
    in_other_process do |there|
      there.add(partition: "acme|m|d", vector: axis(0), value: "zero")
      there.add(partition: "acme|m|d", vector: axis(1), value: "one")
      there.add(partition: "other|m|d", vector: axis(0), value: "other tenant")
      nil
    end
    value, similarity = here.nearest(partition: "acme|m|d", vector: axis(0), threshold: 0.9)
    expect(value).to eq("zero")
    expect(similarity).to be > 0.99
    expect(here.nearest(partition: "acme|m|d", vector: axis(1), threshold: 0.9)&.first).to eq("one")
    expect(here.mirror.size).to eq(2) # the other tenant's partition was never asked for

    in_other_process do |there|
      there.add(partition: "acme|m|d", vector: axis(2), value: "two")
      nil
    end
    expect(here.nearest(partition: "acme|m|d", vector: axis(2), threshold: 0.9)&.first).to eq("two")
    expect(here.mirror.size).to eq(3)
    expect(here.size).to eq(4) # the shared store: both partitions
  end

  it "answers a lookup from this process's mirror, not from the store" do
    here = new_index
    here.add(partition: "t", vector: axis(3), value: "three")
    in_other_process do |there|
      # A new process mirrors the partition at its first lookup...
      there.nearest(partition: "t", vector: axis(3), threshold: 0.9)&.first
    end.then { |found| expect(found).to eq("three") }
    # ...and then answers from memory: the store's rows gone behind its back (not a
    # clear) do not change its answer.
    remove_from_store_behind_the_index
    expect(here.nearest(partition: "t", vector: axis(3), threshold: 0.9)&.first).to eq("three")
  end

  it "adds this process's own entry once to its mirror" do
    here = new_index
    here.add(partition: "t", vector: axis(4), value: "four")
    here.nearest(partition: "t", vector: axis(4), threshold: 0.9) # fetches its own entry back
    expect(here.mirror.size).to eq(1)
  end

  it "checks the dimension against what other processes added" do
    in_other_process do |there|
      there.add(partition: "dims", vector: [1.0, 2.0, 3.0], value: "three dims")
      nil
    end
    here = new_index
    expect { here.add(partition: "dims", vector: [1.0, 2.0], value: "two dims") }
      .to raise_error(ArgumentError, /dimension/)
    expect { here.nearest(partition: "dims", vector: [1.0, 2.0], threshold: 0.5) }
      .to raise_error(ArgumentError, /dimension/)
    expect(here.size).to eq(1)
  end

  it "refuses bad input before the store sees it" do
    here = new_index
    expect { here.add(partition: :t, vector: [1.0], value: "a") }.to raise_error(TypeError)
    expect { here.add(partition: "t", vector: [0.0, 0.0], value: "a") }.to raise_error(ArgumentError)
    expect { here.add(partition: "t", vector: [1.0, "x"], value: "a") }.to raise_error(TypeError)
    expect { here.add(partition: "t", vector: [1.0], value: nil) }.to raise_error(TypeError)
    expect { here.nearest(partition: nil, vector: [1.0], threshold: 0.5) }.to raise_error(TypeError)
    expect(here.size).to eq(0)
  end

  it "reaches every process's mirror with a clear, either way, and what is added after it is found" do
    here = new_index
    3.times { |i| here.add(partition: "t", vector: axis(i), value: "before #{i}") }
    other = long_lived_process(
      ->(there) { [there.nearest(partition: "t", vector: axis(0), threshold: 0.9)&.first, there.mirror.size] },
      lambda do |there|
        found = [0, 3].map { |i| there.nearest(partition: "t", vector: axis(i), threshold: 0.9)&.first }
        [found, there.mirror.size]
      end,
      lambda do |there|
        there.clear
        there.add(partition: "u", vector: axis(4), value: "theirs, after their clear")
        nil
      end
    )
    expect(other.call).to eq(["before 0", 3]) # the other process mirrors the partition
    here.clear
    here.add(partition: "t", vector: axis(3), value: "after")
    # Its next lookup drops the mirror: nothing from before the clear, what came after.
    expect(other.call).to eq([[nil, "after"], 1])

    expect(here.nearest(partition: "t", vector: axis(3), threshold: 0.9)&.first).to eq("after")
    other.call # now the other process clears, and adds
    expect(here.nearest(partition: "t", vector: axis(3), threshold: 0.9)).to be_nil
    expect(here.mirror.size).to eq(0)
    expect(here.nearest(partition: "u", vector: axis(4), threshold: 0.9)&.first).to eq("theirs, after their clear")
    expect(here.size).to eq(1)
  end

  it "clears the store and its own mirror" do
    here = new_index
    here.add(partition: "t", vector: axis(5), value: "five")
    here.clear
    expect(here.size).to eq(0)
    expect(here.mirror.size).to eq(0)
    expect(here.nearest(partition: "t", vector: axis(5), threshold: 0.9)).to be_nil
  end
end
