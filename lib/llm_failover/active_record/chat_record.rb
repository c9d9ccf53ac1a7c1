# frozen_string_literal: true

require_relative "../../llm_failover" # CHAT_OPTIONS, Configuration, LlmFailover.chat
require_relative "chat_record/tool_methods"

module LlmFailover
  module ActiveRecord
    # Included by acts_as_llm_chat: the record answers like LlmFailover::Chat, with its
    # messages in the database. Every call builds a Chat from the current columns, so
    # a record loaded in another process (a retried job) picks up where it stopped.
    # Its tool methods are ChatRecord::ToolMethods (chat_record/tool_methods.rb).
    module ChatRecord
      include ToolMethods

      KEEP = Object.new.freeze # "argument not given"
      private_constant :KEEP

      # LlmFailover.chat's keywords that the record's columns and messages give: not
      # options of an #ask (the columns are changed with #with_model and friends).
      FROM_THE_RECORD = %i[model provider backup_model backup_provider quota quota_used feature store
                           cancel_check system instructions].freeze
      # Everything else a plain chat is built with (scrub:, cache_namespace:, quota_key:,
      # every Configuration option): given to acts_as_llm_chat, #llm_config, #to_llm, or
      # one #ask / #complete.
      CHAT_OPTIONS = ((LlmFailover::CHAT_OPTIONS - FROM_THE_RECORD) | Configuration::OPTIONS).freeze
      # Chat's settings that live on the chat object rather than in a column, by what
      # they set: a record keeps them as long as it lives, as a plain chat does, and
      # gives them to every Chat it builds (with_schema and with_json_mode set the same
      # answer format: the later call wins, as on a Chat).
      SETTINGS = { with_json_mode: :answer_format, with_schema: :answer_format, with_temperature: :temperature,
                   with_max_tokens: :max_tokens }.freeze

      # Per-record options for #ask / #complete (any of CHAT_OPTIONS: usage_log:,
      # max_retries:, scrub:, ...). The class-level ones from acts_as_llm_chat apply
      # underneath.
      # @return [Hash{Symbol => Object}]
      def llm_config
        @llm_config ||= {}
      end

      attr_writer :llm_config

      # Stores +text+ as a user message (once) and answers it; see LlmFailover::Chat#ask.
      # Saves a new record first. Besides Chat#ask's own keywords, any option a plain
      # chat is built with (CHAT_OPTIONS: scrub: false, cache_namespace:, max_retries:,
      # ...) applies to this call.
      # @param asked_at [Time, nil] when the user asked, when that was before this call
      #   (the controller's Time.current, given to the job that calls ask): a #cancel!
      #   made since then stops this answer, even one made while the job was queued
      # @return [LlmFailover::Reply]
      def ask(text, asked_at: nil, **options, &block)
        unless asked_at.nil? || asked_at.respond_to?(:to_time)
          raise ArgumentError, "asked_at must be a Time, got #{asked_at.inspect}"
        end

        call_options, chat_options = llm_split(:ask, options)
        llm_chat(chat_options, asked_at).ask(text, **call_options, &block)
      end

      # The files of +with+ checked as #ask would check them for this chat's targets,
      # nothing stored or sent (see LlmFailover::Chat#check_attachments). Takes the
      # chat options #ask takes.
      # @return [Array<LlmFailover::Attachment>]
      # @raise [ArgumentError] naming the file and the limit or type no target takes
      def check_attachments(with, **options)
        _, chat_options = llm_split(:ask, options)
        llm_chat(chat_options, nil).check_attachments(with)
      end

      # Answers from the stored messages without a new user message: after a failed
      # #ask (even in another process, on a freshly loaded record) it answers that turn.
      # Takes the options #ask takes.
      # @return [LlmFailover::Reply]
      def complete(**options, &block)
        call_options, chat_options = llm_split(:complete, options)
        llm_chat(chat_options, nil).complete(**call_options, &block)
      end

      # with_json_mode, with_schema, with_temperature, with_max_tokens: LlmFailover::Chat's
      # own, applied to every Chat this record builds from now on (see SETTINGS). Each is
      # checked at once by a Chat, as a plain chat checks it.
      # @return [self]
      SETTINGS.each do |name, setting|
        define_method(name) do |*args, **kwargs|
          @llm_settings = llm_settings.reject { |_, (_, set)| set == setting }
          apply = [name, setting, args, kwargs]
          llm_apply(LlmFailover.chat(model: llm_read(:model), provider: llm_read(:provider).presence), [apply])
          @llm_settings << apply
          self
        end
      end

      # What the Chats of this record answer in: nil (text), JSON mode or a schema.
      # @return [LlmFailover::AnswerFormat, nil]
      def answer_format
        llm_setting(:answer_format)
      end

      # @return [Numeric, nil] the temperature #with_temperature set, nil for the provider's
      def temperature
        llm_setting(:temperature)
      end

      # @return [Integer, nil] the max_tokens #with_max_tokens set
      def max_tokens
        llm_setting(:max_tokens)
      end

      # Whether the record names a whole backup (model and provider).
      def backup?
        llm_read(:backup_model).present? && llm_read(:backup_provider).present?
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

      # Whether #complete has work to do on the turn the chat ends on: the last user
      # message has no complete answer after it (a failed or interrupted turn), or the
      # turn stopped inside its tool loop (results stored but the next model turn not
      # answered; calls stored but not run, approved ones included; a call a crash
      # left running, for which #complete raises ToolInterruptedError until settled).
      #
      # False for a turn parked on an approval (a call of a requires_approval! tool
      # awaiting it, #tool_calls_awaiting_approval): #complete would only park it
      # again, so a job or a page that polls this must wait for a person's
      # approve_tool_call or deny_tool_call, after which it is true again.
      # @return [Boolean]
      def answer_pending?
        conversation = llm_store.conversation
        last = conversation.reverse_each.find { |m| m.role.to_s != "system" }
        return false if last.nil?
        return true if last.role.to_s == "user"

        open = LlmFailover::Chat::ToolLoop.open_calls(conversation)
        return false if open.any?(&:awaiting_approval?)

        # An answer without calls ends the turn; one with calls, or a tool result,
        # leaves the loop something to do.
        last.role.to_s == "tool" || !open.empty?
      end

      private

      def llm_chat(overrides, asked_at)
        save! if new_record?
        config = self.class.llm_chat_options.config.merge(llm_config).merge(overrides)
        owned = config.keys & FROM_THE_RECORD
        unless owned.empty?
          raise ArgumentError, "#{owned.map(&:inspect).join(', ')}: the record's own (its columns and messages); " \
                               "change them with with_model / with_instructions"
        end

        chat = LlmFailover.chat(model: llm_read(:model), provider: llm_read(:provider).presence,
                                backup_model: llm_read(:backup_model).presence,
                                backup_provider: llm_read(:backup_provider).presence,
                                quota: llm_read(:quota), quota_used: -> { llm_quota_used },
                                feature: llm_read(:feature).presence, store: llm_store,
                                cancel_check: llm_cancel_check(asked_at: asked_at), **config)
        @llm_chat = llm_apply(chat, llm_settings + llm_tool_settings)
      end

      def llm_settings
        @llm_settings ||= []
      end

      def llm_apply(chat, settings)
        settings.each { |name, _, args, kwargs| chat.public_send(name, *args, **kwargs) }
        chat
      end

      # What a Chat of this record has for +setting+ (the Chat's reader: one implementation).
      def llm_setting(setting)
        applied = llm_settings.select { |_, set| set == setting }
        return nil if applied.empty?

        llm_apply(LlmFailover.chat(model: llm_read(:model), provider: llm_read(:provider).presence), applied)
          .public_send(setting)
      end

      # Splits #ask's / #complete's options into the Chat method's own keywords (read
      # from its signature: one list) and the options a Chat is built with.
      def llm_split(method, options)
        own = LlmFailover::Chat.instance_method(method).parameters.filter_map { |kind, name| name if %i[key keyreq].include?(kind) }
        call_options = options.slice(*own)
        chat_options = options.except(*own)
        unknown = chat_options.keys - CHAT_OPTIONS - FROM_THE_RECORD
        raise ArgumentError, "unknown keyword#{'s' if unknown.size > 1}: #{unknown.map(&:inspect).join(', ')}" if unknown.any?

        [call_options, chat_options]
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
