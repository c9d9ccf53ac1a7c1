# frozen_string_literal: true

require_relative "../chat/idempotency"
require_relative "message_store"
require_relative "../records/warnings"

module LlmFailover
  module ActiveRecord
    # How a chat record's call sees cancel! made elsewhere (a Stop button's request,
    # another process): the chat's cancel_requested_at.
    #
    # A cancel stops the answers pending when it was made, whether their call is
    # running or has not started (its job waits in a queue): each answer counts from
    # the moment it was asked for. That is asked_at: when the caller knows it (a job
    # that stores the prompt itself, given the time the user asked), otherwise the
    # chat's last message write before the call: the question, when it was stored
    # before the job ran (#complete), or the end of an earlier answer to it (a retried
    # job, a regenerate after a Stop), otherwise the call's start. A Stop of an earlier
    # answer never stops one asked for after it.
    #
    # @api private: ChatRecord#to_llm builds one per call
    class CancelRequest
      # @param record [ActiveRecord::Base] a saved chat record (acts_as_llm_chat)
      # @param column [String] its cancel_requested_at column
      # @param asked_at [Time, nil] when the question was asked, if before it was stored
      def initialize(record, column:, asked_at: nil)
        @record = record
        @klass = record.class
        @column = column
        @asked_at = asked_at
      end

      # The call starts (Cancellation#run): a cancel made already cancels it before any
      # request is sent; a later one reaches it through the process's CancelWatcher.
      # @return [CancelWatcher::Entry, nil] nil when it was cancelled at once
      def watch(cancellation, interval:)
        since, requested = at_start
        if requested
          cancellation.cancel!
          return nil
        end

        CancelWatcher.current.watch(@klass, @record.id, column: @column, since: since, cancellation: cancellation,
                                                        interval: interval)
      end

      private

      # @return [Time] the question's moment, at the column's precision (a cancel in
      #   the same second counts where the column keeps only seconds)
      def asked_since
        at = @asked_at || last_message_write || Time.current
        at.to_time.floor(@klass.columns_hash[@column]&.precision || 6)
      end

      # [the question's moment, whether a cancel came since], read on the calling
      # thread's connection like the call's own writes.
      def at_start
        since = asked_since
        requested = @klass.connection_pool.with_connection do
          @klass.uncached do
            @klass.unscoped.where(@klass.primary_key => @record.id).where(@klass.arel_table[@column].gteq(since))
                  .exists?
          end
        end
        [since, requested]
      rescue StandardError => e
        Warnings.warn("looking for cancel! raised #{e.class}: #{e.message} (the call goes on)")
        [Time.current, false]
      end

      # The newest updated_at (or created_at) of the chat's messages; nil without one.
      # A user message whose turn a call is answering counts from its created_at: its
      # updated_at is the claim's (Idempotency), not a write of the conversation.
      def last_message_write
        scope = @record.association(@klass.llm_chat_options.messages).scope.unscope(:order)
        messages = scope.klass
        column = %w[updated_at created_at].find { |c| messages.column_names.include?(c) }
        return nil unless column

        messages.connection_pool.with_connection do
          messages.uncached do
            next scope.maximum(column) unless column == "updated_at" && messages.column_names.include?("created_at")

            status = (messages.respond_to?(:llm_message_columns) ? messages.llm_message_columns : MessageStore::DEFAULT_COLUMNS)[:status]
            [scope.where.not(status => Idempotency::ANSWERING).maximum(column),
             scope.where(status => Idempotency::ANSWERING).maximum("created_at")].compact.max
          end
        end
      end
    end
  end
end
