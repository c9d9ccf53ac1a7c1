# frozen_string_literal: true

require_relative "../errors"
require "llm_failover/llm_failover" # the compiled extension
require_relative "../cache/response_cache"
require_relative "../health/circuit_breaker"
require_relative "../records/attempt_record"
require_relative "cancellation"
require_relative "chunk"
require_relative "reply"
require_relative "target"

module LlmFailover
  # One logical call: runs the engine's attempt loop and is its listener. It turns
  # the engine's events into the user's Chunks, the store's writes and the attempt
  # records, then into a Reply or a raised Error. As the listener it also reads its
  # Cancellation's flag after every callback (Chat#cancel!) and keeps what a
  # cancelled result needs: one object and one dispatch fewer per callback than a
  # wrapper listener (a streamed chunk 11.3k to 9.6k instructions, bench/README.md).
  #
  # @api private: built by Chat for every #ask / #complete
  class Call
    attr_reader :request_id, :records
    # @return [ResponseCache, nil] read before any request, written after a success
    attr_accessor :response_cache
    # @return [Scrubber::Session, nil] the placeholders of the request, restored in the answer
    attr_reader :scrubbing
    # @return [Cancellation] what Chat#cancel! stops this call through
    attr_writer :cancellation

    def scrubbing=(session)
      @scrubbing = session
      # A streamed answer may split a placeholder across deltas.
      @restorer = session&.restoring? && @block ? session.stream : nil
    end
    # @return [AnswerFormat, nil] JSON mode or a schema; nil for text
    attr_accessor :answer_format

    # @return [QuotaReservation, nil] the unit a shared quota holds for this call
    attr_accessor :quota_reservation

    # @param targets [Array<Target>] the primary, then the backup if there is one
    # @param messages [Array<Array(String, String)>] role/content pairs, system messages included
    # @param quota [Hash, nil] the primary's { limit:, used:, enforce: }: the engine picks
    #   the first target from it
    def initialize(engine:, config:, store:, targets:, messages:, temperature:, max_tokens:, feature:,
                   quota:, block:)
      @engine = engine
      @config = config
      @store = store
      @targets = targets
      @messages = messages
      @temperature = temperature
      @max_tokens = max_tokens
      @feature = feature
      @quota = quota
      @block = block
      @usage_log = config.usage_log_emitter
      @request_id = Engine.uuid
      @records = []
      @failures = [] # [attempt Hash, Target] of every failed attempt
      @chunk_index = 0
      @breaker = CircuitBreaker.new(config, targets, @request_id) if config.circuit_threshold.positive?
      @chunk_sources = []
      @answering = 0 # the target whose text @partial holds
      @partial = +"" # the streamed text of the current answer, for a cancelled result
      @attempts_seen = 0
    end

    # @return [Reply]
    # @raise [Error] the final error, with every attempt attached
    # @raise [QuotaExceededError] the engine refused the call before any request
    def run
      if @response_cache && (cached = @response_cache.read)
        # An entry without the checked object cannot answer a JSON call.
        return serve_cached(cached) unless @answer_format && cached.json_text.nil?
      end

      settled = false
      @cancellation ||= Cancellation.new
      begin
        attempt_started
        request = engine_request
        result = @cancellation.run { @engine.run(request, self) } || cancelled_result
        settled = true
        if result[:ok] then succeed(result)
        elsif result[:cancelled] then cancelled(result)
        else fail_with(result)
        end
      ensure
        # The block raised, the thread was killed, a Timeout fired: the partial answer
        # must never be sent again as if it were complete.
        fail_stored_message unless settled
        @breaker&.finish
      end
    end

    # Engine listener: a streamed content delta from target index +target+. It is
    # stored before the block sees it, so the store always holds what the user saw.
    # The cancel flag is read inline (an attribute reader, ~200 instructions a chunk
    # less than raise_if_requested), and without a restorer the delta is delivered
    # here rather than through #deliver (~0.2k a chunk: the guard's 10k).
    def on_chunk(text, target)
      raise Cancellation::Signal if @cancellation.requested

      @answering = target
      @partial << text
      if @restorer
        @restorer_target = target
        @restorer.feed([text]).each { |restored| deliver(restored, target) }
      else
        @store.append_assistant(@message || assistant_message(target), text)
        index = @chunk_index
        @chunk_index = index + 1
        @block&.call(Chunk::Delta.new(text, index, @chunk_sources[target] || chunk_source(target)))
      end
      raise Cancellation::Signal if @cancellation.requested
    end

    # Engine listener: the backup is about to answer, after an earlier attempt
    # streamed content. The stored partial goes before the backup's first chunk.
    def on_reset
      @cancellation.raise_if_requested
      @partial = +""
      @answering = 1
      flush_restorer
      @chunk_index = 0
      current = @targets.fetch(1) { @targets[0] }
      @store.reset_assistant(assistant_message(1), model: current.model, provider: current.name.name)
      @block&.call(Chunk.new(content: "", model: current.model, provider: current.name, index: 0,
                             request_id: @request_id, reset: true))
      @cancellation.raise_if_requested
    end

    # Engine listener: one HTTP attempt finished (see Engine#run for the Hash's keys).
    def on_attempt(attempt)
      @attempts_seen += 1
      attempt_started
      record_attempt(attempt)
      # The attempt a Signal (or anything else) cut comes while that exception unwinds.
      @cancellation.raise_if_requested unless attempt.key?(:stopped_by)
    end

    # Engine listener: the engine's wait was cut short (#cancel! wakes the thread).
    def on_interrupt
      @cancellation.raise_if_requested
    end

    # Engine listener, under a Fiber scheduler: the engine watches this IO beside the
    # transfer, and Cancellation#cancel! writes to it.
    def wake_io
      @cancellation.wake_io
    end

    # Engine listener: wake_io became readable.
    def on_wake
      @cancellation.woken
    end

    # Engine listener (with :circuit): the circuit state of each target, before the
    # first attempt.
    def circuit_health(count)
      health = @breaker.health(count)
      @cancellation.raise_if_requested
      health
    end

    # Engine listener (with :circuit): a target's circuit state again, before a request
    # that is not the call's first.
    def circuit_admit(target_index)
      health = @breaker.admit(target_index)
      @cancellation.raise_if_requested
      health
    end

    # Engine listener (with :circuit): an attempt that bears on its target's circuit.
    # @return [Boolean] whether the circuit is open now
    def circuit_report(target_index, success, error_class, hold)
      open = @breaker.report(target_index, success, error_class, hold)
      @cancellation.raise_if_requested
      open
    end

    private

    def record_attempt(attempt)
      @last_target = attempt[:target]
      target = @targets[@last_target]
      success = attempt[:success]
      unless success
        # Cut by the caller: the exception that did it is on its way up.
        return record_stopped(attempt, target) if attempt.key?(:stopped_by)

        # No request: the target's circuit was open.
        attempt = attempt.merge(error_class: CircuitOpenError, latency_ms: 0.0) if attempt[:skipped]
        @failures << [attempt, target]
      end
      record = AttemptRecord.from_engine(attempt, @request_id, target, @feature, @scrubbing&.counts)
      @records << record
      @usage_log.emit(record)
    end

    # Clock readings, made into a Time only for a cancelled result: a Time.now per
    # attempt cost ~4k instructions (bench/README.md).
    def attempt_started
      @attempt_started_ns = Process.clock_gettime(Process::CLOCK_REALTIME, :nanosecond)
      @attempt_clock = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end

    # The engine's result shape for a call stopped by #cancel!: the target that was
    # answering, its partial text, and when its attempt started.
    def cancelled_result
      { ok: false, cancelled: true, target: @answering, partial_content: @partial, attempts: @attempts_seen + 1,
        started_at: Time.at(0, @attempt_started_ns, :nsec),
        latency_ms: (Process.clock_gettime(Process::CLOCK_MONOTONIC) - @attempt_clock) * 1000.0 }
    end

    # Stores a delta, then hands it to the block (what #on_chunk does inline).
    # Per streamed delta: the stored message and the chunk's Source are read from their
    # ivars first, not through their methods (the guard's 10k per chunk, bench/README.md).
    def deliver(text, target)
      @store.append_assistant(@message || assistant_message(target), text)
      index = @chunk_index
      @chunk_index = index + 1
      @block&.call(Chunk::Delta.new(text, index, @chunk_sources[target] || chunk_source(target)))
      nil
    end

    # The end of a streamed answer held back for a split placeholder goes out
    # before the answer ends or is reset.
    def flush_restorer
      held = @restorer&.flush
      deliver(held, @restorer_target) unless held.nil? || held.empty?
    end

    # @return [String, nil] +text+ with the request's placeholders back to their values
    def restored(text)
      @scrubbing ? @scrubbing.restore(text) : text
    end

    # The primary's requests (not a skip past an open circuit) keep the shared quota's
    # unit; with quota_by: :tokens, it becomes the tokens they used.
    def settle_quota
      return unless @quota_reservation

      primary = @targets[0]
      sent = @records.select { |r| r.provider == primary.name && r.model == primary.model && !r.skipped? && !r.cached? }
      tokens = sent.sum { |r| r.input_tokens.to_i + r.output_tokens.to_i }
      @quota_reservation.settle(primary_sent: !sent.empty?, tokens: tokens)
    end

    # What every Chunk from target index +target+ shares, made once per target.
    def chunk_source(target)
      t = @targets[target]
      @chunk_sources[target] = Chunk::Source.new(t.model, t.name, @request_id, false).freeze
    end

    # reply.json: the checked object, its strings restored one by one (restoring the
    # JSON text would break it where an original holds a quote).
    def parsed_json(json_text)
      return nil unless json_text && @answer_format

      restore_strings(@answer_format.parse(json_text))
    end

    def restore_strings(value)
      return value unless @scrubbing

      case value
      when String then restored(value)
      when Array then value.map { |v| restore_strings(v) }
      when Hash then value.to_h { |k, v| [restored(k), restore_strings(v)] }
      else value
      end
    end

    # The stored assistant message, started by the first thing that needs it: a call
    # the quota refuses stores none.
    def assistant_message(target_index)
      @message ||= begin
        target = @targets[target_index]
        @store.start_assistant(model: target.model, provider: target.name.name)
      end
    end

    def engine_request
      request = { targets: @targets.map(&:engine), messages: @messages,
                  temperature: @temperature&.to_f, max_tokens: @max_tokens, stream: !@block.nil?,
                  quota: @quota, policy: @config.engine_policy, circuit: @breaker&.engine_mode }
      @answer_format ? request.merge!(@answer_format.engine_fields) : request
    end

    def succeed(result)
      flush_restorer
      settle_quota
      target = @targets.fetch(result[:target])
      name = target.name
      sent = result[:content] # with the placeholders: what the cache keeps, restored per call
      content = restored(sent)
      @store.finish_assistant(assistant_message(result[:target]), content: content, model: result[:model],
                                                                  provider: name.name,
                                                                  input_tokens: result[:input_tokens],
                                                                  output_tokens: result[:output_tokens])
      json_text = result[:json]
      @response_cache&.write(target, content: sent, model: result[:model],
                                     finish_reason: result[:finish_reason],
                                     provider_request_id: result[:provider_request_id], json_text: json_text)
      reply = Reply.from_engine(result, content, name, @request_id, @records.freeze, !@block.nil?, @chunk_index,
                                parsed_json(json_text))
      if reply.failover?
        log(:info, "answered by #{target.label} after failing over from #{@targets[result[:first_target]].label}")
      end
      reply
    end

    # A cache hit: no request, no provider, no circuit. The answer goes through the
    # store and the block as a streamed one would (a block gets it in word-sized
    # chunks), and one attempt record says it was served from the cache.
    def serve_cached(cached)
      @quota_reservation&.release # a cached answer costs the quota nothing
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      started_at = Time.now
      provider = cached.provider
      content = restored(cached.content)
      @message = @store.start_assistant(model: cached.model, provider: provider.name)
      settled = false
      begin
        # Without a block the text goes to the store in one piece, as an unstreamed answer.
        if @block
          ResponseCache.chunks(content).each do |text|
            @store.append_assistant(@message, text)
            index = @chunk_index
            @chunk_index += 1
            @block.call(Chunk.new(content: text, model: cached.model, provider: provider, index: index,
                                  request_id: @request_id))
          end
        else
          @store.append_assistant(@message, content)
        end
        @store.finish_assistant(@message, content: content, model: cached.model, provider: provider.name,
                                          input_tokens: 0, output_tokens: 0)
        settled = true
      ensure
        fail_stored_message unless settled
      end
      latency_ms = (Process.clock_gettime(Process::CLOCK_MONOTONIC) - started) * 1000.0
      record = AttemptRecord.cache_hit(@request_id, provider, cached.requested_model || cached.model, @feature,
                                       latency_ms, started_at, cached.provider_request_id, @scrubbing&.counts)
      @records << record
      @usage_log.emit(record)
      Reply.new(content: content, model: cached.model, provider: provider, input_tokens: 0, output_tokens: 0,
                request_id: @request_id, attempts: @records.freeze, failover: false,
                finish_reason: cached.finish_reason, provider_request_id: cached.provider_request_id,
                streamed: !@block.nil?, chunk_count: @chunk_index, cached: true,
                json: parsed_json(cached.json_text))
    end

    # The attempt the call's caller cut (Engine#run's :stopped_by: the exception's
    # class, nil for Thread#kill or a throw): failed with AbortedError, nobody's fault.
    # Chat#cancel!'s is the cancelled one #cancelled returns.
    def record_stopped(attempt, target)
      cause = attempt[:stopped_by]
      fields = { request_id: @request_id, attempt: attempt[:attempt], provider: target.name, model: target.model,
                 feature: @feature, success: false, http_status: attempt[:http_status],
                 latency_ms: attempt[:latency_ms], first_token_ms: attempt[:first_token_ms],
                 input_tokens: attempt[:input_tokens], output_tokens: attempt[:output_tokens],
                 started_at: attempt[:started_at], provider_request_id: attempt[:provider_request_id],
                 scrubbed: @scrubbing&.counts }
      record = if cause == Cancellation::Signal
                 @cancelled_record = AttemptRecord.new(**fields, error_message: "cancelled by Chat#cancel!",
                                                                 cancelled: true)
               else
                 AttemptRecord.new(**fields, error_class: AbortedError, error_message: "stopped by its caller: " \
                                                                                       "#{stop_cause(cause)}")
               end
      @records << record
      @usage_log.emit(record) unless @cancelled_record # #cancelled emits it, after the store's write
      nil
    end

    def stop_cause(cause)
      return cause.name || cause.inspect if cause
      return "the thread was killed" if Thread.current.status == "aborting"

      "a throw or break out of the call"
    end

    # Chat#cancel! stopped the call: the partial text is kept (the stored message is
    # "cancelled"), the attempt is recorded as cancelled, nothing fails over and no
    # error is raised.
    def cancelled(result)
      flush_restorer
      index = result[:target]
      target = @targets.fetch(index) { @targets[0] }
      partial = restored(result[:partial_content].to_s)
      @failed = true # the stored message is settled here
      message = assistant_message(index) # stopped before the first delta: an empty one
      if @store.respond_to?(:cancel_assistant)
        @store.cancel_assistant(message, content: partial, model: target.model, provider: target.name.name)
      else
        @store.fail_assistant(message, model: target.model, provider: target.name.name)
      end
      # Cancelled before its first request (a Stop pressed while the job was queued):
      # nothing was sent, so nothing counts against a shared quota.
      sent = @cancelled_record || !@records.empty?
      # The engine's record of the attempt it cut; without one (cancelled between
      # attempts, or before the first), one from what the cancellation saw.
      record = @cancelled_record ||
               AttemptRecord.new(request_id: @request_id, attempt: @records.size + 1, provider: target.name,
                                 model: target.model, feature: @feature, success: false,
                                 error_message: "cancelled by Chat#cancel!", latency_ms: result[:latency_ms],
                                 started_at: result[:started_at], cancelled: true, scrubbed: @scrubbing&.counts)
      @records << record unless @cancelled_record
      @usage_log.emit(record)
      sent ? settle_quota : @quota_reservation&.release # a request that was sent counts like any other
      log(:info, "cancelled on #{target.label} after #{partial.length} characters")
      Reply.new(content: partial, model: target.model, provider: target.name, input_tokens: nil, output_tokens: nil,
                request_id: @request_id, attempts: @records.freeze, failover: index.positive?,
                finish_reason: "cancelled", streamed: !@block.nil?, chunk_count: @chunk_index, cancelled: true)
    end

    def fail_with(result)
      target = @targets.fetch(result[:target]) { @targets[0] }
      raise QuotaExceededError, "#{target.name}: #{result[:message]}" if result[:error_class] == QuotaExceededError

      @quota_reservation&.release # no target answered
      fail_stored_message(target)
      error = build_error(result[:error_class], result[:message], target,
                          status: result[:status], body: result[:body], retry_after: result[:retry_after],
                          retryable: result[:retryable], partial_content: restored(result[:partial_content]),
                          provider_request_id: result[:provider_request_id], error_type: result[:error_type],
                          error_code: result[:error_code], phase: result[:phase])
      log(:warn, "failed on #{target.label}: #{error.class}: #{error.message}")
      alert(error) if chain_exhausted?
      cause = earlier_target_error(result[:target])
      cause ? raise(error, cause: cause) : raise(error)
    end

    def build_error(klass, message, target, phase: nil, **details)
      klass = Error unless klass.is_a?(Class) && klass <= Error
      details[:phase] = phase if klass <= TimeoutError
      klass.new(message, provider: target.name, model: target.model, request_id: @request_id,
                 attempts: @records.dup.freeze, **details)
    end

    # The last error of the target tried before the one whose error is final, so that
    # `rescue => e; e.cause` shows why the primary was left.
    def earlier_target_error(final_target)
      attempt, target = @failures.reverse.find { |a, _| a[:target] < final_target }
      return nil unless attempt

      build_error(attempt[:error_class], attempt[:error_message], target,
                  status: attempt[:http_status], retry_after: attempt[:retry_after],
                  provider_request_id: attempt[:provider_request_id], phase: attempt[:phase])
    end

    # Every target tried ended on an error a healthy backup could have fixed.
    def chain_exhausted?
      return false if @failures.empty? || @records.any?(&:success?)

      last_failure = {}
      @failures.each { |attempt, _| last_failure[attempt[:target]] = attempt }
      last_failure.each_value.all? { |attempt| attempt[:failover_eligible] }
    end

    def alert(error)
      LlmFailover.alerts.notify(callback: @config.on_chain_exhausted, window: @config.alert_window,
                                feature: @feature, error_class: error.class.name, request_id: @request_id,
                                attempts: @records.dup.freeze, logger: @config.logger,
                                store: @config.state_store)
    end

    # target: the one whose error was final; nil when the call was torn down. Either
    # way the turn's failure is stored, even when nothing was streamed.
    def fail_stored_message(target = nil)
      return if @failed

      @failed = true
      if target
        message = assistant_message(@targets.index(target))
        @store.fail_assistant(message, model: target.model, provider: target.name.name)
      else
        @store.fail_assistant(assistant_message(@last_target || 0))
      end
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
