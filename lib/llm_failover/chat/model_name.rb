# frozen_string_literal: true

require_relative "../errors"

module LlmFailover
  # The one check of a model name, shared by Chat, ModelPicker and the CLI: a name is
  # missing when it is nil or only whitespace (what String#strip removes).
  # @api private
  module ModelName
    module_function

    # @param name [String, Symbol, nil]
    # @return [Boolean] whether +name+ names no model
    def blank?(name)
      name.nil? || name.to_s.strip.empty?
    end

    # A model a chat can ask for: a non-blank String.
    # @param what [String] the option's name, for the message ("model", "backup_model")
    # @return [String] frozen
    # @raise [ModelNotFoundError] nil or blank
    # @raise [ConfigurationError] not a String
    def check(model, what)
      raise ModelNotFoundError, "#{what} is empty" if model.nil? || (model.is_a?(String) && blank?(model))
      raise ConfigurationError, "#{what} must be a String, got #{model.class}" unless model.is_a?(String)

      model.frozen? ? model : model.dup.freeze
    end
  end
end
