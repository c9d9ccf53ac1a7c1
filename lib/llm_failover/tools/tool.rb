# frozen_string_literal: true

require "json"
require_relative "../chat/answer_format"
require_relative "schema"

module LlmFailover
  # A function the model may call. Subclass it, describe it with the class DSL and
  # define #execute with keyword arguments:
  #
  #   class Weather < LlmFailover::Tool
  #     description "Current weather for a city"
  #     param :city, type: :string, desc: "City name"
  #     param :unit, type: :string, enum: %w[c f], required: false
  #     def execute(city:, unit: "c") = { city: city, temp: 21, unit: unit }
  #   end
  #
  # A chat takes the class (made with no arguments) or an instance (a tool with state).
  # A mistake in the description raises ArgumentError on the line that made it.
  class Tool
    class << self
      # Sets or reads the name the model calls the tool by. The default is the class
      # name without its modules, in snake_case (GetWeather -> "get_weather").
      # @param name [String, Symbol, nil] nil reads
      # @return [String, nil] nil for an anonymous class that set none
      # @raise [ArgumentError] a name the providers would refuse
      def tool_name(name = nil)
        return @tool_name || Tool.default_name(self.name) if name.nil?

        @tool_name = Tool.check_name(name.to_s, self)
      end

      # Sets or reads what the model is told the tool does.
      # @param text [String, nil] nil reads
      # @return [String, nil]
      def description(text = nil)
        return @description if text.nil?
        raise ArgumentError, "#{self}: description must be a String, got #{text.class}" unless text.is_a?(String)

        @description = text.dup.freeze
      end

      # Declares one argument. Arguments are required unless required: false.
      # @param name [Symbol, String]
      # @param type [Symbol, String] string, integer, number, boolean, array, object or null
      # @param desc [String, nil] what the model is told the argument is
      # @param enum [Array, nil] the only values allowed
      # @param items [Symbol, String, Hash, nil] an array's elements: a type or a schema
      #   (required with type: :array, which the providers refuse without it)
      # @param required [Boolean]
      # @return [void]
      # @raise [ArgumentError] a bad name, type, enum or items, or params(...) used already
      def param(name, type:, desc: nil, enum: nil, items: nil, required: true)
        raise ArgumentError, "#{self}: use either param or params, not both" if @params_schema

        key = Tools::Schema.param_name(name, self)
        raise ArgumentError, "#{self}: param #{key}: required must be true or false" unless [true, false].include?(required)

        prop = Tools::Schema.property(key, type: type, desc: desc, enum: enum, items: items, owner: self)
        @params = (@params || {}).merge(key => prop)
        @required = (@required || []) - [key]
        @required << key if required
        @schema = nil
      end

      # Declares every argument at once as a JSON Schema object, for shapes param
      # cannot say: nested objects, arrays of objects, anyOf. Keys and Symbol values
      # become Strings; "type": "object" is added when missing.
      # @param schema [Hash]
      # @return [void]
      # @raise [ArgumentError] not an object schema, or param(...) used already
      def params(schema)
        raise ArgumentError, "#{self}: use either param or params, not both" if @params

        @params_schema = Tools::Schema.object_schema(schema, self)
        @schema = nil
      end

      # Declares that running the tool twice with the same arguments does no harm, so a
      # call interrupted by a crash mid-execute may run again.
      # @return [void]
      def idempotent!
        @idempotent = true
      end

      # @return [Boolean]
      def idempotent?
        @idempotent == true
      end

      # Declares that each call waits for chat.approve_tool_call before it runs.
      # @return [void]
      def requires_approval!
        @requires_approval = true
      end

      # @return [Boolean]
      def requires_approval?
        @requires_approval == true
      end

      # The arguments' JSON Schema: what OpenAI takes as a function's "parameters" and
      # Anthropic as a tool's "input_schema" (String keys, deep-frozen).
      # @return [Hash]
      def schema
        @schema ||= @params_schema || Tools::Schema.deep_freeze(
          "type" => "object",
          "properties" => (@params || {}).dup,
          "required" => (@required || []).dup,
          "additionalProperties" => false
        )
      end

      # A subclass starts from its parent's description, arguments and flags; its name
      # is its own (two tools may not share one).
      def inherited(subclass)
        super
        ivars = { :@description => @description, :@params => @params&.dup, :@required => @required&.dup,
                  :@params_schema => @params_schema, :@idempotent => @idempotent,
                  :@requires_approval => @requires_approval }
        ivars.each { |ivar, value| subclass.instance_variable_set(ivar, value) unless value.nil? }
      end

      # A tool as a chat takes it, a class or an instance, checked for everything the
      # loop will need: a valid name and an #execute of its own.
      # @param tool [Class<Tool>, Tool]
      # @return [Tool] an instance
      # @raise [ArgumentError] naming the tool and what is wrong
      def resolve(tool)
        instance =
          if tool.is_a?(Class) && tool <= Tool
            begin
              tool.new
            rescue ArgumentError => e
              raise ArgumentError, "#{tool} cannot be built without arguments (#{e.message}): pass an instance"
            end
          elsif tool.is_a?(Tool)
            tool
          else
            raise ArgumentError, "a tool is a LlmFailover::Tool subclass or an instance of one, got #{tool.inspect}"
          end
        instance.check!
      end

      # @api private
      # @return [String, nil] "GetWeather" -> "get_weather", "Admin::HTTPLookup" -> "http_lookup"
      def default_name(class_name)
        return nil if class_name.nil?

        class_name.split("::").last
                  .gsub(/([A-Z]+)([A-Z][a-z])/, '\1_\2')
                  .gsub(/([a-z\d])([A-Z])/, '\1_\2')
                  .downcase
      end

      # @api private
      # @return [String] the name, frozen
      # @raise [ArgumentError] a name the providers would refuse
      def check_name(name, owner)
        # The providers' rule for a tool (function) name, the same as a schema's: its one
        # owner is the wire layer (AnswerFormat.name_ok?).
        return name.dup.freeze if name.is_a?(String) && AnswerFormat.name_ok?(name)

        raise ArgumentError, "#{owner}: the tool name #{name.inspect} must be 1 to 64 of A-Z a-z 0-9 _ - " \
                             "(the providers refuse anything else)"
      end
    end

    # @return [String] the name the model calls the tool by
    def name
      self.class.tool_name
    end

    # @return [String, nil]
    def description
      self.class.description
    end

    # @return [Hash] the arguments' JSON Schema (see Tool.schema)
    def schema
      self.class.schema
    end

    # @return [Boolean]
    def idempotent?
      self.class.idempotent?
    end

    # @return [Boolean]
    def requires_approval?
      self.class.requires_approval?
    end

    # Runs the tool. Its value goes to the model: a String as it is, anything else as
    # JSON. A StandardError it raises goes to the model as an error result.
    # @return [Object]
    def execute(**)
      raise NotImplementedError, "#{self.class} must define #execute"
    end

    # @api private
    # @return [self]
    # @raise [ArgumentError] no valid name, or no #execute
    def check!
      label = self.class.name || inspect
      raise ArgumentError, "#{label} has no tool name: an anonymous class must call tool_name" if name.nil?

      Tool.check_name(name, label)
      if method(:execute).owner == Tool
        raise ArgumentError, "#{label} (tool #{name.inspect}) does not define #execute"
      end

      self
    end

    def inspect
      "#<#{self.class.name || 'LlmFailover::Tool'} #{name.inspect}>"
    end
  end
end
