# frozen_string_literal: true

require_relative "idempotency"
require_relative "memory_store/message"

module LlmFailover
  # The default message store: one chat's messages in memory, in order. Implements
  # the store interface the ActiveRecord store shares (see Chat).
  class MemoryStore
    def initialize
      @messages = []
      @lock = Mutex.new
    end

    # @return [Array<Message>] everything stored, failed answers included
    def messages
      @lock.synchronize { @messages.dup }
    end

    # @return [Array<Message>] what a provider must see: no failed or unfinished answers
    def conversation
      @lock.lock
      begin
        @messages.reject { |m| m.role == "assistant" && !m.complete? }
      ensure
        @lock.unlock
      end
    end

    # attachments: the canonical Attachments (kept in memory, bytes and all, once).
    def add_user(content, attachments: [].freeze)
      push(Message.new(role: "user", content: content.frozen? ? content : content.dup.freeze,
                       attachments: attachments.frozen? ? attachments : attachments.dup.freeze))
    end

    # The Turn of +key+ (Idempotency), nil when no user message has it.
    def find_turn(key)
      Idempotency.find(messages, key, &:idempotency_key)
    end

    # Stores a user message under +key+ unless one has it already (then false).
    def add_user_once(content, key, attachments: [].freeze)
      @lock.synchronize do
        return false if @messages.any? { |m| m.idempotency_key == key }

        message = Message.new(role: "user", content: content.frozen? ? content : content.dup.freeze,
                              attachments: attachments.frozen? ? attachments : attachments.dup.freeze)
        @messages << message.update(idempotency_key: key)
      end
      true
    end

    # Claims the turn of +key+ for one call (Idempotency): true when it was free, or
    # claimed longer than +stale_after+ seconds ago.
    def claim_turn(key, stale_after:)
      @lock.synchronize do
        user = @messages.find { |m| m.role == "user" && m.idempotency_key == key }
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        next false unless user
        next false if user.status == Idempotency::ANSWERING && now - user.claimed_at < stale_after

        user.update(status: Idempotency::ANSWERING, claimed_at: now)
        true
      end
    end

    # Frees the turn of +key+ (its call has ended, however it ended).
    def release_turn(key)
      @lock.synchronize do
        user = @messages.find { |m| m.role == "user" && m.idempotency_key == key }
        user&.update(status: "complete", claimed_at: nil)
      end
      nil
    end

    def add_system(content)
      push(Message.new(role: "system", content: content.frozen? ? content : content.dup.freeze))
    end

    # Drops every system message and adds this one.
    def replace_system(content)
      @lock.synchronize { @messages.reject! { |m| m.role == "system" } }
      add_system(content)
    end

    def start_assistant(model:, provider:)
      push(Message.new(role: "assistant", content: +"", status: "streaming", model: model, provider: provider))
    end

    # Runs once per streamed chunk: appends in place to the String #start_assistant
    # and #reset_assistant give, or replaces one that was frozen since.
    # Without the lock: it guards the list of messages, which this does not change,
    # and a reader reads a message's content outside it anyway; String#<< is one
    # step under the GVL, so a reader sees the text before or after this delta.
    def append_assistant(message, text)
      content = message.content
      content.frozen? ? message.update(content: content + text) : content << text
      message
    end

    def reset_assistant(message, model:, provider:)
      @lock.synchronize { message.update(content: +"", model: model, provider: provider) }
    end

    def finish_assistant(message, content:, model:, provider:, input_tokens:, output_tokens:)
      @lock.lock
      begin
        message.finish(content: content, model: model, provider: provider, input_tokens: input_tokens,
                       output_tokens: output_tokens)
      ensure
        @lock.unlock
      end
    end

    # Chat#cancel! stopped the answer: it keeps the partial text, out of the conversation.
    def cancel_assistant(message, content:, model:, provider:)
      @lock.synchronize { message.update(status: "cancelled", content: content, model: model, provider: provider) }
    end

    # model/provider name the target whose error was final, when known.
    def fail_assistant(message, model: nil, provider: nil)
      attrs = { status: "failed" }
      attrs[:model] = model if model
      attrs[:provider] = provider if provider
      @lock.synchronize { message.update(**attrs) }
    end

    def inspect
      "#<#{self.class.name} #{@messages.size} messages>"
    end

    private

    def push(message)
      @lock.lock
      begin
        @messages << message
      ensure
        @lock.unlock
      end
      message
    end
  end
end
