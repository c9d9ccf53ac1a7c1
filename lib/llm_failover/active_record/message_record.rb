# frozen_string_literal: true

module LlmFailover
  module ActiveRecord
    # Included by acts_as_llm_message: the readers the store interface names, whatever
    # the columns are called, and the assistant lifecycle as predicates.
    module MessageRecord
      def self.define_readers(klass, columns)
        columns.each do |name, column|
          next if name.to_s == column

          klass.define_method(name) { self[column] }
        end
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
    end
  end
end
