# frozen_string_literal: true

require_relative "../errors"
require "llm_failover/llm_failover" # the compiled extension: Engine
require_relative "../health/circuit_breaker"
require_relative "cancellation"
require_relative "hedge_delay"
require_relative "reasoning"
require_relative "reply"
require_relative "target"
require_relative "call/delivery"
require_relative "call/failure"
require_relative "call/from_cache"
require_relative "call/later"
require_relative "call/listener"
require_relative "call/records"

module LlmFailover
  # One logical call: hands the engine one Engine::Request and is its listener. The
  # engine's events go to the answer's Delivery (the store and the user's block) and
  # to the call's Records; its Engine::Result becomes a Reply, a cancelled Reply or a
  # raised Failure's error. As the listener it also reads its Cancellation's flag
  # after every callback (Chat#cancel!), and announces the circuit changes its
  # attempts made.
  #
  # @api private: built by Chat for every #ask / #complete
  #
  # Its parts by job, beside it in call/: Listener (the engine's events), FromCache
  # (a cache tier's answer), Delivery, Records, Failure, Later.
  class Call
    include FromCache
    include Listener

    attr_reader :request_id
    # @return [ResponseCache, nil] read before any request, written after a success
    attr_accessor :response_cache
    # @return [SemanticCache::SemanticLookup, nil] read when the exact tier missed,
    #   written (off the caller's path) after a success
    attr_accessor :semantic_cache
    # @return [Scrubber::Session, nil] the placeholders of the request, restored in the answer
    attr_reader :scrubbing
    # @return [Cancellation] what Chat#cancel! stops this call through
    attr_writer :cancellation
    # @return [AnswerFormat, nil] JSON mode or a schema; nil for text
    attr_reader :answer_format
    # @return [QuotaReservation, nil] the unit a shared quota holds for this call
    attr_accessor :quota_reservation
    # @return [Array, nil] the engine request's attachments, per message
    #   (Attachment::Selection.engine_list)
    attr_writer :attachments
    # @return [Hash, nil] a tool turn's engine request fields (tools, tool_choice,
    #   parallel_tool_calls)
    attr_writer :tool_fields
    # @return [#call, nil] (calls, target, response_model) -> Array<ToolCall>: a tool
    #   turn's maker of the answer's calls, stored with the answer (ToolLoop)
    attr_writer :tool_calls_from
    # @return [Symbol, nil] the host of a pool this call goes to first while it has
    #   headroom: the one the turn started on (ToolLoop), for its prompt cache
    attr_writer :stay_on
    # @return [Integer, nil] the most tokens the request may be counted for (a
    #   CallCeiling's): a pool's host that said it has fewer left is passed over
    attr_writer :tokens

    # @param targets [Array<Target>] where the call starts (the quota's pick: the backup
    #   alone when the primary's quota is used up), then the backup if there is one
    # @param messages [Array<Array(String, String)>] role/content pairs, system messages included
    # @param request_id [String, nil] a tool loop's turns share the ask's
    # @param turn_id [String, nil] the turn it answers (nil: its own, the request_id)
    def initialize(engine:, config:, store:, targets:, messages:, temperature:, max_tokens:, feature:, block:,
                   request_id: nil, turn_id: nil)
      @engine = engine
      @config = config
      @targets = targets
      @messages = messages
      @temperature = temperature
      @max_tokens = max_tokens
      @feature = feature
      @request_id = request_id || Engine.uuid
      @delivery = Delivery.new(store: store, block: block, request_id: @request_id)
      @records = Records.new(request_id: @request_id, feature: feature, usage_log: config.usage_log_emitter,
                             turn_id: turn_id || @request_id, pricing: config.pricing)
      @circuits = CircuitBreaker.for(config, targets, @request_id)
      @hedge = HedgeDelay.new(setting: config.hedge_after, store: config.state_store, targets: targets) if config.hedge_after
      @last_target = nil
    end

    def scrubbing=(session)
      @scrubbing = session
      @delivery.restore_with(session, json: !@answer_format.nil?)
      @records.scrubbed = session&.counts
    end

    # @param count [Integer] attempts an earlier turn of the same request made
    def attempt_offset=(count)
      @records.attempt_offset = count
    end

    def answer_format=(format)
      @answer_format = format
      @delivery.restore_with(@scrubbing, json: !format.nil?) # a JSON answer restores escaped
    end

    # @return [Array<AttemptRecord>] every attempt so far
    def records
      @records.to_a
    end

    # @return [Reply]
    # @raise [Error] the final error, with every attempt attached
    def run
      @cancellation ||= Cancellation.new
      returned = sending = false
      begin
        cached = @response_cache&.read
        if servable?(cached)
          returned = true # answer_from_cache settles the store and the quota itself
          return answer_from_cache(cached, tier: :exact)
        end
        cached, similarity = @semantic_cache&.read
        if servable?(cached)
          returned = true
          return answer_from_cache(cached, tier: :semantic, similarity: similarity)
        end

        sending = true
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        result = @cancellation.run { @engine.run(engine_request, self) }
        returned = true
        case result&.status
        when :ok then succeed(result)
        when :failed then fail_with(result)
        when :cancelled then cancelled(Target.of(@targets, result.target), result.partial_content)
        else cancelled_before_start(started) # Chat#cancel! came first: no engine, no request
        end
      ensure
        # The block raised, the thread was killed, a Timeout fired: the partial answer
        # must never be sent again as if it were complete, and a quota unit is kept
        # only if a request may have reached the primary.
        unless returned
          @delivery.mark_failed(@last_target || @targets[0], named: false) if sending # not while reading the cache
          settle_quota
        end
        @circuits.finish if @circuits.is_a?(CircuitBreaker)
        learn_first_tokens
      end
    end

    private

    def engine_request
      request = Engine::Request.new(targets: @targets.map(&:engine), messages: @messages, attachments: @attachments,
                                    temperature: @temperature&.to_f, max_tokens: @max_tokens,
                                    stream: @delivery.streamed?, policy: engine_policy, circuits: @circuits,
                                    token: @request_id, stay: stay_host&.engine, tokens: @tokens)
      @tool_fields&.each { |member, value| request[member] = value }
      @answer_format&.engine_fields&.each { |member, value| request[member] = value }
      request
    end

    # The pool host named by stay_on, when one of the call's targets has it.
    def stay_host
      return nil unless @stay_on

      @targets.select(&:pool?).flat_map(&:hosts).find { |host| host.name == @stay_on }
    end

    # The configuration's policy; with hedge_after: :auto, this call's figure from the
    # state store (nil until the primary has enough first tokens recorded).
    def engine_policy
      policy = @config.engine_policy
      @hedge&.learning? ? Engine::Policy.new(**policy.to_h.merge(hedge_after: @hedge.seconds)) : policy
    end

    # hedge_after: :auto learns from every call's first tokens. A store that fails here
    # costs the next calls a sample, never this call its answer.
    def learn_first_tokens
      @hedge&.learn(@records.to_a)
    rescue StandardError => e
      log(:warn, "could not record times to first token: #{e.class}: #{e.message}")
    end

    # @return [String, nil] +text+ with the request's placeholders back to their values
    #   (escaped for JSON in a JSON answer, so that it stays one)
    def restored(text)
      @scrubbing ? @scrubbing.restore(text, json: !@answer_format.nil?) : text
    end

    # reply.json: the checked object's text as the answer wrote it, restored as
    # reply.content is, so that both say the same.
    def parsed_json(json_text)
      return nil unless json_text && @answer_format

      @answer_format.parse(restored(json_text))
    end

    # The shared quota's hold becomes what the primary's requests used (QuotaReservation
    # says how for each unit); +answered+: whether the call got an answer.
    def settle_quota(answered: true)
      return unless @quota_reservation

      sent, tokens, cost = @records.sent_to(@quota_reservation.target)
      @quota_reservation.settle(primary_sent: sent, tokens: tokens, cost: cost, answered: answered)
    end

    def succeed(result)
      target = Target.of(@targets, result.target)
      host = Target.host_of(@targets, result.target).name
      model = result.model || result.target.model # a host that names none (Bedrock): the id it was asked
      sent = result.content # with the placeholders: what the cache keeps, restored per call
      content = restored(sent)
      @delivery.flush
      settle_quota
      raw_calls = result.tool_calls
      calls = raw_calls && @tool_calls_from ? @tool_calls_from.call(raw_calls, target, model) : Reply::NO_CALLS
      @delivery.finish(target, content: content, model: model, provider: target.name,
                               input_tokens: result.input_tokens, output_tokens: result.output_tokens,
                               tool_calls: calls, reasoning: Reasoning.of(result))
      json_text = result.json
      attempts = @records.to_a
      # What a cache hit of this answer saves: the answering attempt's cost.
      cost = attempts.reverse_each.find(&:success?)&.cost if @response_cache || @semantic_cache
      @response_cache&.write(target, content: sent, model: model, finish_reason: result.finish_reason,
                                     provider_request_id: result.provider_request_id, json_text: json_text,
                                     cost: cost)
      @semantic_cache&.write(target, content: sent, model: model, finish_reason: result.finish_reason,
                                     provider_request_id: result.provider_request_id, json_text: json_text,
                                     cost: cost)
      # A backup the quota picked first is not a failover: nothing failed.
      failover = !target.equal?(@targets[0])
      log(:info, "answered by #{target.label} after failing over from #{@targets[0].label}") if failover
      Reply.new(content: content, model: target.model, response_model: model, provider: target.name,
                input_tokens: result.input_tokens, output_tokens: result.output_tokens,
                request_id: @request_id, attempts: attempts, failover: failover,
                finish_reason: result.finish_reason, provider_request_id: result.provider_request_id,
                streamed: @delivery.streamed?, chunk_count: @delivery.chunk_count, json: parsed_json(json_text),
                tool_calls: calls, host: host)
    end

    # Chat#cancel! stopped the call: the partial text is kept (the stored message is
    # "cancelled"), the attempt is recorded as cancelled, nothing fails over and no
    # error is raised. +target+ was answering, or about to.
    def cancelled(target, partial)
      @delivery.flush
      partial = restored(partial.to_s)
      @delivery.cancel(target, content: partial)
      @records.cancelled
      settle_quota
      log(:info, "cancelled on #{target.label} after #{partial.length} characters")
      Reply.new(content: partial, model: target.model, provider: target.name, input_tokens: nil, output_tokens: nil,
                request_id: @request_id, attempts: @records.to_a, failover: !target.equal?(@targets[0]),
                finish_reason: "cancelled", streamed: @delivery.streamed?, chunk_count: @delivery.chunk_count,
                cancelled: true)
    end

    # Cancelled before its first request (a Stop pressed while the job was queued):
    # the engine never ran, nothing was sent, nothing counts against a shared quota.
    def cancelled_before_start(started)
      @records.cancelled_before_start(@targets[0], latency_ms: (Process.clock_gettime(Process::CLOCK_MONOTONIC) -
                                                                started) * 1000.0)
      cancelled(@targets[0], "")
    end

    def fail_with(result)
      failure = Failure.new(result: result, targets: @targets, records: @records, request_id: @request_id,
                            restore: method(:restored))
      target = failure.target
      settle_quota(answered: false) # billed failures count against tokens and dollars
      @delivery.mark_failed(target)
      error = failure.error
      unless error.is_a?(Error) # a pool's host without a credential: the configuration's, raised as it is
        log(:warn, "failed on #{Target.host_of(@targets, result.target).label}: #{error.class}: #{error.message}")
        raise error
      end
      later = Later.new(config: @config, targets: @targets, breaker: !@circuits.nil?, log: method(:log))
      error.retry_at, reason = later.at(error)
      log(:warn, "failed on #{target.label}: #{error.class}: #{error.message}")
      alert(error) if @records.chain_exhausted?
      cause = failure.cause
      begin
        cause ? raise(error, cause: cause) : raise(error)
      rescue Error
        # Past what the call may wait: raised from here, its cause is +error+.
        raise later.retry_later(error, reason) if later.too_far?(error)

        raise
      end
    end

    def alert(error)
      LlmFailover.alerts.notify(callback: @config.on_chain_exhausted, window: @config.alert_window,
                                feature: @feature, error_class: error.class.name, request_id: @request_id,
                                attempts: @records.to_a, logger: @config.logger, store: @config.state_store)
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
