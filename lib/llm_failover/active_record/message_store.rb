# frozen_string_literal: true

require_relative "../chat/idempotency"
require_relative "../records/warnings"
require_relative "../tools/tool_call"
require_relative "stored_attachments"
require_relative "tool_call_row"

module LlmFailover
  module ActiveRecord
    # The message store (the interface MemoryStore implements) over a chat record's
    # messages association. Every database call runs on the calling thread's
    # connection from the pool (with_connection), so a job thread never shares one.
    #
    # Streamed deltas are buffered: the assistant row's content is written at most once
    # per +flush_interval+ seconds while it streams (0: every delta; nil: only at the
    # end), and always at finish and at failure. A reset is written at once, before
    # the backup's first delta reaches the store.
    #
    # Tool calls (the interface MemoryStore's header describes): an assistant message's
    # calls are rows of the tool_calls table beside the messages table (ToolCallRow),
    # a result is a messages row with role "tool" and tool_call_id. Each step the loop
    # relies on to resume after a crash is one transaction: the answer with its calls
    # (finish_assistant), a call's state before it runs (save_tool_call), a call's
    # outcome with its result message (add_tool_result).
    class MessageStore
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
      end

      # @return [Array<ActiveRecord::Base>] every stored message, failed answers included,
      #   read from the database (unwritten deltas are written first)
      def messages
        flush_all
        all = with_connection { LlmFailover::ActiveRecord.insertion_order(@chat.association(@association).scope).to_a }
        attach_tool_calls(all)
      end

      # @return [Array<ActiveRecord::Base>] what a provider must see: no assistant row
      #   that is streaming (abandoned) or failed. Read at the start of every ask and
      #   complete, which is when rows a dead process left streaming are settled.
      def conversation
        all = messages
        settle_abandoned(all)
        all.reject { |m| read(m, :role) == "assistant" && read(m, :status) != "complete" }
      end

      # Assistant rows a process left "streaming" when it died mid-answer (SIGKILL, an
      # OOM kill, a lost host) are settled: status "failed", the reason in
      # failure_reason when the table has it, the partial text kept. A row is such a
      # one when a later answer of its turn is complete (the turn was answered again,
      # by a retried job or a complete), or when nothing was written to it for longer
      # than a call can last. A row another process is still streaming is neither.
      # A database failure here never fails the call (the rows stay for the next one).
      # @return [Integer] the rows settled
      def settle_abandoned(all = nil)
        status = @columns[:status]
        return 0 unless with_connection { proxy.where(status => "streaming", @columns[:role] => "assistant").exists? }

        abandoned(all || messages).sum do |message, reason|
          changes = { status => "failed" }
          changes["failure_reason"] = reason if message.has_attribute?("failure_reason")
          with_connection { proxy.where(id: message.id, status => "streaming").update_all(changes) }.tap do |n|
            message.assign_attributes(changes) if n == 1
          end
        end
      rescue ::ActiveRecord::ActiveRecordError => e
        Warnings.warn("could not settle abandoned assistant messages: #{e.class}: #{e.message}")
        0
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

      # The turn +message+ (a user row) opens, for the attempt records of the calls
      # that answer it: "<table>/<id>", which finds the row again.
      # @return [String]
      def turn_id(message)
        "#{@klass.table_name}/#{message.id}"
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

      # The answer row of the turn the chat ends on. When the chat's last row is a
      # failed answer, this call answers that turn again (a retried job, a #complete
      # after a failed #ask): it takes that row, so that one turn has one assistant row
      # (an app listing the messages shows no empty failed bubble beside the answer);
      # the failed calls stay in the attempt log. Two calls never take the same row:
      # the one whose conditional UPDATE finds it still failed does.
      def start_assistant(model:, provider:)
        answer = { role: "assistant", content: +"", status: "streaming", model: model, provider: provider }
        with_connection do
          failed = failed_tail
          if failed
            reopened = attributes(**answer, input_tokens: nil, output_tokens: nil)
            reopened["failure_reason"] = nil if failed.has_attribute?("failure_reason")
            return save_columns(failed, reopened) if reopen(failed)
          end

          message = proxy.build(attributes(**answer))
          # An empty answer is valid here whatever the app validates for finished rows.
          message.save!(validate: false)
          message
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
      def finish_assistant(message, content:, model:, provider:, input_tokens:, output_tokens:, tool_calls: nil)
        @lock.synchronize { @buffers.delete(message) }
        calls = Array(tool_calls)
        check_tools! unless calls.empty?
        with_connection do
          @klass.transaction do
            save(message, content: content, model: model, provider: provider, status: "complete",
                          input_tokens: input_tokens, output_tokens: output_tokens)
            unless calls.empty?
              now = Time.current
              rows.insert_all!(calls.map do |call|
                ToolCallRow.columns_of(call).merge("message_id" => message.id, "created_at" => now,
                                                   "updated_at" => now)
              end)
            end
          end
        end
        message.llm_tool_calls = calls.map { |c| ToolCall.from_h(c.to_h) } if message.respond_to?(:llm_tool_calls=)
        settle_abandoned # this answer may be its turn's second: a retried job's, or a complete's
        message
      end

      # Stores a call's state before it has a result: running (written before
      # Tool#execute, so that a crash leaves it so), approved, awaiting approval.
      # @param call [ToolCall]
      # @return [ToolCall]
      # @raise [ArgumentError] the call is not stored in this chat, or has its result
      def save_tool_call(call)
        raise ArgumentError, "tool call #{call.id} is final (#{call.status}): store it with add_tool_result" if call.final?

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

      # The stored status each status is written over, and no other: one process
      # wins a call (two jobs completing one chat never both run it), an approval
      # never lands on a denied call, a denial never on one that runs. A result is
      # taken over any state without one: the tool has run by then.
      PRIOR = { running: %w[pending approved], approved: %w[pending], pending: %w[pending],
                succeeded: %w[pending approved running], failed: %w[pending approved running],
                rejected: %w[pending approved], denied: %w[pending] }.freeze
      private_constant :PRIOR

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

      # The statuses +call+ may be written over. A call this store read as running
      # (the loop runs an idempotent! one again after a crash) is run again from
      # running; any other run starts from pending or approved, so that of two
      # processes that read it pending only one runs it.
      def prior(call)
        return %w[running] if call.status == :running && @lock.synchronize { @seen[call.id] } == "running"

        PRIOR.fetch(call.status)
      end

      # One conditional UPDATE of the call's row from a status PRIOR allows.
      # @raise [ArgumentError] the row is not there, or in another status (another
      #   process moved it first)
      def transition(call, changes)
        allowed = prior(call)
        n = chat_rows.where(call_id: call.id, status: allowed).update_all(changes)
        if n == 1
          @lock.synchronize { @seen[call.id] = call.status.to_s }
          return
        end

        stored = chat_rows.where(call_id: call.id).pick(:status)
        raise ArgumentError, "tool call #{call.id} is not stored in this chat" if stored.nil?

        raise ArgumentError, "tool call #{call.id} (#{call.name}) is #{stored} in the store, not " \
                             "#{allowed.join(' or ')}: it cannot become #{call.status} " \
                             "(another process moved it first)"
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

      # Gives every assistant message its stored calls and every tool message its
      # call's error flag, from one query (none when the chat has no tool calls or the
      # table has no tool_calls table yet).
      def attach_tool_calls(all)
        return all unless all.first.respond_to?(:llm_tool_calls=)

        by_message = Hash.new { |h, k| h[k] = [] }
        if tool_tables?
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

      def proxy
        @chat.public_send(@association)
      end

      # The chat's last row when it is a failed answer.
      def failed_tail
        last = LlmFailover::ActiveRecord.insertion_order(proxy).reverse_order.first
        last if last && read(last, :role) == "assistant" && read(last, :status) == "failed"
      end

      # Claims a failed row for this call's answer: true for the one caller whose
      # UPDATE found it still failed.
      def reopen(message)
        status = @columns[:status]
        proxy.where(id: message.id, status => "failed").update_all(status => "streaming") == 1
      end

      # [row, reason] of each streaming assistant row that no live call can own.
      def abandoned(all)
        stale_before = Time.current - longest_call
        turn_answered = false
        found = []
        # Newest first: a complete answer makes the streaming rows of its turn before it abandoned.
        all.reverse_each do |m|
          case read(m, :role)
          when "user" then turn_answered = false
          when "assistant"
            state = read(m, :status)
            turn_answered = true if state == "complete"
            next unless state == "streaming"

            if turn_answered
              found << [m, "abandoned mid-answer: a later call answered the same turn"]
            elsif m.has_attribute?("updated_at") && m.updated_at && m.updated_at < stale_before
              found << [m, "abandoned mid-answer: nothing written for longer than a call can last (#{longest_call.round} s)"]
            end
          end
        end
        found
      end

      def longest_call
        LlmFailover.configuration.longest_call
      end

      def idempotency_column
        column = @columns[:idempotency_key]
        return column if @klass.column_names.include?(column)

        raise ConfigurationError, "#{@klass.table_name} has no #{column} column for idempotency_key " \
                                  "(run `rails g llm_failover:install` again and migrate: it adds what an older " \
                                  "migration lacks; or add it: t.string :#{column}, and a unique index on the chat id and it)"
      end

      def create(**attrs)
        with_connection { proxy.create!(attributes(**attrs)) }
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
