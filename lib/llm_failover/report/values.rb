# frozen_string_literal: true

require_relative "../chat/target"

module LlmFailover
  class Report
    # What Report's query methods return: plain structs, and the constants the query
    # layer and the renderers share (the bucket length, the error classes that are not a
    # provider's failure).

    # The incident windows' bucket, in seconds.
    BUCKET_SECONDS = 300

    FailureRate = Struct.new(:provider, :model, :attempts, :failures, :failover_eligible, :top_error,
                             keyword_init: true) do
      def rate
        attempts.zero? ? 0.0 : failures.to_f / attempts
      end
    end

    # A call that succeeded after a failed attempt: from the first target that failed
    # to the one that answered.
    Save = Struct.new(:request_id, :feature, :from, :to, :attempts, keyword_init: true) do
      def cross_provider?
        from.split("/", 2).first != to.split("/", 2).first
      end

      def failover?
        from != to
      end
    end

    Feature = Struct.new(:feature, :requests, :attempts, :failed_attempts, :failed_over, :saved, :lost, :stopped,
                         keyword_init: true)
    Window = Struct.new(:starts_at, :failures, :attempts, :providers, :errors, keyword_init: true) do
      def ends_at
        starts_at + BUCKET_SECONDS
      end
    end
    Tokens = Struct.new(:provider, :model, :input, :output, :failed_input, :failed_output, keyword_init: true) do
      def total
        input + output
      end

      def failed_total
        failed_input + failed_output
      end
    end

    # Calls the response cache answered for one provider and model, and what they would
    # have cost: each hit counted at the mean tokens of that target's uncached successful
    # attempts in the period (an estimate: the hit's own record bills nothing).
    # hits of both tiers; semantic: those of the semantic tier; exact_rate and
    # semantic_rate: each tier's hits over the calls answered (hits and paid answers)
    CacheHits = Struct.new(:provider, :model, :hits, :saved_input, :saved_output, :semantic, :exact_rate,
                           :semantic_rate, keyword_init: true)

    # Calls routed around one target's open circuit (skipped records: no request sent),
    # and the span from the first to the last of them: the circuit was open at least
    # that long.
    # Hedged requests (hedge_after) per provider and model: the attempts sent as one of
    # a race's two, those that answered, those cut as the loser (cancelled), and the
    # tokens the losers used. Each hedge is one extra request; the losers' tokens are
    # what it cost beyond that (an Anthropic stream names its input tokens first).
    Hedges = Struct.new(:provider, :model, :attempts, :answered, :cut, :cut_input, :cut_output, keyword_init: true)

    OpenCircuit = Struct.new(:provider, :model, :calls, :first_skip, :last_skip, keyword_init: true)

    # One incident of one target's circuit, from the persisted transitions (CircuitLog):
    # opened_at the closed -> open change, closed_at the change back to closed (nil: still
    # open at the end of the period), reopens the failed probes in between, routed_around
    # the calls that skipped the target meanwhile.
    CircuitWindow = Struct.new(:provider, :model, :opened_at, :closed_at, :reason, :error_class, :reopens,
                               :routed_around, keyword_init: true) do
      # @return [Float, nil] seconds open; nil while still open
      def duration
        closed_at && closed_at - opened_at
      end
    end

    # Failed attempts of one error class (short name, without "LlmFailover::").
    ErrorCount = Struct.new(:error_class, :attempts, :failover_eligible, keyword_init: true)

    # The period cut into equal buckets, and each target's attempts and failures in the
    # buckets where it had any (Timeline#points, in time order).
    Timeline = Struct.new(:starts_at, :ends_at, :step, :points, keyword_init: true) do
      # @return [Array<String>] "provider/model" of every target with a point, by name
      def targets
        points.map(&:target).uniq.sort
      end
    end
    TimelinePoint = Struct.new(:starts_at, :provider, :model, :attempts, :failures, keyword_init: true) do
      def rate
        attempts.zero? ? 0.0 : failures.to_f / attempts
      end

      def target
        Target.label(provider, model)
      end
    end

    # Money, USD (BigDecimal). Per provider and model: what every attempt cost, what the
    # unanswered ones (failed, or stopped by their caller) cost, what cache hits saved,
    # and the attempts billed at a price not known (their cost NULL: not in the sums).
    Spend = Struct.new(:provider, :model, :cost, :failed, :cache_saved, :unpriced, keyword_init: true) do
      def failed_share
        cost.zero? ? 0.0 : (failed / cost).to_f
      end
    end
    FeatureSpend = Struct.new(:feature, :cost, :failed, keyword_init: true)

    # One host's traffic, failures and spend for a provider (a pool) and model: the
    # attempts it was sent, those that failed, the tokens and what they cost (failed
    # attempts included).
    HostUse = Struct.new(:provider, :host, :model, :attempts, :failures, :input, :output, :cost, :failed,
                         keyword_init: true) do
      def rate
        attempts.zero? ? 0.0 : failures.to_f / attempts
      end
    end
    # One day of one provider's spend (day: its start, UTC midnight).
    DaySpend = Struct.new(:day, :provider, :cost, keyword_init: true)
    # What failing over cost beyond the primary's price: per path from the target that
    # failed first to the one that answered, the answers' cost and what the same tokens
    # cost at the first target's price. unknown: answers one of those prices is missing
    # for (in neither sum).
    Premium = Struct.new(:from, :to, :calls, :cost, :at_primary_price, :unknown, keyword_init: true) do
      def premium
        cost - at_primary_price
      end
    end

    # The error_class of a record skipped past an open circuit (AttemptRecord#skipped).
    SKIPPED = "LlmFailover::CircuitOpenError"
    # The error_class of a record skipped because its target cannot take the message's
    # attachments (AttemptRecord#skipped too).
    REFUSED = "LlmFailover::AttachmentRefusedError"
    # The records of targets a call sent no request to.
    NOT_SENT = [SKIPPED, REFUSED].freeze
    # The error_class of the attempt a call's caller cut (Timeout.timeout, Thread#kill,
    # task.stop, a raising block): neither a provider's failure nor a lost call.
    STOPPED = "LlmFailover::AbortedError"
  end
end
