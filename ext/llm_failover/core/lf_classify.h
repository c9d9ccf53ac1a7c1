/* Failure classification: what went wrong (transfer result, HTTP status, the
 * body's error type/code, an error named by a header, x-should-retry) -> an
 * error kind and what the
 * attempt loop may do about it. The kinds map one to one onto the Ruby
 * classes of DESIGN.md ("Errors"). */
#ifndef LF_CLASSIFY_H
#define LF_CLASSIFY_H

typedef enum lf_kind {
    LF_OK = 0,
    /* retryable: retry the target, then fail over */
    LF_E_RATE_LIMIT,           /* RateLimitError 429 */
    LF_E_SERVER,               /* ServerError 500 (and other 5xx) */
    LF_E_SERVICE_UNAVAILABLE,  /* ServiceUnavailableError 502/503/504 */
    LF_E_OVERLOADED,           /* OverloadedError 529, in-stream overloaded_error */
    LF_E_TIMEOUT,              /* TimeoutError: fails over without retrying */
    LF_E_CONNECTION,           /* ConnectionError: reset or closed mid-transfer */
    LF_E_STREAM_INTERRUPTED,   /* StreamInterruptedError */
    LF_E_INVALID_RESPONSE,     /* InvalidResponseError */
    LF_E_RETRYABLE,            /* RetryableError: 408, 409, or x-should-retry: true on an
                                  otherwise unnamed failure (the official SDKs retry them) */
    /* fail over, never retry the same target */
    LF_E_PROVIDER_QUOTA,       /* ProviderQuotaError: 429 insufficient_quota, 402 */
    /* not retryable: raise at once */
    LF_E_BAD_REQUEST,          /* BadRequestError 400/413/422 */
    LF_E_CONTEXT_LENGTH,       /* ContextLengthExceededError < BadRequestError */
    LF_E_CONTENT_POLICY,       /* ContentPolicyError < BadRequestError */
    LF_E_UNAUTHORIZED,         /* UnauthorizedError 401 */
    LF_E_FORBIDDEN,            /* ForbiddenError 403 */
    LF_E_NOT_FOUND,            /* NotFoundError 404 */
    LF_E_CONNECTION_REFUSED,   /* ConnectionRefusedError: refused, DNS or TLS verification failure */
    LF_E_OTHER,                /* LlmFailover::Error: any other status, not retryable */
    LF_E_ABORTED,              /* not a provider failure: the host stopped the call */
    LF_E_ATTACHMENTS,          /* AttachmentRefusedError < BadRequestError: no target of the call
                                  can take the message's attachments (no request sent) */
    LF_E_CONFIGURATION,        /* ConfigurationError: the target picked is unusable (its
                                  credential's source failed: lf_target.unusable), no request sent */
    LF_KIND_COUNT
} lf_kind;

/* What the transfer itself ended with, before any status is looked at. */
typedef enum lf_transfer {
    LF_T_OK = 0,
    LF_T_REFUSED,               /* connection refused */
    LF_T_DNS,                   /* host name did not resolve */
    LF_T_TLS_VERIFY,            /* the peer's TLS certificate failed verification */
    LF_T_CONNECT_TIMEOUT,
    LF_T_FIRST_TOKEN_TIMEOUT,
    LF_T_IDLE_TIMEOUT,
    LF_T_TOTAL_TIMEOUT,
    LF_T_CONNECTION,            /* reset, closed, recv/send failure, TLS handshake failure */
    LF_T_TOO_LARGE,             /* body over the response-size cap */
    LF_T_ABORTED,               /* stopped by the host (interrupt, listener) */
    LF_T_OTHER
} lf_transfer;

typedef struct lf_facts {
    lf_transfer transfer;
    long status;               /* 0 when no response status was received */
    const char *error_type;    /* body's error.type (or Gemini status); NULL if none */
    const char *error_code;    /* body's error.code; NULL if none */
    const char *error_message; /* body's error.message; NULL if none */
    int should_retry;          /* x-should-retry: -1 absent, 0 false, 1 true */
    const char *error_name;    /* the error a response header names: Bedrock's x-amzn-errortype
                                  (its name, "ThrottlingException"); NULL if none. On an error
                                  status it wins over the status (a 403 UnrecognizedClientException
                                  is a wrong key, a 429 ModelNotReadyException a model not ready) */
    int in_stream;             /* an error event inside a 2xx stream */
    int invalid_body;          /* 2xx whose body is not the protocol */
    int stream_interrupted;    /* 2xx stream ended without its terminal event */
} lf_facts;

/* Which deadline a timeout passed (LF_PHASE_NONE for every other kind). */
typedef enum lf_phase {
    LF_PHASE_NONE = 0,
    LF_PHASE_CONNECT,
    LF_PHASE_FIRST_TOKEN,
    LF_PHASE_IDLE,
    LF_PHASE_TOTAL
} lf_phase;

typedef struct lf_verdict {
    lf_kind kind;
    lf_phase phase;  /* LF_E_TIMEOUT: which deadline */
    int retryable;   /* the error class's retryable? */
    int retry_same;  /* the attempt loop may retry the same target */
    int failover;    /* the attempt loop may fail over to a backup */
} lf_verdict;

lf_verdict lf_classify(const lf_facts *f);

/* Whether errors of this kind are retryable (the verdict's `retryable`): the
 * one rule, which the Ruby error classes' retryable? asks (errors.c). */
int lf_kind_retryable(lf_kind k);

/* "RateLimitError", ... ; "Error" for LF_E_OTHER; NULL for LF_OK. */
const char *lf_kind_name(lf_kind k);

/* "connect", "first_token", "idle", "total"; NULL for LF_PHASE_NONE. */
const char *lf_phase_name(lf_phase p);

/* 1 when a message says the prompt exceeded the context window (every
 * signal listed in WIRE.md, case-insensitive). */
int lf_is_context_length_message(const char *msg);

#endif
