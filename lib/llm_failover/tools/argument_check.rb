# frozen_string_literal: true

require "json"

module LlmFailover
  module Tools
    # Checks a value (a tool call's parsed arguments) against a JSON Schema and says,
    # in words a model can act on, what is wrong. It knows the part of JSON Schema that
    # Tool's DSL and Tool.params produce: type (one or a list), properties, required,
    # additionalProperties (false or a schema), items, enum, anyOf. Other keywords
    # (description, format, minimum, ...) are the model's hints, not checked here: a
    # tool that depends on them checks them itself and raises.
    class ArgumentCheck
      # At most this many problems are reported: enough to fix a call, short enough
      # for the model to read.
      MAX_PROBLEMS = 10

      # @param schema [Hash] String keys (Tool.schema)
      def initialize(schema)
        @schema = schema
      end

      # @param value [Object] parsed JSON
      # @return [Array<String>] one line per problem, empty when the value fits
      def problems(value)
        found = []
        check(@schema, value, nil, found)
        found.first(MAX_PROBLEMS)
      end

      private

      def check(schema, value, path, found)
        return unless schema.is_a?(Hash)

        before = found.size
        check_any_of(schema["anyOf"], value, path, found) if schema.key?("anyOf")
        return if found.size > before
        return unless check_type(schema, value, path, found)

        if schema.key?("enum") && !schema["enum"].include?(value)
          found << "#{at(path)}#{JSON.generate(value)} is not one of #{schema['enum'].map { |v| JSON.generate(v) }.join(', ')}"
          return
        end

        case value
        when Hash then check_object(schema, value, path, found)
        when Array then check_array(schema, value, path, found)
        end
      end

      # @return [Boolean] whether the value has an allowed type (or no type is asked)
      def check_type(schema, value, path, found)
        return true unless schema.key?("type")

        types = Array(schema["type"])
        return true if types.any? { |t| type?(t, value) }

        found << "#{at(path)}expected #{types.join(' or ')}, got #{json_type(value)}"
        false
      end

      def check_object(schema, value, path, found)
        props = schema["properties"].is_a?(Hash) ? schema["properties"] : {}
        Array(schema["required"]).each do |key|
          found << "#{at(join(path, key))}missing required parameter" unless value.key?(key)
        end
        value.each do |key, item|
          if props.key?(key)
            check(props[key], item, join(path, key), found)
          elsif schema["additionalProperties"] == false
            known = props.keys.empty? ? "it takes none" : "known: #{props.keys.join(', ')}"
            found << "#{at(join(path, key))}unknown parameter (#{known})"
          elsif schema["additionalProperties"].is_a?(Hash)
            check(schema["additionalProperties"], item, join(path, key), found)
          end
        end
      end

      def check_array(schema, value, path, found)
        return unless schema["items"].is_a?(Hash)

        value.each_with_index { |item, i| check(schema["items"], item, "#{path}[#{i}]", found) }
      end

      # Fits when one branch fits; otherwise the problems of the branch that came
      # closest (fewest problems), so the model sees what to change.
      def check_any_of(branches, value, path, found)
        return unless branches.is_a?(Array) && !branches.empty?

        results = branches.map do |branch|
          mine = []
          check(branch, value, path, mine)
          mine
        end
        return if results.any?(&:empty?)

        closest = results.min_by(&:size)
        found << "#{at(path)}matches none of the #{branches.size} allowed shapes (anyOf); closest: #{closest.join('; ')}"
      end

      def type?(type, value)
        case type
        when "string" then value.is_a?(String)
        when "integer" then value.is_a?(Integer) || (value.is_a?(Float) && value.finite? && value == value.floor)
        when "number" then value.is_a?(Numeric)
        when "boolean" then value == true || value == false
        when "array" then value.is_a?(Array)
        when "object" then value.is_a?(Hash)
        when "null" then value.nil?
        else true # a type this checker does not know is the provider's to judge
        end
      end

      def json_type(value)
        case value
        when String then "string #{JSON.generate(value[0, 40])}"
        when Integer then "integer #{value}"
        when Float then "number #{value}"
        when true, false then "boolean #{value}"
        when nil then "null"
        when Array then "array"
        when Hash then "object"
        else value.class.name
        end
      end

      def join(path, key)
        path ? "#{path}.#{key}" : key.to_s
      end

      def at(path)
        path ? "#{path}: " : ""
      end
    end
  end
end
