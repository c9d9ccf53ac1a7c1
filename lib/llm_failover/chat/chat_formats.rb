# frozen_string_literal: true

require_relative "answer_format"

module LlmFailover
  class Chat
    # Chat's answer formats (included in Chat): JSON mode or a schema for every
    # answer, and json: given to one call. The chat's format is @answer_format
    # (Chat#answer_format).
    module Formats
      # Every answer is one JSON object (reply.json): OpenAI-compatible APIs get
      # response_format json_object, and both protocols an instruction to answer so.
      # An answer that is not one (a Markdown code fence around it is tolerated) is a
      # failed attempt, retried and failed over like any invalid response.
      # @return [self]
      def with_json_mode(enabled = true)
        @answer_format = enabled ? AnswerFormat.json_mode : nil
        self
      end

      # Every answer satisfies +schema+ (reply.json is the object): OpenAI-compatible
      # APIs get a strict json_schema response format, Anthropic a forced call of a tool
      # named +name+ whose input is the answer. nil goes back to text.
      # @param schema [Hash, nil] a JSON Schema with an object at its root, written for
      #   OpenAI's strict mode (every property required, additionalProperties false)
      # @return [self]
      # @raise [ArgumentError] a schema strict mode would refuse, a bad name
      def with_schema(schema, name: "answer")
        @answer_format = schema.nil? ? nil : AnswerFormat.schema(schema, name: name)
        self
      end

      private

      # json: given to one call: true keeps the chat's schema or asks for JSON mode,
      # false asks for text.
      def format_for(json)
        return @answer_format if json.equal?(KEEP)
        raise ArgumentError, "json must be true or false, got #{json.inspect}" unless json == true || json == false
        return nil unless json

        @answer_format || AnswerFormat.json_mode
      end
    end
  end
end
