# frozen_string_literal: true

module LlmFailover
  # A target the attempt loop may try: a model asked of a configured provider, and
  # the engine's description of it (ProviderConfig#engine_target). Built and frozen
  # once per provider and model (ProviderConfig#target).
  # @api private
  Target = Struct.new(:model, :provider, :engine, :circuit_key) do
    # @return [Target] frozen, with its state-store key made once (CircuitBreaker.key
    #   built a String per target on every call)
    def self.build(model, provider, engine)
      new(model, provider, engine, "#{provider.name}:#{model}".freeze).freeze
    end

    # @return [Symbol] the configured provider name
    def name
      provider.name
    end

    # @return [String] "provider/model": how every log line, inspect and report names
    #   a target (the one owner of that form)
    def self.label(provider, model)
      "#{provider}/#{model}"
    end

    # @return [String] "provider/model", for log lines
    def label
      Target.label(name, model)
    end

    # Struct#inspect would show the engine Hash, key included; pp too (Struct has its
    # own pretty_print).
    def inspect
      "#<LlmFailover::Target #{label}>"
    end
    alias_method :to_s, :inspect

    def pretty_print(pp)
      pp.text(inspect)
    end
  end
end
