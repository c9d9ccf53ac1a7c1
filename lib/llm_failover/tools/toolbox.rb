# frozen_string_literal: true

require_relative "tool"

module LlmFailover
  module Tools
    # The tools a chat offers, by name, in the order they were added. Everything is
    # checked when a tool is added (Tool.resolve), so a turn never sends a tool the
    # providers would refuse.
    class Toolbox
      include Enumerable

      def initialize
        @tools = {}
      end

      # Adds tools; a tool already here under the same name is replaced only when it is
      # the same class (adding Weather twice is harmless), otherwise it is an error.
      # @param tools [Array<Class<Tool>, Tool>]
      # @return [self]
      # @raise [ArgumentError] a tool Tool.resolve refuses, or two tools with one name
      def add(*tools)
        resolved = tools.flatten.map { |t| Tool.resolve(t) }
        staged = @tools.dup
        resolved.each do |tool|
          other = staged[tool.name]
          if other && other.class != tool.class
            raise ArgumentError, "two tools are named #{tool.name.inspect}: #{label(other)} and #{label(tool)}"
          end

          staged[tool.name] = tool
        end
        @tools = staged
        self
      end

      # @return [self] with no tools
      def clear
        @tools = {}
        self
      end

      # @return [Tool, nil]
      def [](name)
        @tools[name]
      end

      # @return [Array<String>]
      def names
        @tools.keys
      end

      def each(&block)
        @tools.each_value(&block)
      end

      # @return [Boolean]
      def empty?
        @tools.empty?
      end

      # @return [Integer]
      def size
        @tools.size
      end

      # The tools as each protocol's request lists them is the wire layer's to render;
      # this is what it renders from.
      # @return [Array<Hash>] {"name", "description", "schema"} per tool
      def definitions
        map { |t| { "name" => t.name, "description" => t.description.to_s, "schema" => t.schema } }
      end

      private

      def label(tool)
        tool.class.name || tool.inspect
      end
    end
  end
end
