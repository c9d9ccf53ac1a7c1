# frozen_string_literal: true

require "active_record"

module LlmFailover
  module ActiveRecord
    # One row of llm_failover_vectors: an entry ActiveRecordIndex added (the
    # semantic cache's shared vectors). Subclass it to use another table or database,
    # as with Attempt.
    class VectorEntry < ::ActiveRecord::Base
      self.table_name = "llm_failover_vectors"
    end
  end
end
