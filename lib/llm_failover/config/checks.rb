# frozen_string_literal: true

require_relative "../errors"

module LlmFailover
  class Configuration
    # The rules the setters share (numbers, callbacks): a bad value raises ConfigurationError naming
    # the option.
    #
    # @api private: included by Configuration
    module Checks
      private

      def number(name, value, min: nil, positive: false)
        unless value.is_a?(Numeric) && value.real? && (!value.is_a?(Float) || value.finite?)
          raise ConfigurationError, "#{name} must be a finite number, got #{value.inspect}"
        end
        raise ConfigurationError, "#{name} must be positive, got #{value}" if positive && value <= 0
        raise ConfigurationError, "#{name} must not be negative, got #{value}" if value.negative?
        raise ConfigurationError, "#{name} must be at least #{min}, got #{value}" if min && value < min

        value
      end

      def integer(name, value, min:)
        raise ConfigurationError, "#{name} must be an Integer, got #{value.inspect}" unless value.is_a?(Integer)
        raise ConfigurationError, "#{name} must not be negative, got #{value}" if value.negative?
        raise ConfigurationError, "#{name} must be at least #{min}, got #{value}" if value < min

        value
      end

      # A callback: nil (none) or anything with #call.
      def callable_or_nil(name, value)
        raise ConfigurationError, "#{name} must respond to #call, got #{value.class}" unless value.nil? || value.respond_to?(:call)

        value
      end
    end
  end
end
