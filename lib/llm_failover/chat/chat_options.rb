# frozen_string_literal: true

require_relative "../errors"
require_relative "../quota/quota"
require_relative "../quota/quota_reservation"
require_relative "../quota/quota_window"
require_relative "text"

module LlmFailover
  class Chat
    # The options of one chat (the keywords of LlmFailover.chat other than the targets
    # and the store), each checked once, so that a bad value raises before anything is
    # stored; and what a call reads of its quota options. Frozen: the chats given none
    # share DEFAULTS, and Chat#with_temperature and #with_max_tokens make a copy (#with).
    # The checks of what #ask and #complete take per call are the class methods.
    #
    # @api private: built by Chat
    class Options
      STORE_METHODS = %i[messages conversation add_user add_system replace_system start_assistant
                         append_assistant reset_assistant finish_assistant fail_assistant].freeze
      # What a chat with tools needs of its store besides (MemoryStore's header says how
      # each behaves; finish_assistant takes tool_calls: too).
      TOOL_STORE_METHODS = %i[save_tool_call add_tool_result tool_call].freeze
      QUOTA_BY = %i[calls tokens usd].freeze

      attr_reader :quota, :quota_used, :enforce_quota, :feature, :temperature, :max_tokens, :cache,
                  :cache_namespace, :scrub, :quota_key, :quota_window, :quota_by, :cancel_check

      # @param config [Configuration] the chat's (a shared quota needs its state store)
      def initialize(config:, quota: nil, quota_used: 0, enforce_quota: false, feature: nil,
                     temperature: nil, max_tokens: nil, cache: true, cache_namespace: nil, scrub: true,
                     quota_key: nil, quota_window: :month, quota_by: :calls, cancel_check: nil)
        unless QUOTA_BY.include?(quota_by)
          raise ConfigurationError, "quota_by must be :calls, :tokens or :usd, got #{quota_by.inspect}"
        end

        @quota = self.class.quota(quota, by: quota_by)
        @quota_used = self.class.quota_used(quota_used)
        @enforce_quota = self.class.boolean(:enforce_quota, enforce_quota)
        @feature = self.class.feature(feature)
        @temperature = self.class.temperature(temperature)
        @max_tokens = self.class.max_tokens(max_tokens)
        @cache = self.class.cache(cache)
        @cache_namespace = self.class.name_or_nil(:cache_namespace, cache_namespace)
        @scrub = self.class.boolean(:scrub, scrub)
        @quota_window = QuotaWindow.for(quota_window)
        @quota_by = quota_by
        @quota_key = shared_quota_key(config, quota_key, quota_used)
        @cancel_check = self.class.cancel_check(cancel_check)
        freeze
      end

      # @return [Options] a copy with +temperature+ and/or +max_tokens+ replaced, checked
      def with(temperature: @temperature, max_tokens: @max_tokens)
        copy = dup
        copy.sampling(self.class.temperature(temperature), self.class.max_tokens(max_tokens))
        copy.freeze
      end

      # The primary's quota as it stands, read just before the call's pick. Without a
      # limit (nil or 0, which means unlimited) there is nothing to pick: quota_used is
      # not even asked.
      # @return [Quota, nil]
      def quota_now
        return nil if @quota.nil? || @quota.zero?

        Quota.new(limit: @quota, used: quota_used_now) # its own checks of the figures
      end

      # A shared quota (quota_key:) is counted in the state store: one reservation per
      # call. Without a limit (nil or 0) nothing is reserved.
      # @return [QuotaReservation, nil]
      # @param target [Target] the primary, whose requests the hold pays for
      # @param pricing [Pricing] the chat's prices (a hold by :usd is reckoned at the primary's)
      def quota_reservation(state_store, target:, pricing:)
        return nil unless shared_quota?

        QuotaReservation.new(store: state_store, key: @quota_key, limit: @quota, window: @quota_window,
                             by: @quota_by, target: target, price: pricing.for(target))
      end

      # @return [Boolean] whether calls hold part of a shared quota (quota_key: and a limit)
      def shared_quota?
        !(@quota_key.nil? || @quota.nil? || @quota.zero?)
      end

      class << self
        # @return [Numeric, nil]
        # @raise [ArgumentError] negative, not finite, not a real number
        def temperature(value)
          return nil if value.nil?
          unless value.is_a?(Numeric) && value.real? && value.to_f.finite? && !value.negative?
            raise ArgumentError, "temperature must be a non-negative number, got #{value.inspect}"
          end

          value
        end

        # @return [Integer, nil]
        # @raise [ArgumentError] not a positive Integer
        def max_tokens(value)
          return nil if value.nil?
          unless value.is_a?(Integer) && value.positive?
            raise ArgumentError, "max_tokens must be a positive Integer, got #{value.inspect}"
          end

          value
        end

        # true: the configured cache; false: none; or a store for this chat alone.
        # @raise [ConfigurationError]
        def cache(value)
          return value if value == true || value == false
          return value if value.respond_to?(:read) && value.respond_to?(:write)

          raise ConfigurationError, "cache must be true, false or a store with #read and #write, got #{value.inspect}"
        end

        # @raise [ConfigurationError] a store that lacks a method Chat calls
        def store(store)
          missing = STORE_METHODS.reject { |m| store.respond_to?(m) }
          return store if missing.empty?

          raise ConfigurationError, "store #{store.class} lacks #{missing.map { |m| "##{m}" }.join(', ')}"
        end

        # An Integer of calls or tokens; by :usd, any non-negative number of dollars.
        def quota(quota, by: :calls)
          return nil if quota.nil?
          return quota if quota.is_a?(Integer) && !quota.negative?
          if by == :usd && quota.is_a?(Numeric) && quota.real? && quota.finite? && !quota.negative?
            return quota
          end

          kind = by == :usd ? "a non-negative number of dollars" : "a non-negative Integer"
          raise ConfigurationError, "quota must be #{kind} or nil (0 means unlimited), got #{quota.inspect}"
        end

        def quota_used(used)
          return used if used.is_a?(Numeric) && used.real? && !used.negative?
          return used if used.respond_to?(:call)

          raise ConfigurationError, "quota_used must be a non-negative number or respond to #call, got #{used.inspect}"
        end

        def feature(feature)
          return nil if feature.nil?
          unless feature.is_a?(String) || feature.is_a?(Symbol)
            raise ConfigurationError, "feature must be a String, got #{feature.class}"
          end

          text(feature.to_s, :feature)
        end

        # A non-empty String or Symbol, kept as a frozen String; nil stays nil.
        def name_or_nil(option, value)
          return nil if value.nil?
          unless (value.is_a?(String) || value.is_a?(Symbol)) && !value.to_s.empty?
            raise ConfigurationError, "#{option} must be a non-empty String, got #{value.inspect}"
          end

          text(value.to_s, option)
        end

        # A name that goes into keys, records and log lines as text: Rack gives header
        # values as binary, read here as UTF-8 (anything else converted), so that no
        # serialisation fails later, after the prompt was stored.
        def text(value, option)
          Text.utf8(value, option.to_s).dup.freeze
        rescue ArgumentError => e
          raise ConfigurationError, e.message
        end

        def boolean(option, value)
          return value if value == true || value == false

          raise ConfigurationError, "#{option} must be true or false, got #{value.inspect}"
        end

        def cancel_check(check)
          return check if check.nil? || check.respond_to?(:call) || check.respond_to?(:watch)

          raise ConfigurationError, "cancel_check must respond to #call or #watch, got #{check.inspect}"
        end
      end

      protected

      def sampling(temperature, max_tokens)
        @temperature = temperature
        @max_tokens = max_tokens
      end

      private

      def quota_used_now
        used = @quota_used.respond_to?(:call) ? @quota_used.call : @quota_used
        raise ConfigurationError, "quota_used must give a number, got #{used.inspect}" unless used.is_a?(Numeric) && used.real?

        used
      end

      # A shared quota (quota_key:) is counted in the state store, which must keep
      # quota counters; quota_used: would be a second count.
      def shared_quota_key(config, key, used)
        key = self.class.name_or_nil(:quota_key, key)
        return nil if key.nil?
        raise ConfigurationError, "quota_used: and quota_key: exclude each other (the state store counts)" unless used == 0
        unless config.state_store.respond_to?(:reserve_quota)
          raise ConfigurationError, "state_store #{config.state_store.class} keeps no quota counters (reserve_quota)"
        end

        key
      end

      # Every option at its default: no shared quota, so no configuration to check against.
      DEFAULTS = new(config: nil)
    end
  end
end
