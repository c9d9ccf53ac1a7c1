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

        # Claims the turn of +key+ for one call (Idempotency), across processes: one
        # conditional UPDATE of the user row's status, which one writer wins. A claim
        # older than +stale_after+ seconds is a dead process's and can be taken. Without
        # an updated_at column no claim could ever be told stale: every caller answers.
        def claim_turn(key, stale_after:)
          return true unless @klass.column_names.include?("updated_at")

          column = idempotency_column
          status = @columns[:status]
          with_connection do
            now = Time.current
            user = proxy.where(column => key, @columns[:role] => "user")
            free = user.where(status => "complete")
                       .or(user.where(status => Idempotency::ANSWERING).where(updated_at: ...(now - stale_after)))
            free.update_all(status => Idempotency::ANSWERING, "updated_at" => now) == 1
          end
        end

        # Frees the turn of +key+ (its call has ended, however it ended).
        def release_turn(key)
          return unless @klass.column_names.include?("updated_at")

          with_connection do
            proxy.where(idempotency_column => key, @columns[:role] => "user", @columns[:status] => Idempotency::ANSWERING)
                 .update_all(@columns[:status] => "complete", "updated_at" => Time.current)
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
