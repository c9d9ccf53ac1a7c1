/* lf_classify: every rule of DESIGN.md "Errors" as a table, then every error
 * body of the recorded fixtures (parsed here with json-c, and through
 * lf_wire_parse_error when lf_wire_error.c is linked in). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "lf_classify.h"
#include "lf_wire.h"
#include "lf_test.h"

/* lf_wire_error.c is written in parallel with this file: reference its parser
 * weakly so this test links with or without it, and use it when present. */
#pragma weak lf_wire_parse_error
#pragma weak lf_wire_error_init
#pragma weak lf_wire_error_free

/* ------------------------------------------------------------------ */
/* The rules table                                                     */

/* x-should-retry as a row writes it: 0 (default) absent, 1 false, 2 true. */
enum { XSR_ABSENT = 0, XSR_FALSE = 1, XSR_TRUE = 2 };

typedef struct rule_row {
    const char *what;
    lf_transfer t;
    long status;
    const char *type, *code, *msg;
    int xsr;
    int in_stream, invalid, interrupted;
    lf_kind kind;
    int retryable, retry_same, failover;
} rule_row;

#define RETRY 1, 1, 1
#define TMO 1, 0, 1      /* retryable class, fail over without retrying */
#define QUOTA 0, 0, 1
#define NOPE 0, 0, 0

static const rule_row rule_rows[] = {
    /* transfer result first, whatever the status says */
    { "refused", .t = LF_T_REFUSED, .kind = LF_E_CONNECTION_REFUSED, NOPE },
    { "dns", .t = LF_T_DNS, .kind = LF_E_CONNECTION_REFUSED, NOPE },
    { "tls verification", .t = LF_T_TLS_VERIFY, .kind = LF_E_CONNECTION_REFUSED, NOPE },
    { "refused ignores x-should-retry", .t = LF_T_REFUSED, .xsr = XSR_TRUE,
      .kind = LF_E_CONNECTION_REFUSED, NOPE },
    { "connect timeout", .t = LF_T_CONNECT_TIMEOUT, .kind = LF_E_TIMEOUT, TMO },
    { "first token timeout", .t = LF_T_FIRST_TOKEN_TIMEOUT, .status = 200,
      .kind = LF_E_TIMEOUT, TMO },
    { "idle timeout", .t = LF_T_IDLE_TIMEOUT, .status = 200, .kind = LF_E_TIMEOUT, TMO },
    { "total timeout", .t = LF_T_TOTAL_TIMEOUT, .status = 200, .kind = LF_E_TIMEOUT, TMO },
    { "connection reset", .t = LF_T_CONNECTION, .kind = LF_E_CONNECTION, RETRY },
    { "connection reset after a 500 status", .t = LF_T_CONNECTION, .status = 500,
      .kind = LF_E_CONNECTION, RETRY },
    { "too large", .t = LF_T_TOO_LARGE, .status = 200, .kind = LF_E_INVALID_RESPONSE, TMO },
    { "aborted", .t = LF_T_ABORTED, .status = 200, .kind = LF_E_ABORTED, NOPE },
    { "aborted during a 503", .t = LF_T_ABORTED, .status = 503, .kind = LF_E_ABORTED, NOPE },
    { "other transfer failure", .t = LF_T_OTHER, .kind = LF_E_CONNECTION, RETRY },

    /* 2xx */
    { "plain success", .status = 200, .kind = LF_OK, NOPE },
    { "success with x-should-retry", .status = 200, .xsr = XSR_TRUE, .kind = LF_OK, NOPE },
    { "invalid body", .status = 200, .invalid = 1, .kind = LF_E_INVALID_RESPONSE, RETRY },
    { "stream interrupted", .status = 200, .interrupted = 1,
      .kind = LF_E_STREAM_INTERRUPTED, RETRY },
    { "invalid body on 201", .status = 201, .invalid = 1, .kind = LF_E_INVALID_RESPONSE, RETRY },
    { "in-stream overloaded", .status = 200, .in_stream = 1, .type = "overloaded_error",
      .msg = "Overloaded", .kind = LF_E_OVERLOADED, RETRY },
    { "in-stream overloaded, stream also cut", .status = 200, .in_stream = 1,
      .interrupted = 1, .type = "overloaded_error", .kind = LF_E_OVERLOADED, RETRY },
    { "in-stream type case-insensitive", .status = 200, .in_stream = 1,
      .type = "OVERLOADED_ERROR", .kind = LF_E_OVERLOADED, RETRY },
    { "in-stream rate_limit_error", .status = 200, .in_stream = 1, .type = "rate_limit_error",
      .kind = LF_E_RATE_LIMIT, RETRY },
    { "in-stream rate_limit_exceeded code", .status = 200, .in_stream = 1, .type = "tokens",
      .code = "rate_limit_exceeded", .kind = LF_E_RATE_LIMIT, RETRY },
    { "in-stream insufficient_quota", .status = 200, .in_stream = 1,
      .type = "insufficient_quota", .code = "insufficient_quota",
      .kind = LF_E_PROVIDER_QUOTA, QUOTA },
    { "in-stream billing_error", .status = 200, .in_stream = 1, .type = "billing_error",
      .kind = LF_E_PROVIDER_QUOTA, QUOTA },
    { "in-stream api_error", .status = 200, .in_stream = 1, .type = "api_error",
      .kind = LF_E_SERVER, RETRY },
    { "in-stream server_error", .status = 200, .in_stream = 1, .type = "server_error",
      .kind = LF_E_SERVER, RETRY },
    { "in-stream unknown type", .status = 200, .in_stream = 1, .type = "mystery_error",
      .kind = LF_E_SERVER, RETRY },
    { "in-stream no type at all", .status = 200, .in_stream = 1, .msg = "boom",
      .kind = LF_E_SERVER, RETRY },
    { "in-stream authentication_error", .status = 200, .in_stream = 1,
      .type = "authentication_error", .kind = LF_E_UNAUTHORIZED, NOPE },
    { "in-stream permission_error", .status = 200, .in_stream = 1, .type = "permission_error",
      .kind = LF_E_FORBIDDEN, NOPE },
    { "in-stream invalid_request_error", .status = 200, .in_stream = 1,
      .type = "invalid_request_error", .msg = "messages: field required",
      .kind = LF_E_BAD_REQUEST, NOPE },
    { "in-stream invalid_request_error, context", .status = 200, .in_stream = 1,
      .type = "invalid_request_error", .msg = "prompt is too long: 210000 tokens > 200000 maximum",
      .kind = LF_E_CONTEXT_LENGTH, NOPE },
    { "in-stream context_length_exceeded code", .status = 200, .in_stream = 1,
      .type = "invalid_request_error", .code = "context_length_exceeded",
      .kind = LF_E_CONTEXT_LENGTH, NOPE },
    { "in-stream numeric code 502 (OpenRouter)", .status = 200, .in_stream = 1, .code = "502",
      .msg = "Provider returned error", .kind = LF_E_SERVICE_UNAVAILABLE, RETRY },
    { "in-stream x-should-retry false", .status = 200, .in_stream = 1, .xsr = XSR_FALSE,
      .type = "overloaded_error", .kind = LF_E_OVERLOADED, 1, 0, 1 },
    { "in-stream flag ignored on a 500", .status = 500, .in_stream = 1,
      .type = "authentication_error", .kind = LF_E_SERVER, RETRY },

    /* 429 */
    { "429", .status = 429, .kind = LF_E_RATE_LIMIT, RETRY },
    { "429 rate_limit_exceeded", .status = 429, .type = "requests", .code = "rate_limit_exceeded",
      .msg = "Rate limit reached for gpt-4o on requests per min (RPM): Limit 500, Used 500",
      .kind = LF_E_RATE_LIMIT, RETRY },
    { "429 insufficient_quota code", .status = 429, .code = "insufficient_quota",
      .kind = LF_E_PROVIDER_QUOTA, QUOTA },
    { "429 insufficient_quota type", .status = 429, .type = "insufficient_quota",
      .kind = LF_E_PROVIDER_QUOTA, QUOTA },
    { "429 INSUFFICIENT_QUOTA upper case", .status = 429, .code = "INSUFFICIENT_QUOTA",
      .kind = LF_E_PROVIDER_QUOTA, QUOTA },
    { "429 billing_error", .status = 429, .type = "billing_error",
      .kind = LF_E_PROVIDER_QUOTA, QUOTA },
    { "429 quota wording", .status = 429,
      .msg = "You exceeded your current quota, please check your plan and billing details.",
      .kind = LF_E_PROVIDER_QUOTA, QUOTA },
    { "429 quota exhausted wording", .status = 429, .msg = "Monthly quota exhausted",
      .kind = LF_E_PROVIDER_QUOTA, QUOTA },
    { "429 Gemini RESOURCE_EXHAUSTED", .status = 429, .type = "RESOURCE_EXHAUSTED", .code = "429",
      .msg = "You exceeded your current quota, please check your plan and billing details.",
      .kind = LF_E_RATE_LIMIT, RETRY },
    { "429 billing link is not billing", .status = 429, .type = "rate_limit_error",
      .msg = "To raise this limit, purchase credits at https://console.anthropic.com/settings/billing.",
      .kind = LF_E_RATE_LIMIT, RETRY },
    { "429 x-should-retry false", .status = 429, .xsr = XSR_FALSE, .kind = LF_E_RATE_LIMIT, 1, 0, 1 },
    { "429 quota x-should-retry true stays quota", .status = 429, .xsr = XSR_TRUE,
      .code = "insufficient_quota", .kind = LF_E_PROVIDER_QUOTA, QUOTA },

    /* 402 */
    { "402", .status = 402, .kind = LF_E_PROVIDER_QUOTA, QUOTA },
    { "402 x-should-retry true", .status = 402, .xsr = XSR_TRUE, .kind = LF_E_PROVIDER_QUOTA, QUOTA },

    /* 400 / 413 / 422 */
    { "400", .status = 400, .kind = LF_E_BAD_REQUEST, NOPE },
    { "413", .status = 413, .type = "request_too_large",
      .msg = "Request exceeds the maximum allowed number of bytes.", .kind = LF_E_BAD_REQUEST, NOPE },
    { "422", .status = 422, .msg = "field required", .kind = LF_E_BAD_REQUEST, NOPE },
    { "400 context_length_exceeded code", .status = 400, .code = "context_length_exceeded",
      .kind = LF_E_CONTEXT_LENGTH, NOPE },
    { "400 context code upper case", .status = 400, .code = "CONTEXT_LENGTH_EXCEEDED",
      .kind = LF_E_CONTEXT_LENGTH, NOPE },
    { "413 context message", .status = 413, .msg = "prompt is too long: 300000 tokens > 200000 maximum",
      .kind = LF_E_CONTEXT_LENGTH, NOPE },
    { "422 context message", .status = 422,
      .msg = "This model's maximum context length is 4096 tokens.", .kind = LF_E_CONTEXT_LENGTH, NOPE },
    { "400 content_policy_violation", .status = 400, .code = "content_policy_violation",
      .msg = "Your request was rejected as a result of our safety system.",
      .kind = LF_E_CONTENT_POLICY, NOPE },
    { "400 content_filter", .status = 400, .code = "content_filter",
      .kind = LF_E_CONTENT_POLICY, NOPE },
    { "400 moderation type", .status = 400, .type = "moderation_error",
      .kind = LF_E_CONTENT_POLICY, NOPE },
    { "400 flagged", .status = 400, .type = "invalid_request_error", .code = "invalid_prompt",
      .msg = "Invalid prompt: your prompt was flagged as potentially violating our usage policy.",
      .kind = LF_E_CONTENT_POLICY, NOPE },
    { "400 violates usage policies", .status = 400,
      .msg = "This request violates our Usage Policies.", .kind = LF_E_CONTENT_POLICY, NOPE },
    { "400 'violat' without usage policy is not policy", .status = 400,
      .msg = "Constraint violation: temperature must be <= 2", .kind = LF_E_BAD_REQUEST, NOPE },
    { "400 Gemini API_KEY_INVALID code", .status = 400, .code = "API_KEY_INVALID",
      .kind = LF_E_UNAUTHORIZED, NOPE },
    { "400 Gemini API_KEY_INVALID in message", .status = 400, .type = "INVALID_ARGUMENT",
      .msg = "reason: API_KEY_INVALID", .kind = LF_E_UNAUTHORIZED, NOPE },
    { "400 Gemini INVALID_ARGUMENT key not valid", .status = 400, .type = "INVALID_ARGUMENT",
      .code = "400", .msg = "API key not valid. Please pass a valid API key.",
      .kind = LF_E_UNAUTHORIZED, NOPE },
    { "400 Gemini INVALID_ARGUMENT other", .status = 400, .type = "INVALID_ARGUMENT",
      .code = "400", .msg = "Invalid JSON payload received.", .kind = LF_E_BAD_REQUEST, NOPE },
    { "400 x-should-retry true stays bad request", .status = 400, .xsr = XSR_TRUE,
      .kind = LF_E_BAD_REQUEST, NOPE },
    { "400 context x-should-retry true", .status = 400, .xsr = XSR_TRUE,
      .code = "context_length_exceeded", .kind = LF_E_CONTEXT_LENGTH, NOPE },
    { "400 policy x-should-retry true", .status = 400, .xsr = XSR_TRUE,
      .code = "content_filter", .kind = LF_E_CONTENT_POLICY, NOPE },
    { "400 Anthropic x-should-retry false", .status = 400, .xsr = XSR_FALSE,
      .type = "invalid_request_error", .kind = LF_E_BAD_REQUEST, NOPE },
    { "400 Anthropic credit balance", .status = 400, .type = "invalid_request_error",
      .msg = "Your credit balance is too low to access the Anthropic API.",
      .kind = LF_E_PROVIDER_QUOTA, QUOTA },

    /* 401 / 403 / 404 */
    { "401", .status = 401, .kind = LF_E_UNAUTHORIZED, NOPE },
    { "401 x-should-retry true never hides a wrong key", .status = 401, .xsr = XSR_TRUE,
      .kind = LF_E_UNAUTHORIZED, NOPE },
    { "401 Anthropic x-should-retry false", .status = 401, .xsr = XSR_FALSE,
      .type = "authentication_error", .kind = LF_E_UNAUTHORIZED, NOPE },
    { "401 with a rate-limit type", .status = 401, .type = "rate_limit_error",
      .kind = LF_E_UNAUTHORIZED, NOPE },
    { "403", .status = 403, .kind = LF_E_FORBIDDEN, NOPE },
    { "403 x-should-retry true", .status = 403, .xsr = XSR_TRUE, .kind = LF_E_FORBIDDEN, NOPE },
    { "404", .status = 404, .kind = LF_E_NOT_FOUND, NOPE },
    { "404 x-should-retry true", .status = 404, .xsr = XSR_TRUE, .kind = LF_E_NOT_FOUND, NOPE },

    /* 408 / 409: the SDKs retry them, so they are RetryableErrors */
    { "408", .status = 408, .kind = LF_E_RETRYABLE, RETRY },
    { "409", .status = 409, .kind = LF_E_RETRYABLE, RETRY },
    { "409 x-should-retry false", .status = 409, .xsr = XSR_FALSE, .kind = LF_E_RETRYABLE, 1, 0, 1 },

    /* 5xx */
    { "500", .status = 500, .kind = LF_E_SERVER, RETRY },
    { "500 api_error", .status = 500, .type = "api_error", .kind = LF_E_SERVER, RETRY },
    { "502", .status = 502, .kind = LF_E_SERVICE_UNAVAILABLE, RETRY },
    { "503", .status = 503, .kind = LF_E_SERVICE_UNAVAILABLE, RETRY },
    { "504", .status = 504, .kind = LF_E_SERVICE_UNAVAILABLE, RETRY },
    { "529", .status = 529, .type = "overloaded_error", .kind = LF_E_OVERLOADED, RETRY },
    { "501", .status = 501, .kind = LF_E_SERVER, RETRY },
    { "520", .status = 520, .kind = LF_E_SERVER, RETRY },
    { "599", .status = 599, .kind = LF_E_SERVER, RETRY },
    { "503 x-should-retry false", .status = 503, .xsr = XSR_FALSE,
      .kind = LF_E_SERVICE_UNAVAILABLE, 1, 0, 1 },
    { "500 x-should-retry true", .status = 500, .xsr = XSR_TRUE, .kind = LF_E_SERVER, RETRY },

    /* everything else */
    { "no status", .status = 0, .kind = LF_E_OTHER, NOPE },
    { "100", .status = 100, .kind = LF_E_OTHER, NOPE },
    { "302", .status = 302, .kind = LF_E_OTHER, NOPE },
    { "405", .status = 405, .kind = LF_E_OTHER, NOPE },
    { "418", .status = 418, .kind = LF_E_OTHER, NOPE },
    { "600", .status = 600, .kind = LF_E_OTHER, NOPE },
    { "418 x-should-retry true", .status = 418, .xsr = XSR_TRUE, .kind = LF_E_RETRYABLE, RETRY },
    { "418 x-should-retry false", .status = 418, .xsr = XSR_FALSE, .kind = LF_E_OTHER, NOPE },
    { "302 invalid body flag is not a 2xx", .status = 302, .invalid = 1, .kind = LF_E_OTHER, NOPE },
};

static lf_facts row_facts(const rule_row *r)
{
    lf_facts f = {
        .transfer = r->t,
        .status = r->status,
        .error_type = r->type,
        .error_code = r->code,
        .error_message = r->msg,
        .should_retry = r->xsr - 1,
        .in_stream = r->in_stream,
        .invalid_body = r->invalid,
        .stream_interrupted = r->interrupted,
    };
    return f;
}

static int check_verdict(const char *what, lf_verdict v, lf_kind kind,
                         int retryable, int retry_same, int failover)
{
    if (v.kind == kind && v.retryable == retryable && v.retry_same == retry_same &&
        v.failover == failover)
        return 1;
    const char *got = lf_kind_name(v.kind), *want = lf_kind_name(kind);
    fprintf(stderr, "  %s: expected %s r=%d same=%d fo=%d, got %s r=%d same=%d fo=%d\n", what,
            want ? want : "OK", retryable, retry_same, failover, got ? got : "OK",
            v.retryable, v.retry_same, v.failover);
    return 0;
}

static void test_rules_table(void)
{
    for (size_t i = 0; i < sizeof rule_rows / sizeof rule_rows[0]; i++) {
        const rule_row *r = &rule_rows[i];
        lf_facts f = row_facts(r);
        LF_CHECK(check_verdict(r->what, lf_classify(&f), r->kind, r->retryable,
                               r->retry_same, r->failover));
    }
}

/* Every retryable kind answers the same; every non-retryable one is all 0. */
static void test_every_status_class(void)
{
    for (long st = 100; st < 700; st++) {
        lf_facts f = { .status = st, .should_retry = -1 };
        lf_verdict v = lf_classify(&f);
        LF_CHECK(v.kind != LF_OK || (st >= 200 && st <= 299));
        if (st >= 500 && st <= 599) {
            LF_CHECK(v.retryable && v.retry_same && v.failover);
        } else if (v.kind == LF_E_PROVIDER_QUOTA) {
            LF_CHECK_INT(st, 402);
        } else if (st != 408 && st != 409 && st != 429) {
            if (v.retryable || v.retry_same || v.failover)
                fprintf(stderr, "  status %ld unexpectedly retryable\n", st);
            LF_CHECK(!v.retryable && !v.retry_same && !v.failover);
        }
    }
}

static void test_null_facts(void)
{
    lf_verdict v = lf_classify(NULL);
    LF_CHECK_INT(v.kind, LF_E_OTHER);
    LF_CHECK_INT(v.retryable + v.retry_same + v.failover, 0);
}

static void test_kind_names(void)
{
    static const struct { lf_kind k; const char *name; } want[] = {
        { LF_E_RATE_LIMIT, "RateLimitError" },
        { LF_E_SERVER, "ServerError" },
        { LF_E_SERVICE_UNAVAILABLE, "ServiceUnavailableError" },
        { LF_E_OVERLOADED, "OverloadedError" },
        { LF_E_TIMEOUT, "TimeoutError" },
        { LF_E_CONNECTION, "ConnectionError" },
        { LF_E_STREAM_INTERRUPTED, "StreamInterruptedError" },
        { LF_E_INVALID_RESPONSE, "InvalidResponseError" },
        { LF_E_RETRYABLE, "RetryableError" },
        { LF_E_PROVIDER_QUOTA, "ProviderQuotaError" },
        { LF_E_BAD_REQUEST, "BadRequestError" },
        { LF_E_CONTEXT_LENGTH, "ContextLengthExceededError" },
        { LF_E_CONTENT_POLICY, "ContentPolicyError" },
        { LF_E_UNAUTHORIZED, "UnauthorizedError" },
        { LF_E_FORBIDDEN, "ForbiddenError" },
        { LF_E_NOT_FOUND, "NotFoundError" },
        { LF_E_CONNECTION_REFUSED, "ConnectionRefusedError" },
        { LF_E_OTHER, "Error" },
        { LF_E_ABORTED, "AbortedError" },
        { LF_E_ATTACHMENTS, "AttachmentRefusedError" },
        { LF_E_CONFIGURATION, "ConfigurationError" },
    };
    LF_CHECK_INT(sizeof want / sizeof want[0], LF_KIND_COUNT - 1);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        LF_CHECK_STR(lf_kind_name(want[i].k), want[i].name);
    LF_CHECK(lf_kind_name(LF_OK) == NULL);
    LF_CHECK(lf_kind_name(LF_KIND_COUNT) == NULL);
    LF_CHECK(lf_kind_name((lf_kind)-1) == NULL);
}

/* The phase of a timeout comes from the transfer result, as an enum (Ruby's
 * TimeoutError#phase reads it instead of parsing the message). */
static void test_timeout_phases(void)
{
    static const struct { lf_transfer t; lf_phase phase; const char *name; } want[] = {
        { LF_T_CONNECT_TIMEOUT, LF_PHASE_CONNECT, "connect" },
        { LF_T_FIRST_TOKEN_TIMEOUT, LF_PHASE_FIRST_TOKEN, "first_token" },
        { LF_T_IDLE_TIMEOUT, LF_PHASE_IDLE, "idle" },
        { LF_T_TOTAL_TIMEOUT, LF_PHASE_TOTAL, "total" },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        lf_facts f = { .transfer = want[i].t, .status = 200, .should_retry = -1 };
        lf_verdict v = lf_classify(&f);
        LF_CHECK_INT(v.kind, LF_E_TIMEOUT);
        LF_CHECK_INT(v.phase, want[i].phase);
        LF_CHECK_STR(lf_phase_name(v.phase), want[i].name);
    }
    {
        lf_facts f = { .transfer = LF_T_CONNECTION, .should_retry = -1 };
        LF_CHECK_INT(lf_classify(&f).phase, LF_PHASE_NONE);
        LF_CHECK(lf_phase_name(LF_PHASE_NONE) == NULL);
    }
}

static void test_context_length_messages(void)
{
    static const char *const yes[] = {
        "context_length_exceeded",
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
        "prompt is too long: 3333404 tokens > 200000 maximum",
        "PROMPT IS TOO LONG",
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        "prompt too long; exceeded max context length by 812 tokens",
        "Prompt contains 40000 tokens, too large for model with 32768 maximum context length",
        "Input exceeds context length of the model",
        "Too many tokens in the prompt for this model",
    };
    static const char *const no[] = {
        /* the recorded OpenAI 429: a per-minute budget, not a context window */
        "Request too large for gpt-5-nano in organization org-x on tokens per min (TPM): "
        "Limit 2000000, Requested 2500013. The input or output tokens must be reduced in order "
        "to run successfully.",
        /* the recorded Anthropic 429 */
        "This request would exceed your organization's rate limit of 450,000 input tokens per "
        "minute. Reduce the prompt length or the maximum tokens requested, or try again later.",
        "Too many tokens per minute, slow down",
        "Rate limit: too many tokens requested today",
        "Request exceeds the maximum allowed number of bytes.",
        "Invalid API key",
        "max_tokens: must be at most 8192",
        "",
    };
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (!lf_is_context_length_message(yes[i]))
            fprintf(stderr, "  not seen as context length: %s\n", yes[i]);
        LF_CHECK(lf_is_context_length_message(yes[i]));
    }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        if (lf_is_context_length_message(no[i]))
            fprintf(stderr, "  wrongly seen as context length: %s\n", no[i]);
        LF_CHECK(!lf_is_context_length_message(no[i]));
    }
    LF_CHECK(!lf_is_context_length_message(NULL));
}

/* ------------------------------------------------------------------ */
/* Error bodies: pulled apart here with json-c                         */

typedef struct body_fields {
    char type[256], code[256], message[2048];
    int has_type, has_code, has_message;
} body_fields;

static void copy_field(char *dst, size_t cap, int *has, json_object *v)
{
    if (!v || json_object_get_type(v) == json_type_null)
        return;
    const char *s = json_object_get_string(v);  /* numbers become decimal text */
    if (!s)
        return;
    snprintf(dst, cap, "%s", s);
    *has = 1;
}

/* The shapes of WIRE.md: {"error":{...}} / {"error":"..."}, Gemini's
 * [{"error":{...}}], Anthropic's {"type":"error","error":{...}},
 * {"detail":"..."} / {"detail":[{"msg":...}]}, {"message":"..."}. */
static int body_extract(const char *body, body_fields *out)
{
    memset(out, 0, sizeof *out);
    json_object *root = json_tokener_parse(body);
    if (!root)
        return 0;
    json_object *obj = root, *err, *v;
    if (json_object_is_type(obj, json_type_array) && json_object_array_length(obj) > 0)
        obj = json_object_array_get_idx(obj, 0);
    int found = 0;
    if (json_object_is_type(obj, json_type_object)) {
        if (json_object_object_get_ex(obj, "error", &err)) {
            if (json_object_is_type(err, json_type_object)) {
                if (json_object_object_get_ex(err, "type", &v))
                    copy_field(out->type, sizeof out->type, &out->has_type, v);
                if (!out->has_type && json_object_object_get_ex(err, "status", &v))
                    copy_field(out->type, sizeof out->type, &out->has_type, v);
                if (json_object_object_get_ex(err, "code", &v))
                    copy_field(out->code, sizeof out->code, &out->has_code, v);
                if (json_object_object_get_ex(err, "message", &v))
                    copy_field(out->message, sizeof out->message, &out->has_message, v);
                found = 1;
            } else if (json_object_is_type(err, json_type_string)) {
                copy_field(out->message, sizeof out->message, &out->has_message, err);
                found = 1;
            }
        } else if (json_object_object_get_ex(obj, "detail", &v)) {
            if (json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0) {
                json_object *m;
                if (json_object_object_get_ex(json_object_array_get_idx(v, 0), "msg", &m))
                    copy_field(out->message, sizeof out->message, &out->has_message, m);
            } else {
                copy_field(out->message, sizeof out->message, &out->has_message, v);
            }
            found = 1;
        } else if (json_object_object_get_ex(obj, "message", &v)) {
            copy_field(out->message, sizeof out->message, &out->has_message, v);
            found = 1;
        }
    }
    json_object_put(root);
    return found;
}

static lf_facts body_facts(const body_fields *b, long status, int should_retry, int in_stream)
{
    lf_facts f = {
        .transfer = LF_T_OK,
        .status = status,
        .error_type = b->has_type ? b->type : NULL,
        .error_code = b->has_code ? b->code : NULL,
        .error_message = b->has_message ? b->message : NULL,
        .should_retry = should_retry,
        .in_stream = in_stream,
    };
    return f;
}

/* The same body through the real wire parser, when it is linked in. */
static int wire_parser_linked(void)
{
    return lf_wire_parse_error != NULL && lf_wire_error_init != NULL &&
           lf_wire_error_free != NULL;
}

static void check_body(const char *what, const char *body, long status, int should_retry,
                       int in_stream, lf_kind kind, int retryable, int retry_same, int failover)
{
    body_fields b;
    if (!body_extract(body, &b)) {
        fprintf(stderr, "  %s: no error found in body\n", what);
        LF_CHECK(0);
        return;
    }
    lf_facts f = body_facts(&b, status, should_retry, in_stream);
    LF_CHECK(check_verdict(what, lf_classify(&f), kind, retryable, retry_same, failover));

    if (!wire_parser_linked())
        return;
    lf_wire_error e;
    lf_wire_error_init(&e);
    int found = lf_wire_parse_error(body, strlen(body), &e);
    if (!found)
        fprintf(stderr, "  %s: lf_wire_parse_error found no error\n", what);
    LF_CHECK(found);
    lf_facts wf = {
        .status = status,
        .error_type = e.type.len ? lf_buf_cstr(&e.type) : NULL,
        .error_code = e.code.len ? lf_buf_cstr(&e.code) : NULL,
        .error_message = e.message.len ? lf_buf_cstr(&e.message) : NULL,
        .should_retry = should_retry,
        .in_stream = in_stream,
    };
    char label[512];
    snprintf(label, sizeof label, "%s (via lf_wire_parse_error)", what);
    LF_CHECK(check_verdict(label, lf_classify(&wf), kind, retryable, retry_same, failover));
    lf_wire_error_free(&e);
}

/* Bodies shaped as the providers document them, for cases no recording has. */
static void test_documented_bodies(void)
{
    check_body("OpenAI 429 insufficient_quota",
               "{\"error\":{\"message\":\"You exceeded your current quota, please check your plan "
               "and billing details.\",\"type\":\"insufficient_quota\",\"param\":null,"
               "\"code\":\"insufficient_quota\"}}",
               429, -1, 0, LF_E_PROVIDER_QUOTA, QUOTA);
    check_body("OpenAI 429 rate_limit_exceeded",
               "{\"error\":{\"message\":\"Rate limit reached for gpt-4o in organization org-x on "
               "requests per min (RPM): Limit 500, Used 500, Requested 1.\",\"type\":\"requests\","
               "\"param\":null,\"code\":\"rate_limit_exceeded\"}}",
               429, -1, 0, LF_E_RATE_LIMIT, RETRY);
    check_body("OpenAI 400 context_length_exceeded",
               "{\"error\":{\"message\":\"This model's maximum context length is 128000 tokens. "
               "However, your messages resulted in 130000 tokens.\",\"type\":\"invalid_request_error\","
               "\"param\":\"messages\",\"code\":\"context_length_exceeded\"}}",
               400, -1, 0, LF_E_CONTEXT_LENGTH, NOPE);
    check_body("OpenAI 400 content_policy_violation",
               "{\"error\":{\"message\":\"Your request was rejected as a result of our safety "
               "system.\",\"type\":\"invalid_request_error\",\"param\":null,"
               "\"code\":\"content_policy_violation\"}}",
               400, -1, 0, LF_E_CONTENT_POLICY, NOPE);
    check_body("OpenAI 400 flagged prompt",
               "{\"error\":{\"message\":\"Invalid prompt: your prompt was flagged as potentially "
               "violating our usage policy. Please try again with a different prompt.\","
               "\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"invalid_prompt\"}}",
               400, -1, 0, LF_E_CONTENT_POLICY, NOPE);
    check_body("OpenAI in-stream server_error",
               "{\"error\":{\"message\":\"The server had an error while processing your request.\","
               "\"type\":\"server_error\",\"param\":null,\"code\":null}}",
               200, -1, 1, LF_E_SERVER, RETRY);
    check_body("Gemini 429 RESOURCE_EXHAUSTED",
               "[{\"error\":{\"code\":429,\"message\":\"You exceeded your current quota, please "
               "check your plan and billing details.\",\"status\":\"RESOURCE_EXHAUSTED\"}}]",
               429, -1, 0, LF_E_RATE_LIMIT, RETRY);
    check_body("Gemini 400 invalid key",
               "[{\"error\":{\"code\":400,\"message\":\"API key not valid. Please pass a valid API "
               "key.\",\"status\":\"INVALID_ARGUMENT\"}}]",
               400, -1, 0, LF_E_UNAUTHORIZED, NOPE);
    check_body("Gemini 400 context",
               "[{\"error\":{\"code\":400,\"message\":\"The input token count (1200000) exceeds the "
               "maximum number of tokens allowed (1048576).\",\"status\":\"INVALID_ARGUMENT\"}}]",
               400, -1, 0, LF_E_CONTEXT_LENGTH, NOPE);
    check_body("Gemini 503",
               "[{\"error\":{\"code\":503,\"message\":\"The model is overloaded. Please try again "
               "later.\",\"status\":\"UNAVAILABLE\"}}]",
               503, -1, 0, LF_E_SERVICE_UNAVAILABLE, RETRY);
    check_body("Anthropic 529 overloaded",
               "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":"
               "\"Overloaded\"},\"request_id\":\"req_x\"}",
               529, -1, 0, LF_E_OVERLOADED, RETRY);
    check_body("Anthropic in-stream overloaded",
               "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":"
               "\"Overloaded\"}}",
               200, -1, 1, LF_E_OVERLOADED, RETRY);
    check_body("Anthropic 500 api_error",
               "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server "
               "error\"}}",
               500, -1, 0, LF_E_SERVER, RETRY);
    check_body("Anthropic 413 request_too_large",
               "{\"type\":\"error\",\"error\":{\"type\":\"request_too_large\",\"message\":\"Request "
               "exceeds the maximum allowed number of bytes.\"}}",
               413, -1, 0, LF_E_BAD_REQUEST, NOPE);
    check_body("Anthropic 403 permission_error",
               "{\"type\":\"error\",\"error\":{\"type\":\"permission_error\",\"message\":\"Your API "
               "key does not have permission to use the specified resource.\"}}",
               403, 0, 0, LF_E_FORBIDDEN, NOPE);
    check_body("Anthropic 404 not_found_error",
               "{\"type\":\"error\",\"error\":{\"type\":\"not_found_error\",\"message\":\"model: "
               "claude-nope\"}}",
               404, 0, 0, LF_E_NOT_FOUND, NOPE);
    check_body("Anthropic 400 credit balance",
               "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"Your "
               "credit balance is too low to access the Anthropic API. Please go to Plans & Billing "
               "to upgrade or purchase credits.\"}}",
               400, 0, 0, LF_E_PROVIDER_QUOTA, QUOTA);
    check_body("OpenRouter 402 no credits",
               "{\"error\":{\"message\":\"Insufficient credits. Add more using "
               "https://openrouter.ai/settings/credits\",\"code\":402}}",
               402, -1, 0, LF_E_PROVIDER_QUOTA, QUOTA);
    check_body("OpenRouter in-stream upstream 503",
               "{\"error\":{\"message\":\"Provider returned error\",\"code\":503}}",
               200, -1, 1, LF_E_SERVICE_UNAVAILABLE, RETRY);
    check_body("Ollama 400 context",
               "{\"error\":\"prompt too long; exceeded max context length by 812 tokens\"}",
               400, -1, 0, LF_E_CONTEXT_LENGTH, NOPE);
    check_body("Mistral 422 detail list",
               "{\"detail\":[{\"loc\":[\"body\",\"messages\"],\"msg\":\"field required\","
               "\"type\":\"missing\"}]}",
               422, -1, 0, LF_E_BAD_REQUEST, NOPE);
}

/* ------------------------------------------------------------------ */
/* Every error body of the recordings                                  */

typedef struct fixture_want {
    const char *file;
    lf_kind kind;
    int retryable, retry_same, failover;
    int seen;
} fixture_want;

static fixture_want fixture_wants[] = {
    { "chat_error_handling_with_anthropic_claude-haiku-4-5_raises_appropriate_auth_error.json",
      LF_E_UNAUTHORIZED, NOPE, 0 },
    { "chat_error_handling_with_anthropic_claude-haiku-4-5_raises_appropriate_auth_error@1.16.json",
      LF_E_UNAUTHORIZED, NOPE, 0 },
    { "chat_error_handling_with_deepseek_deepseek-chat_raises_appropriate_auth_error.json",
      LF_E_UNAUTHORIZED, NOPE, 0 },
    { "chat_error_handling_with_deepseek_deepseek-chat_raises_appropriate_auth_error@1.16.json",
      LF_E_UNAUTHORIZED, NOPE, 0 },
    { "chat_error_handling_with_mistral_mistral-small-latest_raises_appropriate_auth_error.json",
      LF_E_UNAUTHORIZED, NOPE, 0 },
    { "chat_error_handling_with_mistral_mistral-small-latest_raises_appropriate_auth_error@1.16.json",
      LF_E_UNAUTHORIZED, NOPE, 0 },
    { "chat_error_handling_with_openai_gpt-5-nano_raises_appropriate_auth_error@1.16.json",
      LF_E_UNAUTHORIZED, NOPE, 0 },
    { "chat_error_handling_with_openrouter_claude-haiku-4-5_raises_appropriate_auth_error.json",
      LF_E_UNAUTHORIZED, NOPE, 0 },
    { "chat_error_handling_with_openrouter_claude-haiku-4-5_raises_appropriate_auth_error@1.16.json",
      LF_E_UNAUTHORIZED, NOPE, 0 },
    { "chat_real_error_scenarios_anthropic_claude-haiku-4-5_handles_context_length_exceeded_errors.json",
      LF_E_CONTEXT_LENGTH, NOPE, 0 },
    /* a 429 rate_limit_error with x-should-retry: false: fail over, don't retry */
    { "chat_real_error_scenarios_anthropic_claude-haiku-4-5_handles_context_length_exceeded_errors@1.16.json",
      LF_E_RATE_LIMIT, 1, 0, 1, 0 },
    { "chat_real_error_scenarios_deepseek_deepseek-chat_handles_context_length_exceeded_errors.json",
      LF_E_CONTEXT_LENGTH, NOPE, 0 },
    { "chat_real_error_scenarios_deepseek_deepseek-chat_handles_context_length_exceeded_errors@1.16.json",
      LF_E_CONTEXT_LENGTH, NOPE, 0 },
    /* "Request too large ... tokens per min (TPM)", code rate_limit_exceeded */
    { "chat_real_error_scenarios_openai_gpt-5-nano_handles_context_length_exceeded_errors@1.16.json",
      LF_E_RATE_LIMIT, RETRY, 0 },
    { "chat_real_error_scenarios_openrouter_claude-haiku-4-5_handles_context_length_exceeded_errors.json",
      LF_E_CONTEXT_LENGTH, NOPE, 0 },
    { "chat_real_error_scenarios_openrouter_claude-haiku-4-5_handles_context_length_exceeded_errors@1.16.json",
      LF_E_CONTEXT_LENGTH, NOPE, 0 },
    { "error_handles_invalid_api_keys_gracefully@1.16.json", LF_E_UNAUTHORIZED, NOPE, 0 },
};

static char *read_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    char *data = NULL;
    if (fseek(fp, 0, SEEK_END) == 0) {
        long n = ftell(fp);
        if (n >= 0 && fseek(fp, 0, SEEK_SET) == 0 && (data = malloc((size_t)n + 1)) != NULL) {
            if (fread(data, 1, (size_t)n, fp) != (size_t)n) {
                free(data);
                data = NULL;
            } else {
                data[n] = '\0';
            }
        }
    }
    fclose(fp);
    return data;
}

static int header_should_retry(json_object *headers)
{
    json_object *v;
    if (!headers || !json_object_object_get_ex(headers, "x-should-retry", &v))
        return -1;
    const char *s = json_object_get_string(v);
    if (s && strcmp(s, "true") == 0)
        return 1;
    if (s && strcmp(s, "false") == 0)
        return 0;
    return -1;
}

static fixture_want *fixture_lookup(const char *file)
{
    for (size_t i = 0; i < sizeof fixture_wants / sizeof fixture_wants[0]; i++)
        if (strcmp(fixture_wants[i].file, file) == 0)
            return &fixture_wants[i];
    return NULL;
}

/* Walks every recording; each non-2xx response must be in fixture_wants and
 * classify as listed there, and each listed file must have been seen. */
static void test_recorded_fixtures(void)
{
    const char *dir = getenv("LF_FIXTURES");
    if (!dir || !*dir)
        dir = "spec/fixtures/recorded";
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "  cannot open fixtures directory %s (set LF_FIXTURES)\n", dir);
        LF_CHECK(0);
        return;
    }
    int errors_seen = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        char *text = read_file(path);
        LF_CHECK(text != NULL);
        if (!text)
            continue;
        json_object *root = json_tokener_parse(text);
        free(text);
        json_object *interactions;
        LF_CHECK(root && json_object_object_get_ex(root, "interactions", &interactions));
        if (!root || !json_object_object_get_ex(root, "interactions", &interactions)) {
            json_object_put(root);
            continue;
        }
        size_t count = json_object_array_length(interactions);
        for (size_t i = 0; i < count; i++) {
            json_object *resp, *st, *body, *headers = NULL;
            json_object *it = json_object_array_get_idx(interactions, i);
            if (!json_object_object_get_ex(it, "response", &resp) ||
                !json_object_object_get_ex(resp, "status", &st) ||
                !json_object_object_get_ex(resp, "body", &body))
                continue;
            long status = (long)json_object_get_int64(st);
            if (status >= 200 && status <= 299)
                continue;
            json_object_object_get_ex(resp, "headers", &headers);
            errors_seen++;
            fixture_want *w = fixture_lookup(de->d_name);
            if (!w) {
                fprintf(stderr, "  %s: error response %ld not in the expected table\n",
                        de->d_name, status);
                LF_CHECK(0);
                continue;
            }
            w->seen++;
            check_body(de->d_name, json_object_get_string(body), status,
                       header_should_retry(headers), 0, w->kind, w->retryable, w->retry_same,
                       w->failover);
        }
        json_object_put(root);
    }
    closedir(d);
    for (size_t i = 0; i < sizeof fixture_wants / sizeof fixture_wants[0]; i++) {
        if (!fixture_wants[i].seen)
            fprintf(stderr, "  fixture not found: %s\n", fixture_wants[i].file);
        LF_CHECK(fixture_wants[i].seen == 1);
    }
    LF_CHECK_INT(errors_seen, sizeof fixture_wants / sizeof fixture_wants[0]);
}

/* lf_kind_retryable is the verdict's retryable for the kind: the Ruby error
 * classes ask it (RetryableError and below are exactly these). */
static void test_kind_retryable(void)
{
    int k;
    for (k = LF_OK + 1; k < LF_KIND_COUNT; k++) {
        int expected = k <= LF_E_RETRYABLE && k != LF_OK;
        LF_CHECK_INT(lf_kind_retryable((lf_kind)k), expected);
    }
    LF_CHECK(!lf_kind_retryable(LF_E_PROVIDER_QUOTA)); /* fails over, never retried */
}

int main(void)
{
    LF_RUN(test_rules_table);
    LF_RUN(test_kind_retryable);
    LF_RUN(test_every_status_class);
    LF_RUN(test_null_facts);
    LF_RUN(test_kind_names);
    LF_RUN(test_timeout_phases);
    LF_RUN(test_context_length_messages);
    LF_RUN(test_documented_bodies);
    LF_RUN(test_recorded_fixtures);
    if (!wire_parser_linked())
        printf("test_classify: lf_wire_parse_error not linked, bodies checked with json-c only\n");
    return lf_test_summary("test_classify");
}
