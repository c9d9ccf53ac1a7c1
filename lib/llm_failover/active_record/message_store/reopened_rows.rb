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

        # The chat's last row as this store last read or wrote it (saves a SELECT); one
        # another process added since is missed at worst, and the answer gets a new row.
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
        # UPDATE found it still failed (and, with integer ids, still the chat's last row).
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
