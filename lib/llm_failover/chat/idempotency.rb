# frozen_string_literal: true

require_relative "../attachments/selection"
require_relative "../errors"
require_relative "reply"
require_relative "idempotency/heartbeat"
require_relative "idempotency/owner"

module LlmFailover
  # chat.ask(text, idempotency_key: key): the prompt is stored once per key and chat.
  # Asked again with the same key (a retried job, a double-submitted form), the turn
  # is answered again when it has no complete answer, and its stored answer is
  # returned, without a request, when it has one. One call at a time answers a turn:
  # an ask that finds another answering it waits for that answer (then returns it),
  # or for the other to fail (then answers itself), up to idempotency_wait, and then
  # raises IdempotencyConflict. Across processes too: the claim is in the store.
  #
  # A claim names its owner (Owner) and is kept fresh while its call runs
  # (Heartbeat), so a rerun takes over a dead call's claim at once when the dead
  # process was on this machine, and once the claim missed its beats (Heartbeat::STALE)
  # when it was elsewhere; never after the longest a call may last. A store that
  # names no owners (an ActiveRecord table without claimed_by) keeps the older rule:
  # a claim is a dead owner's once it is older than the longest call.
  #
  # A store that supports keys has #find_turn(key) (a Turn or nil) and
  # #add_user_once(content, key) (false when another writer stored the key first); one
  # that can hold a claim also has #claim_turn(key, stale_after:) (true for the one
  # caller that now answers the turn: it was free, or its claim older than
  # stale_after seconds, a dead owner's) and #release_turn(key). One that names
  # owners answers #turn_owners? true and takes owner: (Owner.claim_name) in both,
  # claim_turn also stale_after: nil (only a free turn) and from: (a holder found
  # dead: its claim is taken whatever its age), and has #turn_owner(key) (the
  # holder's name, nil when the turn is free) and #refresh_turn(key, owner:) (the
  # heartbeat: true while owner holds the turn); #settle_turn(key), when it has it,
  # settles what a dead holder left streaming in the turn.
  #
  # @api private: used by Chat#ask
  module Idempotency
    # The user message of +key+, the complete answer that follows it (nil when none),
    # and whether another user message follows it.
    Turn = Struct.new(:user, :answer, :later)

    # Status of a user message whose turn a call is answering (Chat#ask's claim).
    ANSWERING = "answering"
    # First and longest pause between two looks at a turn another call answers.
    POLL = [0.02, 0.5].freeze
    private_constant :POLL

    module_function

    # Stores +text+ under +key+ unless it is stored already, and answers its turn
    # (the block) unless it holds a complete answer. +format+ (an AnswerFormat, nil
    # for text) is what this call asks: a stored answer that satisfies it comes back
    # with reply.json set, as it did when it was answered.
    # @param wait [Numeric] seconds to wait for another call answering the turn
    # @param stale_after [Numeric] seconds after which another call's claim is a dead
    #   one's, where the store names no owners (the longest call)
    # @yield answers the turn (the prompt is stored and this call holds its claim)
    # @return [Reply] the stored answer, or the block's
    # @raise [ArgumentError] the key was used for another prompt, or its turn can no
    #   longer be answered (later messages follow it)
    # @raise [ConfigurationError] the store does not support keys
    # @raise [IdempotencyConflict] another call still answers the turn after +wait+
    def ask(store, text, key, format, wait:, stale_after:, attachments: [])
      key = normalize(key)
      unless store.respond_to?(:find_turn) && store.respond_to?(:add_user_once)
        raise ConfigurationError, "store #{store.class} does not support idempotency_key " \
                                  "(#find_turn and #add_user_once; for ActiveRecord, an idempotency_key column)"
      end

      claims = store.respond_to?(:claim_turn) && store.respond_to?(:release_turn)
      owner = Owner.claim_name if claims && store.respond_to?(:turn_owners?) && store.turn_owners?
      deadline = now + wait
      pause = POLL[0]
      loop do
        turn = store.find_turn(key)
        # another writer stored it first: read it
        next if turn.nil? && !add_user_once(store, text, key, attachments)

        if turn
          check(turn, text, key, store: store, attachments: attachments)
          return replay(turn.answer, format) if turn.answer
        end
        return yield unless claims
        if claim(store, key, owner, stale_after)
          return answer(store, key, owner) do
            # The call this one waited for may have stored its answer and let go
            # between the read above and the claim: read again under the claim.
            answered = store.find_turn(key)&.answer
            answered ? replay(answered, format) : yield
          end
        end
        if now >= deadline
          raise IdempotencyConflict, "another call is still answering idempotency_key #{key.inspect} after " \
                                     "#{wait} s (idempotency_wait): no request was sent; ask again later for its answer"
        end

        sleep(pause)
        pause = [pause * 2, POLL[1]].min
      end
    end

    # The prompt stored under +key+ (false: another writer stored it first); the store
    # gets attachments: only with some, so a store that keeps no files still takes text.
    def add_user_once(store, text, key, attachments)
      attachments.empty? ? store.add_user_once(text, key) : store.add_user_once(text, key, attachments: attachments)
    end

    # Takes the turn's claim when it is free, or held by a dead call: one whose
    # heartbeat stopped, or a process of this machine that has ended. The answer such
    # a call left streaming is settled failed, and this call's answer takes its row.
    def claim(store, key, owner, stale_after)
      return store.claim_turn(key, stale_after: stale_after) unless owner
      return true if store.claim_turn(key, owner: owner, stale_after: nil)

      holder = store.turn_owner(key)
      return false unless holder

      dead = Owner.dead?(holder) ? holder : nil
      taken = store.claim_turn(key, owner: owner, stale_after: Heartbeat::STALE, from: dead)
      store.settle_turn(key) if taken && store.respond_to?(:settle_turn)
      taken
    end

    # Answers under the claim, kept fresh while the block runs, and lets it go. The
    # heartbeat stops first: a beat never finds the claim let go by this call.
    def answer(store, key, owner)
      beating = owner && Heartbeat.current.add(store, key, owner)
      begin
        yield
      ensure
        beating&.stop
        owner ? store.release_turn(key, owner: owner) : store.release_turn(key)
      end
    end

    def now
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
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
        # An answer that asked for tools is a step of the turn's tool loop, not its
        # answer: the loop resumes from it.
        next unless role == "assistant" && m.status.to_s == "complete"

        turn.answer = m unless m.respond_to?(:tool_calls) && !m.tool_calls.empty?
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

    # The same turn is the same prompt with the same files (by content digest, in
    # order): a key reused with other attachments is another prompt.
    def check(turn, text, key, store:, attachments:)
      if turn.user.content.to_s != text
        raise ArgumentError, "idempotency_key #{key.inspect} was already used for another prompt in this chat"
      end
      stored = Attachment::Selection.stored(store, turn.user).map(&:digest)
      unless stored == attachments.map(&:digest)
        raise ArgumentError, "idempotency_key #{key.inspect} was already used for this prompt with other " \
                             "attachments in this chat (#{stored.size} stored, #{attachments.size} given; " \
                             "compared by content digest)"
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
