# frozen_string_literal: true

require_relative "../tools/tool_call"
require_relative "hidden_column"
require_relative "schema"

module LlmFailover
  module ActiveRecord
    # One row of a tool_calls table: one LlmFailover::ToolCall of an assistant message,
    # as the ActiveRecord message store keeps it. Its status is written before the tool
    # runs (running) and again when it has its outcome, so a process that dies in
    # between leaves the row running for the next one to see.
    #
    # The table sits beside the messages table (Schema.tool_calls_table): ToolCallRow.for
    # gives the model class of one messages model's table, on that model's database.
    # Nothing here touches ActiveRecord::Base before the first store uses it.
    module ToolCallRow
      @classes = {}
      @classes_lock = Mutex.new

      class << self
        # The row class of +message_class+'s tool_calls table, made once per table and
        # connected as the message class is (its connection class).
        # @param message_class [Class] an acts_as_llm_message model
        # @return [Class] an ActiveRecord model including ToolCallRow::Row
        def for(message_class)
          table = Schema.tool_calls_table(message_class.table_name)
          base = message_class.connection_class_for_self
          key = [base, table]
          @classes_lock.synchronize do
            @classes[key] ||= build(base, table)
          end
        end

        # The row's columns for +call+ (see ToolCall#to_h); the signature where the table
        # has its column (added since tool calls were: llm_failover:upgrade).
        # @param call [ToolCall]
        # @param row_class [Class, nil] the table's row class, for its columns
        # @return [Hash{String => Object}]
        def columns_of(call, row_class = nil)
          h = call.to_h
          error = h["error"]
          columns = { "call_id" => h["id"], "provider_call_id" => h["provider_id"], "name" => h["name"],
                      "arguments" => h["arguments"], "provider" => h["provider"], "model" => h["model"],
                      "status" => h["status"], "awaiting_approval" => h["awaiting_approval"], "result" => h["content"],
                      "error_kind" => error&.fetch("kind"), "error_class" => error&.fetch("class_name"),
                      "error_message" => error&.fetch("message") }
          columns["signature"] = h["signature"] if row_class&.column_names&.include?("signature")
          columns
        end

        private

        def build(base, table)
          klass = Class.new(base) do
            self.table_name = table
            include Row
          end
          name = "LlmFailover::ActiveRecord::ToolCallRow(#{table})"
          klass.define_singleton_method(:name) { name }
          klass.define_singleton_method(:to_s) { name }
          klass
        end
      end

      # What every row class knows (ToolCallRow.for builds the classes; this is their
      # behaviour, whichever connection class they descend from).
      module Row
        # @return [LlmFailover::ToolCall]
        def to_tool_call
          error = if error_message || error_kind
                    { "kind" => error_kind, "class_name" => error_class, "message" => error_message }
                  end
          ToolCall.from_h("id" => call_id, "provider_id" => provider_call_id, "name" => name,
                          "arguments" => arguments.to_s, "provider" => provider, "model" => model,
                          "status" => status, "awaiting_approval" => awaiting_approval == true,
                          "content" => result, "error" => error,
                          "signature" => has_attribute?(:signature) ? self[:signature] : nil)
        end

        private

        # A call's signature is its host's alone: [FILTERED] in #inspect and pp.
        def inspection_filter
          HiddenColumn.new(super, "signature")
        end
      end
    end
  end
end
