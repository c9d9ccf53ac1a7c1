# frozen_string_literal: true

require_relative "../attachments/selection"
require_relative "../errors"
require_relative "../money/call_ceiling"
require_relative "../quota/quota"
require_relative "../records/tracing"
require_relative "answer_format"
require_relative "call"
require_relative "cancellation"
require_relative "chat_attachments"
require_relative "chat_caches"
require_relative "chat_formats"
require_relative "chat_options"
require_relative "chat_targets"
require_relative "chat_tools"
require_relative "idempotency"
require_relative "memory_store"
require_relative "text"
require_relative "transcript"
require_relative "target"
require_relative "../safe_inspect"

module LlmFailover
  # A conversation with a primary target and an optional backup; every #ask /
  # #complete is one call through the engine's attempt loop. Messages live in a store
  # (MemoryStore's protocol; optionally #turn_id(message) names a turn in the records).
  # Its parts by job are the chat_*.rb files beside it.
  class Chat
    include SafeInspect

    include Caches
    include ChatAttachments
    include ChatTools
    include Formats
    include Targets

    STORE_METHODS = Options::STORE_METHODS
    TOOL_STORE_METHODS = Options::TOOL_STORE_METHODS

    KEEP = Object.new.freeze # "argument not given" for with_model's backup options
    private_constant :KEEP

    # @return [AnswerFormat, nil] JSON mode or a schema; nil for text
    attr_reader :answer_format
    attr_reader :model, :provider, :backup_model, :backup_provider, :config

    # Prefer LlmFailover.chat, which applies the global configuration.
    # @param config [Configuration] this chat's own copy
    # @param store [Object, nil] nil: a new MemoryStore
    # @param options [Hash] quota:, quota_used:, enforce_quota:, feature:, temperature:,
    #   max_tokens:, cache:, cache_namespace:, scrub:, quota_key:, quota_window:, quota_by:,
    #   cancel_check: (see Options)
    def initialize(config:, model:, provider:, backup_model: nil, backup_provider: nil, store: nil, engine: nil,
                   **options)
      @config = config
      @engine = engine
      set_primary(model, provider)
      set_backup(backup_model, backup_provider)
      @store = store.nil? ? MemoryStore.new : Options.store(store)
      # Most chats are given no options: they share the defaults, checked once.
      @options = options.empty? ? Options::DEFAULTS : Options.new(config: config, **options)
      check_priced_quota
      @running = []
      @running_lock = Mutex.new
      @answer_format = nil
    end

    # @return [Object] the message store (a MemoryStore unless one was given)
    def store = @store
    # @return [String, nil]
    def feature = @options.feature
    # @return [Integer, nil] the primary's call limit (nil or 0: unlimited)
    def quota = @options.quota
    # @return [Numeric, nil]
    def temperature = @options.temperature
    # @return [Integer, nil]
    def max_tokens = @options.max_tokens
    # @return [String, nil]
    def cache_namespace = @options.cache_namespace

    # Stores +text+ as the user's message and answers it. With a block the answer
    # streams: every Chunk, and a reset Chunk before a backup starts over.
    # @param text [String] sent as UTF-8; bytes that are not text raise ArgumentError
    #   before anything is stored
    # @param with [Object, Array] images or PDFs (paths, URLs, IOs, blobs, Hashes), checked
    #   before anything is stored (see Attachment)
    # @param cache [Boolean] false: this call neither reads nor writes the response cache
    # @param idempotency_key [String, nil] the prompt is stored once per key, and a
    #   complete answer returned as stored (see Idempotency)
    # @param json [Boolean] true: one JSON object (reply.json); false: text despite JSON mode
    # @return [Reply]
    # @raise [Error] the provider call failed; the user message stays stored
    def ask(text, with: nil, temperature: KEEP, max_tokens: KEEP, cache: KEEP, idempotency_key: nil, json: KEEP,
            &block)
      text = Text.given(text, "the prompt") # UTF-8, converted if need be
      attachments = with.nil? ? MemoryStore::Message::NONE : attachments_for(with)

      # Validated before anything is stored.
      temperature = temperature.equal?(KEEP) ? @options.temperature : Options.temperature(temperature)
      max_tokens = max_tokens.equal?(KEEP) ? @options.max_tokens : Options.max_tokens(max_tokens)
      cache = cache.equal?(KEEP) ? @options.cache : Options.cache(cache)
      format = format_for(json)
      check_schema_with_tools(format)
      if idempotency_key.nil?
        attachments.empty? ? @store.add_user(text) : @store.add_user(text, attachments: attachments)
        return answer(temperature, max_tokens, block, cache, format)
      end

      Idempotency.ask(@store, text, idempotency_key, format, wait: @config.idempotency_wait,
                                                                     stale_after: @config.longest_call,
                                                                     attachments: attachments) do
        answer(temperature, max_tokens, block, cache, format)
      end
    end

    # Answers from the stored messages without storing a user message: after a
    # failed #ask this answers the same turn.
    # @return [Reply]
    def complete(temperature: KEEP, max_tokens: KEEP, cache: KEEP, json: KEEP, &block)
      format = format_for(json)
      check_schema_with_tools(format)
      answer(temperature.equal?(KEEP) ? @options.temperature : Options.temperature(temperature),
             max_tokens.equal?(KEEP) ? @options.max_tokens : Options.max_tokens(max_tokens), block,
             cache.equal?(KEEP) ? @options.cache : Options.cache(cache), format)
    end

    # Stops this chat's running calls, from any thread: #ask returns a Reply with
    # cancelled? true and the partial text, stored and recorded as cancelled; nothing
    # fails over.
    # @return [self]
    def cancel!
      @running_lock.synchronize { @running.each(&:cancel!) }
      self
    end

    # Sets the system instructions; replace: false adds another system message.
    # @return [self]
    # @raise [ArgumentError] not text (see #ask), before anything is stored
    def with_instructions(text, replace: true)
      text = Text.given(text, "the instructions")
      replace ? @store.replace_system(text) : @store.add_system(text)
      self
    end

    # @return [self]
    def with_temperature(temperature)
      @options = @options.with(temperature: temperature)
      self
    end

    # @return [self]
    def with_max_tokens(max_tokens)
      @options = @options.with(max_tokens: max_tokens)
      self
    end

    # @return [Array] the stored messages, in order
    def messages
      @store.messages
    end

    def inspect
      backup = backup? ? " backup=#{Target.label(@backup_provider, @backup_model)}" : ""
      "#<#{self.class.name} #{Target.label(@provider, @model)}#{backup} feature=#{@options.feature.inspect} " \
        "quota=#{@options.quota.inspect} store=#{@store.class.name}>"
    end

    private

    def answer(temperature, max_tokens, block, cache, format)
      return answer_with_tools(temperature, max_tokens, block, cache, format) if tools?

      answer_turn(temperature, max_tokens, block, cache, format)
    end

    # One call; with tools, one model turn of the ToolLoop (+turn+: its request id,
    # scrubbing, tool fields, and whether an earlier turn failed over to the backup).
    def answer_turn(temperature, max_tokens, block, cache, format, turn = nil)
      # System messages stay where they are (placing them is the wire layer's rule);
      # without tools, earlier tool calls go as text (Anthropic refuses tool_use then).
      renew_targets
      conversation = turn&.conversation || @store.conversation
      messages = Transcript.engine_messages(conversation, tools: tools?)
      # One attachment list per message sent (as text, tool results fold into the assistant's).
      sent = tools? ? conversation : conversation.reject { |m| m.role.to_s == "tool" }
      attachments = sent.map { |m| stored_attachments(m) }
      unless messages.any? { |m| m[0] != "system" }
        raise ArgumentError, "nothing to answer: the chat holds no user or assistant message"
      end

      # From here on: what leaves the process and what the cache key hashes.
      scrubbing = turn ? turn.scrubbing : scrub_session
      Transcript.scrub!(messages, scrubbing) if scrubbing
      reservation = @options.quota_reservation(@config.state_store, target: @primary_target, pricing: @config.pricing)
      running = false
      begin
        pooled = engine_targets.any?(&:pool?)
        counted = reservation && @options.quota_by != :calls
        ceiling = (call_ceiling(messages, attachments, turn, format, max_tokens) if counted || pooled)
        backup_first = backup_first?(reservation, ceiling) || (turn&.on_backup && backup?)
        # The core leaves out a target that cannot take the attachments.
        call = Call.new(engine: @engine || LlmFailover.engine, config: @config, store: @store,
                        targets: backup_first ? [@backup_target].freeze : engine_targets, messages: messages,
                        temperature: temperature, max_tokens: max_tokens, feature: @options.feature, block: block,
                        request_id: turn&.request_id, turn_id: turn_id(conversation))
        call.answer_format = format
        call.tokens = ceiling.tokens(nil) if pooled # what a pool host's headroom is weighed against
        call.attachments = Attachment::Selection.engine_list(attachments)
        turn&.prepare(call)
        if cache_tiers?(cache)
          request = [messages, temperature&.to_f, max_tokens, format&.cache_key] # what the cache key hashes
          # Attachments by content digest; a chat without any keeps its keys as they were.
          request << attachments.map { |list| list.map(&:digest) } if attachments.any?(&:any?)
          call.response_cache = response_cache(cache, backup_first: backup_first, request: request,
                                                      max_tokens: max_tokens)
          call.semantic_cache = semantic_lookup(cache, backup_first: backup_first, messages: messages,
                                                       request: request.drop(1), format: format)
        end
        call.scrubbing = scrubbing
        call.quota_reservation = reservation
        cancellation = new_cancellation
        call.cancellation = cancellation
        @running_lock.synchronize { @running << cancellation }
        running = true
        # settles the reservation, however it ends
        Tracing.trace(chat: self, messages: messages, temperature: temperature, max_tokens: max_tokens) { call.run }
      ensure
        # Stopped (or failed) before the call ran: no request was sent.
        reservation&.release unless running
        @running_lock.synchronize { @running.delete(cancellation) } if cancellation
      end
    rescue QuotaExceededError => e
      raise quota_later(e) # raised from here: a RetryLater's cause is the QuotaExceededError
    end

    # The most the call's request can cost, what a shared quota by :tokens or :usd holds
    # and a pool's hosts' headroom is weighed against.
    def call_ceiling(messages, attachments, turn, format, max_tokens)
      tools = turn&.fields&.fetch(:tools, nil) || []
      texts = tools.flatten.grep(String) + (format&.engine_fields || {}).values.grep(String)
      CallCeiling.new(messages: messages, attachments: Attachment::Selection.engine_list(attachments), texts: texts,
                      tools: tools.size, max_tokens: max_tokens)
    end

    # What Chat#cancel! stops a call (or a tool loop) through. The poll interval and the
    # logger serve a cancel check only, which most chats have not.
    def new_cancellation
      check = @options.cancel_check
      return Cancellation.new unless check

      Cancellation.new(check: check, interval: @config.cancel_poll_interval, logger: @config.logger)
    end

    # The turn a call answers: the last user message, as the store names it
    # (#turn_id); nil makes the call a turn of its own.
    # @return [String, nil]
    def turn_id(conversation)
      store = @store
      return nil unless store.respond_to?(:turn_id)

      index = conversation.rindex { |m| m.role.to_s == "user" }
      index && store.turn_id(conversation[index])
    end
  end
end
