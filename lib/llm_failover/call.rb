# frozen_string_literal: true

module LlmFailover
  # One logical call: runs the engine's attempt loop and is its listener. It turns
  # the engine's events into the user's Chunks, the store's writes and the attempt
  # records, then into a Reply or a raised Error.
  #
  # @api private: built by Chat for every #ask / #complete
  class Call
    attr_reader :request_id, :records
    # @return [ResponseCache, nil] read before any request, written after a success
    attr_accessor :response_cache

    # @param targets [Array<Target>] in the order the engine tries them
    # @param messages [Array<Array(String, String)>] role/content pairs, system lifted out
    # Positional: one is built for every call (keyword arguments cost more here than
    # everything the constructor does).
    def initialize(engine, config, store, targets, messages, system, temperature, max_tokens, feature, block)
      @engine = engine
      @config = config
      @store = store
      @targets = targets
      @messages = messages
      @system = system
      @temperature = temperature
      @max_tokens = max_tokens
      @feature = feature
      @block = block
      @usage_log = config.usage_log_emitter
      @request_id = Engine.uuid
      @records = []
      @failures = nil # [Hash of the attempt's error, Target] of every failed attempt, once there is one
      @chunk_index = 0
    end

    # @return [Reply]
    # @raise [Error] the final error, with every attempt attached
    def run
      if @response_cache && (cached = @response_cache.read)
        return serve_cached(cached)
      end

      @message = @store.start_assistant(model: @targets[0].model, provider: @targets[0].name.name)
      settled = false
      begin
        result = @engine.run(engine_request, self)
        settled = true
        result[:ok] ? succeed(result) : fail_with(result)
      ensure
        # The block raised, the thread was killed, a Timeout fired: the partial answer
        # must never be sent again as if it were complete.
        fail_stored_message unless settled
      end
    end

    # Engine listener: a streamed content delta from target index +target+.
    def on_chunk(text, target)
      on_chunks([text], target)
    end

    # Engine listener: the deltas of one network read from target index +target+, in
    # order (one method call from the engine instead of one per delta). Each delta is
    # stored before the block sees it, so the store always holds what the user saw.
    def on_chunks(texts, target)
      block = @block
      source = chunk_source(target) if block
      store = @store
      message = @message
      i = 0
      n = texts.size
      while i < n # not #each: one block call less per delta
        text = texts[i]
        store.append_assistant(message, text)
        index = @chunk_index
        @chunk_index = index + 1
        block&.call(Chunk.build(text, index, source))
        i += 1
      end
      nil
    end

    # Engine listener: the failover target is about to answer, after an earlier
    # attempt streamed content. The stored partial goes before the backup's first chunk.
    def on_reset
      @chunk_index = 0
      current = @targets.fetch(1) { @targets[0] }
      @store.reset_assistant(@message, model: current.model, provider: current.name.name)
      @block&.call(Chunk.new(content: "", model: current.model, provider: current.name, index: 0,
                             request_id: @request_id, reset: true))
      nil
    end

    # Engine listener: one HTTP attempt finished (the engine calls #on_attempt_values,
    # the same without the Hash).
    def on_attempt(attempt)
      on_attempt_values(attempt[:attempt], attempt[:target], attempt[:success], attempt[:error_class],
                        attempt[:error_message], attempt[:http_status], attempt[:failover_eligible],
                        attempt[:retry_after], attempt[:latency_ms], attempt[:first_token_ms],
                        attempt[:input_tokens], attempt[:output_tokens], attempt[:started_at],
                        attempt[:provider_request_id])
    end

    # Engine listener: one HTTP attempt finished, its fields in the order of the
    # engine's attempt Hash.
    def on_attempt_values(attempt, target_index, success, error_class, error_message, http_status, failover_eligible,
                          retry_after, latency_ms, first_token_ms, input_tokens, output_tokens, started_at,
                          provider_request_id)
      target = @targets[target_index] || @targets[0]
      record = AttemptRecord.build(
        @request_id, attempt, target.provider.name, target.model, @feature, success, error_class,
        success ? nil : redact(error_message), http_status, failover_eligible, retry_after, latency_ms,
        first_token_ms, input_tokens, output_tokens, started_at, provider_request_id
      )
      @records << record
      unless success
        failure = { target: target_index, error_class: error_class, error_message: error_message,
                    http_status: http_status, failover_eligible: failover_eligible, retry_after: retry_after,
                    provider_request_id: provider_request_id }
        (@failures ||= []) << [failure, target]
      end
      @usage_log.emit(record)
      nil
    end

    private

    # What every Chunk from target index +target+ shares, made once per target.
    def chunk_source(target)
      @chunk_sources ||= []
      @chunk_sources[target] ||= begin
        t = @targets.fetch(target) { @targets[0] }
        Chunk::Source.new(t.model, t.provider.name, @request_id, false).freeze
      end
    end

    def engine_request
      { targets: @targets.map(&:engine), messages: @messages, system: @system,
        temperature: @temperature&.to_f, max_tokens: @max_tokens, stream: !@block.nil?,
        policy: @config.engine_policy }
    end

    def succeed(result)
      target = @targets.fetch(result[:target])
      name = target.provider.name
      content = result[:content]
      model = result[:model]
      input_tokens = result[:input_tokens]
      output_tokens = result[:output_tokens]
      @store.finish_assistant(@message, content: content, model: model, provider: name.name,
                                        input_tokens: input_tokens, output_tokens: output_tokens)
      @response_cache&.write(target, content: content, model: model, finish_reason: result[:finish_reason],
                                     provider_request_id: result[:provider_request_id])
      failover = result[:target].positive?
      reply = Reply.build(content, model, name, input_tokens, output_tokens, @request_id, @records.freeze, failover,
                          result[:finish_reason], result[:provider_request_id], !@block.nil?, @chunk_index)
      log(:info, "answered by #{target.label} after failing over from #{@targets[0].label}") if failover
      reply
    end

    # A cache hit: no request, no provider, no circuit. The answer goes through the
    # store and the block as a streamed one would (a block gets it in word-sized
    # chunks), and one attempt record says it was served from the cache.
    def serve_cached(cached)
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      started_at = Time.now
      provider = cached.provider
      @message = @store.start_assistant(model: cached.model, provider: provider.name)
      settled = false
      begin
        source = Chunk::Source.new(cached.model, provider, @request_id, false).freeze if @block
        ResponseCache.chunks(cached.content).each do |text|
          @store.append_assistant(@message, text)
          index = @chunk_index
          @chunk_index = index + 1
          @block&.call(Chunk.build(text, index, source))
        end
        @store.finish_assistant(@message, content: cached.content, model: cached.model, provider: provider.name,
                                          input_tokens: 0, output_tokens: 0)
        settled = true
      ensure
        fail_stored_message unless settled
      end
      latency_ms = (Process.clock_gettime(Process::CLOCK_MONOTONIC) - started) * 1000.0
      record = AttemptRecord.cache_hit(@request_id, provider, cached.requested_model || cached.model, @feature,
                                       latency_ms, started_at, cached.provider_request_id)
      @records << record
      @usage_log.emit(record)
      Reply.build(cached.content, cached.model, provider, 0, 0, @request_id, @records.freeze, false,
                  cached.finish_reason, cached.provider_request_id, !@block.nil?, @chunk_index, true)
    end

    def fail_with(result)
      target = @targets.fetch(result[:target]) { @targets[0] }
      fail_stored_message(target)
      error = build_error(result[:error_class], result[:message], target,
                          status: result[:status], body: redact(result[:body]), retry_after: result[:retry_after],
                          retryable: result[:retryable], partial_content: result[:partial_content],
                          provider_request_id: result[:provider_request_id], error_type: result[:error_type],
                          error_code: result[:error_code])
      log(:warn, "failed on #{target.label}: #{error.class}: #{error.message}")
      alert(error) if chain_exhausted?
      cause = earlier_target_error(result[:target])
      cause ? raise(error, cause: cause) : raise(error)
    end

    def build_error(klass, message, target, **details)
      klass = Error unless klass.is_a?(Class) && klass <= Error
      klass.new(redact(message), provider: target.name, model: target.model, request_id: @request_id,
                                 attempts: @records.dup.freeze, **details)
    end

    # The last error of the target tried before the one whose error is final, so that
    # `rescue => e; e.cause` shows why the primary was left.
    def earlier_target_error(final_target)
      attempt, target = @failures&.reverse&.find { |a, _| a[:target] < final_target }
      return nil unless attempt

      build_error(attempt[:error_class], attempt[:error_message], target,
                  status: attempt[:http_status], retry_after: attempt[:retry_after],
                  provider_request_id: attempt[:provider_request_id])
    end

    # Every target tried ended on an error a healthy backup could have fixed.
    def chain_exhausted?
      return false if @failures.nil? || @records.any?(&:success?)

      last_failure = {}
      @failures.each { |attempt, _| last_failure[attempt[:target]] = attempt }
      last_failure.each_value.all? { |attempt| attempt[:failover_eligible] }
    end

    def alert(error)
      LlmFailover.alerts.notify(callback: @config.on_chain_exhausted, window: @config.alert_window,
                                feature: @feature, error_class: error.class.name, request_id: @request_id,
                                attempts: @records.dup.freeze, logger: @config.logger)
    end

    # target: the one whose error was final; nil when the call was torn down.
    def fail_stored_message(target = nil)
      return if @failed

      @failed = true
      return unless @message

      if target
        @store.fail_assistant(@message, model: target.model, provider: target.name.name)
      else
        @store.fail_assistant(@message)
      end
    end

    # The engine promises messages without keys; a provider's body may still quote
    # one back, and that must not reach an exception or a record either.
    def redact(text)
      return text unless text.is_a?(String)

      @targets.each do |t|
        secrets = [t.provider.api_key] + t.provider.headers.values.select { |v| v.length >= 8 }
        secrets.each { |s| text = text.gsub(s, ProviderConfig::REDACTED) if text.include?(s) }
      end
      text
    end

    def log(level, message)
      logger = @config.logger
      return unless logger

      logger.public_send(level, "llm_failover: request_id=#{@request_id} feature=#{@feature.inspect} #{message}")
    rescue StandardError
      nil
    end
  end
end
