# frozen_string_literal: true

module LlmFailover
  # Raised before any HTTP: a missing key, an unknown provider, a bad option.
  class ConfigurationError < StandardError; end

  # Raised before any HTTP: the chat names a model or provider nobody configured.
  class ModelNotFoundError < StandardError; end

  # Raised only with enforce_quota: true when the quota is used up and no backup exists.
  class QuotaExceededError < StandardError; end

  # A provider call failed. Carries what a caller needs to decide and to debug,
  # and never the API key.
  class Error < StandardError
    attr_reader :status, :body, :provider, :model, :request_id, :retry_after,
                :partial_content, :attempts, :provider_request_id, :error_type, :error_code

    # @param message [String] human-readable description (never contains a key)
    def initialize(message = nil, status: nil, body: nil, provider: nil, model: nil, request_id: nil,
                   retry_after: nil, retryable: nil, partial_content: nil, attempts: nil,
                   provider_request_id: nil, error_type: nil, error_code: nil)
      super(message || self.class.name)
      @status = status
      @body = body
      @provider = provider
      @model = model
      @request_id = request_id
      @retry_after = retry_after
      @retryable = retryable
      @partial_content = partial_content
      @attempts = attempts || []
      @provider_request_id = provider_request_id
      @error_type = error_type
      @error_code = error_code
    end

    # Whether retrying the same target may help (the class's default unless the
    # provider said otherwise, e.g. with x-should-retry).
    def retryable?
      @retryable.nil? ? self.class.retryable_by_default? : @retryable
    end

    def self.retryable_by_default?
      false
    end

    # @api private: the attempt loop attaches the full attempt list once known.
    def attach(request_id:, attempts:)
      @request_id = request_id
      @attempts = attempts
      self
    end
  end

  # Retry the target, then fail over.
  class RetryableError < Error
    def self.retryable_by_default?
      true
    end
  end

  class RateLimitError < RetryableError; end
  class ServerError < RetryableError; end
  class ServiceUnavailableError < RetryableError; end
  class OverloadedError < RetryableError; end
  # Connect, first token, idle or total deadline. Fails over without retrying
  # the silent target.
  class TimeoutError < RetryableError
    # @return [Symbol, nil] which deadline passed: :connect, :first_token, :idle or :total
    #   (the core reports it; nil when the error was made without one)
    attr_reader :phase

    def initialize(message = nil, phase: nil, **details)
      super(message, **details)
      @phase = phase
    end
  end
  class ConnectionError < RetryableError; end
  class StreamInterruptedError < RetryableError; end
  class InvalidResponseError < RetryableError; end

  # Another call is answering the same idempotency_key (a double submit, a job run
  # twice at once) and did not finish within idempotency_wait. No request was sent and
  # nothing was stored; retried later, the ask returns that call's stored answer. A
  # RetryableError so that `retry_on LlmFailover::RetryableError` retries it.
  class IdempotencyConflict < RetryableError; end

  # The account is out of money: fail over, never retry the same target.
  class ProviderQuotaError < Error; end

  # Not retryable: raised at once, the backup is never asked.
  class BadRequestError < Error; end
  class ContextLengthExceededError < BadRequestError; end
  class ContentPolicyError < BadRequestError; end
  class UnauthorizedError < Error; end
  class ForbiddenError < Error; end
  class NotFoundError < Error; end
  class ConnectionRefusedError < Error; end

  # Never raised: the error_class of an AttemptRecord whose target was skipped (no
  # request sent) because its circuit was open. An open circuit never fails a call
  # by itself.
  class CircuitOpenError < Error; end

  # Never raised: the error_class of the AttemptRecord of an attempt its caller cut
  # (task.stop, with_timeout, Async::Stop, Thread#kill, Timeout.timeout, an exception
  # from the block). The exception that stopped the call goes on up unchanged; the
  # attempt is not the provider's failure and never counts against a circuit.
  class AbortedError < Error; end
end
