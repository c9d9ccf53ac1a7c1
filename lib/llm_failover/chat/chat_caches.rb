# frozen_string_literal: true

require_relative "../cache/response_cache"
require_relative "../scrubber/scrubber"

module LlmFailover
  class Chat
    # Chat's per-call caches and scrubbing (included in Chat): the exact response
    # cache, the semantic tier behind it, the scrubbing session of one call.
    module Caches
      private

      # @return [Scrubber::Session, nil] nil when no scrubber is configured or scrub: false
      def scrub_session
        scrubber = @config.scrubber
        scrubber && @options.scrub != false ? Scrubber::Session.new(scrubber) : nil
      end

      # Whether any tier may read or keep this call's answer (+cache+ as #ask took it):
      # without one, no cache key is made.
      def cache_tiers?(cache)
        return cache != false unless cache == true

        @config.cache || @config.semantic_cache ? true : false
      end

      # The response cache for one call, nil when there is none or it is bypassed. The
      # key is what was asked: the primary's entry is read, and also the backup's when
      # the quota sends the call to the backup first (the core's pick, through
      # ModelPicker). An answer is written under the key of the target that produced it
      # (see Call), so a backup's answer never serves a later call to the primary, which
      # may be healthy again by then.
      def response_cache(cache, backup_first:, request:, max_tokens:)
        store = cache == true ? @config.cache : cache
        return nil unless store

        lookup = backup_first ? [@primary_target, @backup_target] : [@primary_target]
        ResponseCache.new(store: store, ttl: @config.cache_ttl, logger: @config.logger,
                          namespace: @options.cache_namespace,
                          request: request, lookup: lookup,
                          max_tokens: max_tokens)
      end

      # The semantic tier for one call (SemanticCache#lookup), nil when none is
      # configured or the call bypasses the cache; read after the exact tier missed.
      def semantic_lookup(cache, backup_first:, messages:, request:, format:)
        tier = @config.semantic_cache
        return nil unless tier && cache != false

        tier.lookup(config: @config, namespace: @options.cache_namespace, messages: messages, request: request,
                    targets: backup_first ? [@primary_target, @backup_target] : [@primary_target], format: format)
      end
    end
  end
end
