# frozen_string_literal: true

require "time"

require_relative "../errors"
require_relative "../quota/model_picker"
require_relative "../records/warnings"
require_relative "model_name"
require_relative "target"

module LlmFailover
  class Chat
    # Chat's targets (included in Chat): the primary and the backup, switched by
    # #with_model and resolved once from the chat's configuration; the call's one
    # quota pick between them, and an exhausted quota's "later".
    module Targets
      # Switches the primary target; the messages stay. The backup is kept unless
      # backup_model: / backup_provider: are given (nil drops it).
      # @return [self]
      def with_model(model, provider: @provider, backup_model: KEEP, backup_provider: KEEP)
        set_primary(model, provider)
        set_backup(backup_model.equal?(KEEP) ? @backup_model : backup_model,
                   backup_provider.equal?(KEEP) ? @backup_provider : backup_provider)
        check_priced_quota
        self
      end

      def backup?
        !@backup_model.nil? && !@backup_provider.nil?
      end

      private

      # The call's one quota pick, made before anything else reads it (the cache key,
      # the engine's targets): the core's lf_pick, through ModelPicker, over the
      # primary's quota as it stands before this call. A shared quota reserves its hold
      # here (+ceiling+: the most the request can cost, by :tokens and :usd).
      # @raise [QuotaExceededError] with enforce_quota, the quota used up and no backup
      def backup_first?(reservation, ceiling = nil)
        quota = reservation ? reservation.reserve(ceiling) : @options.quota_now
        return false unless quota

        ModelPicker.new(model: @model, provider: @provider, backup_model: @backup_model,
                        backup_provider: @backup_provider, quota: quota,
                        enforce_quota: @options.enforce_quota).backup_first?
      end

      # The targets with the credentials a call sends now, once per call before anything
      # reads them: a provider whose token was renewed gives new ones (ProviderConfig#target);
      # a key keeps the same.
      # @raise [ConfigurationError] a token source failed: no request is sent
      def renew_targets
        primary = @primary_target.current
        backup = @backup_target&.current
        return if primary.equal?(@primary_target) && backup.equal?(@backup_target)

        @primary_target = primary
        @backup_target = backup
        @targets = nil
      end

      # The primary, then the backup if there is one.
      def engine_targets
        @targets ||= (@backup_target ? [@primary_target, @backup_target] : [@primary_target]).freeze
      end

      def set_primary(model, provider)
        model = ModelName.check(model, "model")
        raise ConfigurationError, "provider: is required (configured: #{configured_names})" if provider.nil?

        provider_config = @config.provider_config(provider)
        @provider = provider_config.name
        @model = model
        # The targets are resolved here, once: a chat's configuration is its own copy.
        @primary_target = provider_config.target(model)
        @targets = nil
      end

      # Half a backup counts as none (DESIGN), but is almost always a mistake: say so.
      def set_backup(model, provider)
        @targets = nil
        if model.nil? && provider.nil? # most chats
          @backup_model = @backup_provider = @backup_target = nil
          return
        end

        model = ModelName.check(model, "backup_model") unless model.nil?
        provider_config = @config.provider_config(provider) unless provider.nil?
        provider = provider_config&.name
        if model.nil? ^ provider.nil?
          warn_config("#{model ? 'backup_model' : 'backup_provider'} given without the other: this chat has no backup")
        end
        @backup_model = model
        @backup_provider = provider
        @backup_target = model && provider ? provider_config.target(model) : nil
      end

      # A shared quota in dollars needs the primary's price: without one it could not
      # hold anything, and would never stop a call.
      # @raise [ConfigurationError]
      def check_priced_quota
        return unless @options.quota_by == :usd && @options.shared_quota?
        return if @config.pricing.for(@primary_target)

        raise ConfigurationError, "quota_by: :usd needs a price for #{@primary_target.label} " \
                                  "(c.price #{@provider.inspect}, #{@model.inspect}, input: ..., output: ...)"
      end

      def configured_names
        names = @config.providers.keys + @config.pools.keys
        names.empty? ? "none" : names.map(&:inspect).join(", ")
      end

      def warn_config(message)
        Warnings.warn(message, logger: @config.logger)
      end

      # An exhausted quota (enforce_quota) means "later": when its window ends. Past
      # max_wait_in_call, a RetryLater a job reschedules on; else the error, with retry_at.
      def quota_later(error)
        error.retry_at ||= Time.now + @options.quota_window.at[1]
        return error if error.retry_at - Time.now <= @config.max_wait_in_call

        RetryLater.new("#{error.message} (the quota's window ends at #{error.retry_at.utc.iso8601})",
                       retry_at: error.retry_at, reason: :quota, provider: @provider, model: @model)
      end
    end
  end
end
