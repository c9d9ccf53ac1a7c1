# frozen_string_literal: true

module LlmFailover
  # The one way the gem warns about something that does not fail the call: through
  # c.logger (Rails.logger in an app) when there is one, else Kernel#warn. A logger
  # that raises must not break the call either.
  #
  # Written here because the ruby-layout branch's own helper (records/warnings.rb, the
  # same name and signature) had not reached main: when it does, this file goes and
  # its callers require that one.
  #
  # @api private
  module Warnings
    module_function

    # @param message [String] what happened, without the "llm_failover: " prefix
    # @param logger [#warn, nil] a chat's or store's own logger; c.logger when not given
    def warn(message, logger: LlmFailover.configuration.logger)
      text = "llm_failover: #{message}"
      logger ? logger.warn(text) : Kernel.warn(text)
      nil
    rescue StandardError
      nil
    end
  end
end
