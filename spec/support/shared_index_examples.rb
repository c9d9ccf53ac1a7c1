# frozen_string_literal: true

# The contract of a semantic index shared by processes (RedisIndex, ActiveRecordIndex),
# the same whether the store searches or each process mirrors: what one process adds,
# another finds; a hit is the best entry at or above the threshold, by its exact
# cosine; partitions never mix; a clear reaches every process. The including group
# defines new_index (a fresh index object, as a new process would build it) and
# reconnect (called first in a forked child).
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

  it "finds what another process added, and then what it adds next, never from another partition" do
    here = new_index
    expect(here.nearest(partition: "acme|m|d", vector: axis(0), threshold: 0.9)).to be_nil
    in_other_process do |there|
      there.add(partition: "acme|m|d", vector: axis(0), value: "zero")
      there.add(partition: "acme|m|d", vector: axis(1), value: "one")
      there.add(partition: "other|m|d", vector: axis(2), value: "other tenant")
      nil
    end
    value, similarity = here.nearest(partition: "acme|m|d", vector: axis(0), threshold: 0.9)
    expect(value).to eq("zero")
    expect(similarity).to be > 0.99
    expect(here.nearest(partition: "acme|m|d", vector: axis(1), threshold: 0.9)&.first).to eq("one")
    expect(here.nearest(partition: "acme|m|d", vector: axis(2), threshold: 0.9)).to be_nil
    expect(here.nearest(partition: "other|m|d", vector: axis(2), threshold: 0.9)&.first).to eq("other tenant")

    in_other_process do |there|
      there.add(partition: "acme|m|d", vector: axis(3), value: "three")
      nil
    end
    expect(here.nearest(partition: "acme|m|d", vector: axis(3), threshold: 0.9)&.first).to eq("three")
    expect(here.size).to eq(4) # the store: both partitions
  end

  it "answers the most similar entry at or above the threshold, by its exact cosine, and none below" do
    here = new_index
    # Cosines to the query axis(0) in 8 dimensions: 0.97, 0.95 and 0.6, given at
    # lengths other than 1 (the index normalises).
    at = ->(cos, k) { Array.new(8) { |i| i.zero? ? cos : (i == k ? Math.sqrt(1 - (cos * cos)) : 0.0) } }
    here.add(partition: "t", vector: at.(0.95, 1).map { |x| x * 3 }, value: "0.95")
    here.add(partition: "t", vector: at.(0.97, 2).map { |x| x / 4 }, value: "0.97")
    here.add(partition: "t", vector: at.(0.6, 3), value: "0.6")
    query = Array.new(8) { |i| i.zero? ? 2.0 : 0.0 }
    value, similarity = new_index.nearest(partition: "t", vector: query, threshold: 0.9)
    expect(value).to eq("0.97")
    expect(similarity).to be_within(1e-6).of(0.97)
    expect(new_index.nearest(partition: "t", vector: query, threshold: 0.96)&.first).to eq("0.97")
    expect(new_index.nearest(partition: "t", vector: query, threshold: 0.975)).to be_nil
    # The entry at 0.95 from a query nearer to it than to the others.
    value, similarity = new_index.nearest(partition: "t", vector: at.(0.95, 1), threshold: 0.99)
    expect([value, similarity.round(5)]).to eq(["0.95", 1.0])
  end

  it "keeps partitions of two embedding models apart, each with its dimension" do
    here = new_index
    here.add(partition: "acme|small|d", vector: [1.0, 0.0, 0.0], value: "three dims")
    here.add(partition: "acme|large|d", vector: axis(0), value: "eight dims")
    expect(new_index.nearest(partition: "acme|small|d", vector: [1.0, 0.0, 0.0], threshold: 0.9)&.first)
      .to eq("three dims")
    expect(new_index.nearest(partition: "acme|large|d", vector: axis(0), threshold: 0.9)&.first).to eq("eight dims")
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
    expect { here.add(partition: "t", vector: [1.0, Float::NAN], value: "a") }.to raise_error(ArgumentError)
    expect { here.add(partition: "t", vector: [], value: "a") }.to raise_error(ArgumentError)
    expect { here.add(partition: "t", vector: [1.0, "x"], value: "a") }.to raise_error(TypeError)
    expect { here.add(partition: "t", vector: [1.0], value: nil) }.to raise_error(TypeError)
    expect { here.nearest(partition: nil, vector: [1.0], threshold: 0.5) }.to raise_error(TypeError)
    expect { here.nearest(partition: "t", vector: [1.0], threshold: "0.5") }.to raise_error(TypeError)
    expect { here.nearest(partition: "t", vector: [0.0], threshold: 0.5) }.to raise_error(ArgumentError)
    expect(here.size).to eq(0)
  end

  it "reaches every process with a clear, either way, and what is added after it is found" do
    here = new_index
    3.times { |i| here.add(partition: "t", vector: axis(i), value: "before #{i}") }
    other = long_lived_process(
      ->(there) { there.nearest(partition: "t", vector: axis(0), threshold: 0.9)&.first },
      ->(there) { [0, 3].map { |i| there.nearest(partition: "t", vector: axis(i), threshold: 0.9)&.first } },
      lambda do |there|
        there.clear
        there.add(partition: "u", vector: axis(4), value: "theirs, after their clear")
        nil
      end
    )
    expect(other.call).to eq("before 0")
    here.clear
    here.add(partition: "t", vector: axis(3), value: "after")
    # Nothing from before the clear, what came after.
    expect(other.call).to eq([nil, "after"])

    expect(here.nearest(partition: "t", vector: axis(3), threshold: 0.9)&.first).to eq("after")
    other.call # now the other process clears, and adds
    expect(here.nearest(partition: "t", vector: axis(3), threshold: 0.9)).to be_nil
    expect(here.nearest(partition: "u", vector: axis(4), threshold: 0.9)&.first).to eq("theirs, after their clear")
    expect(here.size).to eq(1)
  end

  it "clears the store" do
    here = new_index
    here.add(partition: "t", vector: axis(5), value: "five")
    here.clear
    expect(here.size).to eq(0)
    expect(here.nearest(partition: "t", vector: axis(5), threshold: 0.9)).to be_nil
    expect(new_index.nearest(partition: "t", vector: axis(5), threshold: 0.9)).to be_nil
  end
end

# What a mirroring index (search :mirror) adds to the contract: each process keeps
# a copy of the partitions it was asked about, fetching only what is new.
RSpec.shared_examples "a mirrored semantic index" do
  def axis(i, dim = 8)
    Array.new(dim) { |k| k == i ? 1.0 : 0.01 * k }
  end

  it "mirrors the partitions asked about, and then only the new entries" do
    here = new_index
    expect(here.search).to eq(:mirror)
    there = new_index
    there.add(partition: "acme|m|d", vector: axis(0), value: "zero")
    there.add(partition: "acme|m|d", vector: axis(1), value: "one")
    there.add(partition: "other|m|d", vector: axis(0), value: "other tenant")
    expect(here.nearest(partition: "acme|m|d", vector: axis(0), threshold: 0.9)&.first).to eq("zero")
    expect(here.mirror.size).to eq(2) # the other tenant's partition was never asked for
    there.add(partition: "acme|m|d", vector: axis(2), value: "two")
    expect(here.nearest(partition: "acme|m|d", vector: axis(2), threshold: 0.9)&.first).to eq("two")
    expect(here.mirror.size).to eq(3)
  end

  it "answers a lookup from this process's mirror, not from the store" do
    here = new_index
    here.add(partition: "t", vector: axis(3), value: "three")
    there = new_index
    # Another index mirrors the partition at its first lookup...
    expect(there.nearest(partition: "t", vector: axis(3), threshold: 0.9)&.first).to eq("three")
    # ...and then answers from memory: the store's rows gone behind its back (not a
    # clear) do not change its answer.
    remove_from_store_behind_the_index
    expect(there.nearest(partition: "t", vector: axis(3), threshold: 0.9)&.first).to eq("three")
    expect(here.nearest(partition: "t", vector: axis(3), threshold: 0.9)&.first).to eq("three")
  end

  it "adds this process's own entry once to its mirror" do
    here = new_index
    here.add(partition: "t", vector: axis(4), value: "four")
    here.nearest(partition: "t", vector: axis(4), threshold: 0.9) # fetches its own entry back
    expect(here.mirror.size).to eq(1)
  end

  it "drops another index's mirror when one clears" do
    here = new_index
    here.add(partition: "t", vector: [1.0, 0.0], value: "before")
    other = new_index
    expect(other.nearest(partition: "t", vector: [1.0, 0.0], threshold: 0.9)&.first).to eq("before")
    here.clear
    expect(here.mirror.size).to eq(0)
    expect(other.nearest(partition: "t", vector: [1.0, 0.0], threshold: 0.9)).to be_nil
    expect(other.mirror.size).to eq(0)
    here.add(partition: "t", vector: [0.0, 1.0], value: "after")
    expect(other.nearest(partition: "t", vector: [0.0, 1.0], threshold: 0.9)&.first).to eq("after")
    expect(other.mirror.size).to eq(1)
  end
end

# What a searching index (search :server) adds to the contract: no process keeps a
# copy, and it answers what an exact scan (MemoryIndex) answers, exactly up to
# EXACT_UP_TO entries and never with a wrong hit past them. The including group
# defines engine (the engine class, for its EXACT_UP_TO) and graph_dimensions (a
# dimension the store keeps a graph for: every one in Redis, 1,536 in PostgreSQL).
RSpec.shared_examples "a searching semantic index" do
  # Unit vectors in +dim+ dimensions, components roughly normal.
  def random_vectors(rng, count, dim)
    Array.new(count) { Array.new(dim) { rng.rand - rng.rand } }
  end

  it "keeps no copy in the process: what the store loses, no lookup answers" do
    here = new_index
    expect(here.search).to eq(:server)
    expect(here.mirror).to be_nil
    here.add(partition: "t", vector: [1.0, 0.0], value: "kept by the store")
    expect(here.nearest(partition: "t", vector: [1.0, 0.0], threshold: 0.9)&.first).to eq("kept by the store")
    remove_from_store_behind_the_index
    expect(here.nearest(partition: "t", vector: [1.0, 0.0], threshold: 0.9)).to be_nil
  end

  it "answers what an exact scan answers, for a partition it scans whole and one it searches by its graph" do
    rng = Random.new(7)
    dim = graph_dimensions
    here = new_index
    exact = LlmFailover::MemoryIndex.new(max_entries: nil, max_bytes: nil)
    small = random_vectors(rng, 200, dim)
    large = random_vectors(rng, engine::EXACT_UP_TO + 300, dim)
    { "small" => small, "large" => large }.each do |partition, vectors|
      vectors.each_with_index do |v, i|
        here.add(partition: partition, vector: v, value: "#{partition} #{i}")
        exact.add(partition: partition, vector: v, value: "#{partition} #{i}")
      end
    end
    # Queries near a stored vector (hits) and fresh ones (misses at a high threshold),
    # and at a low threshold where many entries qualify and only the best is the answer.
    queries = ->(vectors) { vectors.sample(40, random: rng).map { |v| v.map { |x| x + (0.1 * (rng.rand - 0.5)) } } }
    small_answers = (queries.(small) + random_vectors(rng, 20, dim)).flat_map do |q|
      [0.9, 0.3].map { |t| [here.nearest(partition: "small", vector: q, threshold: t), exact.nearest(partition: "small", vector: q, threshold: t)] }
    end
    small_answers.each do |got, want|
      expect(got&.first).to eq(want&.first)
      expect(got.last).to be_within(1e-5).of(want.last) if want
    end

    large_answers = (queries.(large) + random_vectors(rng, 20, dim)).map do |q|
      [here.nearest(partition: "large", vector: q, threshold: 0.9), exact.nearest(partition: "large", vector: q, threshold: 0.9)]
    end
    # Never a wrong hit: an answer is an entry at or above the threshold, at its exact
    # similarity; and a miss where the exact scan misses.
    large_answers.each do |got, want|
      expect(got).to be_nil if want.nil?
      next unless got

      expect(got.last).to be >= 0.9
      expect(got.last).to be_within(1e-5).of(want.last) if got.first == want&.first
    end
    found = large_answers.count { |got, want| want && got&.first == want.first }
    expect(found).to be >= (large_answers.count { |_, want| want } * 0.9) # the graph's recall, measured by the bench
  end
end
