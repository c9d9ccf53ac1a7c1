# frozen_string_literal: true

require_relative "../../tools/store_transition"
require_relative "../../tools/tool_call"
require_relative "../tool_call_row"

module LlmFailover
  module ActiveRecord
    class MessageStore
      # The tool-call half of MessageStore (its header says how calls are kept): a
      # call's state before it runs, its outcome with its result message, the calls
      # read back and given to their messages. Each write is one conditional UPDATE
      # from a status Tools::StoreTransition allows. Uses the store's with_connection,
      # proxy, create, read, @klass, @columns, @lock and @seen.
      module ToolCalls
        # Stores a call's state before it has a result: running (written before
        # Tool#execute, so that a crash leaves it so), approved, awaiting approval.
        # @param call [ToolCall]
        # @return [ToolCall]
        # @raise [ArgumentError] the call is not stored in this chat, or has its result
        def save_tool_call(call)
          Tools::StoreTransition.check_not_final!(call)

          changes = ToolCallRow.columns_of(call).slice("status", "awaiting_approval")
          changes["started_at"] = Time.current if call.status == :running
          changes["updated_at"] = Time.current
          with_connection { transition(call, changes) }
          call
        end

        # Stores a final call and its result message (role "tool") in one transaction,
        # once per call: given again, it changes nothing and returns the stored message.
        # @param call [ToolCall] final
        # @return [ActiveRecord::Base] the result message
        def add_tool_result(call)
          raise ArgumentError, "tool call #{call.id} has no result yet (#{call.status})" unless call.final?

          tool_call_column!
          with_connection do
            @klass.transaction do
              now = Time.current
              changes = ToolCallRow.columns_of(call).slice("status", "awaiting_approval", "result", "error_kind",
                                                           "error_class", "error_message")
              changes.merge!("finished_at" => now, "updated_at" => now)
              existing = result_message(call.id)
              next existing if existing

              transition(call, changes)
              message = create(role: "tool", content: call.content.to_s, status: "complete", tool_call_id: call.id)
              message.llm_tool_result_error = call.error? if message.respond_to?(:llm_tool_result_error=)
              message
            end
          end
        end

        # Whether this app's database can keep tool calls: the tool_calls table beside the
        # messages table and messages.tool_call_id (an app installed before tools runs
        # the upgrade generator first).
        # @return [true]
        # @raise [ConfigurationError] naming what is missing and the generator that adds it
        def check_tools!
          tool_call_column!
          return true if with_connection { rows.table_exists? }

          raise ConfigurationError, "there is no #{rows.table_name} table for the tool calls of #{@klass.table_name} " \
                                    "(run `rails g llm_failover:upgrade` and migrate: it adds it)"
        end

        # @return [ToolCall, nil] the stored call of +id+ in this chat
        def tool_call(id)
          row = with_connection { chat_rows.find_by(call_id: id) }
          row && seen(row.to_tool_call)
        end

        # @return [Array<ToolCall>] every stored call of this chat, in the order they were asked for
        def tool_calls
          with_connection { chat_rows.order(:id).map { |row| seen(row.to_tool_call) } }
        end

        private

        # The tool_calls rows' model of this chat's messages table.
        def rows
          @rows ||= ToolCallRow.for(@klass)
        end

        # This chat's tool_calls rows.
        def chat_rows
          rows.where(message_id: proxy.unscope(:order).select(@klass.primary_key))
        end

        def seen(call)
          @lock.synchronize { @seen[call.id] = call.status.to_s }
          call
        end

        # One conditional UPDATE of the call's row from a status Tools::StoreTransition allows.
        # @raise [ArgumentError] the row is not there, or in another status (another
        #   process moved it first)
        def transition(call, changes)
          allowed = Tools::StoreTransition.prior(call, seen: @lock.synchronize { @seen[call.id] })
          n = chat_rows.where(call_id: call.id, status: allowed).update_all(changes)
          if n == 1
            @lock.synchronize { @seen[call.id] = call.status.to_s }
            return
          end

          Tools::StoreTransition.refuse!(call, chat_rows.where(call_id: call.id).pick(:status), allowed)
        end

        def result_message(call_id)
          proxy.where(tool_call_column! => call_id, @columns[:role] => "tool").first
        end

        def tool_call_column!
          column = @columns.fetch(:tool_call_id)
          return column if @klass.column_names.include?(column)

          raise ConfigurationError, "#{@klass.table_name} has no #{column} column for tool results " \
                                    "(run `rails g llm_failover:upgrade` and migrate: it adds the tool_calls table " \
                                    "and this column)"
        end

        # The chat's messages in insertion order, and whether any of them has tool
        # calls: one query, an EXISTS beside each row (on the tool_calls index by
        # message), so that a chat without tool calls never reads the tool_calls table.
        # The flag is read off the result, not left on the records the app sees.
        # @return [Array(Array<ActiveRecord::Base>, Boolean)]
        def read_messages
          scope = LlmFailover::ActiveRecord.insertion_order(@chat.association(@association).scope)
          return [scope.to_a, false] unless tool_tables? && @klass.method_defined?(:llm_tool_calls=)

          calls = rows.quoted_table_name
          flag = "EXISTS (SELECT 1 FROM #{calls} WHERE #{calls}.message_id = " \
                 "#{@klass.quoted_table_name}.#{@klass.connection.quote_column_name(@klass.primary_key)}) " \
                 "AS #{HAS_CALLS}"
          relation = scope.select(@klass.arel_table[Arel.star], Arel.sql(flag))
          result = @klass.connection.select_all(relation.arel, "#{@klass.name} Load")
          at = result.columns.index(HAS_CALLS)
          columns = result.columns.reject.with_index { |_, i| i == at }
          any = false
          all = result.rows.map do |values|
            any ||= CALLS_FLAG.cast(values[at]) == true
            @klass.instantiate(columns.zip(values.reject.with_index { |_, i| i == at }).to_h)
          end
          [all, any]
        end

        HAS_CALLS = "llm_failover_has_tool_calls"
        CALLS_FLAG = ::ActiveModel::Type::Boolean.new
        private_constant :HAS_CALLS, :CALLS_FLAG

        # Gives every assistant message its stored calls and every tool message its
        # call's error flag, from one query (none when no message has tool calls, or
        # the table has no tool_calls table yet).
        def attach_tool_calls(all, with_calls)
          return all unless all.first.respond_to?(:llm_tool_calls=)

          by_message = Hash.new { |h, k| h[k] = [] }
          if with_calls
            with_connection { chat_rows.order(:id).to_a }.each do |row|
              by_message[row.message_id] << seen(row.to_tool_call)
            end
          end
          errors = by_message.values.flatten.to_h { |call| [call.id, call.error?] }
          all.each do |m|
            m.llm_tool_calls = by_message.fetch(m.id, []) if read(m, :role) == "assistant"
            m.llm_tool_result_error = errors.fetch(m.tool_call_id, false) if read(m, :role) == "tool"
          end
          all
        end

        # Whether this app's database has the tool tables (an app installed before tools
        # has neither until it runs the upgrade).
        def tool_tables?
          return @tool_tables if defined?(@tool_tables)

          @tool_tables = with_connection { rows.table_exists? } && @klass.column_names.include?(@columns.fetch(:tool_call_id))
        end
      end
    end
  end
end
