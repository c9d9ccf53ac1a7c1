# frozen_string_literal: true

require_relative "../errors"
require "llm_failover/llm_failover" # Engine::Pool
require_relative "../chat/target"
require_relative "../safe_inspect"

module LlmFailover
  # One configured pool: a name used wherever a provider's is (provider:,
  # backup_provider:), served by several provider entries, its hosts (keys, regions,
  # vendors), each with a weight. Which host a call goes to is the engine's rule
  # (ext/llm_failover/core/lf_tier.c: by weight among the hosts with headroom); this
  # is its configuration: the hosts, checked once, and the Target a model asked of the
  # pool is (its Engine::Pool holding each host's Engine::Target).
  #
  # @example
  #   c.pool :gpt, hosts: [{ provider: :azure_east, weight: 2 }, { provider: :azure_west }, { provider: :openai }]
  class PoolConfig
    include SafeInspect

    # Hosts of one pool: the core's LF_MAX_POOL_HOSTS.
    MAX_HOSTS = Engine::MAX_POOL_HOSTS
    MODELS_KEPT = 32

    # One host: its provider entry and its weight.
    Host = Struct.new(:provider, :weight)

    attr_reader :name
    # @return [Array<Host>] frozen
    attr_reader :hosts

    # @param name [Symbol]
    # @param hosts [Array<Hash>] { provider:, weight: 1 } each
    # @param providers [Hash{Symbol => ProviderConfig}] the configured ones, which the hosts name
    # @raise [ConfigurationError]
    def initialize(name, hosts:, providers:)
      @name = name
      @hosts = validate_hosts(hosts, providers).freeze
      @per_model = {} # model => its Target (#target); the one mutable part
      freeze
    end

    # What a pool says where a provider says its protocol: a pool's hosts may speak
    # several (each host's rules are asked of its own entry).
    # @return [Symbol] :pool
    def api
      :pool
    end

    # @return [Array<Symbol>] the hosts' provider names, in order
    def host_names
      @hosts.map { |h| h.provider.name }
    end

    # Whether +provider+ (a ProviderConfig's name) is one of its hosts.
    def host?(provider_name)
      host_names.include?(provider_name)
    end

    # @return [PoolConfig] the same pool over +providers+ (a host redeclared since)
    def rebuilt(providers)
      PoolConfig.new(@name, hosts: @hosts.map { |h| { provider: h.provider.name, weight: h.weight } },
                            providers: providers)
    end

    # @api private: +model+ asked of the pool, as a frozen Target whose hosts are
    #   +model+ asked of each host's entry, with the credential each sends now (a new
    #   Target when a host's token was renewed, as ProviderConfig#target). A host whose
    #   credential source fails is that host's failure, not the pool's: it stays in the
    #   pick, unusable (ProviderConfig#unusable_target), and only a call that goes to it
    #   raises its ConfigurationError; such a Target is this call's only, never kept.
    def target(model)
      kept = @per_model[model]
      return kept if kept && current?(kept, model)

      hosts = @hosts.map { |h| host_target(h.provider, model) }
      return per_model(model, hosts) unless hosts.any?(&:credential_error)

      @per_model.delete(model) # the next call asks the failed source once, not twice
      build(model, hosts)
    end

    def inspect
      shown = @hosts.map { |h| "#{h.provider.name}*#{h.weight}" }.join(", ")
      "#<#{self.class.name} #{name.inspect} hosts=[#{shown}]>"
    end

    private

    # Whether each host of +kept+ is still what its entry gives for +model+ (every call
    # asks: a loop without allocations, as a provider's own check is).
    def current?(kept, model)
      hosts = kept.hosts
      i = 0
      while i < hosts.size
        return false unless @hosts[i].provider.target(model).equal?(hosts[i])

        i += 1
      end
      true
    rescue ConfigurationError
      false # #target asks again, host by host
    end

    def host_target(provider, model)
      provider.target(model)
    rescue ConfigurationError => e
      provider.unusable_target(model, e)
    end

    def per_model(model, hosts)
      @per_model.clear if @per_model.size >= MODELS_KEPT
      model = model.dup.freeze unless model.frozen?
      @per_model[model] = build(model, hosts)
    end

    def build(model, hosts)
      hosts = hosts.freeze
      engine = Engine::Pool.new(key: Target.key(name, model), hosts: hosts.map(&:engine).freeze,
                                weights: @hosts.map { |h| h.weight.to_f }.freeze).freeze
      Target.build(model, self, engine, hosts: hosts)
    end

    def fail!(message)
      raise ConfigurationError, "pool #{@name.inspect}: #{message}"
    end

    def validate_hosts(hosts, providers)
      fail!("hosts: must be a non-empty Array of { provider:, weight: }") unless hosts.is_a?(Array) && !hosts.empty?
      fail!("at most #{MAX_HOSTS} hosts, got #{hosts.size}") if hosts.size > MAX_HOSTS

      built = hosts.map { |host| validate_host(host, providers) }
      twice = built.map { |h| h.provider.name }.tally.select { |_, n| n > 1 }.keys
      fail!("#{twice.first.inspect} is a host twice") unless twice.empty?
      built
    end

    def validate_host(host, providers)
      fail!("a host is a Hash { provider:, weight: }, got #{host.inspect}") unless host.is_a?(Hash)

      unknown = host.keys - %i[provider weight]
      fail!("unknown host key#{'s' if unknown.size > 1} #{unknown.map(&:inspect).join(', ')}") unless unknown.empty?
      name = host[:provider]
      provider = (providers[name.to_sym] if name.respond_to?(:to_sym))
      unless provider
        known = providers.empty? ? "none" : providers.keys.map(&:inspect).join(", ")
        fail!("host #{name.inspect} is not a configured provider (declare it first with c.provider; configured: #{known})")
      end
      weight = host.fetch(:weight, 1)
      unless weight.is_a?(Numeric) && weight.real? && weight.positive? && (!weight.is_a?(Float) || weight.finite?)
        fail!("host #{name.inspect}'s weight must be a positive number, got #{weight.inspect}")
      end
      Host.new(provider, weight).freeze
    end
  end
end
