# frozen_string_literal: true

require_relative "../health/first_token_times"

module LlmFailover
  # How late the primary's first token may be before a call sends its backup beside it
  # (hedge_after): a fixed number of seconds, or for :auto a percentile of the
  # primary's recent times to first token in the state store.
  #
  # :auto takes the 95th percentile, never below a quarter of a second:
  # - the 95th: a hedge then fires for about one call in twenty of a steady provider,
  #   so it costs about 5% more requests, and cuts the slowest twentieth, where the
  #   tail is ("The Tail at Scale", Dean and Barroso, 2013, hedge "after the request
  #   has been outstanding for more than the 95th-percentile expected latency"). When
  #   more than 5% of a provider's starts are slow, the 95th lands among the slow ones
  #   and hedges late: pick a number then (bench/README.md, "Hedged requests").
  # - the floor: a provider that starts in 50 ms would otherwise hedge on every
  #   scheduling hiccup of its own or of the network, for a gain no reader sees.
  # - it waits for MIN_SAMPLES first tokens of the target before it hedges at all:
  #   a percentile of three calls says nothing.
  # The samples are every attempt's first token; an attempt cut as a hedge's loser
  # before its first token gives the time it had waited, which the real time exceeded:
  # leaving those out would make the slow starts vanish from what :auto learns.
  #
  # @api private: one per call of a chat with hedge_after
  class HedgeDelay
    PERCENTILE = 0.95
    FLOOR = 0.25
    MIN_SAMPLES = 20

    # @param setting [Numeric, :auto] the chat's hedge_after
    # @param store [Object] the state store (FirstTokenTimes' methods)
    # @param targets [Array<Target>] the call's; the first is the one that may be late
    def initialize(setting:, store:, targets:)
      @setting = setting
      @store = store
      @targets = targets
    end

    # @return [Boolean] whether the call learns from its first tokens (:auto)
    def learning?
      @setting == :auto && @store.respond_to?(:record_first_tokens)
    end

    # @return [Float, nil] seconds after which the backup is sent; nil: no hedge (no
    #   backup, or :auto without enough samples yet)
    def seconds
      return nil if @targets.size < 2
      return @setting.to_f if @setting.is_a?(Numeric)
      return nil unless learning?

      self.class.percentile(@store.first_token_times(@targets.first.circuit_key))
    end

    # The figure :auto hedges at for these samples (seconds).
    # @return [Float, nil] nil below MIN_SAMPLES
    def self.percentile(samples)
      return nil if samples.size < MIN_SAMPLES

      sorted = samples.sort
      [sorted[((sorted.size - 1) * PERCENTILE).ceil], FLOOR].max
    end

    # Adds the call's first tokens to its targets' samples (:auto only).
    # @param records [Array<AttemptRecord>] the call's
    def learn(records)
      return unless learning?

      by_key = Hash.new { |h, k| h[k] = [] }
      records.each do |r|
        seconds = sample(r)
        by_key[Target.label(r.provider, r.model)] << seconds if seconds
      end
      @targets.each do |t|
        list = by_key[t.label]
        @store.record_first_tokens(t.circuit_key, list) unless list.empty?
      end
    end

    private

    # An attempt's time to first token in seconds; for a hedge's loser cut before one,
    # the time it had waited (a lower bound); nil when it says nothing of the start.
    def sample(record)
      return nil if record.skipped? || record.cached?
      return record.first_token_ms / 1000.0 if record.first_token_ms
      return record.latency_ms / 1000.0 if record.cancelled? && record.hedged? && record.latency_ms

      nil
    end
  end
end
