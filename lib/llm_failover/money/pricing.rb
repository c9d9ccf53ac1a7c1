# frozen_string_literal: true

require "uri"

require_relative "../records/warnings"
require_relative "prices"

module LlmFailover
  # A configuration's prices as a call asks them: the price of a target, and what an
  # attempt's tokens cost. One per configuration (Configuration#pricing), made again
  # when c.prices= or c.price changes it.
  #
  # How a target finds its price: the provider entry's name, then the host it is
  # (its api:, and for :openai / :anthropic only at their own base URL: a compatible
  # server elsewhere is another host), each in the overrides (c.price) before the
  # table (c.prices); first with the model id the host is asked for, then with the
  # logical name a provider's models: maps to it. Nothing found: nil, and one
  # warning per provider and model in this process. A pool's is its dearest host's;
  # an attempt is priced at the host that served it.
  #
  # @api private
  class Pricing
    # The hosts the api of a provider entry names, whatever its base URL.
    API_HOSTS = { azure: :azure, bedrock: :bedrock, gemini: :gemini, vertex: :vertex }.freeze
    # :openai and :anthropic (and :responses) are those hosts only at their own address.
    OWN_HOSTS = { "api.openai.com" => :openai, "api.anthropic.com" => :anthropic }.freeze

    @warned = {}
    @warned_lock = Mutex.new

    class << self
      # @return [Boolean] true the first time +key+ is seen in this process
      def first_warning?(key)
        @warned_lock.synchronize do
          next false if @warned.key?(key)

          @warned.clear if @warned.size >= 10_000
          @warned[key] = true
        end
      end

      # @return [Symbol, nil] the host a provider entry is, by its api and base URL
      def host_of(provider)
        api = provider.api
        return API_HOSTS[api] if API_HOSTS.key?(api)

        OWN_HOSTS[URI.parse(provider.base_url.to_s).host.to_s.downcase]
      rescue URI::InvalidURIError
        nil
      end
    end

    # @param prices [Prices, nil] the table (nil: no prices, no costs, no warnings)
    # @param overrides [Prices] c.price's
    def initialize(prices:, overrides:, logger: nil)
      @prices = prices
      @overrides = overrides
      @logger = logger
      @found = {}.compare_by_identity # Target => [price]: a handful per configuration
      @found_lock = Mutex.new
      @warned = {}.compare_by_identity # the unpriced targets #unpriced has reported
    end

    # @return [Boolean] whether costs are computed at all (c.prices = nil turns them off)
    def on?
      !@prices.nil? || !@overrides.empty?
    end

    # @param target [Target]
    # @return [Price, nil]
    def for(target)
      return nil unless on?

      found = @found_lock.synchronize { @found[target] }
      return found.first if found

      # Looked up outside the lock: a pool's lookup asks #for of each of its hosts.
      price = lookup(target)
      @found_lock.synchronize do
        @found.clear if @found.size >= 1000
        @found[target] ||= [price]
      end.first
    end

    # The price of +model+ on a provider or host known only by name (a report's rows,
    # written by another process): its entry in +providers+ when configured here (a pool's
    # too: its dearest host's).
    # @param providers [Hash{Symbol => ProviderConfig, PoolConfig}]
    # @return [Price, nil]
    def for_name(provider, model, providers: {})
      return nil unless on?

      entry = providers[provider.to_sym]
      entry ? self.for(entry.target(model.to_s)) : find([provider.to_sym], [model])
    end

    # What +tokens+ cost on +target+: 0 when no token was billed (a skip, a refused
    # connection, an error without usage), nil when tokens were and no price is known.
    # @return [BigDecimal, nil]
    def cost(target, input_tokens:, output_tokens:, cached_input_tokens: nil, cache_write_tokens: nil)
      return nil unless on?
      return ZERO if input_tokens.to_i.zero? && output_tokens.to_i.zero?

      price = self.for(target)
      unless price
        unpriced(target)
        return nil
      end
      price.cost(input_tokens: input_tokens, output_tokens: output_tokens, cached_input_tokens: cached_input_tokens,
                 cache_write_tokens: cache_write_tokens)
    end

    def inspect
      "#<#{self.class.name} prices=#{@prices.inspect} overrides=#{@overrides.size}>"
    end

    ZERO = BigDecimal("0")

    private

    def lookup(target)
      return costliest(target.hosts.map { |host| self.for(host) }) if target.pool?

      provider = target.provider
      find([provider.name, self.class.host_of(provider)].compact.uniq, [target.engine.model, target.model])
    end

    # A pool's price is its dearest host's (input and output per million together):
    # the most one of its calls can cost. nil when a host has none.
    def costliest(prices)
      return nil if prices.include?(nil)

      prices.max_by { |price| price.input + price.output }
    end

    def find(hosts, models)
      tables = [@overrides, @prices].compact
      models.map(&:to_s).uniq.each do |model|
        hosts.each do |host|
          tables.each do |table|
            price = table[host, model]
            return price if price
          end
        end
      end
      nil
    end

    # Every call to an unpriced target comes here: after its first, one Hash read (the
    # class's first_warning? takes a lock and hashes an Array).
    def unpriced(target)
      return if @warned[target]

      @found_lock.synchronize do
        @warned.clear if @warned.size >= 1000
        @warned[target] = true
      end
      return unless self.class.first_warning?([target.name, target.model])

      Warnings.warn("no price for #{target.label}: its attempts' cost is nil (set one with " \
                    "c.price #{target.name.inspect}, #{target.model.to_s.inspect}, input: ..., output: ...)",
                    logger: @logger || LlmFailover.configuration.logger)
    end
  end
end
