/* Engine#run's request Hash -> the core's lf_engine_request. Types only:
 * the values were validated by Ruby (Configuration, Chat), which owns those
 * rules and their messages. */
#include "lf_engine.h"

#include <string.h>

#include "lf_redact.h"

#include "lf_banned.h"

static VALUE lf_sym_openai, lf_sym_anthropic, lf_sym_auto, lf_sym_required, lf_sym_none;

/* The request's keys, interned once at load rather than looked up by name on
 * every call. */
enum lf_key {
    LF_K_TARGETS,
    LF_K_MESSAGES,
    LF_K_SYSTEM,
    LF_K_TEMPERATURE,
    LF_K_MAX_TOKENS,
    LF_K_STREAM,
    LF_K_POLICY,
    LF_K_CIRCUIT,
    LF_K_API,
    LF_K_BASE_URL,
    LF_K_API_KEY,
    LF_K_MODEL,
    LF_K_HEADERS,
    LF_K_MAX_RETRIES,
    LF_K_RETRY_INTERVAL,
    LF_K_RETRY_BACKOFF_FACTOR,
    LF_K_RETRY_MAX_INTERVAL,
    LF_K_RETRY_INTERVAL_RANDOMNESS,
    LF_K_CONNECT_TIMEOUT,
    LF_K_FIRST_TOKEN_TIMEOUT,
    LF_K_IDLE_TIMEOUT,
    LF_K_REQUEST_TIMEOUT,
    LF_K_FAILOVER_ON_CONTEXT_LENGTH,
    LF_K_MAX_RESPONSE_BYTES,
    LF_K_HEDGE_AFTER,
    LF_K_JSON,
    LF_K_SCHEMA,
    LF_K_SCHEMA_NAME,
    LF_K_INPUTS,
    LF_K_TOOLS,
    LF_K_TOOL_CHOICE,
    LF_K_PARALLEL_TOOL_CALLS,
    LF_K_ATTACHMENTS,
    LF_K_IMAGES,
    LF_K_DOCUMENTS,
    LF_K_ATTACHMENT_URLS,
    LF_K_MAX_ATTACHMENT_BYTES,
    LF_K_MAX_ATTACHMENTS,
    LF_K_COUNT
};

static const char *const lf_key_names[LF_K_COUNT] = {
    [LF_K_TARGETS] = "targets",
    [LF_K_MESSAGES] = "messages",
    [LF_K_SYSTEM] = "system",
    [LF_K_TEMPERATURE] = "temperature",
    [LF_K_MAX_TOKENS] = "max_tokens",
    [LF_K_STREAM] = "stream",
    [LF_K_POLICY] = "policy",
    [LF_K_CIRCUIT] = "circuit",
    [LF_K_API] = "api",
    [LF_K_BASE_URL] = "base_url",
    [LF_K_API_KEY] = "api_key",
    [LF_K_MODEL] = "model",
    [LF_K_HEADERS] = "headers",
    [LF_K_MAX_RETRIES] = "max_retries",
    [LF_K_RETRY_INTERVAL] = "retry_interval",
    [LF_K_RETRY_BACKOFF_FACTOR] = "retry_backoff_factor",
    [LF_K_RETRY_MAX_INTERVAL] = "retry_max_interval",
    [LF_K_RETRY_INTERVAL_RANDOMNESS] = "retry_interval_randomness",
    [LF_K_CONNECT_TIMEOUT] = "connect_timeout",
    [LF_K_FIRST_TOKEN_TIMEOUT] = "first_token_timeout",
    [LF_K_IDLE_TIMEOUT] = "idle_timeout",
    [LF_K_REQUEST_TIMEOUT] = "request_timeout",
    [LF_K_FAILOVER_ON_CONTEXT_LENGTH] = "failover_on_context_length",
    [LF_K_MAX_RESPONSE_BYTES] = "max_response_bytes",
    [LF_K_HEDGE_AFTER] = "hedge_after",
    [LF_K_JSON] = "json",
    [LF_K_SCHEMA] = "schema",
    [LF_K_SCHEMA_NAME] = "schema_name",
    [LF_K_INPUTS] = "inputs",
    [LF_K_TOOLS] = "tools",
    [LF_K_TOOL_CHOICE] = "tool_choice",
    [LF_K_PARALLEL_TOOL_CALLS] = "parallel_tool_calls",
    [LF_K_ATTACHMENTS] = "attachments",
    [LF_K_IMAGES] = "images",
    [LF_K_DOCUMENTS] = "documents",
    [LF_K_ATTACHMENT_URLS] = "attachment_urls",
    [LF_K_MAX_ATTACHMENT_BYTES] = "max_attachment_bytes",
    [LF_K_MAX_ATTACHMENTS] = "max_attachments",
};

static VALUE lf_keys[LF_K_COUNT];

static VALUE lf_fetch(VALUE hash, enum lf_key key, int required)
{
    VALUE v = rb_hash_lookup2(hash, lf_keys[key], Qundef);
    if (v != Qundef) return v;
    if (required) rb_raise(rb_eArgError, "llm_failover: request is missing :%s", lf_key_names[key]);
    return Qnil;
}

static double lf_fetch_num(VALUE hash, enum lf_key key)
{
    VALUE v = lf_fetch(hash, key, 1);
    if (!RB_FLOAT_TYPE_P(v) && !RB_INTEGER_TYPE_P(v))
        rb_raise(rb_eArgError, "llm_failover: :%s must be a number", lf_key_names[key]);
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

/* A target's attachment limit: nil for none (0), else a positive Integer. */
static long lf_optional_limit(VALUE v)
{
    long n;

    if (NIL_P(v)) return 0;
    n = NUM2LONG(v);
    if (n <= 0) rb_raise(rb_eArgError, "llm_failover: an attachment limit must be positive");
    return n;
}

static void lf_fill_target(lf_engine_request *r, size_t i, VALUE t)
{
    lf_target *target = &r->targets[i];
    VALUE api, headers;

    Check_Type(t, T_HASH);
    api = lf_fetch(t, LF_K_API, 1);
    if (api != lf_sym_openai && api != lf_sym_anthropic)
        rb_raise(rb_eArgError, "llm_failover: unknown api (expected :openai or :anthropic)");
    target->api = api == lf_sym_anthropic ? LF_API_ANTHROPIC : LF_API_OPENAI;
    target->base_url = lf_copy(lf_fetch(t, LF_K_BASE_URL, 1), "base_url");
    target->api_key = lf_copy(lf_fetch(t, LF_K_API_KEY, 1), "api_key");
    target->model = lf_copy(lf_fetch(t, LF_K_MODEL, 1), "model");
    /* Absent or nil: the target takes it (false says it does not). */
    target->no_images = lf_fetch(t, LF_K_IMAGES, 0) == Qfalse;
    target->no_documents = lf_fetch(t, LF_K_DOCUMENTS, 0) == Qfalse;
    target->no_urls = lf_fetch(t, LF_K_ATTACHMENT_URLS, 0) == Qfalse;
    /* Absent or nil: no limit of the target's own. */
    target->max_attachment_bytes = lf_optional_limit(lf_fetch(t, LF_K_MAX_ATTACHMENT_BYTES, 0));
    target->max_attachments = lf_optional_limit(lf_fetch(t, LF_K_MAX_ATTACHMENTS, 0));
    headers = lf_fetch(t, LF_K_HEADERS, 0);
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

/* An assistant message's tool calls: [[id, name, arguments JSON], ...]. */
static void lf_fill_tool_calls(lf_message *m, VALUE calls)
{
    lf_tool_call *out;
    long i;

    Check_Type(calls, T_ARRAY);
    if (RARRAY_LEN(calls) == 0) return;
    out = lf_alloc((size_t)RARRAY_LEN(calls) * sizeof(lf_tool_call));
    m->tool_calls = out;
    for (i = 0; i < RARRAY_LEN(calls); i++) {
        VALUE c = RARRAY_AREF(calls, i);
        Check_Type(c, T_ARRAY);
        if (RARRAY_LEN(c) != 3) rb_raise(rb_eArgError, "llm_failover: a tool call is [id, name, arguments]");
        m->n_tool_calls = (size_t)i + 1; /* counted first, as the messages are */
        out[i].id = lf_copy(RARRAY_AREF(c, 0), "tool call id");
        out[i].name = lf_copy(RARRAY_AREF(c, 1), "tool call name");
        out[i].arguments = lf_copy_text(RARRAY_AREF(c, 2), "tool call arguments", &out[i].arguments_len);
    }
}

/* A message: [role, content]; an assistant's with tool calls: ["assistant",
 * content, calls]; a tool's result: ["tool", content, call_id, is_error]. */
static void lf_fill_messages(lf_engine_request *r, VALUE messages)
{
    long i;
    Check_Type(messages, T_ARRAY);
    r->messages = lf_alloc((size_t)RARRAY_LEN(messages) * sizeof(lf_message));
    for (i = 0; i < RARRAY_LEN(messages); i++) {
        VALUE m = RARRAY_AREF(messages, i);
        lf_message *msg = &r->messages[i];
        Check_Type(m, T_ARRAY);
        if (RARRAY_LEN(m) < 2 || RARRAY_LEN(m) > 4)
            rb_raise(rb_eArgError, "llm_failover: a message is [role, content] (and its tool parts)");
        r->n_messages = (size_t)i + 1; /* counted first: freed from here on, whatever raises */
        msg->role = lf_copy(RARRAY_AREF(m, 0), "message role");
        msg->content = lf_copy_text(RARRAY_AREF(m, 1), "message content", &msg->content_len);
        if (RARRAY_LEN(m) == 3) lf_fill_tool_calls(msg, RARRAY_AREF(m, 2));
        if (RARRAY_LEN(m) == 4) {
            msg->tool_call_id = lf_copy(RARRAY_AREF(m, 2), "tool call id");
            msg->is_error = RTEST(RARRAY_AREF(m, 3));
        }
    }
}

/* :tools: [[name, description or nil, parameters JSON], ...]; :tool_choice:
 * :auto, :required, :none or a tool's name; :parallel_tool_calls: true,
 * false or nil (not sent). */
static void lf_fill_tools(lf_engine_request *r, VALUE request)
{
    VALUE tools = lf_fetch(request, LF_K_TOOLS, 0), choice, parallel;
    lf_tool *out;
    long i;

    if (!NIL_P(tools)) {
        Check_Type(tools, T_ARRAY);
        out = lf_alloc((size_t)RARRAY_LEN(tools) * sizeof(lf_tool));
        r->params.tools = out;
        for (i = 0; i < RARRAY_LEN(tools); i++) {
            VALUE t = RARRAY_AREF(tools, i), desc;
            Check_Type(t, T_ARRAY);
            if (RARRAY_LEN(t) != 3) rb_raise(rb_eArgError, "llm_failover: a tool is [name, description, parameters]");
            r->params.n_tools = (size_t)i + 1;
            out[i].name = lf_copy(RARRAY_AREF(t, 0), "tool name");
            desc = RARRAY_AREF(t, 1);
            if (!NIL_P(desc)) out[i].description = lf_copy(desc, "tool description");
            out[i].parameters = lf_copy(RARRAY_AREF(t, 2), "tool parameters");
        }
    }
    choice = lf_fetch(request, LF_K_TOOL_CHOICE, 0);
    if (choice == lf_sym_auto) r->params.tool_choice = LF_TOOL_CHOICE_AUTO;
    else if (choice == lf_sym_required) r->params.tool_choice = LF_TOOL_CHOICE_REQUIRED;
    else if (choice == lf_sym_none) r->params.tool_choice = LF_TOOL_CHOICE_NONE;
    else if (!NIL_P(choice)) {
        r->params.tool_choice = LF_TOOL_CHOICE_TOOL;
        r->params.tool_choice_name = lf_copy(choice, "tool_choice");
    }
    parallel = lf_fetch(request, LF_K_PARALLEL_TOOL_CALLS, 0);
    if (!NIL_P(parallel)) {
        r->params.has_parallel_tool_calls = 1;
        r->params.parallel_tool_calls = RTEST(parallel);
    }
}

/* :inputs, an Array of Strings: the request asks for their embeddings. */
static void lf_fill_inputs(lf_engine_request *r, VALUE inputs)
{
    long i;
    Check_Type(inputs, T_ARRAY);
    r->inputs = lf_alloc((size_t)RARRAY_LEN(inputs) * sizeof(lf_text));
    for (i = 0; i < RARRAY_LEN(inputs); i++) {
        r->n_inputs = (size_t)i + 1; /* counted first: freed from here on, whatever raises */
        r->inputs[i].ptr = lf_copy_text(RARRAY_AREF(inputs, i), "text to embed", &r->inputs[i].len);
    }
    r->params.kind = LF_REQUEST_EMBEDDINGS;
    r->params.inputs = r->inputs;
    r->params.n_inputs = r->n_inputs;
}

static char *lf_copy_optional(VALUE v, const char *what)
{
    return NIL_P(v) ? NULL : lf_copy(v, what);
}

/* :attachments: [[message index, mime type, filename or nil, base64 or nil,
 * URL or nil], ...], in order; each message's own are one run of them. */
static void lf_fill_attachments(lf_engine_request *r, VALUE list)
{
    long i;

    if (NIL_P(list)) return;
    Check_Type(list, T_ARRAY);
    if (RARRAY_LEN(list) == 0) return;
    r->attachments = lf_alloc((size_t)RARRAY_LEN(list) * sizeof(lf_attachment));
    for (i = 0; i < RARRAY_LEN(list); i++) {
        VALUE a = RARRAY_AREF(list, i), data;
        lf_attachment *out = &r->attachments[i];
        lf_message *m;
        long index;

        Check_Type(a, T_ARRAY);
        if (RARRAY_LEN(a) != 5)
            rb_raise(rb_eArgError, "llm_failover: an attachment is [index, mime_type, filename, base64, url]");
        index = NUM2LONG(RARRAY_AREF(a, 0));
        if (index < 0 || (size_t)index >= r->n_messages)
            rb_raise(rb_eArgError, "llm_failover: attachment %ld names message %ld of %zu", i, index, r->n_messages);
        m = &r->messages[index];
        if (m->n_attachments && m->attachments + m->n_attachments != out)
            rb_raise(rb_eArgError, "llm_failover: a message's attachments must be given together");
        r->n_attachments = (size_t)i + 1; /* counted first: freed from here on, whatever raises */
        out->mime_type = lf_copy(RARRAY_AREF(a, 1), "attachment mime_type");
        out->filename = lf_copy_optional(RARRAY_AREF(a, 2), "attachment filename");
        data = RARRAY_AREF(a, 3);
        if (!NIL_P(data)) out->base64 = lf_copy_text(data, "attachment data", &out->base64_len);
        out->url = lf_copy_optional(RARRAY_AREF(a, 4), "attachment url");
        if (!m->n_attachments) m->attachments = out;
        m->n_attachments++;
    }
}

/* The policy: a Hash of its own under :policy (Configuration#engine_policy),
 * or the same keys in the request. */
static void lf_fill_policy(lf_policy *p, VALUE policy)
{
    Check_Type(policy, T_HASH);
    p->max_retries = NUM2INT(lf_fetch(policy, LF_K_MAX_RETRIES, 1));
    p->backoff.interval = lf_fetch_num(policy, LF_K_RETRY_INTERVAL);
    p->backoff.factor = lf_fetch_num(policy, LF_K_RETRY_BACKOFF_FACTOR);
    p->backoff.max_interval = lf_fetch_num(policy, LF_K_RETRY_MAX_INTERVAL);
    p->backoff.randomness = lf_fetch_num(policy, LF_K_RETRY_INTERVAL_RANDOMNESS);
    p->connect_timeout = lf_fetch_num(policy, LF_K_CONNECT_TIMEOUT);
    p->first_token_timeout = lf_fetch_num(policy, LF_K_FIRST_TOKEN_TIMEOUT);
    p->idle_timeout = lf_fetch_num(policy, LF_K_IDLE_TIMEOUT);
    p->request_timeout = lf_fetch_num(policy, LF_K_REQUEST_TIMEOUT);
    p->failover_on_context_length = RTEST(lf_fetch(policy, LF_K_FAILOVER_ON_CONTEXT_LENGTH, 1));
    p->max_response_bytes = (size_t)lf_fetch_num(policy, LF_K_MAX_RESPONSE_BYTES);
    /* Optional: nil or absent is no hedging. */
    p->hedge_after = NIL_P(lf_fetch(policy, LF_K_HEDGE_AFTER, 0)) ? 0 : lf_fetch_num(policy, LF_K_HEDGE_AFTER);
}

void lf_engine_request_fill(lf_engine_request *r, VALUE request)
{
    VALUE targets, system, schema, schema_name, temperature, max_tokens, policy, circuit, inputs;
    long i;

    Check_Type(request, T_HASH);
    targets = lf_fetch(request, LF_K_TARGETS, 1);
    Check_Type(targets, T_ARRAY);
    if (RARRAY_LEN(targets) < 1 || RARRAY_LEN(targets) > LF_MAX_TARGETS)
        rb_raise(rb_eArgError, "llm_failover: 1 or %d targets, got %ld", LF_MAX_TARGETS, RARRAY_LEN(targets));
    for (i = 0; i < RARRAY_LEN(targets); i++) lf_fill_target(r, (size_t)i, RARRAY_AREF(targets, i));
    r->n_targets = (size_t)RARRAY_LEN(targets);
    inputs = lf_fetch(request, LF_K_INPUTS, 0);
    if (NIL_P(inputs)) {
        lf_fill_messages(r, lf_fetch(request, LF_K_MESSAGES, 1));
        lf_fill_attachments(r, lf_fetch(request, LF_K_ATTACHMENTS, 0));
    } else {
        lf_fill_inputs(r, inputs);
    }

    r->params.messages = r->messages;
    r->params.n_messages = r->n_messages;
    system = lf_fetch(request, LF_K_SYSTEM, 0);
    if (!NIL_P(system)) r->params.system = lf_copy_text(system, "system", &r->params.system_len);
    temperature = lf_fetch(request, LF_K_TEMPERATURE, 0);
    if (!NIL_P(temperature)) {
        r->params.has_temperature = 1;
        r->params.temperature = NUM2DBL(temperature);
    }
    max_tokens = lf_fetch(request, LF_K_MAX_TOKENS, 0);
    r->params.max_tokens = NIL_P(max_tokens) ? 0 : NUM2LONG(max_tokens);
    r->params.stream = RTEST(lf_fetch(request, LF_K_STREAM, 0));
    r->params.json_mode = RTEST(lf_fetch(request, LF_K_JSON, 0));
    schema = lf_fetch(request, LF_K_SCHEMA, 0);
    if (!NIL_P(schema)) r->params.schema = lf_copy(schema, "schema");
    schema_name = lf_fetch(request, LF_K_SCHEMA_NAME, 0);
    if (!NIL_P(schema_name)) r->params.schema_name = lf_copy(schema_name, "schema_name");
    lf_fill_tools(r, request);

    policy = lf_fetch(request, LF_K_POLICY, 0);
    lf_fill_policy(&r->policy, NIL_P(policy) ? request : policy);
    circuit = lf_fetch(request, LF_K_CIRCUIT, 0);
    r->circuit = RTEST(circuit);
}

/* A key or a header line: wiped before it is freed (lf_redact.h owns the rule). */
static void lf_free_secret(const char *s)
{
    if (!s) return;
    lf_wipe((void *)s, strlen(s));
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
        lf_message *m = &r->messages[i];
        free((void *)m->role);
        free((void *)m->content);
        free((void *)m->tool_call_id);
        for (k = 0; k < m->n_tool_calls; k++) {
            free((void *)m->tool_calls[k].id);
            free((void *)m->tool_calls[k].name);
            free((void *)m->tool_calls[k].arguments);
        }
        free((void *)m->tool_calls);
    }
    for (i = 0; i < r->params.n_tools; i++) {
        free((void *)r->params.tools[i].name);
        free((void *)r->params.tools[i].description);
        free((void *)r->params.tools[i].parameters);
    }
    free((void *)r->params.tools);
    free((void *)r->params.tool_choice_name);
    for (i = 0; i < r->n_attachments; i++) {
        free((void *)r->attachments[i].mime_type);
        free((void *)r->attachments[i].filename);
        free((void *)r->attachments[i].base64);
        free((void *)r->attachments[i].url);
    }
    free(r->attachments);
    free(r->messages);
    for (i = 0; i < r->n_inputs; i++) free((void *)r->inputs[i].ptr);
    free(r->inputs);
    free((void *)r->params.system);
    free((void *)r->params.schema);
    free((void *)r->params.schema_name);
    memset(r, 0, sizeof(*r));
}

void lf_init_engine_request(void)
{
    int k;
    for (k = 0; k < LF_K_COUNT; k++) lf_keys[k] = ID2SYM(rb_intern(lf_key_names[k]));
    lf_sym_openai = ID2SYM(rb_intern("openai"));
    lf_sym_anthropic = ID2SYM(rb_intern("anthropic"));
    lf_sym_auto = ID2SYM(rb_intern("auto"));
    lf_sym_required = ID2SYM(rb_intern("required"));
    lf_sym_none = ID2SYM(rb_intern("none"));
}
