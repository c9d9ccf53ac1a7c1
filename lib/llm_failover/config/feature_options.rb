# frozen_string_literal: true

require_relative "../errors"
require_relative "../records/usage_log"

module LlmFailover
  class Configuration
    # The options of what surrounds a call: the usage log and alerts, the response cache,
    # scrubbing, cancellation, idempotency, tool rounds, tracing and the gem's own logger.
    #
    # @api private: included by Configuration
    module FeatureOptions
      # One sink or an Array of sinks: a callable, an object responding to #call or
      # #record, or a Logger (one JSON line per attempt). nil for none.
      def usage_log=(value)
        UsageLog.new(value) # validates
        @usage_log = value.is_a?(Array) ? value.dup.freeze : value
        @usage_log_emitter = nil
      end

      # A callable given an Alert when every target of a call failed on errors a
      # backup could have fixed; see Alerts.
      def on_chain_exhausted=(value)
        @on_chain_exhausted = callable_or_nil(:on_chain_exhausted, value)
      end

      def alert_window=(value)
        @alert_window = number(:alert_window, value, min: 0)
      end

      # The response cache: nil (off, the default), a MemoryCache, or any store with
      # #read(key) and #write(key, value, expires_in:) such as Rails.cache.
      def cache=(value)
        unless value.nil? || (value.respond_to?(:read) && value.respond_to?(:write))
          raise ConfigurationError, "cache must respond to #read and #write(key, value, expires_in:), got #{value.class}"
        end

        @cache = value
      end

      # The semantic tier behind the exact cache: nil (off, the default) or a
      # SemanticCache (anything with its #lookup).
      def semantic_cache=(value)
        unless value.nil? || value.respond_to?(:lookup)
          raise ConfigurationError, "semantic_cache must be a LlmFailover::SemanticCache, got #{value.class}"
        end

        @semantic_cache = value
      end

      # What replaces sensitive values before a request leaves the process: nil (off,
      # the default), a Scrubber, or any object with #scrub(text) -> [text, mapping].
      def scrubber=(value)
        unless value.nil? || value.respond_to?(:scrub)
          raise ConfigurationError, "scrubber must respond to #scrub(text) -> [text, mapping], got #{value.class}"
        end

        @scrubber = value
      end

      # Seconds between two looks at the cancel_requested_at of the chat records answering
      # in this process (a Stop button in another process): one query per chats table each
      # time, however many calls run (ActiveRecord::CancelWatcher).
      def cancel_poll_interval=(value)
        @cancel_poll_interval = number(:cancel_poll_interval, value, positive: true)
      end

      # Seconds an ask waits for another call answering the same idempotency_key (a
      # double-submitted form, a job run twice) before IdempotencyConflict.
      def idempotency_wait=(value)
        @idempotency_wait = number(:idempotency_wait, value, positive: true)
      end

      # Whether OpenTelemetry spans carry the prompt and the answer (gen_ai.prompt,
      # gen_ai.completion): off by default, since a trace backend is seldom where an app
      # keeps what its users wrote.
      def trace_content=(value)
        raise ConfigurationError, "trace_content must be true or false, got #{value.inspect}" unless [true, false].include?(value)

        @trace_content = value
      end

      # true lets a URL attachment be downloaded from a loopback or private address
      # (tests, an intranet); false (the default) refuses it and its redirects there.
      def attachment_private_hosts=(value)
        unless [true, false].include?(value)
          raise ConfigurationError, "attachment_private_hosts must be true or false, got #{value.inspect}"
        end

        @attachment_private_hosts = value
      end

      # Seconds a cached answer lives; nil leaves it to the store.
      def cache_ttl=(value)
        @cache_ttl = value.nil? ? nil : number(:cache_ttl, value, positive: true)
      end

      # Model turns one ask may make with tools (LlmFailover.chat(max_tool_rounds:) for
      # one chat); past them, ToolLoopError with the transcript intact.
      def max_tool_rounds=(value)
        @max_tool_rounds = integer(:max_tool_rounds, value, min: 1)
      end

      # Whether a tool run's "tool.llm_failover" event and usage-log line carry its
      # arguments and its result: off by default, since they hold what the app's users
      # and its own systems said (addresses, order numbers, records).
      def log_tool_content=(value)
        unless [true, false].include?(value)
          raise ConfigurationError, "log_tool_content must be true or false, got #{value.inspect}"
        end

        @log_tool_content = value
      end

      # Where the gem's own warnings go (a failing sink, a failing alert callback).
      def logger=(value)
        unless value.nil? || value.respond_to?(:warn)
          raise ConfigurationError, "logger must respond to #warn (a Logger), got #{value.class}"
        end

        @logger = value
        @usage_log_emitter = nil
        @pricing = nil
      end
    end
  end
end
