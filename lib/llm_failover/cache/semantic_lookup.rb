# frozen_string_literal: true

require "digest"
require "json"
require_relative "response_cache"

module LlmFailover
  class SemanticCache
    # The semantic tier for one call: embeds the last user message (scrubbed) and looks
    # in one partition: the tenant, the embedding model, and a digest of the rest of
    # the request, so a question from another conversation or model never hits.
    #
    # @api private: built by Chat through SemanticCache#lookup
    class SemanticLookup
      # Finish reasons the semantic tier never stores, beyond the exact tier's refusals:
      # a cut answer (even one the caller's limit cut: a paraphrase may ask for more)
      # and a request for tool calls.
      NEVER = (ResponseCache::REFUSALS + ResponseCache::CUT + %w[tool_calls]).freeze

      # @return [Float, nil] the similarity of the last hit
      attr_reader :similarity

      def initialize(cache:, config:, namespace:, messages:, request:, targets:, format:)
        @cache = cache
        @config = config
        @text = messages.last[1]
        @context = Digest::SHA256.hexdigest(JSON.generate([namespace.to_s, cache.embed_model, messages[0...-1],
                                                           request]))
        @prefix = "#{namespace}/#{cache.embed_model}/"
        @targets = targets
        @format = format
        @vector = nil
      end

      # The index's partition for answers of +target+ (its protocol and model).
      # @return [String]
      def partition(target)
        @prefix + Digest::SHA256.hexdigest(JSON.generate([@context, target.provider.api.to_s, target.model]))
      end

      # @return [Array(ResponseCache::Answer, Float), nil] the nearest answer close
      #   enough and its similarity; nil on a miss or when the embedder is unavailable
      def read
        @vector = @cache.embed(@config, @text)
        return nil unless @vector

        @targets.each do |target|
          value, similarity = @cache.nearest(partition(target), @vector, logger: @config.logger)
          answer = ResponseCache.decode(value)
          return [answer, similarity.to_f] if answer
        end
        nil
      end

      # Queues the answer of +target+ for the index, unless it must never be served
      # again (#storable?) or the lookup had no vector (the embedder was down).
      # @return [Boolean] whether it was queued
      def write(target, content:, model:, finish_reason:, provider_request_id:, json_text: nil, cost: nil)
        return false unless @vector && storable?(content, finish_reason, json_text)

        value = ResponseCache.encode(target, content: content, model: model, finish_reason: finish_reason,
                                             provider_request_id: provider_request_id, json_text: json_text,
                                             cost: cost)
        @cache.add_later(partition(target), @vector, value, logger: @config.logger)
      end

      # Never stored: an empty answer, a refusal, a cut one, a call for tools, and with
      # JSON mode or a schema an answer whose object the check refuses.
      def storable?(content, finish_reason, json_text)
        return false if content.nil? || content.empty? || NEVER.include?(finish_reason)
        return false if @format && (json_text.nil? || @format.check(json_text).nil?)

        true
      end

      def inspect
        "#<#{self.class.name} #{@cache.embed_model}>"
      end
    end
  end
end
