# frozen_string_literal: true

require "llm_failover/llm_failover" # Engine::Headroom

module LlmFailover
  # How LlmFailover.health shows a pool host's last Engine::Headroom: its counts, and
  # reset times a reader can compare with the clock.
  #
  # @api private: MemoryStateStore#health and RedisStateStore#health
  module Headroom
    # @param headroom [Engine::Headroom, nil]
    # @param now [Time]
    # @return [Hash, nil] :requests and :tokens left (nil: not said), :requests_reset_at
    #   and :tokens_reset_at (Time, nil: not said); nil when nothing is known
    def self.shown(headroom, now = Time.now)
      return nil unless headroom

      { requests: headroom.requests, tokens: headroom.tokens,
        requests_reset_at: headroom.requests_for && (now + headroom.requests_for).round(3),
        tokens_reset_at: headroom.tokens_for && (now + headroom.tokens_for).round(3) }
    end
  end
end
