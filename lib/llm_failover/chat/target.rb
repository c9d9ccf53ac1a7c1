# frozen_string_literal: true

require_relative "../safe_inspect"

module LlmFailover
  # A target the attempt loop may try: a model asked of a configured provider, and
  # the engine's description of it (ProviderConfig#engine_target). Built and frozen
  # once per provider and model (ProviderConfig#target).
  #
  # Public: Target.label only, the one "provider/model" form, for an app's own log
  # lines (the guides' examples use it on a Reply, an AttemptRecord or an error).
  # Everything else here is the gem's own (@api private).
  Target = Struct.new(:model, :provider, :engine, :circuit_key) do
    include SafeInspect

    # @api private
    # @return [Target] frozen, with its state-store key made once (CircuitBreaker.key
    #   built a String per target on every call)
    def self.build(model, provider, engine)
      new(model, provider, engine, "#{provider.name}:#{model}".freeze).freeze
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
    # @return [String] "provider/model", for log lines
    def label
      Target.label(name, model)
    end

    # Struct#inspect would show the engine Hash, key included; pp too (Struct has its
    # own pretty_print).
    def inspect
      "#<LlmFailover::Target #{label}>"
    end
  end
end
