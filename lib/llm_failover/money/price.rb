# frozen_string_literal: true

require "bigdecimal"

require_relative "../errors"

module LlmFailover
  # What one model costs on one host, in USD per million tokens: input, output, cached
  # input (read from a prompt cache) and cache write (written to one). A price the host
  # does not set is the input price (no discount known, no surcharge known).
  # Optionally a long-context tier: past +above+ input tokens in one request, every
  # token of it is billed at the tier's prices (Gemini 2.5 Pro past 200k, GPT-5.4 past
  # 272k). +max_output+ is the most output tokens one request can get, when known: a
  # call that sets no max_tokens reserves that much of a quota.
  #
  # @example
  #   price = LlmFailover::Price.new(input: 2.50, output: 10.00, cached_input: 1.25)
  #   price.cost(input_tokens: 1_000, output_tokens: 200, cached_input_tokens: 400).to_s("F")  # => "0.004"
  class Price
    # Rates are counted in whole 1e-12 USD per million tokens (1e-18 USD per token),
    # so a cost is summed in Integers and scaled once (by a power of ten: exact, and
    # cheaper than BigDecimal's division).
    UNITS = 10**12
    USD_PER_UNIT_TOKEN = BigDecimal(1) / (UNITS * 1_000_000) # 1e-18, exactly
    private_constant :UNITS, :USD_PER_UNIT_TOKEN

    RATES = %i[input output cached_input cache_write].freeze

    # @return [BigDecimal] USD per million tokens
    attr_reader :input, :output, :cached_input, :cache_write
    # @return [Integer, nil] input tokens past which #long_context applies
    attr_reader :above
    # @return [Price, nil] the prices past #above
    attr_reader :long_context
    # @return [Integer, nil] the most output tokens one request can get
    attr_reader :max_output
    # @return [String, nil] where the figures come from (a page, a file)
    attr_reader :source

    # @param input [Numeric, String] USD per million input tokens
    # @param output [Numeric, String] USD per million output tokens
    # @param cached_input [Numeric, String, nil] nil: the input price
    # @param cache_write [Numeric, String, nil] nil: the input price
    # @param long_context [Hash, nil] { above: Integer, input:, output:, cached_input:, cache_write: }
    # @raise [ConfigurationError] a price that is not a finite, non-negative number
    def initialize(input:, output:, cached_input: nil, cache_write: nil, long_context: nil, max_output: nil,
                   source: nil)
      @input = rate(:input, input)
      @output = rate(:output, output)
      @cached_input = cached_input.nil? ? @input : rate(:cached_input, cached_input)
      @cache_write = cache_write.nil? ? @input : rate(:cache_write, cache_write)
      @units = [@input, @output, @cached_input, @cache_write].map { |rate| (rate * UNITS).round }.freeze
      @above, @long_context = tier(long_context)
      unless max_output.nil? || (max_output.is_a?(Integer) && max_output.positive?)
        raise ConfigurationError, "max_output must be a positive Integer or nil, got #{max_output.inspect}"
      end

      @max_output = max_output
      @source = source&.to_s&.dup&.freeze
      freeze
    end

    # The cost of one request's tokens. +input_tokens+ counts every input token billed,
    # the cached and cache-written ones included (the core's rule on every protocol);
    # nil counts as 0 (the provider reported none).
    # @return [BigDecimal] USD
    def cost(input_tokens:, output_tokens:, cached_input_tokens: nil, cache_write_tokens: nil)
      input = input_tokens.to_i
      if @above && input > @above
        return @long_context.cost(input_tokens: input, output_tokens: output_tokens,
                                  cached_input_tokens: cached_input_tokens, cache_write_tokens: cache_write_tokens)
      end

      cached = cached_input_tokens.to_i.clamp(0, input)
      written = cache_write_tokens.to_i.clamp(0, input - cached)
      plain = input - cached - written
      input_rate, output_rate, cached_rate, write_rate = @units
      BigDecimal((input_rate * plain) + (cached_rate * cached) + (write_rate * written) +
                 (output_rate * output_tokens.to_i)) * USD_PER_UNIT_TOKEN
    end

    # @return [Hash] the rates as Floats and the rest as given: what #inspect and specs compare
    def to_h
      h = RATES.to_h { |name| [name, public_send(name).to_f] }
      h[:long_context] = @long_context.to_h.slice(*RATES).merge(above: @above) if @long_context
      h[:max_output] = @max_output if @max_output
      h
    end

    def ==(other)
      other.is_a?(Price) && to_h == other.to_h
    end
    alias eql? ==

    def hash
      to_h.hash
    end

    def inspect
      rates = RATES.map { |name| "#{name}=#{public_send(name).to_s('F')}" }.join(" ")
      "#<#{self.class.name} #{rates}#{" above #{@above}: #{@long_context.inspect}" if @long_context}>"
    end

    private

    # Figures go through their decimal text: 0.15 is 0.15, not the Float nearest it.
    def rate(name, value)
      number = case value
               when BigDecimal then value
               when Integer then BigDecimal(value)
               when Float, Rational then value.finite? ? BigDecimal(value.to_s) : nil
               when String then begin
                 BigDecimal(value)
               rescue ArgumentError
                 nil
               end
               end
      return number if number&.finite? && !number.negative?

      raise ConfigurationError, "price #{name} must be a finite, non-negative number (USD per million tokens), " \
                                "got #{value.inspect}"
    end

    def tier(spec)
      return [nil, nil] if spec.nil?
      unless spec.is_a?(Hash) && spec[:above].is_a?(Integer) && spec[:above].positive?
        raise ConfigurationError, "long_context must be a Hash with above: (a positive Integer of input tokens), " \
                                  "got #{spec.inspect}"
      end

      rates = spec.slice(*RATES)
      # A rate the tier leaves out is the base one's.
      [spec[:above], Price.new(input: rates.fetch(:input, @input), output: rates.fetch(:output, @output),
                               cached_input: rates.fetch(:cached_input, @cached_input),
                               cache_write: rates.fetch(:cache_write, @cache_write))]
    end
  end
end
