# frozen_string_literal: true

require_relative "../errors"
require_relative "../cache/response_cache"
require_relative "../quota/model_picker"
require_relative "../quota/quota"
require_relative "../quota/quota_reservation"
require_relative "../quota/quota_window"
require_relative "../records/tracing"
require_relative "../scrubber/scrubber"
require_relative "answer_format"
require_relative "call"
require_relative "cancellation"
require_relative "idempotency"
require_relative "memory_store"
require_relative "model_name"
require_relative "text"

module LlmFailover
  # A conversation with a primary target and an optional backup. Messages live in a
  # store (MemoryStore unless another is given); every #ask / #complete is one logical
  # call through the engine's attempt loop.
  #
  # A store is any object with #messages, #conversation, #add_user, #add_system,
  # #replace_system, #start_assistant, #append_assistant, #reset_assistant,
  # #finish_assistant and #fail_assistant (see MemoryStore).
  class Chat
    STORE_METHODS = %i[messages conversation add_user add_system replace_system start_assistant
                       append_assistant reset_assistant finish_assistant fail_assistant].freeze

    KEEP = Object.new.freeze # "argument not given" for with_model's backup options
    QUOTA_BY = %i[calls tokens].freeze
    private_constant :KEEP, :QUOTA_BY

    # @return [AnswerFormat, nil] JSON mode or a schema; nil for text
    attr_reader :answer_format
    attr_reader :model, :provider, :backup_model, :backup_provider, :feature, :store, :config,
                :quota, :temperature, :max_tokens, :cache_namespace

    # Prefer LlmFailover.chat, which applies the global configuration.
    # @param config [Configuration] this chat's own copy
    def initialize(config:, model:, provider:, backup_model: nil, backup_provider: nil, quota: nil,
                   quota_used: 0, enforce_quota: false, feature: nil, store: nil, temperature: nil,
                   max_tokens: nil, engine: nil, cache: true, cache_namespace: nil, scrub: true, quota_key: nil,
                   quota_window: :month, quota_by: :calls,
                   cancel_check: nil)
      @config = config
      @engine = engine
      @store = store.nil? ? MemoryStore.new : validate_store(store)
      set_primary(model, provider)
      set_backup(backup_model, backup_provider)
      @quota = validate_quota(quota)
      @quota_used = validate_quota_used(quota_used)
      unless enforce_quota == true || enforce_quota == false
        raise ConfigurationError, "enforce_quota must be true or false, got #{enforce_quota.inspect}"
      end

      @enforce_quota = enforce_quota
      @feature = validate_feature(feature)
      @temperature = validate_temperature(temperature)
      @max_tokens = validate_max_tokens(max_tokens)
      @cache = validate_cache(cache)
      @cache_namespace = validate_cache_namespace(cache_namespace)
      raise ConfigurationError, "scrub must be true or false, got #{scrub.inspect}" unless scrub == true || scrub == false

      @scrub = scrub
      set_shared_quota(quota_key, quota_window, quota_by, quota_used)
      unless cancel_check.nil? || cancel_check.respond_to?(:call) || cancel_check.respond_to?(:watch)
        raise ConfigurationError, "cancel_check must respond to #call or #watch, got #{cancel_check.inspect}"
      end

      @cancel_check = cancel_check
      @running = []
      @running_lock = Mutex.new
      @answer_format = nil
    end

    # Stores +text+ as the user's message (once, whatever follows) and answers it.
    # Text in another encoding is stored and sent as UTF-8; bytes that are not text
    # raise ArgumentError (naming their byte offset) before anything is stored.
    # With a block the answer is streamed: the block gets every Chunk, and a reset
    # Chunk (reset? true) before a backup starts over.
    # cache: false answers this call without reading or writing the response cache.
    # idempotency_key: stores the prompt once per key (a job's id): asked again, a turn
    # without a complete answer is answered again and a complete answer is returned
    # as it was stored, without a request (the block is not called; Reply#attempts is
    # empty). See Idempotency.
    # @return [Reply]
    # @raise [Error] the provider call failed; the user message stays stored
    # json: true asks for one JSON object (reply.json) for this call, json: false for
    # text even when the chat has JSON mode or a schema.
    def ask(text, temperature: KEEP, max_tokens: KEEP, cache: KEEP, idempotency_key: nil, json: KEEP, &block)
      text = Text.given(text, "the prompt") # UTF-8, converted if need be

      # Validated before anything is stored.
      temperature = temperature.equal?(KEEP) ? @temperature : validate_temperature(temperature)
      max_tokens = max_tokens.equal?(KEEP) ? @max_tokens : validate_max_tokens(max_tokens)
      cache = cache.equal?(KEEP) ? @cache : validate_cache(cache)
      format = format_for(json)
      if idempotency_key.nil?
        @store.add_user(text)
      else
        stored = Idempotency.store_prompt(@store, text, idempotency_key, format)
        return stored if stored
      end
      answer(temperature, max_tokens, block, cache, format)
    end

    # Answers from the stored messages without storing a user message: after a
    # failed #ask this answers the same turn.
    # @return [Reply]
    def complete(temperature: KEEP, max_tokens: KEEP, cache: KEEP, json: KEEP, &block)
      answer(temperature.equal?(KEEP) ? @temperature : validate_temperature(temperature),
             max_tokens.equal?(KEEP) ? @max_tokens : validate_max_tokens(max_tokens), block,
             cache.equal?(KEEP) ? @cache : validate_cache(cache), format_for(json))
    end

    # Every answer is one JSON object (reply.json): OpenAI-compatible APIs get
    # response_format json_object, and both protocols an instruction to answer so.
    # An answer that is not one (a Markdown code fence around it is tolerated) is a
    # failed attempt, retried and failed over like any invalid response.
    # @return [self]
    def with_json_mode(enabled = true)
      @answer_format = enabled ? AnswerFormat.json_mode : nil
      self
    end

    # Every answer satisfies +schema+ (reply.json is the object): OpenAI-compatible
    # APIs get a strict json_schema response format, Anthropic a forced call of a tool
    # named +name+ whose input is the answer. nil goes back to text.
    # @param schema [Hash, nil] a JSON Schema with an object at its root, written for
    #   OpenAI's strict mode (every property required, additionalProperties false)
    # @return [self]
    # @raise [ArgumentError] a schema strict mode would refuse, a bad name
    def with_schema(schema, name: "answer")
      @answer_format = schema.nil? ? nil : AnswerFormat.schema(schema, name: name)
      self
    end

    # Stops the calls of this chat running now, from any thread: the streaming #ask
    # returns a Reply with cancelled? true and the partial text, the stored answer is
    # "cancelled", the attempt is recorded as cancelled, and nothing fails over. A
    # provider that sends nothing is interrupted too. A chat record's #cancel! does the
    # same from another process.
    # @return [self]
    def cancel!
      @running_lock.synchronize { @running.each(&:cancel!) }
      self
    end

    # Switches the primary target; the messages stay. The backup is kept unless
    # backup_model: / backup_provider: are given (nil drops it).
    # @return [self]
    def with_model(model, provider: @provider, backup_model: KEEP, backup_provider: KEEP)
      set_primary(model, provider)
      set_backup(backup_model.equal?(KEEP) ? @backup_model : backup_model,
                 backup_provider.equal?(KEEP) ? @backup_provider : backup_provider)
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
      @temperature = validate_temperature(temperature)
      self
    end

    # @return [self]
    def with_max_tokens(max_tokens)
      @max_tokens = validate_max_tokens(max_tokens)
      self
    end

    # @return [Array] the stored messages, in order
    def messages
      @store.messages
    end

    def backup?
      !@backup_model.nil? && !@backup_provider.nil?
    end

    def inspect
      backup = backup? ? " backup=#{@backup_provider}/#{@backup_model}" : ""
      "#<#{self.class.name} #{@provider}/#{@model}#{backup} feature=#{@feature.inspect} " \
        "quota=#{@quota.inspect} store=#{@store.class.name}>"
    end
    alias to_s inspect

    def pretty_print(pp)
      pp.text(inspect)
    end

    private

    # json: given to one call: true keeps the chat's schema or asks for JSON mode,
    # false asks for text.
    def format_for(json)
      return @answer_format if json.equal?(KEEP)
      raise ArgumentError, "json must be true or false, got #{json.inspect}" unless json == true || json == false
      return nil unless json

      @answer_format || AnswerFormat.json_mode
    end

    def answer(temperature, max_tokens, block, cache, format)
      # The conversation as stored, system messages where they are: where each protocol
      # wants them (in the array for OpenAI, lifted and joined for Anthropic) is the
      # wire layer's rule, and one call may go out in both protocols.
      messages = @store.conversation.map { |m| [m.role.to_s, m.content.to_s] }
      unless messages.any? { |role, _| role != "system" }
        raise ArgumentError, "nothing to answer: the chat holds no user or assistant message"
      end

      # From here on the messages are what leaves the process, and what the cache key
      # hashes: scrubbed when a scrubber is configured.
      scrubbing = scrub_session
      messages.each { |m| m[1] = scrubbing.scrub(m[1]) } if scrubbing
      reservation = quota_reservation
      quota = reservation ? reservation.reserve : quota_figures
      call = Call.new(engine: @engine || LlmFailover.engine, config: @config, store: @store, targets: engine_targets,
                      messages: messages, temperature: temperature, max_tokens: max_tokens,
                      feature: @feature, quota: quota, block: block)
      call.answer_format = format
      call.response_cache = response_cache(cache, quota, messages, temperature, max_tokens, format)
      call.scrubbing = scrubbing
      call.quota_reservation = reservation
      cancellation = Cancellation.new(check: @cancel_check, interval: @config.cancel_poll_interval)
      call.cancellation = cancellation
      @running_lock.synchronize { @running << cancellation }
      begin
        Tracing.trace(chat: self, messages: messages, temperature: temperature, max_tokens: max_tokens) { call.run }
      ensure
        @running_lock.synchronize { @running.delete(cancellation) }
      end
    end

    # @return [Scrubber::Session, nil] nil when no scrubber is configured or scrub: false
    def scrub_session
      scrubber = @config.scrubber
      scrubber && @scrub != false ? Scrubber::Session.new(scrubber) : nil
    end

    # The response cache for one call, nil when there is none or it is bypassed. The
    # key is what was asked: the primary's entry is read, and also the backup's when
    # the quota sends the call to the backup first (the core's pick, through
    # ModelPicker). An answer is written under the key of the target that produced it
    # (see Call), so a backup's answer never serves a later call to the primary, which
    # may be healthy again by then.
    def response_cache(cache, quota, messages, temperature, max_tokens, format)
      store = cache == true ? @config.cache : cache
      return nil unless store

      lookup = backup_first?(quota) ? [@primary_target, @backup_target] : [@primary_target]
      ResponseCache.new(store: store, ttl: @config.cache_ttl, logger: @config.logger, namespace: @cache_namespace,
                        request: [messages, temperature&.to_f, max_tokens, format&.cache_key], lookup: lookup,
                        max_tokens: max_tokens)
    end

    def backup_first?(quota)
      return false unless quota && @backup_target

      picker = ModelPicker.new(model: @model, provider: @provider, backup_model: @backup_model,
                               backup_provider: @backup_provider,
                               quota: Quota.new(limit: quota[:limit], used: quota[:used]))
      picker.pick == [@backup_model, @backup_provider]
    end

    # The primary, then the backup if there is one; the engine's attempt loop picks
    # where to start from the quota.
    def engine_targets
      @targets ||= (@backup_target ? [@primary_target, @backup_target] : [@primary_target]).freeze
    end

    # What the engine picks from, read just before the call. Without a limit (nil or
    # 0, which means unlimited) there is nothing to pick: quota_used is not even asked.
    def quota_figures
      return nil if @quota.nil? || @quota.zero?

      quota = Quota.new(limit: @quota, used: quota_used_now) # its own checks of the figures
      { limit: quota.limit, used: quota.used, enforce: @enforce_quota }
    end

    # A shared quota (quota_key:) is counted in the state store: one reservation per
    # call. Without a limit (nil or 0) nothing is reserved.
    def quota_reservation
      return nil if @quota_key.nil? || @quota.nil? || @quota.zero?

      QuotaReservation.new(store: @config.state_store, key: @quota_key, limit: @quota, window: @quota_window,
                           by: @quota_by, enforce: @enforce_quota)
    end

    def set_shared_quota(key, window, by, used)
      @quota_window = QuotaWindow.for(window)
      raise ConfigurationError, "quota_by must be :calls or :tokens, got #{by.inspect}" unless QUOTA_BY.include?(by)

      @quota_by = by
      @quota_key = nil
      return if key.nil?
      unless (key.is_a?(String) || key.is_a?(Symbol)) && !key.to_s.empty?
        raise ConfigurationError, "quota_key must be a non-empty String, got #{key.inspect}"
      end
      raise ConfigurationError, "quota_used: and quota_key: exclude each other (the state store counts)" unless used == 0
      unless @config.state_store.respond_to?(:reserve_quota)
        raise ConfigurationError, "state_store #{@config.state_store.class} keeps no quota counters (reserve_quota)"
      end

      @quota_key = key.to_s.dup.freeze
    end

    def quota_used_now
      used = @quota_used.respond_to?(:call) ? @quota_used.call : @quota_used
      unless used.is_a?(Numeric) && used.real?
        raise ConfigurationError, "quota_used must give a number, got #{used.inspect}"
      end

      used
    end

    def set_primary(model, provider)
      model = ModelName.check(model, "model")
      raise ConfigurationError, "provider: is required (configured: #{configured_names})" if provider.nil?

      provider_config = @config.provider_config(provider)
      @provider = provider_config.name
      @model = model
      # The targets are resolved here, once: a chat's configuration is its own copy.
      @primary_target = provider_config.target(model)
      @targets = nil
    end

    # Half a backup counts as none (DESIGN), but is almost always a mistake: say so.
    def set_backup(model, provider)
      @targets = nil
      if model.nil? && provider.nil? # most chats
        @backup_model = @backup_provider = @backup_target = nil
        return
      end

      model = ModelName.check(model, "backup_model") unless model.nil?
      provider_config = @config.provider_config(provider) unless provider.nil?
      provider = provider_config&.name
      if model.nil? ^ provider.nil?
        warn_config("#{model ? 'backup_model' : 'backup_provider'} given without the other: this chat has no backup")
      end
      @backup_model = model
      @backup_provider = provider
      @backup_target = model && provider ? provider_config.target(model) : nil
    end

    def configured_names
      names = @config.providers.keys
      names.empty? ? "none" : names.map(&:inspect).join(", ")
    end

    def validate_store(store)
      missing = STORE_METHODS.reject { |m| store.respond_to?(m) }
      return store if missing.empty?

      raise ConfigurationError, "store #{store.class} lacks #{missing.map { |m| "##{m}" }.join(', ')}"
    end

    def validate_quota(quota)
      return nil if quota.nil?
      unless quota.is_a?(Integer) && !quota.negative?
        raise ConfigurationError, "quota must be a non-negative Integer or nil (0 means unlimited), got #{quota.inspect}"
      end

      quota
    end

    def validate_quota_used(used)
      return used if used.is_a?(Numeric) && used.real? && !used.negative?
      return used if used.respond_to?(:call)

      raise ConfigurationError, "quota_used must be a non-negative number or respond to #call, got #{used.inspect}"
    end

    def validate_feature(feature)
      return nil if feature.nil?
      unless feature.is_a?(String) || feature.is_a?(Symbol)
        raise ConfigurationError, "feature must be a String, got #{feature.class}"
      end

      feature.to_s.dup.freeze
    end

    # true: the configured cache; false: none; or a store for this chat alone.
    def validate_cache(value)
      return value if value == true || value == false
      return value if value.respond_to?(:read) && value.respond_to?(:write)

      raise ConfigurationError, "cache must be true, false or a store with #read and #write, got #{value.inspect}"
    end

    def validate_cache_namespace(value)
      return nil if value.nil?
      unless (value.is_a?(String) || value.is_a?(Symbol)) && !value.to_s.empty?
        raise ConfigurationError, "cache_namespace must be a non-empty String, got #{value.inspect}"
      end

      value.to_s.dup.freeze
    end

    def validate_temperature(value)
      return nil if value.nil?
      unless value.is_a?(Numeric) && value.real? && value.to_f.finite? && !value.negative?
        raise ArgumentError, "temperature must be a non-negative number, got #{value.inspect}"
      end

      value
    end

    def validate_max_tokens(value)
      return nil if value.nil?
      raise ArgumentError, "max_tokens must be a positive Integer, got #{value.inspect}" unless value.is_a?(Integer) && value.positive?

      value
    end

    def warn_config(message)
      message = "llm_failover: #{message}"
      @config.logger ? @config.logger.warn(message) : Kernel.warn(message)
    end
  end
end
