# frozen_string_literal: true

require "json"
require "llm_failover/llm_failover" # the compiled extension: JsonSchema

module LlmFailover
  module Tools
    # Builds the JSON Schema a Tool's DSL describes, and checks what the DSL is given:
    # every mistake raises ArgumentError naming the tool and the argument.
    module Schema
      TYPES = %w[string integer number boolean array object null].freeze

      module_function

      # @return [String] the argument's name, frozen
      def param_name(name, owner)
        key = name.to_s if name.is_a?(Symbol) || name.is_a?(String)
        return key.dup.freeze if key && !key.empty?

        raise ArgumentError, "#{owner}: a param name is a non-empty Symbol or String, got #{name.inspect}"
      end

      # One property of the arguments object.
      # @param items [Symbol, String, Hash, nil] an array's element: a type, or a schema
      # @return [Hash]
      def property(key, type:, desc: nil, enum: nil, items: nil, owner: nil)
        where = "#{owner}: param #{key}"
        prop = { "type" => type_name(type, where) }
        unless desc.nil? || desc.is_a?(String)
          raise ArgumentError, "#{where}: desc must be a String, got #{desc.class}"
        end

        prop["description"] = desc.dup.freeze if desc
        prop["items"] = items_schema(items, where) if prop["type"] == "array"
        prop["enum"] = enum_values(enum, prop, where) unless enum.nil?
        deep_freeze(prop)
      end

      # A schema given whole to Tool.params: String keys and values, "type": "object".
      # @return [Hash] deep-frozen
      def object_schema(schema, owner)
        raise ArgumentError, "#{owner}: params takes a JSON Schema Hash, got #{schema.class}" unless schema.is_a?(Hash)

        doc = jsonify(schema, "#{owner}: params")
        doc = { "type" => "object" }.merge(doc) unless doc.key?("type")
        unless doc["type"] == "object"
          raise ArgumentError, "#{owner}: params must describe an object (the providers take no other root), " \
                               "got type #{doc['type'].inspect}"
        end
        if doc.key?("properties") && !doc["properties"].is_a?(Hash)
          raise ArgumentError, "#{owner}: params properties must be an object"
        end

        deep_freeze(doc)
      end

      # @return [Object] the same structure, frozen all the way down
      def deep_freeze(value)
        case value
        when Hash then value.each_value { |v| deep_freeze(v) }
        when Array then value.each { |v| deep_freeze(v) }
        end
        value.freeze
      end

      # String keys, Symbols as Strings, JSON values only.
      def jsonify(value, where)
        JSON.parse(JSON.generate(value))
      rescue JSON::GeneratorError, EncodingError => e
        raise ArgumentError, "#{where}: not expressible as JSON (#{e.message})"
      end

      def type_name(type, where)
        name = type.to_s if type.is_a?(Symbol) || type.is_a?(String)
        return name.dup.freeze if TYPES.include?(name)

        raise ArgumentError, "#{where}: type must be one of #{TYPES.join(', ')}, got #{type.inspect}"
      end

      # An array's items: the providers refuse an array without them (OpenAI: "array
      # schema missing items"), so the DSL asks for them at once.
      def items_schema(items, where)
        case items
        when Symbol, String then { "type" => type_name(items, "#{where} items") }
        when Hash then jsonify(items, "#{where} items")
        else raise ArgumentError, "#{where}: an array needs items: (a type such as :string, or a schema Hash)"
        end
      end

      def enum_values(enum, prop, where)
        unless enum.is_a?(Array) && !enum.empty?
          raise ArgumentError, "#{where}: enum must be a non-empty Array, got #{enum.inspect}"
        end

        values = jsonify(enum, "#{where} enum")
        type_only = JSON.generate(prop.except("enum"))
        values.each do |value|
          problem = JsonSchema.problems(type_only, JSON.generate(value))
          raise ArgumentError, "#{where}: enum value #{value.inspect}: #{problem}" if problem
        end
        values
      end
    end
  end
end
