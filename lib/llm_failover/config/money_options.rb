# frozen_string_literal: true

require_relative "../errors"
require_relative "../money/price"
require_relative "../money/prices"
require_relative "../money/pricing"

module LlmFailover
  class Configuration
    # What the attempts cost: the price table (c.prices) and the overrides in front
    # of it (c.price), asked through #pricing (money/pricing.rb says how a target finds
    # its price).
    #
    # @api private: included by Configuration
    module MoneyOptions
      # @param value [Prices, nil] nil: no prices (every cost nil, no warnings)
      def prices=(value)
        unless value.nil? || value.is_a?(Prices)
          raise ConfigurationError, "prices must be a LlmFailover::Prices or nil, got #{value.class}"
        end

        @prices = value
        @pricing = nil
      end

      # One price, in front of the table, for a provider entry (its name) or a host
      # (:openai, :anthropic, :gemini, :vertex, :bedrock, :azure); USD per million tokens.
      # @example
      #   c.price :openai, "gpt-4o", input: 2.50, output: 10.00, cached_input: 1.25
      # @return [Price]
      def price(provider, model, input:, output:, cached_input: nil, cache_write: nil, long_context: nil,
                max_output: nil)
        unless (provider.is_a?(Symbol) || provider.is_a?(String)) && !provider.to_s.empty?
          raise ConfigurationError, "price: the provider or host must be a Symbol, got #{provider.inspect}"
        end
        unless (model.is_a?(String) || model.is_a?(Symbol)) && !model.to_s.empty?
          raise ConfigurationError, "price: the model must be a String, got #{model.inspect}"
        end

        price = Price.new(input: input, output: output, cached_input: cached_input, cache_write: cache_write,
                          long_context: long_context, max_output: max_output, source: "c.price")
        @price_overrides = price_overrides.with(provider, model, price)
        @pricing = nil
        price
      end

      # @return [Prices] the prices c.price set
      def price_overrides
        @price_overrides ||= Prices.new
      end

      # @api private: this configuration's prices as a call asks them, built once
      # (again after prices=, price or logger=)
      def pricing
        @pricing ||= Pricing.new(prices: @prices, overrides: price_overrides, logger: @logger)
      end
    end
  end
end
