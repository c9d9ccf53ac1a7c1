# frozen_string_literal: true

module LlmFailover
  # The hedging part of the state-store protocol (hedge_after: :auto): each target's
  # latest WINDOW times to first token, in seconds. A store without it never hedges :auto.
  #   record_first_tokens(key, seconds_list) -> nil
  #   first_token_times(key) -> [Float, ...]   newest first
  module FirstTokenTimes
    # Enough for a 95th percentile to rest on ten samples; few enough to follow a change of pace.
    WINDOW = 200
  end
end

require_relative "first_token_times/in_memory"
