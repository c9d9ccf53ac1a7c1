# frozen_string_literal: true

require_relative "../safe_inspect"

module LlmFailover
  # A target the attempt loop may try: a model asked of a configured provider (the
  # name a chat gives it; a models: alias's host id is the engine's), and the engine's
  # description of it (an Engine::Target, ProviderConfig#engine_target); or a model
  # asked of a pool (PoolConfig#target): an Engine::Pool, and its hosts, each the
  # Target of that model asked of one host's provider entry. Built and frozen once per
  # provider (or pool), model and credential. A pool's host whose credential source
  # failed is one too, for that call only: its #credential_error is what a call that
  # goes to it raises (its engine sends nothing there).
  #
  # Public: Target.label only, the one "provider/model" form, for an app's own log
  # lines (the guides' examples use it on a Reply, an AttemptRecord or an error).
  # Everything else here is the gem's own (@api private).
  Target = Struct.new(:model, :provider, :engine, :circuit_key, :pool_hosts, :credential_error) do
    include SafeInspect

    # @api private
    # @param engine [Engine::Target, Engine::Pool] the engine's description of it (its
    #   key is #circuit_key)
    # @param hosts [Array<Target>, nil] a pool's
    # @param credential_error [ConfigurationError, nil] its credential source's failure
    # @return [Target] frozen
    def self.build(model, provider, engine, hosts: nil, credential_error: nil)
      new(model, provider, engine, engine.key, hosts, credential_error).freeze
    end

    # @api private
    # @return [String] "provider:model", frozen: a target's name in the engine and its
    #   state-store key (the one owner of that form)
    def self.key(provider_name, model)
      "#{provider_name}:#{model}".freeze
    end

    # @api private
    # @return [Symbol] the configured provider name
    def name
      provider.name
    end

    # @api public
    # @example
    #   LlmFailover::Target.label(reply.provider, reply.model) # => "openai/gpt-4o"
    # @return [String] "provider/model": how every log line, inspect and report names
    #   a target (the one owner of that form)
    def self.label(provider, model)
      "#{provider}/#{model}"
    end

    # @api private
    # @param engine_target [Engine::Target] one the engine named (a callback, a result)
    # @return [Target] the one of +targets+ it describes, or whose host it is
    def self.of(targets, engine_target)
      targets.find { |t| t.host_for(engine_target) } || targets.first
    end

    # @api private
    # @return [Target] the host of +targets+ (a plain target is its own) +engine_target+ is
    def self.host_of(targets, engine_target)
      targets.each do |t|
        host = t.host_for(engine_target)
        return host if host
      end
      targets.first.hosts.first
    end

    # @api private
    # @return [Target, nil] its host (itself, when it is no pool) that +engine_target+ is.
    #   Asked on every engine event, so it does not build #hosts' list.
    def host_for(engine_target)
      return (self if engine.equal?(engine_target)) unless pool_hosts

      pool_hosts.find { |h| h.engine.equal?(engine_target) }
    end

    # @api private
    # @return [Array<Target>] where a call to it may go: a pool's hosts, else itself
    def hosts
      pool_hosts || [self]
    end

    # @api private
    # @return [Boolean] whether it is a pool's
    def pool?
      !pool_hosts.nil?
    end

    # @api private
    # @return [Target] this target with the credential a call sends now: itself, or a new
    #   one when its provider's token was renewed (ProviderConfig#target)
    # @raise [ConfigurationError] the credential's source failed
    def current
      provider.target(model)
    end

    # @api private
    # @return [Symbol] the protocol it is asked in (:openai, :anthropic, :responses, :gemini)
    def protocol
      engine.api
    end

    # @api private
    # @return [String] "provider/model", for log lines
    def label
      Target.label(name, model)
    end

    # Struct#inspect would show every member; pp too (Struct has its own
    # pretty_print).
    def inspect
      "#<LlmFailover::Target #{label}>"
    end
  end
end
