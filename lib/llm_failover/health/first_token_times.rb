# frozen_string_literal: true

module LlmFailover
  # The hedging part of the state-store protocol (hedge_after: :auto, HedgeDelay): each
  # target's most recent times to first token, in seconds, newest first, at most
  # WINDOW of them:
  #
  #   record_first_tokens(key, seconds_list) -> nil    adds them, drops the oldest past WINDOW
  #   first_token_times(key) -> [Float, ...]           what is kept, newest first
  #
  # A key is "provider:model". A store without these methods makes :auto hedge never.
  module FirstTokenTimes
    # Samples kept per target: enough for a 95th percentile to rest on ten of them,
    # few enough that a provider's change of pace shows within minutes of traffic.
    WINDOW = 200
  end
end

require_relative "first_token_times/in_memory"
