/* Engine#run's request Hash -> the core's lf_engine_request. Types only:
 * the values were validated by Ruby (Configuration, Chat), which owns those
 * rules and their messages. */
#include "lf_engine.h"

#include <string.h>

#include "lf_banned.h"

static VALUE lf_sym_openai, lf_sym_anthropic;

static VALUE lf_fetch(VALUE hash, const char *key, int required)
{
    VALUE v = rb_hash_lookup2(hash, ID2SYM(rb_intern(key)), Qundef);
    if (v != Qundef) return v;
    if (required) rb_raise(rb_eArgError, "llm_failover: request is missing :%s", key);
    return Qnil;
}

static double lf_fetch_num(VALUE hash, const char *key)
{
    VALUE v = lf_fetch(hash, key, 1);
    if (!RB_FLOAT_TYPE_P(v) && !RB_INTEGER_TYPE_P(v))
        rb_raise(rb_eArgError, "llm_failover: :%s must be a number", key);
    return NUM2DBL(v);
}

static void lf_check_type(VALUE v, const char *what)
{
    if (!RB_TYPE_P(v, T_STRING)) rb_raise(rb_eArgError, "llm_failover: %s must be a String", what);
}

/* A string for a URL or a header (or a role, one of a few names): no NUL. */
static void lf_check_string(VALUE v, const char *what)
{
    lf_check_type(v, what);
    if (memchr(RSTRING_PTR(v), '\0', (size_t)RSTRING_LEN(v)))
        rb_raise(rb_eArgError, "llm_failover: %s contains a NUL byte", what);
}

static void *lf_alloc(size_t n)
{
    void *p = calloc(n ? n : 1, 1);
    if (!p) rb_raise(rb_eNoMemError, "llm_failover: out of memory");
    return p;
}

/* A NUL-terminated C copy of a String, its length in *len. */
static char *lf_copy_bytes(VALUE v, size_t *len)
{
    char *s;
    *len = (size_t)RSTRING_LEN(v);
    s = lf_alloc(*len + 1);
    memcpy(s, RSTRING_PTR(v), *len);
    return s;
}

/* A C copy of a String (its content is checked first). */
static char *lf_copy(VALUE v, const char *what)
{
    size_t len;
    lf_check_string(v, what);
    return lf_copy_bytes(v, &len);
}

/* A copy of text for a JSON body: a NUL in it is text, sent as \u0000. */
static char *lf_copy_text(VALUE v, const char *what, size_t *len)
{
    lf_check_type(v, what);
    return lf_copy_bytes(v, len);
}

typedef struct lf_header_walk {
    char **lines;
    size_t *n;     /* the target's n_headers, counted as lines are copied */
    size_t cap;
} lf_header_walk;

static int lf_copy_header(VALUE key, VALUE val, VALUE arg)
{
    lf_header_walk *w = (lf_header_walk *)arg;
    size_t kl, vl;
    char *line;
    if (*w->n >= w->cap) return ST_STOP;
    lf_check_string(key, "header name");
    lf_check_string(val, "header value");
    kl = (size_t)RSTRING_LEN(key);
    vl = (size_t)RSTRING_LEN(val);
    line = lf_alloc(kl + 2 + vl + 1);
    memcpy(line, RSTRING_PTR(key), kl);
    memcpy(line + kl, ": ", 2);
    memcpy(line + kl + 2, RSTRING_PTR(val), vl);
    w->lines[(*w->n)++] = line;
    return ST_CONTINUE;
}

static void lf_fill_target(lf_engine_request *r, size_t i, VALUE t)
{
    lf_target *target = &r->targets[i];
    VALUE api, headers;

    Check_Type(t, T_HASH);
    api = lf_fetch(t, "api", 1);
    if (api != lf_sym_openai && api != lf_sym_anthropic)
        rb_raise(rb_eArgError, "llm_failover: unknown api (expected :openai or :anthropic)");
    target->api = api == lf_sym_anthropic ? LF_API_ANTHROPIC : LF_API_OPENAI;
    target->base_url = lf_copy(lf_fetch(t, "base_url", 1), "base_url");
    target->api_key = lf_copy(lf_fetch(t, "api_key", 1), "api_key");
    target->model = lf_copy(lf_fetch(t, "model", 1), "model");
    headers = lf_fetch(t, "headers", 0);
    if (!NIL_P(headers)) {
        lf_header_walk w;
        Check_Type(headers, T_HASH);
        /* Counted first: every line found has a slot, even if the Hash grew. */
        r->headers[i] = lf_alloc(RHASH_SIZE(headers) * sizeof(char *));
        w.lines = r->headers[i];
        w.n = &target->n_headers;
        w.cap = RHASH_SIZE(headers);
        target->headers = (const char *const *)r->headers[i];
        if (w.cap > 0) rb_hash_foreach(headers, lf_copy_header, (VALUE)&w);
    }
}

static void lf_fill_messages(lf_engine_request *r, VALUE messages)
{
    long i;
    Check_Type(messages, T_ARRAY);
    r->messages = lf_alloc((size_t)RARRAY_LEN(messages) * sizeof(lf_message));
    for (i = 0; i < RARRAY_LEN(messages); i++) {
        VALUE m = RARRAY_AREF(messages, i);
        Check_Type(m, T_ARRAY);
        if (RARRAY_LEN(m) != 2) rb_raise(rb_eArgError, "llm_failover: a message is [role, content]");
        r->n_messages = (size_t)i + 1; /* counted first: freed from here on, whatever raises */
        r->messages[i].role = lf_copy(RARRAY_AREF(m, 0), "message role");
        r->messages[i].content = lf_copy_text(RARRAY_AREF(m, 1), "message content", &r->messages[i].content_len);
    }
}

/* The policy: a Hash of its own under :policy (Configuration#engine_policy),
 * or the same keys in the request. */
static void lf_fill_policy(lf_policy *p, VALUE policy)
{
    Check_Type(policy, T_HASH);
    p->max_retries = NUM2INT(lf_fetch(policy, "max_retries", 1));
    p->backoff.interval = lf_fetch_num(policy, "retry_interval");
    p->backoff.factor = lf_fetch_num(policy, "retry_backoff_factor");
    p->backoff.max_interval = lf_fetch_num(policy, "retry_max_interval");
    p->backoff.randomness = lf_fetch_num(policy, "retry_interval_randomness");
    p->connect_timeout = lf_fetch_num(policy, "connect_timeout");
    p->first_token_timeout = lf_fetch_num(policy, "first_token_timeout");
    p->idle_timeout = lf_fetch_num(policy, "idle_timeout");
    p->request_timeout = lf_fetch_num(policy, "request_timeout");
    p->failover_on_context_length = RTEST(lf_fetch(policy, "failover_on_context_length", 1));
    p->max_response_bytes = (size_t)lf_fetch_num(policy, "max_response_bytes");
}

/* :quota, when given: { limit:, used:, enforce: } of the primary. */
static void lf_fill_budget(lf_engine_request *r, VALUE quota)
{
    if (NIL_P(quota)) return;
    Check_Type(quota, T_HASH);
    r->budget.quota.limit = lf_fetch_num(quota, "limit");
    r->budget.quota.used = lf_fetch_num(quota, "used");
    r->budget.enforce = RTEST(lf_fetch(quota, "enforce", 0));
    r->has_budget = 1;
}

void lf_engine_request_fill(lf_engine_request *r, VALUE request)
{
    VALUE targets, system, temperature, max_tokens, policy;
    long i;

    Check_Type(request, T_HASH);
    targets = lf_fetch(request, "targets", 1);
    Check_Type(targets, T_ARRAY);
    if (RARRAY_LEN(targets) < 1 || RARRAY_LEN(targets) > LF_MAX_TARGETS)
        rb_raise(rb_eArgError, "llm_failover: 1 or %d targets, got %ld", LF_MAX_TARGETS, RARRAY_LEN(targets));
    for (i = 0; i < RARRAY_LEN(targets); i++) lf_fill_target(r, (size_t)i, RARRAY_AREF(targets, i));
    r->n_targets = (size_t)RARRAY_LEN(targets);
    lf_fill_messages(r, lf_fetch(request, "messages", 1));

    r->params.messages = r->messages;
    r->params.n_messages = r->n_messages;
    system = lf_fetch(request, "system", 0);
    if (!NIL_P(system)) r->params.system = lf_copy_text(system, "system", &r->params.system_len);
    temperature = lf_fetch(request, "temperature", 0);
    if (!NIL_P(temperature)) {
        r->params.has_temperature = 1;
        r->params.temperature = NUM2DBL(temperature);
    }
    max_tokens = lf_fetch(request, "max_tokens", 0);
    r->params.max_tokens = NIL_P(max_tokens) ? 0 : NUM2LONG(max_tokens);
    r->params.stream = RTEST(lf_fetch(request, "stream", 0));

    policy = lf_fetch(request, "policy", 0);
    lf_fill_policy(&r->policy, NIL_P(policy) ? request : policy);
    lf_fill_budget(r, lf_fetch(request, "quota", 0));
    r->circuit = RTEST(lf_fetch(request, "circuit", 0));
}

/* A memset the compiler cannot drop as a dead store before free. */
static void *(*const volatile lf_wipe)(void *, int, size_t) = memset;

static void lf_free_secret(const char *s)
{
    if (!s) return;
    lf_wipe((void *)s, 0, strlen(s));
    free((void *)s);
}

void lf_engine_request_free(lf_engine_request *r)
{
    size_t i, k;
    for (i = 0; i < LF_MAX_TARGETS; i++) {
        free((void *)r->targets[i].base_url);
        lf_free_secret(r->targets[i].api_key);
        free((void *)r->targets[i].model);
        if (r->headers[i]) {
            for (k = 0; k < r->targets[i].n_headers; k++) lf_free_secret(r->headers[i][k]);
            free(r->headers[i]);
        }
    }
    for (i = 0; i < r->n_messages; i++) {
        free((void *)r->messages[i].role);
        free((void *)r->messages[i].content);
    }
    free(r->messages);
    free((void *)r->params.system);
    memset(r, 0, sizeof(*r));
}

void lf_init_engine_request(void)
{
    lf_sym_openai = ID2SYM(rb_intern("openai"));
    lf_sym_anthropic = ID2SYM(rb_intern("anthropic"));
}
