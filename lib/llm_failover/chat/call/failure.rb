# frozen_string_literal: true

require_relative "../../errors"
require_relative "../target"

module LlmFailover
  class Call
    # The error a call raises when no target answered: the final target's error, of
    # the class the engine classified (LlmFailover::Error when it names none), with
    # every attempt attached and, as its #cause, the last error of the target tried
    # before it, so that `rescue => e; e.cause` shows why the primary was left.
    #
    # @api private: built by Call#fail_with
    class Failure
      # @param result [Engine::Result] the engine's, failed
      # @param targets [Array<Target>] the call's targets, in the order tried
      # @param records [Records]
      # @param restore [#call] the text with the request's placeholders restored
      def initialize(result:, targets:, records:, request_id:, restore:)
        @result = result
        @targets = targets
        @records = records
        @request_id = request_id
        @restore = restore
      end

      # @return [Target] the target whose error is final
      def target
        @target ||= Target.of(@targets, @result.target)
      end

      # @return [Error, ConfigurationError] the latter when the call went to a pool's host
      #   whose credential source failed: that source's error, as it was raised
      def error
        r = @result
        if r.error_class == ConfigurationError
          host = Target.host_of(@targets, r.target)
          return host.credential_error if host.credential_error
        end

        build(r.error_class, r.message, target,
              status: r.http_status, body: r.body, retry_after: r.retry_after, retryable: r.retryable,
              partial_content: @restore.call(r.partial_content), provider_request_id: r.provider_request_id,
              error_type: r.error_type, error_code: r.error_code, phase: r.phase)
      end

      # @return [Error, nil] the last error of the target tried before the final one
      def cause
        attempt, earlier = @records.earlier_failure(target, @targets)
        return nil unless attempt

        build(attempt.error_class, attempt.error_message, earlier,
              status: attempt.http_status, retry_after: attempt.retry_after,
              provider_request_id: attempt.provider_request_id, phase: attempt.phase)
      end

      private

      def build(klass, message, target, phase: nil, **details)
        klass = Error unless klass.is_a?(Class) && klass <= Error
        details[:phase] = phase if klass <= TimeoutError
        klass.new(message, provider: target.name, model: target.model, request_id: @request_id,
                           attempts: @records.to_a, **details)
      end
    end
  end
end
