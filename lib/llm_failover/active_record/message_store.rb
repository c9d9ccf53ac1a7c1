# frozen_string_literal: true

require_relative "../chat/idempotency"
require_relative "../records/warnings"
require_relative "stored_attachments"

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
    class MessageStore
      DEFAULT_COLUMNS = %w[role content model provider status input_tokens output_tokens idempotency_key]
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
      end

      # @return [Array<ActiveRecord::Base>] every stored message, failed answers included,
      #   read from the database (unwritten deltas are written first)
      def messages
        flush_all
        with_connection { LlmFailover::ActiveRecord.insertion_order(@chat.association(@association).scope).to_a }
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

      def start_assistant(model:, provider:)
        with_connection do
          message = proxy.build(attributes(role: "assistant", content: +"", status: "streaming", model: model,
                                           provider: provider))
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

      def finish_assistant(message, content:, model:, provider:, input_tokens:, output_tokens:)
        @lock.synchronize { @buffers.delete(message) }
        save(message, content: content, model: model, provider: provider, status: "complete",
                      input_tokens: input_tokens, output_tokens: output_tokens)
        settle_abandoned # this answer may be its turn's second: a retried job's, or a complete's
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
