# frozen_string_literal: true

module LlmFailover
  module ActiveRecord
    # How AttemptLog and CircuitLog write a row: on the calling thread's connection from
    # the pool, so inside the app's transaction it joins it; and because what it records
    # happened whatever that transaction decides, written again after its rollback
    # (ActiveRecord >= 7.2; older versions lose it with the rollback). The includer
    # defines #model and sets @survive_rollback.
    module SurvivingWrite
      private

      # One INSERT, without a transaction of its own: ActiveRecord rolls back every
      # transaction a dying thread ends, so create! lost the row of a call whose thread
      # was killed (Thread#kill), on every database.
      def write(attributes)
        model.connection_pool.with_connection do
          model.insert!(attributes)
          rewrite_after_rollback(attributes) if @survive_rollback
        end
      end

      # Registered on the innermost open transaction: a savepoint's rollback writes the
      # row again inside the outer transaction, which registers again, and so on out.
      def rewrite_after_rollback(attributes)
        return unless model.respond_to?(:current_transaction)

        transaction = model.current_transaction
        transaction.after_rollback { write(attributes) } if transaction.open?
      end
    end
  end
end
