# frozen_string_literal: true

require_relative "../records/warnings"

module LlmFailover
  # The outage rule of a shared index (RedisIndex, ActiveRecordIndex): a store that
  # fails is one warning when it starts and one when it answers again, never an
  # exception; meanwhile each operation gets its fallback.
  #
  # @api private
  class StoreOutage
    # @param owner [String] the index's class name, in the warnings
    # @param errors [Array<Class>] what counts as the store failing
    # @param logger [#warn, nil] where the warnings go (c.logger when nil)
    def initialize(owner:, errors:, logger:)
      @owner = owner
      @errors = errors
      @logger = logger
      @down = false
    end

    # Runs the block against the store.
    # @param meanwhile [String] what the index does until the store answers (the
    #   warning's end)
    # @return the block's value, or +fallback+ when the store failed
    def guard(meanwhile:, fallback: nil)
      result = yield
      if @down
        @down = false
        Warnings.warn("#{@owner}: the store answers again", logger: logger)
      end
      result
    rescue *@errors => e
      unless @down
        @down = true
        Warnings.warn("#{@owner}: the store failed (#{e.class}: #{e.message.lines.first&.strip}); #{meanwhile}",
                      logger: logger)
      end
      fallback
    end

    private

    def logger
      @logger || LlmFailover.configuration.logger
    end
  end
end
