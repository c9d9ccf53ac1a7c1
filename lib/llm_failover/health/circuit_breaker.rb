# frozen_string_literal: true

require "llm_failover/llm_failover" # Circuit and its route codes (the C core's)
require_relative "circuit_event"
require_relative "../chat/target"
require_relative "../records/tracing"
require_relative "../records/warnings"

module LlmFailover
  # One call's side of the circuit breaker when its state store is asked from Ruby (a
  # RedisStateStore or any store speaking the protocol): the engine's attempt loop asks
  # it, at most one store question per decision. (The in-process store's CircuitTable
  # is the engine's own.) A store or callback that raises is logged, never raised.
  #
  # @api private: built by Call when circuit_threshold > 0
  class CircuitBreaker
    SEND = Engine::Health.new(route: Circuit::SEND, failures: 0, open_for: nil, headroom: nil).freeze
    private_constant :SEND

    # What a call hands the engine as its request's circuits: the in-process store's
    # CircuitTable, a CircuitBreaker over any other store (its targets' hosts: a pool's
    # each have a circuit and a headroom of their own), or nil without a breaker.
    # @return [CircuitTable, CircuitBreaker, nil]
    def self.for(config, targets, token)
      return nil unless config.circuit_threshold.positive?

      store = config.state_store
      store.respond_to?(:circuit_table) ? store.circuit_table : new(config, targets.flat_map(&:hosts), token)
    end

    # Tells everyone who listens of a circuit's change: the logger, ActiveSupport
    # notifications, tracing, the circuit log and on_circuit_change.
    # @param target [Target]
    # @param change [Array(Symbol, Symbol, Symbol)] from, to, reason
    # @param error_class [Class, nil] of the attempt that made the change
    def self.announce(config, target, change, error_class)
      from, to, reason = change
      event = CircuitEvent.new(provider: target.name, model: target.model, from: from, to: to, reason: reason,
                               error_class: error_class&.name)
      config.logger&.public_send(to == :open ? :warn : :info,
                                 "llm_failover: circuit #{target.label} #{from} -> #{to} (#{reason})")
      notify(event, config)
      Tracing.circuit_change(event)
      persist(event, config)
      config.on_circuit_change&.call(event)
    rescue StandardError => e
      Warnings.warn("on_circuit_change raised #{e.class}: #{e.message}", logger: config.logger)
    end

    # The circuit log (CircuitLog: a table the report reads). Written by the process that
    # made the change, so once for a fleet sharing Redis.
    def self.persist(event, config)
      config.circuit_log&.call(event)
    rescue StandardError => e
      Warnings.warn("circuit_log failed (#{e.class}: #{e.message}); the change is not persisted",
                    logger: config.logger)
    end

    def self.notify(event, config)
      return unless defined?(ActiveSupport::Notifications)

      ActiveSupport::Notifications.instrument("circuit.llm_failover", event.to_h)
    rescue StandardError => e
      Warnings.warn("circuit.llm_failover subscriber raised #{e.class}: #{e.message}", logger: config.logger)
    end
    private_class_method :persist, :notify

    # @param token [String] this call's own (its request_id): the store hands it the
    #   probe of a half-open target, and knows it again when the call asks again
    def initialize(config, targets, token)
      @config = config
      @targets = targets
      @token = token
      @probes = nil # the targets whose probe this call was handed
    end

    # Engine breaker: an Engine::Health per target (per pool host). A store that can
    # peek takes no probe here: the engine #admits a target just before sending to it,
    # so a call its primary answers never holds its backup's probe.
    def health(count)
      store = @config.state_store
      keys = @targets.map(&:circuit_key)
      peeking = store.respond_to?(:peek)
      entries = peeking ? store.peek(keys, @token) : store.admit(keys, probe_ttl, @token)
      entries.each_with_index.map do |(route, failures, change, open_for, headroom), i|
        took(@targets[i], route, change) unless peeking
        Engine::Health.new(route: route, failures: failures, open_for: open_for, headroom: headroom)
      end
    rescue StandardError => e
      warn("state store failed (#{e.class}: #{e.message}); calling without circuit state")
      Array.new(count, SEND)
    end

    # Engine breaker: one target's Engine::Health again, before a request that is not
    # the call's first (a retry, another host of a pool, or the backup).
    # @param engine_target [Engine::Target]
    def admit(engine_target)
      target = Target.of(@targets, engine_target)
      route, failures, change, open_for = @config.state_store.admit([target.circuit_key], probe_ttl, @token).first
      took(target, route, change)
      Engine::Health.new(route: route, failures: failures, open_for: open_for, headroom: nil)
    rescue StandardError => e
      warn("state store failed (#{e.class}: #{e.message}); calling without circuit state")
      SEND
    end

    # After the call, however it ended: frees the probes it took and did not report
    # (never sent, or ended in a way that does not count).
    def finish
      return unless @probes && @config.state_store.respond_to?(:release)

      @probes.each { |target| @config.state_store.release(target.circuit_key, @token) }
    rescue StandardError => e
      warn("state store failed (#{e.class}: #{e.message}); a probe lock waits for its ttl")
    end

    # Engine breaker: an attempt's outcome that bears on its target, with what a pool
    # host's answer said of its headroom (an Engine::Headroom, or nil).
    # @param engine_target [Engine::Target]
    # @return [Boolean] whether the target's circuit is open now
    def report(engine_target, success, error_class, hold, headroom = nil)
      target = Target.of(@targets, engine_target)
      open, change = @config.state_store.record(target.circuit_key, threshold: @config.circuit_threshold,
                                                                    cooldown: @config.circuit_cooldown,
                                                                    success: success, hold: hold,
                                                                    error_class: error_class&.name, token: @token,
                                                                    first_probe: @config.circuit_first_probe,
                                                                    headroom: headroom)
      CircuitBreaker.announce(@config, target, change, error_class) if change
      open
    rescue StandardError => e
      warn("state store failed (#{e.class}: #{e.message}); the attempt is not counted")
      false
    end

    private

    def probe_ttl
      @config.engine_policy.circuit_probe_ttl
    end

    def took(target, route, change)
      (@probes ||= []) << target if route == Circuit::PROBE && !@probes&.include?(target)
      CircuitBreaker.announce(@config, target, change, nil) if change
    end

    def warn(message)
      Warnings.warn(message, logger: @config.logger)
    end
  end
end
