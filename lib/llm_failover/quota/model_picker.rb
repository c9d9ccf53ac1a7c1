# frozen_string_literal: true

require_relative "../errors"
require "llm_failover/llm_failover" # the compiled extension
require_relative "../chat/model_name"
require_relative "quota"

module LlmFailover
  # Chooses the target of a call before any network: the backup when a backup is
  # configured and the primary's quota is exceeded, otherwise the primary. The
  # decision itself is the C core's (lf_pick), shared with the attempt loop.
  #
  # @example
  #   picker = LlmFailover::ModelPicker.new(model: "gpt-4o", provider: :openai,
  #                                         backup_model: "claude-sonnet-4-6", backup_provider: :anthropic,
  #                                         quota: LlmFailover::Quota.new(limit: 100, used: 100))
  #   picker.pick     # => ["claude-sonnet-4-6", :anthropic]
  #   picker.targets  # => [["claude-sonnet-4-6", :anthropic]]
  class ModelPicker
    # @return [String, Symbol] the primary model
    attr_reader :model
    # @return [String, Symbol] the primary provider
    attr_reader :provider
    # @return [String, Symbol, nil] the backup model, as given
    attr_reader :backup_model
    # @return [String, Symbol, nil] the backup provider, as given
    attr_reader :backup_provider
    # @return [Quota, nil] the primary's quota (nil: unlimited)
    attr_reader :quota

    # @param model [String, Symbol] the primary model (ModelName's rule)
    # @param provider [String, Symbol] the primary provider
    # @param backup_model [String, Symbol, nil] half a backup (a model without a provider) counts as none
    # @param backup_provider [String, Symbol, nil]
    # @param quota [Quota, nil] the primary's quota; nil is unlimited
    # @param enforce_quota [Boolean] raise QuotaExceededError instead of calling an exceeded
    #   primary when there is no backup
    # @raise [ModelNotFoundError] a missing primary model
    # @raise [ConfigurationError] a missing primary provider, a name that is not a String or Symbol,
    #   a quota that is not a Quota, or an enforce_quota that is not a Boolean
    def initialize(model:, provider:, backup_model: nil, backup_provider: nil, quota: nil, enforce_quota: false)
      @model = ModelName.check(model, "model")
      @provider = required_name(:provider, provider)
      # Half a backup, or a blank one, counts as none (#backup?).
      @backup_model = ModelName.blank?(backup_model) ? backup_model : ModelName.check(backup_model, "backup_model")
      @backup_provider = optional_name(:backup_provider, backup_provider)
      unless quota.nil? || quota.is_a?(Quota)
        raise ConfigurationError, "quota must be a LlmFailover::Quota or nil, got #{quota.inspect}"
      end
      unless [true, false].include?(enforce_quota)
        raise ConfigurationError, "enforce_quota must be true or false, got #{enforce_quota.inspect}"
      end

      @quota = quota
      @enforce_quota = enforce_quota
    end

    # @return [Boolean] whether exceeding the quota raises when there is no backup
    def enforce_quota?
      @enforce_quota
    end

    # @return [Boolean] whether both a backup model and a backup provider are present and non-blank
    def backup?
      !ModelName.blank?(@backup_model) && !ModelName.blank?(@backup_provider)
    end

    # @return [Array(String, Symbol)] the target to call first: `[model, provider]`
    # @raise [QuotaExceededError] with enforce_quota, an exceeded quota and no backup
    def pick
      choice == :backup ? backup_target : primary_target
    end

    # @return [Boolean] whether the quota sends the call to the backup first (then
    #   alone: nothing behind it)
    # @raise [QuotaExceededError] with enforce_quota, an exceeded quota and no backup
    def backup_first?
      choice == :backup
    end

    # The ordered targets the attempt loop may try. Failover is one level: a backup
    # picked because of the quota has nothing behind it.
    # @return [Array<Array(String, Symbol)>] `[primary, backup]`, `[primary]` or `[backup]`
    # @raise [QuotaExceededError] with enforce_quota, an exceeded quota and no backup
    def targets
      return [backup_target] if choice == :backup

      backup? ? [primary_target, backup_target] : [primary_target]
    end

    # @return [String]
    def inspect
      backup = backup? ? "#{@backup_model}@#{@backup_provider}" : "none"
      "#<#{self.class.name} primary=#{@model}@#{@provider} backup=#{backup} " \
        "quota=#{@quota.inspect} enforce_quota=#{@enforce_quota}>"
    end

    private

    # :primary or :backup; raises where lf_pick refuses.
    def choice
      decision = __choose(@quota, backup?, @enforce_quota)
      return decision unless decision == :refuse

      raise QuotaExceededError,
            "#{@provider}: quota exceeded for #{@model} on #{@provider} (used #{@quota.used} of #{@quota.limit}) " \
            "and no backup model and provider are configured; enforce_quota: true refuses the call"
    end

    def primary_target
      [@model, @provider]
    end

    def backup_target
      [@backup_model, @backup_provider]
    end

    def required_name(key, name)
      optional_name(key, name).tap do |n|
        raise ConfigurationError, "#{key} must be given (a non-empty String or Symbol)" if ModelName.blank?(n)
      end
    end

    def optional_name(key, name)
      return name if name.nil? || name.is_a?(String) || name.is_a?(Symbol)

      raise ConfigurationError, "#{key} must be a String or Symbol, got #{name.inspect}"
    end
  end
end
