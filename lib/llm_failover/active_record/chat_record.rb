# frozen_string_literal: true

module LlmFailover
  module ActiveRecord
    # Included by acts_as_llm_chat: the record answers like LlmFailover::Chat, with its
    # messages in the database. Every call builds a Chat from the current columns, so
    # a record loaded in another process (a retried job) picks up where it stopped.
    module ChatRecord
      KEEP = Object.new.freeze # "argument not given"
      private_constant :KEEP

      # Per-record configuration overrides for #ask / #complete (any
      # LlmFailover::Configuration option: usage_log:, max_retries:, ...). The
      # class-level ones from acts_as_llm_chat apply underneath.
      # @return [Hash{Symbol => Object}]
      def llm_config
        @llm_config ||= {}
      end

      attr_writer :llm_config

      # Stores +text+ as a user message (once) and answers it; see LlmFailover::Chat#ask.
      # Saves a new record first.
      # @param asked_at [Time, nil] when the user asked, when that was before this call
      #   (the controller's Time.current, given to the job that calls ask): a #cancel!
      #   made since then stops this answer, even one made while the job was queued
      # @return [LlmFailover::Reply]
      def ask(text, asked_at: nil, **options, &block)
        unless asked_at.nil? || asked_at.respond_to?(:to_time)
          raise ArgumentError, "asked_at must be a Time, got #{asked_at.inspect}"
        end

        llm_chat({}, asked_at).ask(text, **options, &block)
      end

      # Answers from the stored messages without a new user message: after a failed
      # #ask (even in another process, on a freshly loaded record) it answers that turn.
      # @return [LlmFailover::Reply]
      def complete(**options, &block)
        to_llm.complete(**options, &block)
      end

      # Switches the primary target (and the backup when given; nil drops it) and
      # saves the columns when the record is persisted. The messages stay.
      # @return [self]
      def with_model(model, provider: KEEP, backup_model: KEEP, backup_provider: KEEP)
        provider = llm_read(:provider) if provider.equal?(KEEP)
        backup_model = llm_read(:backup_model).presence if backup_model.equal?(KEEP)
        backup_provider = llm_read(:backup_provider).presence if backup_provider.equal?(KEEP)
        # The in-memory Chat validates exactly as it would at #ask.
        checked = LlmFailover.chat(model: model, provider: provider, backup_model: backup_model,
                                   backup_provider: backup_provider)
        llm_write(model: checked.model, provider: checked.provider.to_s, backup_model: checked.backup_model,
                  backup_provider: checked.backup_provider&.to_s)
        save! if persisted?
        self
      end

      # Stores system instructions (replacing earlier ones unless replace: false).
      # @return [self]
      def with_instructions(text, replace: true)
        text = Text.given(text, "the instructions")

        save! if new_record?
        replace ? llm_store.replace_system(text) : llm_store.add_system(text)
        self
      end

      # Stops this chat's pending answers, wherever they run (a job in another process, a
      # thread): a Stop button's action calls it on the record it loaded. A running
      # #ask / #complete notices within cancel_poll_interval (0.2 s) and returns a
      # cancelled Reply; the answer's row is "cancelled" with the text received so far.
      # A call that has not started yet (its job is queued) is cancelled when it starts,
      # before any request, if its question was asked before this cancel! (see
      # CancelRequest); a question asked later is answered.
      # @return [self]
      def cancel!
        column = llm_cancel_column
        raise ArgumentError, "the chat record must be saved before it can be cancelled" if new_record?

        self.class.connection_pool.with_connection { update_columns(column => Time.current) }
        @llm_chat&.cancel! # this very instance may be the one answering
        self
      end

      # An LlmFailover::Chat over this record's columns and messages.
      # @param overrides [Hash] Configuration options for this chat only
      # @return [LlmFailover::Chat]
      def to_llm(**overrides)
        llm_chat(overrides, nil)
      end

      # How the call sees a cancel! made elsewhere (nil when the table has no
      # cancel_requested_at column).
      # @param asked_at [Time, nil] see #ask
      # @return [CancelRequest, nil]
      def llm_cancel_check(asked_at: nil)
        column = self.class.llm_chat_options.columns.fetch(:cancel_requested_at)
        return nil unless self.class.column_names.include?(column)

        CancelRequest.new(self, column: column, asked_at: asked_at)
      end

      # The message store over this record's messages association.
      # @return [MessageStore]
      def llm_store
        options = self.class.llm_chat_options
        MessageStore.new(self, association: options.messages, flush_interval: options.flush_interval)
      end

      # The quota used so far, as acts_as_llm_chat's quota_by/quota_scope count it
      # (no query when the quota is unlimited).
      # @return [Numeric]
      def llm_quota_used
        quota = llm_read(:quota)
        return 0 if quota.nil? || quota.zero?

        options = self.class.llm_chat_options
        return options.quota_by.call(self) if options.quota_by.respond_to?(:call)

        association = association(options.messages)
        klass = association.klass
        columns = klass.respond_to?(:llm_message_columns) ? klass.llm_message_columns : MessageStore::DEFAULT_COLUMNS
        QuotaCounter.new(klass, columns: columns)
                    .used(model: llm_read(:model), provider: llm_read(:provider), by: options.quota_by,
                          scope: options.quota_scope == :chat ? association.scope.unscope(:order) : nil)
      end

      # Whether the last user message has no complete answer after it (a failed or
      # interrupted turn that #complete would answer).
      def answer_pending?
        columns = self.class.llm_chat_options.message_columns(association(self.class.llm_chat_options.messages).klass)
        last = llm_store.conversation.reject { |m| m[columns[:role]] == "system" }.last
        !last.nil? && last[columns[:role]] == "user"
      end

      private

      def llm_chat(overrides, asked_at)
        save! if new_record?
        config = self.class.llm_chat_options.config.merge(llm_config).merge(overrides)
        @llm_chat = LlmFailover.chat(model: llm_read(:model), provider: llm_read(:provider).presence,
                                     backup_model: llm_read(:backup_model).presence,
                                     backup_provider: llm_read(:backup_provider).presence,
                                     quota: llm_read(:quota), quota_used: -> { llm_quota_used },
                                     feature: llm_read(:feature).presence, store: llm_store,
                                     cancel_check: llm_cancel_check(asked_at: asked_at), **config)
      end

      def llm_cancel_column
        column = self.class.llm_chat_options.columns.fetch(:cancel_requested_at)
        return column if self.class.column_names.include?(column)

        raise ConfigurationError, "#{self.class.table_name} has no #{column} column for cancel! " \
                                  "(run `rails g llm_failover:install` again and migrate: it adds what an older " \
                                  "migration lacks; or add it: t.datetime :#{column})"
      end

      def llm_read(name)
        self[self.class.llm_chat_options.columns.fetch(name)]
      end

      def llm_write(**attrs)
        columns = self.class.llm_chat_options.columns
        attrs.each { |name, value| self[columns.fetch(name)] = value }
      end
    end
  end
end
