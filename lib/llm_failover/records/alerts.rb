# frozen_string_literal: true

require_relative "alert"
require_relative "warnings"

module LlmFailover
  # Throttles on_chain_exhausted: at most one Alert per feature x error class per
  # window, so an outage pages someone once instead of once per job. Process-wide and
  # thread-safe; the callback runs outside the lock. With a shared state store
  # (RedisStateStore) the window is the fleet's: the first process to claim it alerts.
  class Alerts
    def initialize(clock: -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) })
      @clock = clock
      @lock = Mutex.new
      @windows = {} # [feature, error_class] => {opened_at:, first_seen:, suppressed:}
    end

    # Fires +callback+ with an Alert unless one of the same kind fired within +window+
    # seconds. A callback that raises is reported and swallowed.
    # @return [Alert, nil] the alert delivered, nil when throttled
    def notify(callback:, window:, feature:, error_class:, request_id:, attempts:, logger: nil, store: nil)
      return nil unless callback

      alert = admit(window, feature, error_class, store) do |first_seen, suppressed|
        Alert.new(feature: feature, error_class: error_class, request_id: request_id, attempts: attempts,
                  providers: attempts.map(&:provider).uniq, models: attempts.map(&:model).uniq,
                  first_seen: first_seen, suppressed: suppressed)
      end
      return nil unless alert

      begin
        callback.call(alert)
      rescue StandardError => e
        Warnings.warn("on_chain_exhausted raised #{e.class}: #{e.message}", logger: logger)
      end
      alert
    end

    # Forgets every window (specs, reconfiguration).
    def reset!
      @lock.synchronize { @windows.clear }
    end

    private

    def admit(window, feature, error_class, store)
      key = [feature, error_class].freeze
      now = @clock.call
      shared = store.respond_to?(:shared?) && store.shared?
      fleet_first = !shared || store.claim("alert:#{feature}:#{error_class}", window)
      @lock.synchronize do
        state = @windows[key]
        if !fleet_first || (!shared && state && now - state[:opened_at] < window)
          state ||= (@windows[key] = { opened_at: now, suppressed: 0 })
          state[:suppressed] += 1
          return nil
        end

        suppressed = state ? state[:suppressed] : 0
        @windows[key] = { opened_at: now, suppressed: 0 }
        yield Time.now, suppressed
      end
    end
  end
end
