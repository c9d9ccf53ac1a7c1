# frozen_string_literal: true

require_relative "../../active_record/ar_spec_helper"
require "support/shared_index_examples"

# ActiveRecordIndex on a real SQLite file and a real PostgreSQL server: mirrored in
# each process on both (search: :mirror), and searched by PostgreSQL where it has
# pgvector 0.8; the shared contract with forked processes either way.
module VectorIndexSpec
  # A forked child connects again: it never uses its parent's connections.
  def reconnect
    ActiveRecord::Base.establish_connection(ArSpec.config(ArSpec.current))
  end

  def remove_from_store_behind_the_index
    ActiveRecord::Base.connection_pool.with_connection { |c| c.execute("DELETE FROM llm_failover_vectors") }
  end
end

ArSpec.describe "LlmFailover::ActiveRecordIndex", ruby_only: false do
  include VectorIndexSpec

  it "asks the database once which way it searches: PostgreSQL with pgvector 0.8 itself, others mirrored" do
    index = LlmFailover::ActiveRecordIndex.new
    searches = postgresql? && PostgresServer.pgvector_missing_reason.nil?
    expect(index.search).to eq(searches ? :server : :mirror)
    expect(index.inspect).to include("search=#{index.search}")
  end

  it "says so at the first use when told to search on a database that cannot" do
    skip "PostgreSQL here has pgvector 0.8" if postgresql? && PostgresServer.pgvector_missing_reason.nil?

    index = LlmFailover::ActiveRecordIndex.new(search: :server)
    expect { index.add(partition: "t", vector: [1.0], value: "v") }
      .to raise_error(LlmFailover::ConfigurationError, /cannot search/)
  end
end

ArSpec.describe "LlmFailover::ActiveRecordIndex mirrored", ruby_only: false do
  include VectorIndexSpec

  def new_index(**options)
    LlmFailover::ActiveRecordIndex.new(search: :mirror, **options)
  end

  include_examples "a shared semantic index"
  include_examples "a mirrored semantic index"

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

RSpec.describe "LlmFailover::ActiveRecordIndex searched by PostgreSQL (pgvector)",
               active_record: true, db: :postgresql, skip: PostgresServer.pgvector_missing_reason do
  include VectorIndexSpec

  def new_index(**options)
    LlmFailover::ActiveRecordIndex.new(**options)
  end

  def engine
    LlmFailover::ActiveRecordIndex::Pgvector
  end

  def graph_dimensions
    1536 # the table's HNSW indexes are for 1,536 and 3,072 dimensions
  end

  include_examples "a shared semantic index"
  include_examples "a searching semantic index"

  it "keeps the normalised vector in the embedding column, and the vector column empty" do
    new_index.add(partition: "acme|m|d", vector: [3.0, 4.0], value: "v")
    row = LlmFailover::ActiveRecord::VectorEntry.last
    expect(row.embedding).to match([be_within(1e-6).of(0.6), be_within(1e-6).of(0.8)])
    expect(row.vector).to eq("")
    expect([row.partition_key, row.dimensions, row.value]).to eq([Digest::SHA256.hexdigest("acme|m|d"), 2, "v"])
  end

  it "prunes a partition's oldest rows past max_per_partition" do
    here = new_index(max_per_partition: 5, prune_every: 10)
    30.times { |i| here.add(partition: "t", vector: [1.0, i.to_f], value: i.to_s) }
    expect(LlmFailover::ActiveRecord::VectorEntry.order(:id).pluck(:value)).to eq(%w[25 26 27 28 29])
    expect(here.nearest(partition: "t", vector: [1.0, 0.0], threshold: 0.9999)).to be_nil
    expect(here.nearest(partition: "t", vector: [1.0, 29.0], threshold: 0.9999)&.first).to eq("29")
  end

  # The engine forbids sorting for a large partition's query (Pgvector::HNSW_SETTINGS):
  # then only an index that gives the query's order can answer, the HNSW index, if
  # the query's ORDER BY and WHERE match its expression and predicate.
  it "reads a small partition whole in one query, and searches a large one by an ORDER BY its HNSW index serves" do
    rng = Random.new(3)
    here = new_index
    vectors = Array.new(engine::EXACT_UP_TO + 50) { Array.new(1536) { rng.rand - 0.5 } }
    vectors.first(10).each_with_index { |v, i| here.add(partition: "small", vector: v, value: "small #{i}") }
    # The large partition in one statement, as #add writes its rows (the spec above).
    rows = vectors.each_with_index.map do |v, i|
      { partition_key: Digest::SHA256.hexdigest("large"), dimensions: 1536, vector: "", value: "large #{i}",
        embedding: LlmFailover::MemoryIndex.normalise(v).unpack("f*"), created_at: Time.now.utc }
    end
    LlmFailover::ActiveRecord::VectorEntry.insert_all!(rows)
    ActiveRecord::Base.connection.execute("ANALYZE llm_failover_vectors")

    small = sql_during { expect(here.nearest(partition: "small", vector: vectors[3], threshold: 0.99)&.first).to eq("small 3") }
    expect(small.size).to eq(1)

    plans = []
    subscriber = ActiveSupport::Notifications.subscribe("sql.active_record") do |*, payload|
      next unless payload[:name].to_s.end_with?("HNSW")

      connection = ActiveRecord::Base.connection
      plans << connection.transaction(requires_new: true) do
        connection.execute(LlmFailover::ActiveRecordIndex::Pgvector::HNSW_SETTINGS)
        connection.select_values("EXPLAIN #{payload[:sql]}", "EXPLAIN", payload[:binds]).join("\n")
      end
    end
    begin
      expect(here.nearest(partition: "large", vector: vectors[520], threshold: 0.99)&.first).to eq("large 520")
    ensure
      ActiveSupport::Notifications.unsubscribe(subscriber)
    end
    expect(plans.sole).to match(/Index Scan using index_llm_failover_vectors_on_embedding_1536/)
  end
end
