# frozen_string_literal: true

require "llm_failover/llm_failover" # the scan is the C core's (core/lf_vindex.c)
require_relative "../errors"

module LlmFailover
  # The semantic cache's vector index in this process: per partition, normalised
  # vectors and their values. A lookup is an exact scan (int8 codes first, candidates
  # rescored in float), so it never misses what a float comparison would find. Past
  # max_entries or max_bytes the least recently used entry goes. Thread safe; a long
  # scan releases the GVL; a forked child keeps a copy. About 5 bytes per dimension
  # per entry plus the value (MemoryIndex.entry_bytes).
  #
  #   index = LlmFailover::MemoryIndex.new(max_entries: 50_000)
  #   index.add(partition: "acme|text-embedding-3-small|9f2c", vector: [0.1, 0.3, ...], value: "key")
  #   index.nearest(partition: "acme|text-embedding-3-small|9f2c", vector: [...], threshold: 0.92)
  #   # => ["key", 0.97] or nil
  class MemoryIndex
    DEFAULT_MAX_ENTRIES = 100_000
    DEFAULT_MAX_BYTES = 512 * 1024 * 1024

    attr_reader :max_entries, :max_bytes

    # @param max_entries [Integer, nil] entries kept over all partitions (nil: no bound)
    # @param max_bytes [Integer, nil] bytes kept (vectors, codes, values; nil: no bound)
    # @raise [ConfigurationError] a bound that is not a positive Integer or nil
    def initialize(max_entries: DEFAULT_MAX_ENTRIES, max_bytes: DEFAULT_MAX_BYTES)
      [[:max_entries, max_entries], [:max_bytes, max_bytes]].each do |name, v|
        next if v.nil? || (v.is_a?(Integer) && v.positive?)

        raise ConfigurationError, "#{name} must be a positive Integer or nil, got #{v.inspect}"
      end
      @max_entries = max_entries
      @max_bytes = max_bytes
      setup(max_entries || 0, max_bytes || 0)
    end

    # Adds an entry, the most recently used; the same vector again in the partition
    # replaces the entry's value.
    # @param partition [String]
    # @param vector [Array<Float>] any nonzero norm (the index normalises); every vector
    #   of a partition has one dimension
    # @param value [String] given back by #nearest (as UTF-8)
    # @return [nil]
    # @raise [ArgumentError] another dimension than the partition's; an empty, zero or
    #   non-finite vector; an entry larger than max_bytes alone
    # @raise [TypeError] a partition or value that is not a String, a component that is
    #   not a number
    def add(partition:, vector:, value:)
      add_entry(partition, vector, value)
    end

    # @!method self.normalise(vector)
    #   The vector as every index keeps it (norm 1), checked by the rule #add applies:
    #   the shared indexes that search on a server send this.
    #   @param vector [Array<Float>]
    #   @return [String] native-endian float32 (String#unpack("f*"))
    #   @raise [ArgumentError] an empty, zero or non-finite vector, or one too long
    #   @raise [TypeError] a component that is not a number

    # @param threshold [Float] the least cosine similarity that counts
    # @return [Array(String, Float), nil] the value and similarity of the partition's
    #   most similar entry at or above threshold (now the most recently used), or nil
    # @raise [ArgumentError] another dimension than the partition's, a bad vector
    def nearest(partition:, vector:, threshold:)
      nearest_entry(partition, vector, threshold)
    end
  end
end
