# frozen_string_literal: true

require_relative "../../chat/idempotency"

module LlmFailover
  module ActiveRecord
    class MessageStore
      # The idempotency half of MessageStore (Idempotency's store side): a prompt
      # stored once per key, the turn of a key found again, one call's claim on it
      # across processes. Uses the store's with_connection, proxy, create, messages,
      # @klass, @columns and @stored_attachments.
      module Turns
        # The column that names a claim's owner (Idempotency::Owner), where the table has it.
        CLAIMED_BY = "claimed_by"
        # The Turn of +key+ (Idempotency), nil when no user message has it.
        def find_turn(key)
          column = idempotency_column
          return nil unless with_connection { proxy.where(column => key).exists? }

          Idempotency.find(messages, key) { |m| m[column] }
        end

        # Stores a user message under +key+; false when another writer stored it first
        # (the unique index on the chat and the key).
        def add_user_once(content, key, attachments: [])
          extra, after = @stored_attachments.prepare(attachments)
          row = create(role: "user", content: content, status: "complete", idempotency_key: key, **extra)
          after&.call(row)
          true
        rescue ::ActiveRecord::RecordNotUnique
          false
        end

        # Claims the turn of +key+ for one call across processes: a conditional UPDATE
        # one writer wins. A claim whose last beat is older than +stale_after+, or held
        # by +from+ (found dead), can be taken. Without updated_at every caller answers.
        def claim_turn(key, stale_after:, owner: nil, from: nil)
          return true unless @klass.column_names.include?("updated_at")

          status = @columns[:status]
          with_connection do
            now = Time.current
            user = proxy.where(idempotency_column => key, @columns[:role] => "user")
            answering = user.where(status => Idempotency::ANSWERING)
            free = user.where(status => "complete")
            free = free.or(answering.where(updated_at: ...(now - stale_after))) if stale_after
            free = free.or(answering.where(CLAIMED_BY => from)) if from
            changes = { status => Idempotency::ANSWERING, "updated_at" => now }
            changes[CLAIMED_BY] = owner if owner
            free.update_all(changes) == 1
          end
        end

        # Whether claims name their owner here (the claimed_by column): a table
        # without it keeps the older rule (Idempotency).
        def turn_owners?
          @klass.column_names.include?(CLAIMED_BY) && @klass.column_names.include?("updated_at")
        end

        # @return [String, nil] who holds the turn of +key+, nil when it is free
        def turn_owner(key)
          with_connection do
            proxy.where(idempotency_column => key, @columns[:role] => "user",
                        @columns[:status] => Idempotency::ANSWERING).pick(CLAIMED_BY)
          end
        end

        # The claim's heartbeat, from its own thread (Idempotency::Heartbeat): true
        # while +owner+ holds the turn of +key+. Not through the chat's association,
        # which the call's thread uses meanwhile; +owner+ names one claim of one chat.
        def refresh_turn(key, owner:)
          with_connection do
            @klass.where(CLAIMED_BY => owner, idempotency_column => key, @columns[:status] => Idempotency::ANSWERING)
                  .update_all("updated_at" => Time.current) == 1
          end
        end

        # Frees the turn of +key+ (its call has ended, however it ended), unless another
        # call than +owner+ holds it now.
        def release_turn(key, owner: nil)
          return unless @klass.column_names.include?("updated_at")

          changes = { @columns[:status] => "complete", "updated_at" => Time.current }
          changes[CLAIMED_BY] = nil if owner
          with_connection do
            held = proxy.where(idempotency_column => key, @columns[:role] => "user",
                               @columns[:status] => Idempotency::ANSWERING)
            (owner ? held.where(CLAIMED_BY => owner) : held).update_all(changes)
          end
          nil
        end

        private

        def idempotency_column
          column = @columns[:idempotency_key]
          return column if @klass.column_names.include?(column)

          raise ConfigurationError, "#{@klass.table_name} has no #{column} column for idempotency_key " \
                                    "(run `rails g llm_failover:install` again and migrate: it adds what an older " \
                                    "migration lacks; or add it: t.string :#{column}, and a unique index on the chat id and it)"
        end
      end
    end
  end
end
