# frozen_string_literal: true

module LlmFailover
  # Raised before any HTTP: a missing key, an unknown provider, a bad option.
  class ConfigurationError < StandardError; end

  # Raised before any HTTP: the chat names a model or provider nobody configured.
  class ModelNotFoundError < StandardError; end

  # Raised only with enforce_quota: true when the quota is used up and no backup exists:
  # itself when its window ends within max_wait_in_call, else a RetryLater (reason
  # :quota) that `rescue QuotaExceededError` still catches.
  class QuotaExceededError < StandardError
    # @return [Time, nil] when the quota's window ends (its count starts again)
    attr_accessor :retry_at

    # The RetryLater that stands for an exhausted quota (its window ends past
    # max_wait_in_call) is caught by `rescue QuotaExceededError` too, as before it
    # existed; its #cause is the QuotaExceededError itself.
    def self.===(other)
      super || (other.is_a?(RetryLater) && other.reason == :quota)
    end
  end

  # A provider call failed. Carries what a caller needs to decide and to debug,
  # and never the API key.
  class Error < StandardError
    attr_reader :status, :body, :provider, :model, :request_id, :retry_after,
                :partial_content, :attempts, :provider_request_id, :error_type, :error_code

    # @return [Time, nil] when trying again may help, when the gem knows: the provider's
    #   Retry-After, or when the call's open circuits let a probe through. Set on the
    #   final error of a call (RetryLater's is never nil).
    attr_accessor :retry_at

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
    # provider said otherwise, e.g. with x-should-retry). The default is the C core's
    # rule for the class's kind: Error.retryable_by_default?, defined by the compiled
    # extension (errors.c, lf_kind_retryable).
    def retryable?
      @retryable.nil? ? self.class.retryable_by_default? : @retryable
    end

    # @api private: the attempt loop attaches the full attempt list once known.
    def attach(request_id:, attempts:)
      @request_id = request_id
      @attempts = attempts
      self
    end
  end

  # Retry the target, then fail over. Raised as itself for a failure the official SDKs
  # retry without naming it: status 408 or 409, or x-should-retry: true on a status no
  # subclass names (the C core's classification, lf_classify.c).
  class RetryableError < Error; end

  class RateLimitError < RetryableError; end

  # "Later", past what a call may sleep inside itself (max_wait_in_call): a provider's
  # Retry-After, every circuit of the call open, or an exhausted quota (enforce_quota)
  # whose window ends later. Nothing is retried in the call: a job reschedules itself
  # at #retry_at (LlmFailover::Job). A RetryableError, so that `retry_on
  # LlmFailover::RetryableError` and `rescue LlmFailover::Error` still see it; a
  # deterministic 4xx never becomes one. #cause is the error it stands for
  # (RateLimitError, ServiceUnavailableError, QuotaExceededError...), #reason says
  # which source: :retry_after, :circuits_open or :quota.
  class RetryLater < RetryableError
    attr_reader :reason

    # @param retry_at [Time]
    # @param reason [Symbol] :retry_after, :circuits_open or :quota
    def initialize(message = nil, retry_at:, reason:, **details)
      super(message, **details)
      self.retry_at = retry_at
      @reason = reason
    end

    # @return [Float] seconds from now until #retry_at (0 once it is past)
    def retry_in
      [retry_at - Time.now, 0.0].max
    end
  end
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

  # The message's attachments are more than any target of the call can take (a type
  # it takes not, over its per-file size or per-message count limit: the message
  # names the file and the limit): no request was sent. Also the error_class of the
  # AttemptRecord (skipped, no request) of a target left out for that while another
  # target of the call answered. Deterministic: asking again meets the same limits.
  class AttachmentRefusedError < BadRequestError; end

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

module LlmFailover
  # The tool loop's own errors. None is an LlmFailover::Error (a provider call that
  # failed): a job's `retry_on LlmFailover::Error` must not retry them, because running
  # the same ask again meets the same state. Each needs the app (or a person) to act
  # first, then `chat.complete` goes on from the stored transcript.

  # The model still asked for tools after max_tool_rounds turns. The transcript is
  # intact (every call has its result), so raising the limit and calling complete
  # continues the conversation.
  class ToolLoopError < StandardError
    # @return [Integer] the turns the ask made
    attr_reader :rounds
    # @return [Array<ToolCall>] every call the ask made, in order
    attr_reader :tool_calls

    def initialize(message = nil, rounds: nil, tool_calls: [])
      @rounds = rounds
      @tool_calls = tool_calls
      super(message || (rounds ? "the model still asked for tools after #{rounds} rounds (max_tool_rounds)"
                               : "the model still asked for tools at max_tool_rounds"))
    end
  end

  # A transcript in which a tool call lacks its one result, or a result its call:
  # never sent (every provider would refuse it with a 400, Anthropic always does).
  # A bug or a hand-edited store, not a passing fault, so retrying cannot help.
  class ToolTranscriptError < StandardError
    # @return [String, nil] the call id at fault
    attr_reader :call_id

    def initialize(message = nil, call_id: nil)
      @call_id = call_id
      super(message || (call_id ? "tool call #{call_id.inspect} has no result in the transcript"
                                : "the transcript has a tool call without its one result"))
    end
  end

  # A call was left `running` by a process that died mid-execute, and its tool is
  # not idempotent!: whether it took effect is unknown, so it is not run again. Settle
  # it (chat.settle_tool_call(id, result:) or error:) and call complete. A retried job
  # meets the same call until then, so this must not be retried blindly either.
  class ToolInterruptedError < StandardError
    # @return [ToolCall] the call left running
    attr_reader :tool_call

    def initialize(message = nil, tool_call: nil)
      @tool_call = tool_call
      which = tool_call ? "tool call #{tool_call.id.inspect} (#{tool_call.name})" : "a tool call"
      super(message || "#{which} was interrupted while running and its tool is not idempotent!: " \
                       "settle it with settle_tool_call, then complete")
    end
  end
end
