# frozen_string_literal: true

require_relative "ar_spec_helper"
require_relative "../support/shared_index_examples"

# ActiveRecordIndex on a real SQLite file and a real PostgreSQL server: the shared
# contract with forked processes, the incremental query, pruning.
ArSpec.describe "LlmFailover::ActiveRecordIndex", ruby_only: false do
  def new_index(**options)
    LlmFailover::ActiveRecordIndex.new(**options)
  end

  # A forked child connects again: it never uses its parent's connections.
  def reconnect
    ActiveRecord::Base.establish_connection(ArSpec.config(ArSpec.current))
  end

  def remove_from_store_behind_the_index
    ActiveRecord::Base.connection_pool.with_connection { |c| c.execute("DELETE FROM llm_failover_vectors") }
  end

  include_examples "a shared semantic index"

  it "asks only for the partition's rows after the last one mirrored" do
    here = new_index
    here.add(partition: "t", vector: [1.0, 0.0], value: "a")
    statements = sql_during { here.nearest(partition: "t", vector: [1.0, 0.0], threshold: 0.9) }
    expect(statements.size).to eq(1)
    expect(statements.first).to match(/"partition_key" = /).and match(/"id" > /)
  end

  it "keeps the vector as float32 and the partition as its SHA-256" do
    new_index.add(partition: "acme|m|d", vector: [0.5, 0.25], value: "v")
    row = LlmFailover::ActiveRecord::VectorEntry.last
    expect(row.vector.unpack("e*")).to eq([0.5, 0.25])
    expect(row.partition_key).to eq(Digest::SHA256.hexdigest("acme|m|d"))
    expect([row.dimensions, row.value]).to eq([2, "v"])
  end

  it "prunes a partition's oldest rows past max_per_partition" do
    here = new_index(max_per_partition: 5, prune_every: 10)
    30.times { |i| here.add(partition: "t", vector: [1.0, i.to_f], value: i.to_s) }
    here.add(partition: "u", vector: [1.0, 0.0], value: "u")
    values = LlmFailover::ActiveRecord::VectorEntry.order(:id).pluck(:value)
    expect(values).to eq(%w[25 26 27 28 29 u])
  end
end
