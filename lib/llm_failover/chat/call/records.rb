# frozen_string_literal: true

require_relative "../../errors"
require_relative "../../records/attempt_record"
require_relative "../../money/pricing"

module LlmFailover
  class Call
    # The attempt records of one call, in order, each handed to the usage log as it
    # is made: the engine's attempts, the one its caller cut, the one Chat#cancel!
    # stopped, the response cache's hit, each with what its tokens cost (the
    # configuration's Pricing). Also what the records tell: the failures by target,
    # whether every target failed on errors a backup could have fixed, what the
    # primary's requests used of a shared quota.
    #
    # @api private: one per Call
    class Records
      # @return [Array<Array(Engine::Attempt, Target)>] every failed attempt, with its target
      attr_reader :failures
      # @return [Hash{String => Integer}, nil] the scrubber's counts, on every record
      attr_writer :scrubbed
      # Attempts made before this call under the same request id (the earlier turns of
      # a tool loop): numbers go on from there, one per attempt of the request.
      attr_writer :attempt_offset

      # @param turn_id [String] the turn the call answers (Chat's), on every record
      # @param pricing [Pricing, nil] what the attempts' tokens cost (nil: no costs)
      def initialize(request_id:, feature:, usage_log:, turn_id: nil, pricing: nil)
        @request_id = request_id
        @pricing = pricing
        @turn_id = turn_id
        @feature = feature
        @usage_log = usage_log
        @list = []
        @failures = []
        @cancelled = [] # the engine's records of Chat#cancel!: the attempts it cut, or the cancel itself
        @scrubbed = nil
        @attempt_offset = 0
        @reached = {}.compare_by_identity # Target => [tokens, cost] of the attempts that may have reached it
        @sorted = nil # #to_a's answer until the next record
      end

      # @return [Array<AttemptRecord>] a frozen copy, for a Reply or an error, in attempt
      #   order (a hedge's loser is recorded when it is cut, before the winner ends); made
      #   once per record added, since a call asks for it several times
      def to_a
        @sorted ||= @list.sort_by(&:attempt).freeze
      end

      def size
        @list.size
      end

      def empty?
        @list.empty?
      end

      # One attempt record of the engine's (an Engine::Attempt), at +host+ of +target+
      # (a pool's host, or the target itself): the record names both, and its cost is
      # the host's price.
      def engine_attempt(attempt, target, host = target)
        cost = cost_of(attempt, host)
        reach(attempt, target, cost)
        return hedge_loser(attempt, target, host, cost) if attempt.lost
        return cut(attempt, target, host, cost) if attempt.cancelled || attempt.stopped

        unless attempt.success
          # No request: the target's circuit was open, it cannot take the message's
          # attachments (the engine's AttachmentRefusedError, its reason in the message), or
          # it is a pool's host whose credential source failed (ConfigurationError).
          if attempt.skipped
            attempt = attempt.dup
            attempt.error_class = skip_class(attempt)
            attempt.latency_ms = 0.0
          end
          @failures << [attempt, target]
        end
        add(AttemptRecord.new(**fields(target, host), attempt: attempt.attempt + @attempt_offset,
                                                      success: attempt.success, error_class: attempt.error_class,
                                                      error_message: attempt.error_message,
                                                      http_status: attempt.http_status,
                                                      failover_eligible: attempt.failover_eligible,
                                                      retry_after: attempt.retry_after,
                                                      latency_ms: attempt.latency_ms,
                                                      first_token_ms: attempt.first_token_ms,
                                                      **billed(attempt, cost),
                                                started_at: attempt.started_at,
                                                provider_request_id: attempt.provider_request_id,
                                                skipped: attempt.skipped, hedged: attempt.hedge))
      end

      # The one record of a call the response cache answered: no request, nothing
      # billed; +model+ is the model asked of the target whose answer was cached;
      # +cost_saved+ what that answer cost when it was made (nil: not known).
      def cache_hit(provider:, model:, latency_ms:, started_at:, provider_request_id:, tier: :exact, similarity: nil,
                    cost_saved: nil)
        add(AttemptRecord.new(request_id: @request_id, attempt: 1, provider: provider, model: model,
                              feature: @feature, success: true, latency_ms: latency_ms, input_tokens: 0,
                              output_tokens: 0, started_at: started_at, provider_request_id: provider_request_id,
                              cached: true, scrubbed: @scrubbed, turn_id: @turn_id,
                              cache_tier: tier, similarity: similarity, cost: Pricing::ZERO, cost_saved: cost_saved))
      end

      # Chat#cancel! stopped the call: the engine's records of it (the attempts it cut,
      # or the cancel itself), emitted now, after the store's write.
      def cancelled
        @cancelled.each { |record| @usage_log.emit(record) }
      end

      # Chat#cancel! came before the call started: no engine, no request, one record.
      def cancelled_before_start(target, latency_ms:)
        add(AttemptRecord.new(**fields(target, nil), attempt: @attempt_offset + 1, success: false,
                                                error_message: CANCELLED, latency_ms: latency_ms,
                                                started_at: Time.now, cancelled: true, cost: Pricing::ZERO))
      end

      # Every target tried ended on an error a healthy backup could have fixed. Not when
      # no target could take the message's attachments: no provider failed.
      def chain_exhausted?
        return false if @failures.empty? || @list.any?(&:success?)
        return false if @failures.all? { |attempt, _| attempt.error_class == AttachmentRefusedError }

        last_failure = {}.compare_by_identity
        @failures.each { |attempt, target| last_failure[target] = attempt }
        last_failure.each_value.all?(&:failover_eligible)
      end

      # The last failed attempt of a target tried before +final_target+, in +targets+' order.
      # @return [Array(Engine::Attempt, Target), nil]
      def earlier_failure(final_target, targets)
        final = targets.index(final_target)
        @failures.reverse.find { |_, target| targets.index(target) < final }
      end

      # What +target+'s requests (not skips past an open circuit, not cache hits) used.
      # @return [Array(Boolean, Integer, BigDecimal)] whether any was sent, their tokens
      #   and their cost (nil: billed at a price not known)
      def sent_to(target)
        tokens, cost = @reached.fetch(target, nil)
        tokens ? [true, tokens, cost] : [false, 0, Pricing::ZERO]
      end

      private

      CANCELLED = "cancelled by Chat#cancel!"
      NOTHING_REACHED = [0, Pricing::ZERO].freeze
      private_constant :CANCELLED, :NOTHING_REACHED

      def skip_class(attempt)
        [AttachmentRefusedError, ConfigurationError].include?(attempt.error_class) ? attempt.error_class : CircuitOpenError
      end

      # The loser of a hedged request: cut by the call when the other attempt produced
      # its first token first. Not a failure of its target's: no error class, nothing
      # for the breaker, only what it cost (its tokens, if any reached the gem).
      def hedge_loser(attempt, target, host, cost)
        add(AttemptRecord.new(**fields(target, host), attempt: attempt.attempt + @attempt_offset, success: false,
                                                      error_message: attempt.error_message,
                                                      http_status: attempt.http_status,
                                                      latency_ms: attempt.latency_ms,
                                                      first_token_ms: attempt.first_token_ms, **billed(attempt, cost),
                                                started_at: attempt.started_at,
                                                provider_request_id: attempt.provider_request_id,
                                                cancelled: true, hedged: true))
      end

      # What an attempt's target owes a shared quota (its tokens, by target): every
      # attempt whose request may have reached it, which the engine knows (a skip, a
      # refused connection or a connect timeout did not). +spent+: the attempt's cost.
      def reach(attempt, target, spent)
        return unless attempt.reached

        tokens, cost = @reached.fetch(target, NOTHING_REACHED)
        tokens += attempt.input_tokens.to_i + attempt.output_tokens.to_i
        @reached[target] = [tokens, cost && spent && cost + spent]
      end

      # The attempt's billed tokens and +cost+, what they cost.
      def billed(attempt, cost)
        { input_tokens: attempt.input_tokens, output_tokens: attempt.output_tokens,
          cached_input_tokens: attempt.cached_input_tokens, cache_write_tokens: attempt.cache_write_tokens,
          cost: cost }
      end

      def cost_of(attempt, target)
        @pricing&.cost(target, input_tokens: attempt.input_tokens, output_tokens: attempt.output_tokens,
                               cached_input_tokens: attempt.cached_input_tokens,
                               cache_write_tokens: attempt.cache_write_tokens)
      end

      def add(record)
        @sorted = nil
        @list << record
        @usage_log.emit(record)
        record
      end

      def fields(target, host)
        { request_id: @request_id, provider: target.name, model: target.model, feature: @feature,
          scrubbed: @scrubbed, turn_id: @turn_id, host: host&.name }
      end

      # An attempt the call's caller cut. Chat#cancel!'s (or the cancel's own record)
      # is kept for #cancelled, which emits it after the store's write. One an exception
      # cut (Engine::Attempt#stopped_by: its class, nil for Thread#kill or a throw)
      # failed with AbortedError, nobody's fault.
      def cut(attempt, target, host, cost)
        fields = fields(target, host).merge(attempt: attempt.attempt + @attempt_offset, success: false,
                                            http_status: attempt.http_status,
                                            latency_ms: attempt.latency_ms, first_token_ms: attempt.first_token_ms,
                                            **billed(attempt, cost), started_at: attempt.started_at,
                                            provider_request_id: attempt.provider_request_id, hedged: attempt.hedge)
        if attempt.cancelled
          record = AttemptRecord.new(**fields, error_message: CANCELLED, cancelled: true)
          @cancelled << record
          @sorted = nil
          @list << record
        else
          add(AttemptRecord.new(**fields, error_class: AbortedError,
                                          error_message: "stopped by its caller: #{stop_cause(attempt.stopped_by)}"))
        end
        nil
      end

      def stop_cause(cause)
        return cause.name || cause.inspect if cause
        return "the thread was killed" if Thread.current.status == "aborting"

        "a throw or break out of the call"
      end
    end
  end
end
