# frozen_string_literal: true

require_relative "hidden_column"
require_relative "stored_attachments"
require_relative "tool_call_row"

module LlmFailover
  module ActiveRecord
    # Included by acts_as_llm_message: the readers the store interface names, whatever
    # the columns are called, and the assistant lifecycle as predicates.
    module MessageRecord
      def self.define_readers(klass, columns)
        columns.each do |name, column|
          next if name.to_s == column
          next if name == :tool_call_id # defined below, for tables without the column too

          klass.define_method(name) { self[column] }
        end
      end

      # @api private: the store gives an assistant message its calls as it reads them
      attr_writer :llm_tool_calls
      # @api private: the store gives a tool message its call's error flag
      attr_writer :llm_tool_result_error

      # An assistant message's tool calls, in the order the model gave them, as the
      # store read them (see LlmFailover::MemoryStore: the store interface).
      # @return [Array<LlmFailover::ToolCall>] empty for an answer without calls
      def tool_calls
        return @llm_tool_calls if @llm_tool_calls
        return [] unless self[self.class.llm_message_columns[:role]] == "assistant" && persisted?

        rows = ToolCallRow.for(self.class)
        @llm_tool_calls = rows.table_exists? ? rows.where(message_id: id).order(:id).map(&:to_tool_call) : []
      end

      # @return [String, nil] a role "tool" message: the ToolCall#id it is the result of
      def tool_call_id
        column = self.class.llm_message_columns[:tool_call_id]
        has_attribute?(column) ? self[column] : nil
      end

      # @return [Boolean] a role "tool" message whose call failed, was rejected or denied
      def is_error # rubocop:disable Naming/PredicateName -- the store interface's name (the wire's)
        return @llm_tool_result_error unless @llm_tool_result_error.nil?
        return false if tool_call_id.nil?

        rows = ToolCallRow.for(self.class)
        row = rows.where(call_id: tool_call_id).where.not(error_message: nil).exists?
        @llm_tool_result_error = row
      end

      # A user message's files (chat.ask(text, with:)) in canonical form, read from
      # where the table keeps them: ActiveStorage (has_many_attached :attachments; the
      # bytes are downloaded from its service) or the attachments_data column.
      # @return [Array<LlmFailover::Attachment>] empty for a message without files
      def llm_attachments
        StoredAttachments.new(self.class).read(self)
      end

      # @return [Boolean] a finished message (every user/system message; an answer that won)
      def complete?
        self[self.class.llm_message_columns[:status]] == "complete"
      end

      # @return [Boolean] an answer still arriving, or abandoned mid-stream by a dead process
      def streaming?
        self[self.class.llm_message_columns[:status]] == "streaming"
      end

      # @return [Boolean] an answer that failed (kept for audit, never sent again)
      def failed?
        self[self.class.llm_message_columns[:status]] == "failed"
      end

      private

      # ActiveRecord's #inspect and #pretty_print ask it of every attribute.
      def inspection_filter
        HiddenColumn.new(super, "reasoning")
      end
    end
  end
end
