# frozen_string_literal: true

module LlmFailover
  # A target the attempt loop may try: a model asked of a configured provider, and
  # the engine's description of it (ProviderConfig#engine_target). Built and frozen
  # once per provider and model (ProviderConfig#target).
  # @api private
  Target = Struct.new(:model, :provider, :engine) do
    # @return [Symbol] the configured provider name
    def name
      provider.name
    end

    # @return [String] "provider/model", for log lines
    def label
      "#{name}/#{model}"
    end

    # Struct#inspect would show the ProviderConfig, which redacts; keep it short anyway.
    def inspect
      "#<LlmFailover::Target #{label}>"
    end
  end
end
