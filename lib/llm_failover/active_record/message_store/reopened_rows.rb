# frozen_string_literal: true

module LlmFailover
  module ActiveRecord
    class MessageStore
      # How start_assistant finds a failed answer row to answer the turn again (one
      # assistant row per turn): the chat's last row, known from this store's last read
      # or write or read again, and the conditional UPDATE that lets one caller take it.
      # Uses the store's proxy, read, pk, integer_ids?, @tail, @klass and @columns.
      # @api private
      module ReopenedRows
        private

        # The chat's last row as this store last read or wrote it (its #messages, a row
        # it made), or nil when it has neither: start_assistant needs no SELECT of its
        # own right after a call read the conversation. A row another process added
        # since is missed at worst: the new answer gets a row of its own, as it would
        # have had before failed rows were reopened.
        def known_tail
          @tail if integer_ids?
        end

        def last_row
          LlmFailover::ActiveRecord.insertion_order(proxy).reverse_order.first
        end

        # +row+ when it is a failed answer.
        def failed_row(row)
          row if row && read(row, :role) == "assistant" && read(row, :status) == "failed"
        end

        # Claims a failed row for this call's answer: true for the one caller whose
        # UPDATE found it still failed.
        # With integer ids, only while it is still the chat's last row: the row may come
        # from this store's earlier read (#known_tail), and another process may have added
        # rows since.
        def reopen(message)
          status = @columns[:status]
          claim = proxy.where(id: message.id, status => "failed")
          if integer_ids?
            later = proxy.unscope(:order).where(@klass.arel_table[pk].gt(message.id))
            claim = claim.where.not(later.arel.exists)
          end
          claim.update_all(status => "streaming") == 1
        end
      end
    end
  end
end
