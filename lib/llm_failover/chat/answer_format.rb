# frozen_string_literal: true

require "json"
require "llm_failover/llm_failover" # the compiled extension

module LlmFailover
  # What a call asks the answer to be, beyond text: one JSON object (JSON mode), or
  # one that satisfies a JSON Schema. The C core builds each protocol's request from
  # it and checks every answer against it (ext/llm_failover/core/lf_json_answer.h);
  # this object only carries it there, with the schema checked once for what OpenAI's
  # strict mode requires, so that the same schema works on either protocol.
  class AnswerFormat
    # @return [String, nil] the schema as JSON text
    attr_reader :schema_json
    # @return [String, nil]
    attr_reader :schema_name

    # @api private: whether both providers accept +name+ for a schema or a tool (1 to
    # 64 of A-Z a-z 0-9 _ -). The wire layer's rule (lf_wire_name_ok), asked here so
    # that a bad name fails where it is given, before any call; Tool asks it too.
    # @param name [String]
    def self.name_ok?(name)
      __name_ok?(name)
    end

    # @api private: why one request of +api+ (:openai, :anthropic) cannot carry a
    # schema beside tools, nil when it can. The wire layer's rule and words
    # (lf_wire_schema_with_tools_refusal), asked here so that Chat refuses the pair
    # before anything is stored.
    # @param api [Symbol]
    # @return [String, nil]
    def self.schema_with_tools_refusal(api)
      __schema_with_tools_refusal(api)
    end

    # @return [AnswerFormat] one JSON object, any shape
    def self.json_mode
      JSON_MODE
    end

    # @param schema [Hash] a JSON Schema whose root is an object
    # @param name [String, Symbol] the schema's name (OpenAI) and the forced tool's (Anthropic)
    # @raise [ArgumentError] a schema OpenAI's strict mode or Anthropic would refuse
    def self.schema(schema, name: "answer")
      raise ArgumentError, "the schema must be a Hash, got #{schema.class}" unless schema.is_a?(Hash)

      name = name.to_s if name.is_a?(Symbol)
      unless name.is_a?(String) && name_ok?(name)
        raise ArgumentError, "the schema name must be 1 to 64 of A-Z a-z 0-9 _ -, got #{name.inspect}"
      end

      text = JSON.generate(schema).freeze # String keys, JSON values only
      # The core's rule (lf_json_schema_parse): what OpenAI's strict mode and
      # Anthropic refuse, said now rather than by a 400 on every call.
      __schema_check(text)
      new(text, name.dup.freeze)
    end

    def initialize(schema_json, schema_name)
      @schema_json = schema_json
      @schema_name = schema_name
      freeze
    end

    # @return [Hash] the engine request's fields for this format
    def engine_fields
      @schema_json ? { json: true, schema: @schema_json, schema_name: @schema_name } : { json: true }
    end

    # @return [Array] what the response cache key holds of it
    def cache_key
      [true, @schema_name, @schema_json]
    end

    # @param text [String] the checked object as the answer wrote it (the engine's
    #   :json, or #check's), standard JSON by then
    # @return [Hash]
    def parse(text)
      # The check took the last of two equal keys, as json-c does; JSON 3 would raise.
      JSON.parse(text, allow_duplicate_key: true)
    end

    # The core's check of an answer's text, for an answer that comes back without a
    # call (an idempotent repeat returns the stored answer).
    # @return [String, nil] the object's text (parse it with #parse), nil when +text+
    #   is not one standard JSON object or breaks the schema
    def check(text)
      AnswerFormat.__send__(:__check, text, @schema_json)
    end

    def inspect
      @schema_json ? "#<#{self.class.name} schema #{@schema_name}>" : "#<#{self.class.name} json>"
    end

    JSON_MODE = new(nil, nil)
  end
end
