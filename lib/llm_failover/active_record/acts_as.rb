# frozen_string_literal: true

require_relative "quota_counter"

module LlmFailover
  module ActiveRecord
    # acts_as_llm_chat / acts_as_llm_message, extended onto ActiveRecord::Base.
    #
    #   class Chat < ApplicationRecord
    #     acts_as_llm_chat                     # has_many :messages
    #   end
    #   class Message < ApplicationRecord
    #     acts_as_llm_message                  # belongs_to :chat
    #   end
    module ActsAs
      CHAT_COLUMNS = %i[model provider backup_model backup_provider quota feature cancel_requested_at].freeze
      QUOTA_BASES = QuotaCounter::BASES
      QUOTA_SCOPES = %i[model chat].freeze

      # What acts_as_llm_chat was told, frozen on the class.
      ChatOptions = Struct.new(:messages, :columns, :quota_by, :quota_scope, :flush_interval, :config,
                               keyword_init: true) do
        def message_columns(klass)
          klass.respond_to?(:llm_message_columns) ? klass.llm_message_columns : MessageStore::DEFAULT_COLUMNS
        end
      end

      # Makes this model a chat: `has_many messages` (unless already declared) and
      # #ask / #complete / #with_model / #with_instructions.
      #
      # @param messages [Symbol] the association's name
      # @param message_class [String, nil] its class (inferred from the name when nil)
      # @param foreign_key [String, nil] inferred from this class when nil
      # @param columns [Hash{Symbol => String}] column names that differ from
      #   model provider backup_model backup_provider quota feature
      # @param quota_by [Symbol, #call] :requests (completed answers), :tokens (their
      #   input + output tokens), or a callable given the record, returning the used amount
      # @param quota_scope [Symbol] :model counts every chat's answers of the model,
      #   :chat only this chat's
      # @param flush_interval [Numeric, nil] seconds between writes of a streaming answer
      #   (0: every delta, nil: only when it ends)
      # @param config [Hash] options of these chats: any LlmFailover::Configuration option
      #   and the chat options a record does not hold in columns (ChatRecord::CHAT_OPTIONS:
      #   scrub:, cache_namespace:, quota_key:, ...)
      def acts_as_llm_chat(messages: :messages, message_class: nil, foreign_key: nil, columns: {}, quota_by: :requests,
                           quota_scope: :model, flush_interval: MessageStore::DEFAULT_FLUSH_INTERVAL, **config)
        columns = LlmFailover::ActiveRecord.column_names(CHAT_COLUMNS, columns, "acts_as_llm_chat")
        unless QUOTA_BASES.include?(quota_by) || quota_by.respond_to?(:call)
          raise ConfigurationError, "quota_by must be one of #{QUOTA_BASES.inspect} or respond to #call, " \
                                    "got #{quota_by.inspect}"
        end
        unless QUOTA_SCOPES.include?(quota_scope)
          raise ConfigurationError, "quota_scope must be one of #{QUOTA_SCOPES.inspect}, got #{quota_scope.inspect}"
        end
        unknown = config.keys - ChatRecord::CHAT_OPTIONS
        if unknown.any?
          raise ConfigurationError, "acts_as_llm_chat: unknown option(s) #{unknown.map(&:inspect).join(', ')}"
        end

        unless reflect_on_association(messages)
          options = { dependent: :destroy }
          options[:class_name] = message_class if message_class
          options[:foreign_key] = foreign_key if foreign_key
          has_many messages, -> { LlmFailover::ActiveRecord.insertion_order(self) }, **options
        end

        class_attribute :llm_chat_options, instance_accessor: false
        self.llm_chat_options = ChatOptions.new(messages: messages, columns: columns, quota_by: quota_by,
                                                quota_scope: quota_scope, flush_interval: flush_interval,
                                                config: config.freeze).freeze
        include ChatRecord
      end

      # Makes this model a chat's message: `belongs_to chat` (unless already declared),
      # readers named after the store interface whatever the columns are called, and
      # complete? / streaming? / failed?.
      #
      # @param chat [Symbol] the association's name
      # @param chat_class [String, nil] its class (inferred from the name when nil)
      # @param columns [Hash{Symbol => String}] column names that differ from
      #   role content model provider status input_tokens output_tokens
      # @param touch [Boolean] touch the chat's updated_at on every message write
      def acts_as_llm_message(chat: :chat, chat_class: nil, foreign_key: nil, columns: {}, touch: false)
        columns = LlmFailover::ActiveRecord.column_names(MessageStore::DEFAULT_COLUMNS.keys, columns,
                                                         "acts_as_llm_message")
        unless reflect_on_association(chat)
          options = { touch: touch }
          options[:class_name] = chat_class if chat_class
          options[:foreign_key] = foreign_key if foreign_key
          belongs_to chat, **options
        end

        class_attribute :llm_message_columns, instance_accessor: false
        self.llm_message_columns = columns
        include MessageRecord
        MessageRecord.define_readers(self, columns)
      end
    end
  end
end
