# frozen_string_literal: true

require_relative "../errors"

module LlmFailover
  class Configuration
    # The call policy the engine runs by (retries, waits, timeouts, the response's size):
    # each setter checks its value and drops the cached #engine_policy.
    #
    # @api private: included by Configuration
    module CallPolicy
      def max_retries=(value)
        @max_retries = integer(:max_retries, value, min: 0)
        @engine_policy = nil
      end

      def retry_interval=(value)
        @retry_interval = number(:retry_interval, value, min: 0)
        @engine_policy = nil
      end

      def retry_backoff_factor=(value)
        # Below 1 the waits would shrink, which is never what a backoff means.
        @retry_backoff_factor = number(:retry_backoff_factor, value, min: 1)
        @engine_policy = nil
      end

      # The longest a call sleeps in one wait (a Retry-After, a backoff) before its next
      # attempt; a longer Retry-After fails over at once, and a call that ends on an error
      # meaning "later" further away than this raises RetryLater (retry_at, retry_in)
      # instead of sleeping. Per chat: LlmFailover.chat(max_wait_in_call: 30).
      def max_wait_in_call=(value)
        @max_wait_in_call = number(:max_wait_in_call, value, min: 0)
        @engine_policy = nil
      end

      # Hedged requests: when the primary's first token is this late, the backup is sent
      # beside it and the first of the two to produce a token answers (the other is cut
      # and recorded as cancelled). Seconds, or :auto (HedgeDelay: a percentile of the
      # primary's recent times to first token, kept in the state store); nil or false:
      # off (the default). Without a backup it does nothing.
      def hedge_after=(value)
        @hedge_after = if value.nil? || value == false then nil
                       elsif value == :auto then :auto
                       else number(:hedge_after, value, positive: true)
                       end
        @engine_policy = nil
      end

      def retry_max_interval=(value)
        @retry_max_interval = number(:retry_max_interval, value, min: 0)
        @engine_policy = nil
      end

      def retry_interval_randomness=(value)
        value = number(:retry_interval_randomness, value, min: 0)
        raise ConfigurationError, "retry_interval_randomness must be within 0..1, got #{value}" if value > 1

        @retry_interval_randomness = value
        @engine_policy = nil
      end

      def connect_timeout=(value)
        @connect_timeout = number(:connect_timeout, value, positive: true)
        @engine_policy = nil
      end

      def first_token_timeout=(value)
        @first_token_timeout = number(:first_token_timeout, value, positive: true)
        @engine_policy = nil
      end

      def idle_timeout=(value)
        @idle_timeout = number(:idle_timeout, value, positive: true)
        @engine_policy = nil
      end

      def request_timeout=(value)
        @request_timeout = number(:request_timeout, value, positive: true)
        @engine_policy = nil
      end

      def failover_on_context_length=(value)
        unless [true, false].include?(value)
          raise ConfigurationError, "failover_on_context_length must be true or false, got #{value.inspect}"
        end

        @failover_on_context_length = value
        @engine_policy = nil
      end

      def max_response_bytes=(value)
        @max_response_bytes = integer(:max_response_bytes, value, min: 1)
        @engine_policy = nil
      end
    end
  end
end
