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

    def add_user(content)
      push(Message.build("user", content.frozen? ? content : content.dup.freeze, "complete", nil, nil))
    end

    # The Turn of +key+ (Idempotency), nil when no user message has it.
    def find_turn(key)
      Idempotency.find(messages, key, &:idempotency_key)
    end

    # Stores a user message under +key+ unless one has it already (then false).
    def add_user_once(content, key)
      @lock.synchronize do
        return false if @messages.any? { |m| m.idempotency_key == key }

        message = Message.build("user", content.frozen? ? content : content.dup.freeze, "complete", nil, nil)
        @messages << message.update(idempotency_key: key)
      end
      true
    end

    def add_system(content)
      push(Message.build("system", content.frozen? ? content : content.dup.freeze, "complete", nil, nil))
    end

    # Drops every system message and adds this one.
    def replace_system(content)
      @lock.synchronize { @messages.reject! { |m| m.role == "system" } }
      add_system(content)
    end

    def start_assistant(model:, provider:)
      push(Message.build("assistant", +"", "streaming", model, provider))
    end

    # Runs once per streamed chunk: appends in place (#start_assistant and
    # #reset_assistant give an unfrozen String), and replaces a frozen one through
    # Message#update (keyword arguments, an ivar name built per call); the rescue costs
    # nothing until it runs, a frozen? check ~0.2k a chunk (the guard's 10k).
    # Without the lock: it guards the list of messages, which this does not change,
    # and a reader reads a message's content outside it anyway; String#<< is one
    # step under the GVL, so a reader sees the text before or after this delta.
    def append_assistant(message, text)
      message.content << text
      message
    rescue FrozenError
      message.update(content: message.content + text)
    end

    def reset_assistant(message, model:, provider:)
      @lock.synchronize { message.update(content: +"", model: model, provider: provider) }
    end

    def finish_assistant(message, content:, model:, provider:, input_tokens:, output_tokens:)
      @lock.lock
      begin
        message.finish(content, model, provider, input_tokens, output_tokens)
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
