# frozen_string_literal: true

require_relative "../errors"
require_relative "reply"

module LlmFailover
  # chat.ask(text, idempotency_key: key): the prompt is stored once per key and chat.
  # Asked again with the same key (a retried job, a double-submitted form), the turn
  # is answered again when it has no complete answer, and its stored answer is
  # returned, without a request, when it has one.
  #
  # A store that supports keys has #find_turn(key) (a Turn or nil) and
  # #add_user_once(content, key) (false when another writer stored the key first).
  #
  # @api private: used by Chat#ask
  module Idempotency
    # The user message of +key+, the complete answer that follows it (nil when none),
    # and whether another user message follows it.
    Turn = Struct.new(:user, :answer, :later)

    module_function

    # Stores +text+ under +key+ unless it is stored already. +format+ (an
    # AnswerFormat, nil for text) is what this call asks: a stored answer that
    # satisfies it comes back with reply.json set, as it did when it was answered.
    # @return [Reply, nil] the stored answer, or nil when the turn is to be answered
    # @raise [ArgumentError] the key was used for another prompt, or its turn can no
    #   longer be answered (later messages follow it)
    # @raise [ConfigurationError] the store does not support keys
    def store_prompt(store, text, key, format = nil)
      key = normalize(key)
      unless store.respond_to?(:find_turn) && store.respond_to?(:add_user_once)
        raise ConfigurationError, "store #{store.class} does not support idempotency_key " \
                                  "(#find_turn and #add_user_once; for ActiveRecord, an idempotency_key column)"
      end

      turn = store.find_turn(key)
      if turn.nil?
        return nil if store.add_user_once(text, key)

        turn = store.find_turn(key) # another writer stored it first
      end
      check(turn, text, key)
      turn.answer ? replay(turn.answer, format) : nil
    end

    # The Turn of +key+ in +messages+ (in order); +key_of+ reads a message's key.
    # @return [Turn, nil]
    def find(messages, key, &key_of)
      start = messages.index { |m| m.role.to_s == "user" && key_of.call(m) == key }
      return nil unless start

      turn = Turn.new(messages[start], nil, false)
      messages[(start + 1)..].each do |m|
        role = m.role.to_s
        if role == "user"
          turn.later = true
          break
        end
        turn.answer = m if role == "assistant" && m.status.to_s == "complete"
      end
      turn
    end

    def normalize(key)
      key = key.to_s if key.is_a?(Symbol) || key.is_a?(Integer)
      unless key.is_a?(String) && !key.strip.empty? && key.length <= 255
        raise ArgumentError, "idempotency_key must be a non-empty String of at most 255 characters, got #{key.inspect}"
      end

      key
    end

    def check(turn, text, key)
      if turn.user.content.to_s != text
        raise ArgumentError, "idempotency_key #{key.inspect} was already used for another prompt in this chat"
      end
      return if turn.answer || !turn.later

      raise ArgumentError, "the turn of idempotency_key #{key.inspect} has no answer and later messages follow it: " \
                           "it cannot be answered again"
    end

    # The stored answer as a Reply: no request, no attempts. Its json is nil when the
    # call asks for text, or when the answer was stored under another format and does
    # not satisfy this one.
    def replay(message, format = nil)
      content = message.content.to_s
      json_text = format&.check(content)
      Reply.new(content: content, model: message.model, provider: message.provider&.to_sym,
                input_tokens: message.input_tokens, output_tokens: message.output_tokens, request_id: nil,
                attempts: [], failover: false, json: json_text && format.parse(json_text))
    end
  end
end
