# frozen_string_literal: true

module LlmFailover
  # A target the attempt loop may try: a model asked of a configured provider.
  # @api private
  Target = Struct.new(:model, :provider) do
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
