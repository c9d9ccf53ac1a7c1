# frozen_string_literal: true

module LlmFailover
  # The one way the gem warns about something that does not fail the call (a sink,
  # the cache, the state store, a cancel check that raised): through the configured
  # logger (c.logger) when there is one, else Kernel#warn. A logger that raises must
  # not break the call either.
  #
  # @api private
  module Warnings
    module_function

    # @param message [String] what happened, without the "llm_failover: " prefix
    # @param logger [#warn, nil] the chat's or store's logger; the global
    #   configuration's when not given
    def warn(message, logger: LlmFailover.configuration.logger)
      text = "llm_failover: #{message}"
      logger ? logger.warn(text) : Kernel.warn(text)
      nil
    rescue StandardError
      nil
    end
  end
end
