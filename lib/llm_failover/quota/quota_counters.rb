# frozen_string_literal: true

module LlmFailover
  # The shared-quota part of the state-store protocol (Chat's quota_key:). A counter
  # per quota key and window period (QuotaWindow#at gives the period's id and the
  # seconds it has left, the counter's time to live):
  #
  #   reserve_quota(key, period, amount, limit, ttl) -> [reserved, used]
  #       adds +amount+ when the counter is below +limit+, atomically; +used+ is the
  #       counter afterwards (or as it stands, when nothing was reserved)
  #   adjust_quota(key, period, delta, ttl) -> used
  #       adds +delta+ (negative: gives units back), never below 0
  #   quota_used(key, period) -> used
  module QuotaCounters
  end
end

require_relative "quota_counters/in_memory"
