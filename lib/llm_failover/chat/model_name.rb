# frozen_string_literal: true

require_relative "../errors"

module LlmFailover
  # The one rule for a model name, shared by Chat, ModelPicker and the CLI: a String or
  # Symbol (kept as a String); missing when nil or only whitespace (what String#strip
  # removes).
  # @api private
  module ModelName
    module_function

    # @param name [String, Symbol, nil]
    # @return [Boolean] whether +name+ names no model
    def blank?(name)
      name.nil? || name.to_s.strip.empty?
    end

    # A model a chat or a ModelPicker can ask for: a non-blank String or Symbol.
    # @param what [String] the option's name, for the message ("model", "backup_model")
    # @return [String] frozen
    # @raise [ModelNotFoundError] nil or blank
    # @raise [ConfigurationError] not a String or Symbol
    def check(model, what)
      raise ModelNotFoundError, "#{what} is empty" if blank?(model)
      unless model.is_a?(String) || model.is_a?(Symbol)
        raise ConfigurationError, "#{what} must be a String or Symbol, got #{model.class}"
      end

      name = model.to_s
      name.frozen? ? name : name.dup.freeze
    end
  end
end
