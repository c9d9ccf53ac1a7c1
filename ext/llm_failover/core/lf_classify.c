/* Failure classification. The order is fixed: the transfer result, then what a
 * 2xx body said, then an error a response header names (Bedrock's
 * x-amzn-errortype), then the HTTP status refined by the body's error
 * type/code and message, then x-should-retry. See DESIGN.md "Errors" and WIRE.md. */
#include <ctype.h>
#include <stddef.h>
#include <string.h>

#include "lf_classify.h"
#include "lf_banned.h"

/* ---- text helpers (ASCII case-insensitive, NULL-safe) ---- */

static int lf_classify_ieq(const char *a, const char *b)
{
    if (!a || !b)
        return 0;
    while (*a && *b) {
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
        a++;
        b++;
    }
    return *a == *b;
}

/* The first occurrence of needle in hay, or NULL. */
static const char *lf_classify_ifind(const char *hay, const char *needle)
{
    if (!hay || !needle)
        return NULL;
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] &&
               tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return hay;
    }
    return n == 0 ? hay : NULL;
}

static int lf_classify_icontains(const char *hay, const char *needle)
{
    return lf_classify_ifind(hay, needle) != NULL;
}

static int lf_classify_icontains_any(const char *hay, const char *const *needles)
{
    for (; *needles; needles++)
        if (lf_classify_icontains(hay, *needles))
            return 1;
    return 0;
}

/* ---- message and name signals ---- */

/* Wording that only ever means "the prompt does not fit the context window". */
static const char *const lf_classify_context_strong[] = {
    "context_length_exceeded",                  /* OpenAI, Groq code */
    "maximum context length",                   /* OpenAI, DeepSeek, vLLM, OpenRouter, Mistral */
    "max context length",                       /* Ollama "exceeded max context length" */
    "prompt is too long",                       /* Anthropic */
    "prompt too long",                          /* Ollama */
    "exceeds the maximum number of tokens",     /* Gemini */
    "exceeds the context window",               /* OpenAI Responses */
    "maximum prompt length",                    /* xAI */
    "exceeds the available context size",       /* llama.cpp server */
    "input is too long for requested model",    /* Bedrock (Claude) */
    NULL
};

/* Looser wording: counts only when the message is not about a per-minute or
 * per-day token budget (a 429 "Request too large ... tokens per min (TPM)" is
 * a rate limit, not a context window). */
static const char *const lf_classify_context_loose[] = {
    "context length",
    "too many tokens",
    "input tokens exceed",                      /* Bedrock (Nova): "Input Tokens Exceeded" */
    NULL
};

static const char *const lf_classify_rate_wording[] = {
    "per min", "per minute", "per day", "per hour", "tpm", "rpm", "tpd", "rate limit",
    "rate_limit", "quota", NULL
};

int lf_is_context_length_message(const char *msg)
{
    if (!msg)
        return 0;
    if (lf_classify_icontains_any(msg, lf_classify_context_strong))
        return 1;
    return lf_classify_icontains_any(msg, lf_classify_context_loose) &&
           !lf_classify_icontains_any(msg, lf_classify_rate_wording);
}

static int lf_classify_either_contains(const lf_facts *f, const char *needle)
{
    return lf_classify_icontains(f->error_type, needle) ||
           lf_classify_icontains(f->error_code, needle);
}

static int lf_classify_either_is(const lf_facts *f, const char *name)
{
    return lf_classify_ieq(f->error_type, name) || lf_classify_ieq(f->error_code, name);
}

static int lf_classify_is_context(const lf_facts *f)
{
    return lf_classify_either_contains(f, "context_length_exceeded") ||
           lf_is_context_length_message(f->error_message);
}

static int lf_classify_is_content_policy(const lf_facts *f)
{
    if (lf_classify_either_contains(f, "content_policy") ||
        lf_classify_either_contains(f, "content_filter") ||
        lf_classify_either_contains(f, "moderation"))
        return 1;
    const char *m = f->error_message;
    if (lf_classify_icontains(m, "flagged") ||
        lf_classify_icontains(m, "content filtering policy")) /* Bedrock: "Output blocked by ..." */
        return 1;
    /* "... violates our usage policies", "potentially violating our usage policy" */
    const char *v = lf_classify_ifind(m, "violat");
    return v && lf_classify_icontains(v, "usage polic");
}

/* Gemini answers a wrong key with 400 INVALID_ARGUMENT / API_KEY_INVALID;
 * OpenAI's code for it is invalid_api_key. */
static int lf_classify_is_invalid_key(const lf_facts *f)
{
    return lf_classify_either_contains(f, "api_key_invalid") ||
           lf_classify_icontains(f->error_message, "api_key_invalid") ||
           lf_classify_either_is(f, "invalid_api_key") ||
           lf_classify_icontains(f->error_message, "api key not valid");
}

/* The account is out of money (as opposed to a transient rate limit). Loose
 * words such as "billing" or "credits" are not enough: Anthropic's ordinary
 * 429 rate_limit_error tells you to "purchase credits" on ".../billing". */
static int lf_classify_is_quota(const lf_facts *f)
{
    static const char *const wording[] = {
        "exceeded your current quota",
        "quota exhausted",
        "quota has been exhausted",
        "quota is exhausted",
        "insufficient credits",
        "credit balance is too low",
        NULL
    };
    if (lf_classify_either_contains(f, "insufficient_quota") ||
        lf_classify_either_contains(f, "billing"))
        return 1;
    /* Gemini's RESOURCE_EXHAUSTED also says "exceeded your current quota",
     * yet it is its per-minute limit: a rate limit. Spent prepaid credits are
     * the account's money (a 402 since 2026, a 429 before). */
    if (lf_classify_ieq(f->error_type, "RESOURCE_EXHAUSTED"))
        return lf_classify_icontains(f->error_message, "prepayment credits are depleted");
    return lf_classify_icontains(f->error_message, "insufficient_quota") ||
           lf_classify_icontains_any(f->error_message, wording);
}

/* ---- verdicts ---- */

static lf_verdict lf_classify_verdict(lf_kind k)
{
    lf_verdict v = { .kind = k, .retryable = 0, .retry_same = 0, .failover = 0 };
    switch (k) {
    case LF_E_RATE_LIMIT:
    case LF_E_SERVER:
    case LF_E_SERVICE_UNAVAILABLE:
    case LF_E_OVERLOADED:
    case LF_E_CONNECTION:
    case LF_E_STREAM_INTERRUPTED:
    case LF_E_INVALID_RESPONSE:
    case LF_E_RETRYABLE:
        v.retryable = 1;
        v.retry_same = 1;
        v.failover = 1;
        break;
    case LF_E_TIMEOUT:
        /* Retrying a target that did not answer only multiplies the wait. */
        v.retryable = 1;
        v.failover = 1;
        break;
    case LF_E_PROVIDER_QUOTA:
        v.failover = 1;
        break;
    default:
        break;
    }
    return v;
}

int lf_kind_retryable(lf_kind k)
{
    return lf_classify_verdict(k).retryable;
}

/* 400/413/422: which kind of bad request. */
static lf_kind lf_classify_bad_request(const lf_facts *f)
{
    if (lf_classify_is_context(f))
        return LF_E_CONTEXT_LENGTH;
    if (lf_classify_is_content_policy(f))
        return LF_E_CONTENT_POLICY;
    if (lf_classify_is_invalid_key(f))
        return LF_E_UNAUTHORIZED;
    /* Anthropic reports an empty prepaid balance as a 400; the account is out
     * of money, which a backup can fix. */
    if (lf_classify_icontains(f->error_message, "credit balance is too low"))
        return LF_E_PROVIDER_QUOTA;
    return LF_E_BAD_REQUEST;
}

static lf_kind lf_classify_status_kind(long status, const lf_facts *f)
{
    switch (status) {
    case 400:
    case 413:
    case 422:
        return lf_classify_bad_request(f);
    case 401:
        return LF_E_UNAUTHORIZED;
    case 402:
        return LF_E_PROVIDER_QUOTA;
    case 403:
        return LF_E_FORBIDDEN;
    case 404:
        return LF_E_NOT_FOUND;
    case 429:
        return lf_classify_is_quota(f) ? LF_E_PROVIDER_QUOTA : LF_E_RATE_LIMIT;
    case 500:
        return LF_E_SERVER;
    case 502:
    case 503:
    case 504:
        return LF_E_SERVICE_UNAVAILABLE;
    case 529:
        return LF_E_OVERLOADED;
    default:
        if (status >= 500 && status <= 599)
            return LF_E_SERVER;
        return LF_E_OTHER;
    }
}

/* AWS's exception names (Bedrock's x-amzn-errortype, and its in-stream
 * :exception-type, which spells them in lowerCamelCase) -> a kind, or LF_OK. */
static lf_kind lf_classify_aws_kind(const char *name, const lf_facts *f)
{
    static const struct { const char *name; lf_kind kind; } names[] = {
        { "ThrottlingException", LF_E_RATE_LIMIT },
        { "ServiceQuotaExceededException", LF_E_RATE_LIMIT }, /* "resubmit your request later" */
        { "ServiceUnavailableException", LF_E_SERVICE_UNAVAILABLE },
        { "ModelNotReadyException", LF_E_SERVICE_UNAVAILABLE },
        { "InternalServerException", LF_E_SERVER },
        { "InternalFailure", LF_E_SERVER },
        { "ModelErrorException", LF_E_SERVER },
        { "ModelStreamErrorException", LF_E_SERVER },
        { "AccessDeniedException", LF_E_FORBIDDEN },
        { "ResourceNotFoundException", LF_E_NOT_FOUND },
        /* The credentials or the signature: never hidden by a backup. */
        { "UnrecognizedClientException", LF_E_UNAUTHORIZED },
        { "ExpiredTokenException", LF_E_UNAUTHORIZED },
        { "InvalidSignatureException", LF_E_UNAUTHORIZED },
        { "IncompleteSignatureException", LF_E_UNAUTHORIZED },
        { "IncompleteSignature", LF_E_UNAUTHORIZED },
        { "InvalidClientTokenId", LF_E_UNAUTHORIZED },
        { "MissingAuthenticationTokenException", LF_E_UNAUTHORIZED },
        { "MissingAuthenticationToken", LF_E_UNAUTHORIZED },
    };
    if (!name || !*name)
        return LF_OK;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (lf_classify_ieq(name, names[i].name))
            return names[i].kind;
    if (lf_classify_ieq(name, "ValidationException"))
        return lf_classify_bad_request(f);
    return LF_OK;
}
/* The Responses API's codes for a request that cannot succeed, which its
 * response.failed and error events carry with no HTTP status and no type: a
 * bad request, refined by lf_classify_bad_request (invalid_prompt may be a
 * context window; image_content_policy_violation is a content policy). */
static const char *const lf_classify_request_codes[] = {
    "invalid_prompt", "invalid_encrypted_content", "invalid_image", "invalid_image_format",
    "invalid_base64_image", "invalid_image_url", "image_too_large", "image_too_small", "image_parse_error",
    "image_content_policy_violation", "invalid_image_mode", "image_file_too_large",
    "unsupported_image_media_type", "empty_image_file", "failed_to_download_image", "image_file_not_found",
    NULL
};

/* One error name (a type, a code or a Gemini status) -> a kind, or LF_OK when
 * the name means nothing to us. */
static lf_kind lf_classify_name_kind(const char *name, const lf_facts *f)
{
    static const struct { const char *name; lf_kind kind; } names[] = {
        { "overloaded_error", LF_E_OVERLOADED },
        { "rate_limit_error", LF_E_RATE_LIMIT },
        { "rate_limit_exceeded", LF_E_RATE_LIMIT },
        { "RESOURCE_EXHAUSTED", LF_E_RATE_LIMIT },
        { "api_error", LF_E_SERVER },
        { "server_error", LF_E_SERVER },
        { "INTERNAL", LF_E_SERVER },
        { "UNAVAILABLE", LF_E_SERVICE_UNAVAILABLE },
        { "authentication_error", LF_E_UNAUTHORIZED },
        { "UNAUTHENTICATED", LF_E_UNAUTHORIZED },
        { "permission_error", LF_E_FORBIDDEN },
        { "PERMISSION_DENIED", LF_E_FORBIDDEN },
        { "not_found_error", LF_E_NOT_FOUND },
        { "NOT_FOUND", LF_E_NOT_FOUND },
        { "request_too_large", LF_E_BAD_REQUEST },
        /* A prompt or an answer a provider's filter withheld (the wire layer
         * names Gemini's blocked ones so; Azure's in-stream code). */
        { "content_filter", LF_E_CONTENT_POLICY },
    };
    if (!name || !*name)
        return LF_OK;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (lf_classify_ieq(name, names[i].name))
            return names[i].kind;
    if (lf_classify_ieq(name, "invalid_request_error") || lf_classify_ieq(name, "INVALID_ARGUMENT") ||
        lf_classify_ieq(name, "FAILED_PRECONDITION"))
        return lf_classify_bad_request(f);
    for (size_t i = 0; lf_classify_request_codes[i]; i++)
        if (lf_classify_ieq(name, lf_classify_request_codes[i]))
            return lf_classify_bad_request(f);
    return lf_classify_aws_kind(name, f);
}

/* An error event inside a 2xx stream: the status says nothing, the body's
 * error type/code says everything. */
static lf_kind lf_classify_in_stream(const lf_facts *f)
{
    /* Specific signals first: they can hide behind a generic type
     * (OpenAI: type "insufficient_quota"/"tokens", code "context_length_exceeded"). */
    if (lf_classify_either_contains(f, "context_length_exceeded"))
        return LF_E_CONTEXT_LENGTH;
    if (lf_classify_either_contains(f, "insufficient_quota") ||
        lf_classify_either_contains(f, "billing"))
        return LF_E_PROVIDER_QUOTA;
    if (lf_classify_either_is(f, "invalid_api_key"))
        return LF_E_UNAUTHORIZED;
    lf_kind k = lf_classify_name_kind(f->error_type, f);
    if (k == LF_OK)
        k = lf_classify_name_kind(f->error_code, f);
    if (k != LF_OK)
        return k;
    /* OpenRouter puts the upstream HTTP status in a numeric error.code. */
    const char *c = f->error_code;
    if (c && isdigit((unsigned char)c[0]) && isdigit((unsigned char)c[1]) &&
        isdigit((unsigned char)c[2]) && c[3] == '\0') {
        long st = (c[0] - '0') * 100 + (c[1] - '0') * 10 + (c[2] - '0');
        if (st >= 400 && st <= 599)
            return lf_classify_status_kind(st, f);
    }
    return LF_E_SERVER;
}

static lf_kind lf_classify_transfer_kind(lf_transfer t)
{
    switch (t) {
    case LF_T_REFUSED:
    case LF_T_DNS:
    case LF_T_TLS_VERIFY: /* configuration drift: a proxy, a wrong host, an expired certificate */
        return LF_E_CONNECTION_REFUSED;
    case LF_T_CONNECT_TIMEOUT:
    case LF_T_FIRST_TOKEN_TIMEOUT:
    case LF_T_IDLE_TIMEOUT:
    case LF_T_TOTAL_TIMEOUT:
        return LF_E_TIMEOUT;
    case LF_T_TOO_LARGE:
        return LF_E_INVALID_RESPONSE;
    case LF_T_ABORTED:
        return LF_E_ABORTED;
    case LF_T_OK:
        return LF_OK;
    case LF_T_CONNECTION:
    case LF_T_OTHER:
    default:
        return LF_E_CONNECTION;
    }
}

static lf_phase lf_classify_phase(lf_transfer t)
{
    switch (t) {
    case LF_T_CONNECT_TIMEOUT: return LF_PHASE_CONNECT;
    case LF_T_FIRST_TOKEN_TIMEOUT: return LF_PHASE_FIRST_TOKEN;
    case LF_T_IDLE_TIMEOUT: return LF_PHASE_IDLE;
    case LF_T_TOTAL_TIMEOUT: return LF_PHASE_TOTAL;
    default: return LF_PHASE_NONE;
    }
}

const char *lf_phase_name(lf_phase p)
{
    switch (p) {
    case LF_PHASE_CONNECT: return "connect";
    case LF_PHASE_FIRST_TOKEN: return "first_token";
    case LF_PHASE_IDLE: return "idle";
    case LF_PHASE_TOTAL: return "total";
    case LF_PHASE_NONE: break;
    }
    return NULL;
}

lf_verdict lf_classify(const lf_facts *f)
{
    if (!f)
        return lf_classify_verdict(LF_E_OTHER);

    if (f->transfer != LF_T_OK) {
        lf_verdict v = lf_classify_verdict(lf_classify_transfer_kind(f->transfer));
        v.phase = lf_classify_phase(f->transfer);
        /* A body over the size cap would be as large again on a retry. */
        if (f->transfer == LF_T_TOO_LARGE)
            v.retry_same = 0;
        return v;
    }

    lf_kind k;
    if (f->status >= 200 && f->status <= 299) {
        /* An error event names its failure more precisely than the missing
         * terminal event that usually follows it, so it is looked at first. */
        if (f->in_stream)
            k = lf_classify_in_stream(f);
        else if (f->invalid_body)
            k = LF_E_INVALID_RESPONSE;
        else if (f->stream_interrupted)
            k = LF_E_STREAM_INTERRUPTED;
        else
            return lf_classify_verdict(LF_OK);
    } else {
        k = lf_classify_aws_kind(f->error_name, f);
        if (k == LF_OK)
            k = lf_classify_status_kind(f->status, f);
    }

    /* Timeout and lock conflict, which the official SDKs retry, and an unnamed
     * failure the provider says to retry (x-should-retry: true) are retryable,
     * so they are RetryableErrors: `retry_on RetryableError` must retry them.
     * The header never turns a named non-retryable kind retryable (a wrong key
     * must never be hidden by a backup). */
    if (k == LF_E_OTHER && (f->status == 408 || f->status == 409 || f->should_retry == 1))
        k = LF_E_RETRYABLE;

    lf_verdict v = lf_classify_verdict(k);
    /* x-should-retry: false holds back a retry of the same target. */
    if (f->should_retry == 0 && v.retryable)
        v.retry_same = 0;
    return v;
}

const char *lf_kind_name(lf_kind k)
{
    static const char *const names[LF_KIND_COUNT] = {
        [LF_OK] = NULL,
        [LF_E_RATE_LIMIT] = "RateLimitError",
        [LF_E_SERVER] = "ServerError",
        [LF_E_SERVICE_UNAVAILABLE] = "ServiceUnavailableError",
        [LF_E_OVERLOADED] = "OverloadedError",
        [LF_E_TIMEOUT] = "TimeoutError",
        [LF_E_CONNECTION] = "ConnectionError",
        [LF_E_STREAM_INTERRUPTED] = "StreamInterruptedError",
        [LF_E_INVALID_RESPONSE] = "InvalidResponseError",
        [LF_E_PROVIDER_QUOTA] = "ProviderQuotaError",
        [LF_E_BAD_REQUEST] = "BadRequestError",
        [LF_E_CONTEXT_LENGTH] = "ContextLengthExceededError",
        [LF_E_CONTENT_POLICY] = "ContentPolicyError",
        [LF_E_UNAUTHORIZED] = "UnauthorizedError",
        [LF_E_FORBIDDEN] = "ForbiddenError",
        [LF_E_NOT_FOUND] = "NotFoundError",
        [LF_E_CONNECTION_REFUSED] = "ConnectionRefusedError",
        [LF_E_RETRYABLE] = "RetryableError",
        [LF_E_OTHER] = "Error",
        [LF_E_ABORTED] = "AbortedError",
        [LF_E_ATTACHMENTS] = "AttachmentRefusedError",
        [LF_E_CONFIGURATION] = "ConfigurationError",
    };
    if ((int)k < 0 || k >= LF_KIND_COUNT)
        return NULL;
    return names[k];
}
