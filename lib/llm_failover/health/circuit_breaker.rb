# frozen_string_literal: true

require "llm_failover/llm_failover" # Circuit and its route codes (the C core's)
require_relative "circuit_event"
require_relative "../records/tracing"
require_relative "../records/warnings"

module LlmFailover
  # One call's side of the circuit breaker: asks the state store for the health of
  # the call's targets (once, before the first attempt) and tells it the attempts
  # that bear on it, as the engine's attempt loop decides (its rules are the C core's,
  # lf_circuit.c); turns the changes into CircuitEvents. Nothing about health ever
  # becomes an error: a store or a callback that raises is logged and the call goes on.
  #
  # @api private: built by Call when circuit_threshold > 0
  class CircuitBreaker
    SEND_ALL = [Circuit::SEND, 0, Circuit::SEND, 0].freeze # [route, failures] of two targets
    private_constant :SEND_ALL

    # @param token [String] this call's own (its request_id): the store hands it the
    #   probe of a half-open target, and knows it again when the call asks again
    def initialize(config, targets, token)
      @config = config
      @targets = targets
      @token = token
      @probes = nil # indexes of the targets whose probe this call was handed
    end

    # Engine listener (through Call): [route, failures] of each target, flat. A store
    # that can peek takes no probe here: Circuit::PROBE then says the probe is free, and
    # the engine admits that target (#admit) just before it sends to it, so a call that
    # its primary answers never holds its backup's probe.
    def health(count)
      store = @config.state_store
      keys = @targets.map(&:circuit_key)
      peeking = store.respond_to?(:peek)
      entries = peeking ? store.peek(keys, @token) : store.admit(keys, probe_ttl, @token)
      flat = []
      entries.each_with_index do |(route, failures, change), i|
        flat << route << failures
        took(i, route, change) unless peeking
      end
      flat
    rescue StandardError => e
      warn("state store failed (#{e.class}: #{e.message}); calling without circuit state")
      SEND_ALL.first(2 * count)
    end

    # Engine listener (through Call): one target's [route, failures] again, before a
    # request that is not the call's first (a retry, or the backup after a failover).
    def admit(target_index)
      route, failures, change = @config.state_store.admit([@targets[target_index].circuit_key], probe_ttl,
                                                          @token).first
      took(target_index, route, change)
      [route, failures]
    rescue StandardError => e
      warn("state store failed (#{e.class}: #{e.message}); calling without circuit state")
      SEND_ALL.first(2)
    end

    # After the call, however it ended (an answer, an error, a killed thread): gives
    # back the probes it was handed. One it sent has reported already (the store then
    # let it go with the circuit's change); one it never sent, or whose request ended
    # in a way that does not count (a 4xx, a cancel), frees the target for the next.
    def finish
      return unless @probes && @config.state_store.respond_to?(:release)

      @probes.each { |i| @config.state_store.release(@targets[i].circuit_key, @token) }
    rescue StandardError => e
      warn("state store failed (#{e.class}: #{e.message}); a probe lock waits for its ttl")
    end

    # Engine listener (through Call): an attempt's outcome that bears on its target.
    # @return [Boolean] whether the target's circuit is open now
    def report(target_index, success, error_class, hold)
      target = @targets[target_index]
      store = @config.state_store
      threshold = @config.circuit_threshold
      cooldown = @config.circuit_cooldown
      error_name = error_class&.name
      open, change =
        case (style = CircuitBreaker.record_style(store))
        when :keywords
          store.record(target.circuit_key, threshold: threshold, cooldown: cooldown, success: success, hold: hold,
                                           error_class: error_name, token: @token,
                                           first_probe: @config.circuit_first_probe)
        else # a store written before record took keywords: the positional arguments it knows
          args = [target.circuit_key, threshold, cooldown, success, hold, error_name, @token,
                  @config.circuit_first_probe]
          store.record(*args.first(style))
        end
      announce(target, change, error_class) if change
      open
    rescue StandardError => e
      warn("state store failed (#{e.class}: #{e.message}); the attempt is not counted")
      false
    end

    # How +store+'s record takes its arguments: :keywords (the gem's stores, and any
    # store that takes keywords or delegates *args), else how many positional ones
    # (6: before the caller's token, 7: before first_probe, 8). Read once per class:
    # Method#parameters allocates, and a call reports at least once.
    def self.record_style(store)
      RECORD_STYLES[store.class] ||= begin
        params = store.method(:record).parameters
        if params.any? { |type, _| %i[key keyreq keyrest rest].include?(type) } then :keywords
        else params.size.clamp(6, 8)
        end
      end
    end
    RECORD_STYLES = {} # store class => its record's style (a race computes the same answer twice)
    private_constant :RECORD_STYLES

    private

    # How long a probe is this call's: its one request's whole deadline
    # (request_timeout) and a second for the store, so that a slow probe keeps the
    # target to itself until it ends; the call gives it back as soon as it is done
    # (#finish), and a probe whose process died frees the target after that long.
    def probe_ttl
      @config.request_timeout + 1
    end

    def took(index, route, change)
      (@probes ||= []) << index if route == Circuit::PROBE && !@probes&.include?(index)
      announce(@targets[index], change, nil) if change
    end

    def announce(target, change, error_class)
      from, to, reason = change
      event = CircuitEvent.new(provider: target.name, model: target.model, from: from, to: to, reason: reason,
                               error_class: error_class&.name)
      @config.logger&.public_send(to == :open ? :warn : :info,
                                  "llm_failover: circuit #{target.label} #{from} -> #{to} (#{reason})")
      notify(event)
      Tracing.circuit_change(event)
      persist(event)
      callback = @config.on_circuit_change
      callback&.call(event)
    rescue StandardError => e
      warn("on_circuit_change raised #{e.class}: #{e.message}")
    end

    # The circuit log (CircuitLog: a table the report reads). Written by the process that
    # made the change, so once for a fleet sharing Redis.
    def persist(event)
      @config.circuit_log&.call(event)
    rescue StandardError => e
      warn("circuit_log failed (#{e.class}: #{e.message}); the change is not persisted")
    end

    def notify(event)
      return unless defined?(ActiveSupport::Notifications)

      ActiveSupport::Notifications.instrument("circuit.llm_failover", event.to_h)
    rescue StandardError => e
      warn("circuit.llm_failover subscriber raised #{e.class}: #{e.message}")
    end

    def warn(message)
      Warnings.warn(message, logger: @config.logger)
    end
  end
end
