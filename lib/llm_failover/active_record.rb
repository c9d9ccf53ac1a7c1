# frozen_string_literal: true

# The ActiveRecord integration: chats and messages in the app's database, the
# attempt log table and its sink. Plain scripts never load this file, nor ActiveRecord.
#
#   require "llm_failover/active_record"
#   class Chat < ApplicationRecord
#     acts_as_llm_chat
#   end
#   Chat.create!(model: "gpt-4o", provider: "openai").ask("Hello") { |chunk| print chunk }

require "active_record"
require "llm_failover"
require "llm_failover/active_record/schema"
require "llm_failover/active_record/attempt"
require "llm_failover/active_record/attempt_log"
require "llm_failover/active_record/message_store"
require "llm_failover/active_record/quota_counter"
require "llm_failover/active_record/message_record"
require "llm_failover/active_record/chat_record"
require "llm_failover/active_record/acts_as"

module LlmFailover
  # Named after the integration; inside LlmFailover, the gem itself is ::ActiveRecord.
  module ActiveRecord
    class << self
      # Creates the chats, messages and llm_failover_attempts tables (for scripts and
      # tests; Rails apps run the `llm_failover:install` migration instead). Tables that
      # exist are left alone unless force: true.
      # @param connection [ActiveRecord::ConnectionAdapters::AbstractAdapter, nil] the
      #   calling thread's connection of ActiveRecord::Base when nil
      # @param tables [Hash] chats:, messages:, attempts:, foreign_key:, force:, if_not_exists:
      # @return [nil]
      def create_tables!(connection: nil, **tables)
        if connection
          Schema.define(connection, **tables)
        else
          ::ActiveRecord::Base.connection_pool.with_connection { |c| Schema.define(c, **tables) }
        end
      end

      # @api private: messages in the order they were written (the primary key when it
      # is a sequence, creation time otherwise)
      def insertion_order(relation)
        klass = relation.klass
        pk = klass.primary_key
        if pk && klass.columns_hash[pk]&.type == :integer
          relation.reorder(pk => :asc)
        else
          relation.reorder(:created_at, pk)
        end
      end

      # @api private: defaults merged with the caller's names, checked
      def column_names(names, given, where)
        given = given.to_h { |k, v| [k.to_sym, v.to_s] }
        unknown = given.keys - names
        raise ConfigurationError, "#{where}: unknown column(s) #{unknown.map(&:inspect).join(', ')}" if unknown.any?

        names.to_h { |n| [n, n.to_s] }.merge(given).freeze
      end
    end
  end
end

ActiveSupport.on_load(:active_record) { extend LlmFailover::ActiveRecord::ActsAs }
