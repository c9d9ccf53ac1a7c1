# frozen_string_literal: true

require "bigdecimal"
require "digest"
require "json"
require_relative "../records/usage_log"
require_relative "../records/warnings"

module LlmFailover
  # The exact response cache in front of the providers: how a call's key is made, what
  # an entry holds, what may be stored, and how a store's own failure is survived (a
  # cache is an optimisation: a store that raises is a miss, never a failed call).
  #
  # The store is any object with #read(key) and #write(key, value, expires_in:); the
  # value written is a JSON String, so that every store keeps it as it is.
  #
  # @api private: built by Chat for a call when a cache is configured and not bypassed
  class ResponseCache
    KEY_PREFIX = "llm_failover:response:v1:"

    # Finish reasons whose answer is never stored: a content-policy refusal (OpenAI
    # content_filter, Anthropic refusal) may not be what the same prompt gets next time.
    REFUSALS = %w[content_filter refusal].freeze
    # An answer cut by the token limit is stored only when the request set that limit:
    # without one, the cut is the provider's default, not what the caller asked for.
    CUT = %w[length max_tokens].freeze

    # What a hit hands back: the answer and who produced it; +cost+ what the answer
    # cost when it was made (BigDecimal USD; nil in entries that did not say).
    Answer = Struct.new(:content, :model, :provider, :requested_model, :finish_reason, :provider_request_id,
                        :json_text, :cost, keyword_init: true)

    # @param store [#read, #write] the configured cache store
    # @param ttl [Numeric, nil] seconds an entry lives (nil: as long as the store keeps it)
    # @param logger [Logger, nil] where a failing store is reported (once per store class)
    # @param namespace [String] the tenant: no namespace ever reads another's entries
    # @param request [Array] everything else that changes the answer, JSON-ready
    # @param lookup [Array<Target>] the targets whose entries may answer, in order
    # @param max_tokens [Integer, nil] the limit the request set
    def initialize(store:, ttl:, logger:, namespace:, request:, lookup:, max_tokens:)
      @store = store
      @ttl = ttl
      @logger = logger
      # Hashed once for every key of this call: the messages are the bulk of it.
      @request_digest = Digest::SHA256.hexdigest(JSON.generate([namespace.to_s, request]))
      @lookup = lookup
      @max_tokens = max_tokens
    end

    # The entry's key for +target+ (its protocol and the model asked of it).
    # @return [String]
    def key(target)
      KEY_PREFIX + Digest::SHA256.hexdigest(JSON.generate([target.provider.api.to_s, target.model, @request_digest]))
    end

    # @return [Answer, nil] the first lookup target's entry, nil on a miss
    def read
      @lookup.each do |target|
        value = guard(:read) { @store.read(key(target)) }
        answer = decode(value)
        return answer if answer
      end
      nil
    end

    # Stores a successful answer under the key of +target+, the one that produced it,
    # unless it is one that must not be served again (see #storable?).
    # @return [Boolean] whether it was written
    def write(target, content:, model:, finish_reason:, provider_request_id:, json_text: nil, cost: nil)
      return false unless storable?(content, finish_reason)

      # Encoding is guarded too: whatever an answer holds, a call that was answered
      # never fails on its way into the cache.
      guard(:write) do
        value = ResponseCache.encode(target, content: content, model: model, finish_reason: finish_reason,
                                             provider_request_id: provider_request_id, json_text: json_text,
                                             cost: cost)
        @store.write(key(target), value, expires_in: @ttl)
      end
      true
    end

    # An entry's value: a JSON String every store keeps as it is (the semantic tier's
    # index keeps the same).
    # @return [String]
    def self.encode(target, content:, model:, finish_reason:, provider_request_id:, json_text:, cost: nil)
      JSON.generate("content" => content, "model" => model, "provider" => target.provider.name.to_s,
                    "requested_model" => target.model, "finish_reason" => finish_reason,
                    "provider_request_id" => provider_request_id, "json_text" => json_text,
                    "cost" => cost&.to_s("F"))
    end

    # @return [Answer, nil] nil for anything that is not an entry of ours
    def self.decode(value)
      return nil unless value.is_a?(String)

      h = JSON.parse(value)
      return nil unless h.is_a?(Hash) && h["content"].is_a?(String) && h["provider"].is_a?(String) &&
                        h["requested_model"].is_a?(String)

      Answer.new(content: h["content"], model: h["model"], provider: h["provider"].to_sym,
                 requested_model: h["requested_model"], finish_reason: h["finish_reason"],
                 provider_request_id: h["provider_request_id"], json_text: h["json_text"], cost: decimal(h["cost"]))
    rescue JSON::ParserError
      nil # an entry written by something else under our prefix: a miss
    end

    # @return [BigDecimal, nil]
    def self.decimal(text)
      text.is_a?(String) ? BigDecimal(text) : nil
    rescue ArgumentError
      nil
    end
    private_class_method :decimal

    # Never stored: an empty answer, a refusal, an answer cut by a limit nobody asked for.
    def storable?(content, finish_reason)
      return false if content.nil? || content.empty?
      return false if REFUSALS.include?(finish_reason)
      return false if CUT.include?(finish_reason) && @max_tokens.nil?

      true
    end

    # A cached answer cut into word-sized pieces for a block (joined, they are +text+).
    # @return [Array<String>]
    def self.chunks(text)
      pieces = text.scan(/\s*\S+\s*/)
      pieces.empty? ? [text] : pieces
    end

    def inspect
      "#<#{self.class.name} store=#{@store.class.name}>"
    end

    private

    def decode(value)
      ResponseCache.decode(value)
    end

    # A store that raises (Redis down, a full disk) must not fail the call.
    def guard(operation)
      yield
    rescue StandardError => e
      if UsageLog.first_failure?([:cache, @store.class])
        Warnings.warn("cache #{operation} failed (#{@store.class}): #{e.class}: #{e.message}; " \
                      "answering without the cache", logger: @logger)
      end
      nil
    end
  end
end
