# frozen_string_literal: true

require_relative "../errors"
require_relative "price"

module LlmFailover
  # A table of prices: per host (:openai, :anthropic, :gemini, :vertex, :bedrock,
  # :azure, or any provider name) and model id, a Price. Frozen; #with and #merge make
  # new tables. The configuration's is Prices.default unless c.prices says otherwise;
  # c.price puts overrides in front of it.
  #
  # @example
  #   prices = LlmFailover::Prices.default
  #   prices.as_of                     # => "2026-12-07"
  #   prices[:openai, "gpt-4o"].output # => 0.1e2 (USD per million tokens)
  #   mine = LlmFailover::Prices.from_file("model_prices_and_context_window.json")
  class Prices
    include Enumerable

    # @return [String, nil] the date the prices were read (the default table's), or nil
    attr_reader :as_of

    # The table shipped with the gem (money/default_prices.rb), dated.
    # @return [Prices]
    def self.default
      @default ||= begin
        require_relative "default_prices"
        new(Defaults.table, as_of: Defaults::AS_OF)
      end
    end

    # A price file in LiteLLM's format (model_prices_and_context_window.json), the one
    # the community keeps current: its chat, responses and embedding models with a
    # per-token price, under the hosts this gem names them by (money/litellm_file.rb).
    # @param path [String]
    # @return [Prices]
    # @raise [ConfigurationError] a file that cannot be read or is not that format
    def self.from_file(path)
      require_relative "litellm_file"
      LiteLLMFile.read(path)
    end

    # @param table [Hash{Symbol => Hash{String => Price}}]
    # @param as_of [String, nil]
    def initialize(table = {}, as_of: nil)
      @table = table.to_h do |host, models|
        [host.to_sym, models.to_h { |model, price| [model.to_s.dup.freeze, checked(price)] }.freeze]
      end.freeze
      @as_of = as_of&.dup&.freeze
      freeze
    end

    # @return [Price, nil] +model+'s price on +host+
    def [](host, model)
      @table.dig(host.to_sym, model.to_s)
    end

    # @return [Prices] a copy with +model+ on +host+ at +price+
    def with(host, model, price)
      self.class.new(@table.merge(host.to_sym => (@table[host.to_sym] || {}).merge(model.to_s => price)), as_of: @as_of)
    end

    # @return [Prices] this table with +other+'s prices over it
    def merge(other)
      table = @table.merge(other.to_table) { |_, mine, theirs| mine.merge(theirs) }
      self.class.new(table, as_of: @as_of)
    end

    # @return [Array<Symbol>]
    def hosts
      @table.keys
    end

    # Yields host, model, price.
    def each(&block)
      return enum_for(:each) unless block

      @table.each { |host, models| models.each { |model, price| yield host, model, price } }
    end

    # @return [Integer] prices in the table
    def size
      @table.sum { |_, models| models.size }
    end

    def empty?
      size.zero?
    end

    def inspect
      "#<#{self.class.name} #{size} prices#{" as of #{@as_of}" if @as_of} hosts=#{hosts.join(',')}>"
    end

    protected

    def to_table
      @table
    end

    private

    def checked(price)
      return price if price.is_a?(Price)

      raise ConfigurationError, "a Prices table holds LlmFailover::Price values, got #{price.class}"
    end
  end
end
