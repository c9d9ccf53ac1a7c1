# frozen_string_literal: true

require_relative "../records/warnings"
require_relative "../tools/tool_call"
require_relative "stored_attachments"
require_relative "tool_call_row"
require_relative "message_store/abandoned"
require_relative "message_store/reopened_rows"
require_relative "message_store/tool_calls"
require_relative "message_store/turns"

module LlmFailover
  module ActiveRecord
    # The message store (MemoryStore's interface) over a chat record's messages, each
    # database call on the calling thread's own pooled connection. A streaming answer's
    # content is written at most once per +flush_interval+ (0: every delta; nil: at the
    # end), and always at finish, failure and reset.
    #
    # Tool calls are tool_calls rows (ToolCallRow), results "tool" messages; each step
    # the loop resumes from after a crash is one transaction (ToolCalls). Idempotent
    # turns are in Turns, answers a dead process left streaming in Abandoned.
    class MessageStore
      include Abandoned
      include ReopenedRows
      include ToolCalls
      include Turns

      DEFAULT_COLUMNS = %w[role content model provider status input_tokens output_tokens idempotency_key tool_call_id]
                        .to_h { |c| [c.to_sym, c] }.freeze
      DEFAULT_FLUSH_INTERVAL = 0.5

      # The deltas of one streaming answer not yet in the database.
      Buffer = Struct.new(:text, :flushed_at)
      private_constant :Buffer

      attr_reader :chat, :flush_interval

      # @param chat [ActiveRecord::Base] a saved chat record
      # @param association [Symbol] its has_many of messages
      def initialize(chat, association: :messages, flush_interval: DEFAULT_FLUSH_INTERVAL)
        raise ArgumentError, "the chat record must be saved before it stores messages" if chat.new_record?
        unless flush_interval.nil? || (flush_interval.is_a?(Numeric) && !flush_interval.negative?)
          raise ArgumentError, "flush_interval must be nil or a non-negative number, got #{flush_interval.inspect}"
        end

        @chat = chat
        @association = association
        @klass = chat.association(association).klass
        @columns = @klass.respond_to?(:llm_message_columns) ? @klass.llm_message_columns : DEFAULT_COLUMNS
        @flush_interval = flush_interval
        @stored_attachments = StoredAttachments.new(@klass)
        @buffers = {}.compare_by_identity
        @lock = Mutex.new
        @seen = {} # call id -> the status this store last read for it (see #transition)
        @tail = nil # the chat's last row as this store last read or wrote it (#known_tail)
        @streaming_read = nil # whether the last #messages saw a streaming answer (nil: none read)
      end

      # @return [Array<ActiveRecord::Base>] every stored message, failed answers included,
      #   read from the database (unwritten deltas are written first)
      def messages
        flush_all
        all, with_calls = with_connection { read_messages }
        @tail = all.last
        @streaming_read = all.any? { |m| read(m, :role) == "assistant" && read(m, :status) == "streaming" }
        attach_tool_calls(all, with_calls)
      end

      # @return [Array<ActiveRecord::Base>] what a provider must see: no assistant row
      #   that is streaming (abandoned) or failed. Read at the start of every ask and
      #   complete, which is when rows a dead process left streaming are settled.
      def conversation
        all = messages
        settle_abandoned(all) if @streaming_read
        all.reject { |m| read(m, :role) == "assistant" && read(m, :status) != "complete" }
      end

      # attachments: kept by StoredAttachments (ActiveStorage or an attachments_data column).
      def add_user(content, attachments: [])
        extra, after = @stored_attachments.prepare(attachments)
        row = create(role: "user", content: content, status: "complete", **extra)
        after&.call(row)
        row
      end

      # @return [Array<Attachment>] a stored message's attachments (Chat reads them so)
      def attachments_of(message)
        @stored_attachments.read(message)
      end

      # The turn +message+ (a user row) opens, for the attempt records of the calls
      # that answer it: "<table>/<id>", which finds the row again.
      # @return [String]
      def turn_id(message)
        "#{@klass.table_name}/#{message.id}"
      end

      def add_system(content)
        create(role: "system", content: content, status: "complete")
      end

      # Drops every system message (with their callbacks) and adds this one.
      def replace_system(content)
        with_connection do
          @klass.transaction do
            proxy.where(@columns[:role] => "system").destroy_all
            proxy.reset
            add_system(content)
          end
        end
      end

      # The answer row of the turn the chat ends on: a failed last answer is taken
      # again (one assistant row per turn; the failures stay in the attempt log), by
      # the one caller whose conditional UPDATE finds it still failed.
      def start_assistant(model:, provider:)
        answer = { role: "assistant", content: +"", status: "streaming", model: model, provider: provider }
        with_connection do
          failed = known_tail ? failed_row(known_tail) : failed_row(last_row)
          if failed
            reopened = attributes(**answer, input_tokens: nil, output_tokens: nil)
            reopened["failure_reason"] = nil if failed.has_attribute?("failure_reason")
            return save_columns(failed, reopened) if reopen(failed)
          end

          message = proxy.build(attributes(**answer))
          # An empty answer is valid here whatever the app validates for finished rows.
          message.save!(validate: false)
          @tail = message
        end
      end

      def append_assistant(message, text)
        @lock.synchronize do
          buffer = (@buffers[message] ||= Buffer.new(+read(message, :content).to_s, monotonic))
          buffer.text << text
          flush(message, buffer) if @flush_interval && monotonic - buffer.flushed_at >= @flush_interval
        end
        nil
      end

      def reset_assistant(message, model:, provider:)
        @lock.synchronize { @buffers.delete(message) }
        save(message, content: +"", model: model, provider: provider)
      end

      # @param tool_calls [Array<ToolCall>] the calls the answer asked for: stored with
      #   the answer in one transaction
      # @param reasoning [Reasoning, nil] kept in the reasoning columns where the table has
      #   them (llm_failover:upgrade adds them; without, the host forgets its reasoning)
      def finish_assistant(message, content:, model:, provider:, input_tokens:, output_tokens:, tool_calls: nil,
                           reasoning: nil)
        @lock.synchronize { @buffers.delete(message) }
        calls = Array(tool_calls)
        check_tools! unless calls.empty?
        with_connection do
          @klass.transaction do
            save(message, content: content, model: model, provider: provider, status: "complete",
                          input_tokens: input_tokens, output_tokens: output_tokens, **reasoning_columns(reasoning))
            unless calls.empty?
              now = Time.current
              rows.insert_all!(calls.map do |call|
                ToolCallRow.columns_of(call, rows).merge("message_id" => message.id, "created_at" => now,
                                                         "updated_at" => now)
              end)
            end
          end
        end
        message.llm_tool_calls = calls.map { |c| ToolCall.from_h(c.to_h) } if message.respond_to?(:llm_tool_calls=)
        # This answer may be its turn's second (a retried job's, a complete's), which
        # makes a row still streaming in this turn abandoned: only when this store's
        # last read saw one (or it never read) is there any to look for.
        settle_abandoned unless @streaming_read == false
        message
      end

      # Chat#cancel! stopped the answer: the row keeps the partial text, status
      # "cancelled", and leaves the conversation.
      def cancel_assistant(message, content:, model:, provider:)
        @lock.synchronize { @buffers.delete(message) }
        save(message, status: "cancelled", content: content, model: model, provider: provider)
      end

      # Keeps the partial text for audit; the row leaves the conversation. This runs
      # while an error is on its way up: a database failure here must not replace that
      # error (an unmarked row is still "streaming", and excluded all the same).
      def fail_assistant(message, model: nil, provider: nil)
        buffer = @lock.synchronize { @buffers.delete(message) }
        attrs = { status: "failed" }
        attrs[:model] = model if model
        attrs[:provider] = provider if provider
        attrs[:content] = buffer.text.dup if buffer
        save(message, **attrs)
      rescue ::ActiveRecord::ActiveRecordError => e
        Warnings.warn("could not mark assistant message #{message.id.inspect} failed: #{e.class}: #{e.message}")
        message
      end

      def inspect
        "#<#{self.class.name} #{@chat.class.name}##{@chat.id} #{@association}>"
      end

      private

      def proxy
        @chat.public_send(@association)
      end

      def pk
        @klass.primary_key
      end

      def integer_ids?
        pk && @klass.columns_hash[pk]&.type == :integer
      end

      def create(**attrs)
        @tail = with_connection { proxy.create!(attributes(**attrs)) }
      end

      # Lifecycle changes go through save: the app's callbacks see them (a broadcast
      # clears the screen on a reset), its validations do not block them.
      def save(message, **attrs)
        with_connection do
          message.assign_attributes(attributes(**attrs))
          message.save!(validate: false)
        end
        message
      end

      # Like #save, with column names already mapped.
      def save_columns(message, changes)
        message.assign_attributes(changes)
        message.save!(validate: false)
        message
      end

      # A plain UPDATE of the content: no callbacks, no transaction, once per interval.
      def flush(message, buffer)
        changes = { @columns[:content] => buffer.text.dup }
        changes["updated_at"] = Time.current if message.has_attribute?("updated_at")
        with_connection { message.update_columns(changes) }
        buffer.flushed_at = monotonic
      end

      def flush_all
        @lock.synchronize { @buffers.each { |message, buffer| flush(message, buffer) } }
      end

      REASONING_COLUMNS = %w[reasoning reasoning_api reasoning_origin].freeze
      private_constant :REASONING_COLUMNS

      # The reasoning columns' values, for a table that has them all.
      def reasoning_columns(reasoning)
        return {} unless reasoning && (REASONING_COLUMNS - @klass.column_names).empty?

        REASONING_COLUMNS.zip([reasoning.state, reasoning.api, reasoning.origin]).to_h
      end

      def attributes(**attrs)
        attrs.to_h { |name, value| [name.is_a?(String) ? name : @columns.fetch(name), value] }
      end

      def read(message, name)
        message[@columns.fetch(name)]
      end

      def with_connection(&block)
        @klass.connection_pool.with_connection(&block)
      end

      def monotonic
        Process.clock_gettime(Process::CLOCK_MONOTONIC)
      end
    end
  end
end
