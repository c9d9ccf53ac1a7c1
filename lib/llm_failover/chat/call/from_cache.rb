# frozen_string_literal: true

require_relative "../reply"

module LlmFailover
  class Call
    # A call answered from a cache tier (included in Call): whether an entry may
    # answer it, and the Reply it makes without a request. Uses the call's
    # Delivery, Records, restored and parsed_json.
    module FromCache
      private

      # An entry without the checked object cannot answer a JSON call, nor one whose
      # object the answer check refuses now (an older version cached NaN).
      def servable?(cached)
        cached && !(@answer_format && (cached.json_text.nil? || @answer_format.check(cached.json_text).nil?))
      end

      # A cache hit: no request, no provider, no circuit. The answer goes through the
      # store and the block as a streamed one would, and one attempt record says it
      # was served from the cache.
      def answer_from_cache(cached, tier:, similarity: nil)
        @quota_reservation&.release # a cached answer costs the quota nothing
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        started_at = Time.now
        provider = cached.provider
        content = restored(cached.content)
        model = cached.requested_model
        target = @targets[0] # the stored message is the call's; its provider and model are the entry's
        begin
          @delivery.whole(content, model: model, stored_model: cached.model, provider: provider)
          @delivery.finish(target, content: content, model: cached.model, provider: provider, input_tokens: 0,
                                   output_tokens: 0)
        ensure
          @delivery.mark_failed(target, named: false) # a no-op once finished
        end
        @records.cache_hit(provider: provider, model: model,
                           latency_ms: (Process.clock_gettime(Process::CLOCK_MONOTONIC) - started) * 1000.0,
                           started_at: started_at, provider_request_id: cached.provider_request_id, tier: tier,
                           similarity: similarity, cost_saved: cached.cost)
        Reply.new(content: content, model: model, response_model: cached.model, provider: provider,
                  input_tokens: 0, output_tokens: 0,
                  request_id: @request_id, attempts: @records.to_a, failover: false,
                  finish_reason: cached.finish_reason, provider_request_id: cached.provider_request_id,
                  streamed: @delivery.streamed?, chunk_count: @delivery.chunk_count, cached: true,
                  json: parsed_json(cached.json_text), cache_tier: tier, similarity: similarity)
      end
    end
  end
end
