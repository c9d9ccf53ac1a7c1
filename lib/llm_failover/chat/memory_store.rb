# frozen_string_literal: true

require "llm_failover/llm_failover" # the compiled extension: Engine.uuid
require_relative "idempotency"
require_relative "memory_store/message"
require_relative "../tools/schema"
require_relative "../tools/store_transition"
require_relative "../tools/tool_call"

module LlmFailover
  # The default message store: one chat's messages in memory, in order. Implements
  # the store interface the ActiveRecord store shares (see Chat).
  #
  # == Tool calls (the part of the interface a chat with tools needs)
  #
  # A chat with tools (Chat#with_tool) needs four more things of its store; a store
  # without them works for chats without tools (Chat::TOOL_STORE_METHODS is checked
  # when a tool is added). The transcript is canonical: one form for both protocols,
  # rendered per protocol by the core when a turn is sent.
  #
  # Messages:
  # - an assistant message answers #tool_calls: Array<ToolCall> (empty for a plain
  #   answer; its content may be "" when it has calls), in the order the model gave
  #   them, each in its current stored state;
  # - a tool result is a message with role "tool": content (what the model is sent,
  #   scrubbed when sent like any content), #tool_call_id (ToolCall#id of its call)
  #   and #is_error (true when the call failed, was rejected or denied). It is always
  #   status "complete". Other messages answer tool_call_id nil, is_error false.
  #
  # Methods:
  # - finish_assistant(message, content:, ..., tool_calls: calls): as without tools,
  #   plus the calls the answer asked for (ToolCall, status pending, each with its
  #   #signature), stored with the message in one step: a crash never leaves an answer
  #   that asked for tools without its calls. The keyword is only given when there are
  #   calls.
  #
  # Reasoning state (any store may keep it; one that does not loses nothing but the
  # host's memory of its reasoning): finish_assistant(message, ..., reasoning:) gives a
  # Reasoning when the answer carried some (the keyword only then), and the assistant
  # message answers #reasoning, #reasoning_api and #reasoning_origin (Strings, nil for
  # none) from then on: the transcript hands them back (Chat::Transcript).
  # - save_tool_call(call): stores a call's state that has no result yet (ToolCall#to_h:
  #   status, awaiting_approval, ...). The loop calls it with the call `running` right
  #   before Tool#execute, so that a crash leaves it visibly running. Refused
  #   (ArgumentError) for a final call, and over a stored status the call cannot
  #   follow (Tools::StoreTransition: never over a result, never a second run).
  # - add_tool_result(call): the call is final (ToolCall#final?): stores its final
  #   state and appends its result message (role "tool") in one step. The loop calls
  #   it before the next turn is sent. Given again for a call that has its result, it
  #   changes nothing and returns the stored message.
  # - tool_call(id): the stored ToolCall of that id (ToolCall#id), or nil.
  #
  # What the loop relies on to resume (Chat::ToolLoop, from the stored transcript,
  # in #ask and #complete alike): the open calls are those of the last assistant
  # message of #conversation that have no result message after it. A call with a
  # result message never runs again; a call stored `running` was cut mid-execute; a
  # `pending` (or `approved`) one has not run. Results of one assistant message's
  # calls follow it directly, before any other message (the invariant the core checks
  # before every request: ToolTranscriptError).
  class MemoryStore
    def initialize
      @messages = []
      @calls = {} # id -> ToolCall#to_h, frozen: a snapshot, as a database row would be
      @seen = {}  # id -> the status this store last read or wrote for it (Tools::StoreTransition.prior)
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
    def add_user(content, attachments: Message::NONE)
      push(Message.new(role: "user", content: content.frozen? ? content : content.dup.freeze,
                       attachments: attachments.frozen? ? attachments : attachments.dup.freeze))
    end

    # The Turn of +key+ (Idempotency), nil when no user message has it.
    def find_turn(key)
      Idempotency.find(messages, key, &:idempotency_key)
    end

    # Stores a user message under +key+ unless one has it already (then false).
    def add_user_once(content, key, attachments: Message::NONE)
      @lock.synchronize do
        return false if @messages.any? { |m| m.idempotency_key == key }

        message = Message.new(role: "user", content: content.frozen? ? content : content.dup.freeze,
                              attachments: attachments.frozen? ? attachments : attachments.dup.freeze)
        @messages << message.update(idempotency_key: key)
      end
      true
    end

    # The turn +message+ (a user message) opens, for the attempt records of the calls
    # that answer it: made the first time it is asked for.
    # @return [String]
    def turn_id(message)
      @lock.synchronize { message.turn_id || message.update(turn_id: Engine.uuid).turn_id }
    end

    # Claims the turn of +key+ for one call (Idempotency): true when it was free,
    # claimed longer than +stale_after+ seconds ago (the claim's last beat; nil:
    # never), or held by +from+ (a holder the caller found dead). +owner+ names the
    # claim.
    def claim_turn(key, stale_after:, owner: nil, from: nil)
      @lock.synchronize do
        user = claimable(key)
        now = monotonic
        next false unless user

        held = user.status == Idempotency::ANSWERING
        next false if held && (stale_after.nil? || now - user.claimed_at < stale_after) &&
                      (from.nil? || user.claimed_by != from)

        user.update(status: Idempotency::ANSWERING, claimed_at: now, claimed_by: owner)
        true
      end
    end

    # Claims name their owners here (Idempotency).
    def turn_owners?
      true
    end

    # @return [String, nil] who holds the turn of +key+, nil when it is free
    def turn_owner(key)
      @lock.synchronize do
        user = claimable(key)
        user.claimed_by if user&.status == Idempotency::ANSWERING
      end
    end

    # The claim's heartbeat: true while +owner+ holds the turn of +key+.
    def refresh_turn(key, owner:)
      @lock.synchronize do
        user = claimable(key)
        next false unless user&.status == Idempotency::ANSWERING && user.claimed_by == owner

        user.update(claimed_at: monotonic)
        true
      end
    end

    # Frees the turn of +key+ (its call has ended, however it ended), unless another
    # call than +owner+ holds it now.
    def release_turn(key, owner: nil)
      @lock.synchronize do
        user = claimable(key)
        next unless user && (owner.nil? || user.claimed_by == owner)

        user.update(status: "complete", claimed_at: nil, claimed_by: nil)
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

    # The answer of the turn the chat ends on. When its last message is a failed
    # answer, this call answers that turn again (a retried job, a #complete after a
    # failed #ask): it takes that message's place, so that one turn has one assistant
    # message; the failed calls stay in the attempt records.
    def start_assistant(model:, provider:)
      @lock.synchronize do
        last = @messages.last
        if last&.role == "assistant" && last.status == "failed"
          return last.update(status: "streaming", content: +"", model: model, provider: provider,
                             input_tokens: nil, output_tokens: nil, reasoning: nil, reasoning_api: nil,
                             reasoning_origin: nil)
        end

        @messages << Message.new(role: "assistant", content: +"", status: "streaming", model: model,
                                 provider: provider)
        @messages.last
      end
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

    # @param tool_calls [Array<ToolCall>] the calls the answer asked for (see the top)
    # @param reasoning [Reasoning, nil] the answer's reasoning state (see the top)
    def finish_assistant(message, content:, model:, provider:, input_tokens:, output_tokens:, tool_calls: nil,
                         reasoning: nil)
      @lock.lock
      begin
        if reasoning
          message.update(reasoning: reasoning.state, reasoning_api: reasoning.api, reasoning_origin: reasoning.origin)
        end
        if tool_calls && !tool_calls.empty?
          ids = tool_calls.map do |call|
            @calls[call.id] = snapshot(call)
            call.id
          end
          message.update(tool_call_ids: ids.freeze, calls_from: self)
        end
        message.finish(content: content, model: model, provider: provider, input_tokens: input_tokens,
                       output_tokens: output_tokens)
      ensure
        @lock.unlock
      end
    end

    # Stores a call's state before it has a result (running, approval).
    # @param call [ToolCall]
    # @return [ToolCall] the call
    # @raise [ArgumentError] the call is final, not stored, or stored in a status it
    #   cannot follow (it has its result, or another caller runs it)
    def save_tool_call(call)
      Tools::StoreTransition.check_not_final!(call)
      @lock.synchronize { transition(call) }
      call
    end

    # Stores a final call and appends its result message, once per call.
    # @param call [ToolCall] final
    # @return [Message] the result message (role "tool")
    def add_tool_result(call)
      raise ArgumentError, "tool call #{call.id} has no result yet (#{call.status})" unless call.final?

      @lock.synchronize do
        raise ArgumentError, "tool call #{call.id} is not stored" unless @calls.key?(call.id)

        existing = @messages.find { |m| m.role == "tool" && m.tool_call_id == call.id }
        next existing if existing

        transition(call)
        message = Message.new(role: "tool", content: call.content.to_s.dup.freeze)
        message.update(tool_call_id: call.id, is_error: call.error?)
        @messages << message
        message
      end
    end

    # @return [ToolCall, nil] the stored call of +id+, in its stored state
    def tool_call(id)
      @lock.synchronize { stored_call(id) }
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

    # The user message of +key+ (called under @lock).
    def claimable(key)
      @messages.find { |m| m.role == "user" && m.idempotency_key == key }
    end

    def monotonic
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end

    def snapshot(call)
      Tools::Schema.deep_freeze(call.to_h)
    end

    # Writes +call+'s state over the stored one when the rule allows it, as the
    # ActiveRecord store's conditional UPDATE does. Under the lock (the caller's).
    def transition(call)
      stored = @calls[call.id]&.fetch("status")
      allowed = Tools::StoreTransition.prior(call, seen: @seen[call.id])
      Tools::StoreTransition.refuse!(call, stored, allowed) unless allowed.include?(stored)

      @calls[call.id] = snapshot(call)
      @seen[call.id] = call.status.to_s
    end

    # Under the lock (the caller's).
    def stored_call(id)
      row = @calls[id]
      return nil unless row

      @seen[id] = row["status"]
      ToolCall.from_h(row)
    end

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
