# frozen_string_literal: true

require_relative "../chat/target"

module LlmFailover
  # What on_circuit_change receives (and the payload of the `circuit.llm_failover`
  # ActiveSupport notification) when a target's circuit changes state. In a fleet
  # sharing a RedisStateStore, the process whose request made the change reports it,
  # once for the fleet.
  class CircuitEvent
    # @return [Symbol] the configured provider name
    attr_reader :provider
    # @return [String]
    attr_reader :model
    # @return [Symbol] :closed, :open or :half_open
    attr_reader :from, :to
    # @return [Symbol] :threshold, :retry_after, :cooldown_elapsed, :probe_failed or :success
    attr_reader :reason
    # @return [String, nil] the error class of the attempt that made the change
    attr_reader :error_class
    # @return [Time]
    attr_reader :at

    def initialize(provider:, model:, from:, to:, reason:, error_class: nil, at: Time.now)
      @provider = provider
      @model = model
      @from = from
      @to = to
      @reason = reason
      @error_class = error_class
      @at = at
      freeze
    end

    def to_h
      { provider: provider, model: model, from: from, to: to, reason: reason, error_class: error_class, at: at }
    end

    def inspect
      "#<#{self.class.name} #{Target.label(provider, model)} #{from}->#{to} (#{reason})>"
    end
  end
end
