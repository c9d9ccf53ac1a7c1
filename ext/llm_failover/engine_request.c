/* The seam's way in: LlmFailover::Engine::Request, ::Target, ::Pool, ::Policy
 * and ::Attachment, Structs whose members are listed here once (doc/architecture.md,
 * "The seam", describes them), and their conversion into the core's
 * lf_engine_request. Types only: the values were validated by Ruby
 * (Configuration, Chat), which owns those rules and their messages. */
#include "lf_engine.h"

#include <string.h>

#include "lf_redact.h"

#include "lf_banned.h"

static VALUE lf_sym_auto, lf_sym_required, lf_sym_none;
static VALUE lf_cRequest, lf_cTarget, lf_cPool, lf_cPolicy, lf_cAttachment;

/* Engine::Request: one call. */
enum {
    LF_RQ_TARGETS,             /* [Target or Pool, ...]: 1 or 2, in the order to try */
    LF_RQ_MESSAGES,            /* [[role, content], ...]; an assistant's with tool calls
                                  ["assistant", content, [[id, name, arguments JSON], ...]],
                                  a call [id, name, arguments JSON, signature] when it has a
                                  signature, and with reasoning state ["assistant", content,
                                  calls, reasoning or nil, reasoning_api, reasoning_origin];
                                  a tool result ["tool", content, call_id, is_error] */
    LF_RQ_ATTACHMENTS,         /* nil, or one Array of Attachments per message */
    LF_RQ_INPUTS,              /* texts to embed: an embeddings request (no messages) */
    LF_RQ_TEMPERATURE,
    LF_RQ_MAX_TOKENS,
    LF_RQ_STREAM,
    LF_RQ_JSON,                /* the answer must be one JSON object */
    LF_RQ_SCHEMA,              /* ... matching this JSON Schema (its JSON text) */
    LF_RQ_SCHEMA_NAME,
    LF_RQ_TOOLS,               /* [[name, description or nil, parameters JSON], ...] */
    LF_RQ_TOOL_CHOICE,         /* :auto, :required, :none, a tool's name, or nil */
    LF_RQ_PARALLEL_TOOL_CALLS, /* true, false, or nil (not sent) */
    LF_RQ_POLICY,              /* Policy */
    LF_RQ_CIRCUITS,            /* nil, a CircuitTable (the loop decides itself), or a breaker
                                  object: health(n), admit(target), report(target, success,
                                  error_class, hold) */
    LF_RQ_TOKEN,               /* the call's own (its request id): whose probe a probe is */
    LF_RQ_STAY,                /* nil, or a Pool's host (its Target) the call goes to first while
                                  it has headroom: the one the chat's turn started on */
    LF_RQ_TOKENS,              /* nil, or the most tokens the request may be counted for (a pool
                                  host's headroom is weighed against it) */
    LF_RQ_COUNT
};
static const char *const lf_request_members[LF_RQ_COUNT] = {
    "targets", "messages", "attachments", "inputs", "temperature", "max_tokens", "stream", "json", "schema",
    "schema_name", "tools", "tool_choice", "parallel_tool_calls", "policy", "circuits", "token", "stay", "tokens",
};

/* Engine::Target: a model asked of a provider, built once per provider and model. */
enum {
    LF_TG_KEY,                 /* "provider:model": its name, and its circuit's key */
    LF_TG_API,                 /* the protocol: :openai, :anthropic, :responses, :gemini */
    LF_TG_BASE_URL,
    LF_TG_API_KEY,
    LF_TG_MODEL,
    LF_TG_HEADERS,             /* {name => value} or nil */
    LF_TG_IMAGES,              /* false: takes none (nil or true: takes them) */
    LF_TG_DOCUMENTS,
    LF_TG_ATTACHMENT_URLS,
    LF_TG_MAX_ATTACHMENT_BYTES, /* nil: no limit of its own */
    LF_TG_MAX_ATTACHMENTS,
    LF_TG_LAYOUT,              /* the host's: nil or :plain, :azure, :azure_deployment,
                                  :azure_foundry, :vertex */
    LF_TG_API_VERSION,         /* Azure's deployment and Foundry layouts */
    LF_TG_VERTEX,              /* :vertex: [project, location] */
    LF_TG_BEARER,              /* true: api_key is a bearer token (Azure's Entra ID) */
    LF_TG_ORIGIN,              /* the provider entry's name: whose reasoning state is whose */
    LF_TG_ENCRYPTED_REASONING, /* Responses: ask for the reasoning items and send them back */
    LF_TG_REGION,              /* Bedrock: the AWS region it signs for */
    LF_TG_AWS_CREDENTIALS,     /* Bedrock, signed: [access_key_id, secret_access_key, session_token
                                  or nil] (api_key is then nil) */
    LF_TG_UNUSABLE,            /* nil, or why nothing can be sent to it (a pool's host whose
                                  credential source failed); api_key and aws_credentials nil */
    LF_TG_COUNT
};
static const char *const lf_target_members[LF_TG_COUNT] = {
    "key", "api", "base_url", "api_key", "model", "headers", "images", "documents", "attachment_urls",
    "max_attachment_bytes", "max_attachments", "layout", "api_version", "vertex", "bearer", "origin",
    "encrypted_reasoning", "region", "aws_credentials", "unusable",
};

/* Engine::Pool: one target served by several hosts, each an Engine::Target
 * with its own key, picked by weight among those with headroom. */
enum { LF_PL_KEY, LF_PL_HOSTS, LF_PL_WEIGHTS, LF_PL_COUNT };
static const char *const lf_pool_members[LF_PL_COUNT] = { "key", "hosts", "weights" };

/* Engine::Policy: seconds where they are times; built once per configuration. */
enum {
    LF_PO_MAX_RETRIES,
    LF_PO_RETRY_INTERVAL,
    LF_PO_RETRY_BACKOFF_FACTOR,
    LF_PO_RETRY_MAX_INTERVAL,
    LF_PO_RETRY_INTERVAL_RANDOMNESS,
    LF_PO_CONNECT_TIMEOUT,
    LF_PO_FIRST_TOKEN_TIMEOUT,
    LF_PO_IDLE_TIMEOUT,
    LF_PO_REQUEST_TIMEOUT,
    LF_PO_FAILOVER_ON_CONTEXT_LENGTH,
    LF_PO_MAX_RESPONSE_BYTES,
    LF_PO_HEDGE_AFTER,         /* nil: no hedging */
    LF_PO_CIRCUIT_THRESHOLD,   /* the circuits' rules, read with a CircuitTable */
    LF_PO_CIRCUIT_COOLDOWN,
    LF_PO_CIRCUIT_FIRST_PROBE,
    LF_PO_CIRCUIT_PROBE_TTL,   /* seconds a probe is its call's */
    LF_PO_COUNT
};
static const char *const lf_policy_members[LF_PO_COUNT] = {
    "max_retries", "retry_interval", "retry_backoff_factor", "retry_max_interval", "retry_interval_randomness",
    "connect_timeout", "first_token_timeout", "idle_timeout", "request_timeout", "failover_on_context_length",
    "max_response_bytes", "hedge_after", "circuit_threshold", "circuit_cooldown", "circuit_first_probe",
    "circuit_probe_ttl",
};

/* Engine::Attachment: one file of a message, base64 and/or a URL. */
enum { LF_AT_MIME_TYPE, LF_AT_FILENAME, LF_AT_BASE64, LF_AT_URL, LF_AT_COUNT };
static const char *const lf_attachment_members[LF_AT_COUNT] = { "mime_type", "filename", "base64", "url" };

#define LF_FIELD(st, i) RSTRUCT_GET(st, i)

/* An instance of the seam's class klass, or a TypeError naming what. */
static void lf_check_struct(VALUE v, VALUE klass, const char *what)
{
    if (!rb_obj_is_kind_of(v, klass))
        rb_raise(rb_eTypeError, "llm_failover: %s must be an %" PRIsVALUE, what, rb_class_name(klass));
}

/* A required member: present (not nil). */
static VALUE lf_required(VALUE st, int i, const char *const *members, const char *type)
{
    VALUE v = LF_FIELD(st, i);
    if (NIL_P(v)) rb_raise(rb_eArgError, "llm_failover: %s is missing its %s", type, members[i]);
    return v;
}

static double lf_policy_num(VALUE policy, int i)
{
    VALUE v = lf_required(policy, i, lf_policy_members, "policy");
    if (!RB_FLOAT_TYPE_P(v) && !RB_INTEGER_TYPE_P(v))
        rb_raise(rb_eArgError, "llm_failover: policy %s must be a number", lf_policy_members[i]);
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

/* A protocol by its Symbol (the core's names: lf_wire_api_named). */
static lf_api lf_api_of(VALUE sym, const char *what)
{
    VALUE name;
    lf_api api;

    if (!SYMBOL_P(sym)) rb_raise(rb_eArgError, "llm_failover: %s must be a Symbol", what);
    name = rb_sym2str(sym);
    if (lf_wire_api_named(RSTRING_PTR(name), (size_t)RSTRING_LEN(name), &api) != 0)
        rb_raise(rb_eArgError, "llm_failover: unknown %s :%" PRIsVALUE, what, name);
    return api;
}

/* A host's layout by its Symbol, nil for the protocol's own host. */
static lf_layout lf_layout_of(VALUE sym)
{
    VALUE name;
    lf_layout layout;

    if (NIL_P(sym)) return LF_LAYOUT_PLAIN;
    if (!SYMBOL_P(sym)) rb_raise(rb_eArgError, "llm_failover: a target's layout must be a Symbol or nil");
    name = rb_sym2str(sym);
    if (lf_wire_layout_named(RSTRING_PTR(name), (size_t)RSTRING_LEN(name), &layout) != 0)
        rb_raise(rb_eArgError, "llm_failover: unknown layout :%" PRIsVALUE, name);
    return layout;
}

/* What the wire layer's rules ask of a target (its protocol, host and what it
 * takes of attachments), for the rules Ruby asks before a call. */
void lf_engine_target_traits(VALUE t, lf_request_params *p)
{
    lf_check_struct(t, lf_cTarget, "a target");
    p->api = lf_api_of(LF_FIELD(t, LF_TG_API), "api");
    p->layout = lf_layout_of(LF_FIELD(t, LF_TG_LAYOUT));
    /* nil: the target takes it (false says it does not). */
    p->no_images = LF_FIELD(t, LF_TG_IMAGES) == Qfalse;
    p->no_documents = LF_FIELD(t, LF_TG_DOCUMENTS) == Qfalse;
    p->no_urls = LF_FIELD(t, LF_TG_ATTACHMENT_URLS) == Qfalse;
    /* nil: no limit of the target's own. */
    p->max_attachment_bytes = lf_optional_limit(LF_FIELD(t, LF_TG_MAX_ATTACHMENT_BYTES));
    p->max_attachments = lf_optional_limit(LF_FIELD(t, LF_TG_MAX_ATTACHMENTS));
}

/* A signed target's AWS credentials: [access_key_id, secret_access_key,
 * session_token or nil]. */
static void lf_fill_aws(lf_target *target, VALUE aws)
{
    VALUE token;

    Check_Type(aws, T_ARRAY);
    if (RARRAY_LEN(aws) != 3)
        rb_raise(rb_eArgError, "llm_failover: aws_credentials is [access_key_id, secret_access_key, session_token]");
    target->aws_access_key_id = lf_copy(RARRAY_AREF(aws, 0), "aws access_key_id");
    target->aws_secret_access_key = lf_copy(RARRAY_AREF(aws, 1), "aws secret_access_key");
    token = RARRAY_AREF(aws, 2);
    if (!NIL_P(token)) target->aws_session_token = lf_copy(token, "aws session_token");
}

static void lf_fill_target(lf_engine_request *r, size_t i, VALUE t)
{
    lf_target *target = &r->targets[i];
    lf_request_params traits = {0};
    VALUE headers, vertex, api_version, origin, aws, region, unusable;

    lf_engine_target_traits(t, &traits);
    target->api = traits.api;
    target->layout = traits.layout;
    target->no_images = traits.no_images;
    target->no_documents = traits.no_documents;
    target->no_urls = traits.no_urls;
    target->max_attachment_bytes = traits.max_attachment_bytes;
    target->max_attachments = traits.max_attachments;
    r->keys[i] = lf_copy(lf_required(t, LF_TG_KEY, lf_target_members, "target"), "target key");
    target->base_url = lf_copy(lf_required(t, LF_TG_BASE_URL, lf_target_members, "target"), "base_url");
    aws = LF_FIELD(t, LF_TG_AWS_CREDENTIALS);
    unusable = LF_FIELD(t, LF_TG_UNUSABLE);
    if (!NIL_P(unusable)) target->unusable = lf_copy(unusable, "unusable");
    else if (NIL_P(aws)) target->api_key = lf_copy(lf_required(t, LF_TG_API_KEY, lf_target_members, "target"), "api_key");
    else lf_fill_aws(target, aws);
    region = LF_FIELD(t, LF_TG_REGION);
    if (!NIL_P(region)) target->region = lf_copy(region, "region");
    target->model = lf_copy(lf_required(t, LF_TG_MODEL, lf_target_members, "target"), "model");
    api_version = LF_FIELD(t, LF_TG_API_VERSION);
    if (!NIL_P(api_version)) target->api_version = lf_copy(api_version, "api_version");
    vertex = LF_FIELD(t, LF_TG_VERTEX);
    if (!NIL_P(vertex)) {
        Check_Type(vertex, T_ARRAY);
        if (RARRAY_LEN(vertex) != 2) rb_raise(rb_eArgError, "llm_failover: a target's vertex is [project, location]");
        target->vertex.project = lf_copy(RARRAY_AREF(vertex, 0), "vertex project");
        target->vertex.location = lf_copy(RARRAY_AREF(vertex, 1), "vertex location");
    }
    target->bearer = RTEST(LF_FIELD(t, LF_TG_BEARER));
    origin = LF_FIELD(t, LF_TG_ORIGIN);
    if (!NIL_P(origin)) target->origin = lf_copy(origin, "origin");
    target->encrypted_reasoning = RTEST(LF_FIELD(t, LF_TG_ENCRYPTED_REASONING));
    headers = LF_FIELD(t, LF_TG_HEADERS);
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

/* One entry of :targets, a Target or a Pool, as tier t: its hosts appended
 * to the request's flat list, which the callbacks name them by. */
static void lf_fill_tier(lf_engine_request *r, size_t t, VALUE entry)
{
    lf_tier *tier = &r->tiers[t];
    VALUE hosts, weights;
    long k;

    tier->first = r->n_targets;
    if (!rb_obj_is_kind_of(entry, lf_cPool)) {
        lf_fill_target(r, r->n_targets, entry);
        r->n_targets++;
        rb_ary_push(r->targets_value, entry);
        tier->n_hosts = 1;
        return;
    }
    hosts = lf_required(entry, LF_PL_HOSTS, lf_pool_members, "pool");
    weights = lf_required(entry, LF_PL_WEIGHTS, lf_pool_members, "pool");
    Check_Type(hosts, T_ARRAY);
    Check_Type(weights, T_ARRAY);
    if (RARRAY_LEN(hosts) < 1 || RARRAY_LEN(hosts) > LF_MAX_POOL_HOSTS || RARRAY_LEN(weights) != RARRAY_LEN(hosts))
        rb_raise(rb_eArgError, "llm_failover: a pool has 1 to %d hosts and a weight each", LF_MAX_POOL_HOSTS);
    for (k = 0; k < RARRAY_LEN(hosts); k++) {
        double w = NUM2DBL(RARRAY_AREF(weights, k));
        if (!(w > 0)) rb_raise(rb_eArgError, "llm_failover: a pool host's weight must be positive");
        r->weights[r->n_targets] = w;
        lf_fill_target(r, r->n_targets, RARRAY_AREF(hosts, k));
        r->n_targets++;
        rb_ary_push(r->targets_value, RARRAY_AREF(hosts, k));
    }
    tier->n_hosts = (size_t)RARRAY_LEN(hosts);
    tier->pooled = 1;
    tier->weights = &r->weights[tier->first];
}

/* An assistant message's tool calls: [[id, name, arguments JSON], ...], a
 * call with a signature [id, name, arguments JSON, signature]. */
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
        if (RARRAY_LEN(c) != 3 && RARRAY_LEN(c) != 4)
            rb_raise(rb_eArgError, "llm_failover: a tool call is [id, name, arguments] (and its signature)");
        m->n_tool_calls = (size_t)i + 1; /* counted first, as the messages are */
        out[i].id = lf_copy(RARRAY_AREF(c, 0), "tool call id");
        out[i].name = lf_copy(RARRAY_AREF(c, 1), "tool call name");
        out[i].arguments = lf_copy_text(RARRAY_AREF(c, 2), "tool call arguments", &out[i].arguments_len);
        if (RARRAY_LEN(c) == 4 && !NIL_P(RARRAY_AREF(c, 3)))
            out[i].signature = lf_copy_text(RARRAY_AREF(c, 3), "tool call signature", &out[i].signature_len);
    }
}

/* An assistant message's reasoning state: the state (or nil, when only its
 * calls are signed), the protocol and the origin that made it. */
static void lf_fill_reasoning(lf_message *m, VALUE state, VALUE api, VALUE origin)
{
    m->reasoning_api = lf_api_of(api, "reasoning_api");
    m->reasoning_origin = lf_copy(origin, "reasoning_origin");
    if (!NIL_P(state)) m->reasoning = lf_copy_text(state, "reasoning", &m->reasoning_len);
}

/* A message: [role, content]; an assistant's with tool calls: ["assistant",
 * content, calls], with reasoning state ["assistant", content, calls,
 * reasoning, reasoning_api, reasoning_origin]; a tool's result: ["tool",
 * content, call_id, is_error]. */
static void lf_fill_messages(lf_engine_request *r, VALUE messages)
{
    long i;
    Check_Type(messages, T_ARRAY);
    r->messages = lf_alloc((size_t)RARRAY_LEN(messages) * sizeof(lf_message));
    for (i = 0; i < RARRAY_LEN(messages); i++) {
        VALUE m = RARRAY_AREF(messages, i);
        lf_message *msg = &r->messages[i];
        Check_Type(m, T_ARRAY);
        if (RARRAY_LEN(m) < 2 || RARRAY_LEN(m) > 6 || RARRAY_LEN(m) == 5)
            rb_raise(rb_eArgError, "llm_failover: a message is [role, content] (and its tool parts)");
        r->n_messages = (size_t)i + 1; /* counted first: freed from here on, whatever raises */
        msg->role = lf_copy(RARRAY_AREF(m, 0), "message role");
        msg->content = lf_copy_text(RARRAY_AREF(m, 1), "message content", &msg->content_len);
        if (RARRAY_LEN(m) == 3 || RARRAY_LEN(m) == 6) lf_fill_tool_calls(msg, RARRAY_AREF(m, 2));
        if (RARRAY_LEN(m) == 6)
            lf_fill_reasoning(msg, RARRAY_AREF(m, 3), RARRAY_AREF(m, 4), RARRAY_AREF(m, 5));
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
    VALUE tools = LF_FIELD(request, LF_RQ_TOOLS), choice, parallel;
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
    choice = LF_FIELD(request, LF_RQ_TOOL_CHOICE);
    if (choice == lf_sym_auto) r->params.tool_choice = LF_TOOL_CHOICE_AUTO;
    else if (choice == lf_sym_required) r->params.tool_choice = LF_TOOL_CHOICE_REQUIRED;
    else if (choice == lf_sym_none) r->params.tool_choice = LF_TOOL_CHOICE_NONE;
    else if (!NIL_P(choice)) {
        r->params.tool_choice = LF_TOOL_CHOICE_TOOL;
        r->params.tool_choice_name = lf_copy(choice, "tool_choice");
    }
    parallel = LF_FIELD(request, LF_RQ_PARALLEL_TOOL_CALLS);
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

/* :attachments: nil, or one Array of Engine::Attachments per message; each
 * message's are one run of the request's list. */
static void lf_fill_attachments(lf_engine_request *r, VALUE per_message)
{
    long i, k, n = 0;

    if (NIL_P(per_message)) return;
    Check_Type(per_message, T_ARRAY);
    if ((size_t)RARRAY_LEN(per_message) != r->n_messages)
        rb_raise(rb_eArgError, "llm_failover: attachments for %ld messages, not %zu", RARRAY_LEN(per_message),
                 r->n_messages);
    for (i = 0; i < RARRAY_LEN(per_message); i++) {
        VALUE list = RARRAY_AREF(per_message, i);
        Check_Type(list, T_ARRAY);
        n += RARRAY_LEN(list);
    }
    if (n == 0) return;
    r->attachments = lf_alloc((size_t)n * sizeof(lf_attachment));
    for (i = 0; i < RARRAY_LEN(per_message); i++) {
        VALUE list = RARRAY_AREF(per_message, i);
        lf_message *m = &r->messages[i];

        for (k = 0; k < RARRAY_LEN(list) && r->n_attachments < (size_t)n; k++) {
            VALUE a = RARRAY_AREF(list, k), data;
            lf_attachment *out = &r->attachments[r->n_attachments];

            lf_check_struct(a, lf_cAttachment, "an attachment");
            r->n_attachments++; /* counted first: freed from here on, whatever raises */
            out->mime_type = lf_copy(lf_required(a, LF_AT_MIME_TYPE, lf_attachment_members, "attachment"),
                                     "attachment mime_type");
            out->filename = lf_copy_optional(LF_FIELD(a, LF_AT_FILENAME), "attachment filename");
            data = LF_FIELD(a, LF_AT_BASE64);
            if (!NIL_P(data)) out->base64 = lf_copy_text(data, "attachment data", &out->base64_len);
            out->url = lf_copy_optional(LF_FIELD(a, LF_AT_URL), "attachment url");
            if (!m->n_attachments) m->attachments = out;
            m->n_attachments++;
        }
    }
}

static void lf_fill_policy(lf_engine_request *r, VALUE policy)
{
    lf_policy *p = &r->policy;
    VALUE hedge_after;

    lf_check_struct(policy, lf_cPolicy, "the policy");
    p->max_retries = NUM2INT(lf_required(policy, LF_PO_MAX_RETRIES, lf_policy_members, "policy"));
    p->backoff.interval = lf_policy_num(policy, LF_PO_RETRY_INTERVAL);
    p->backoff.factor = lf_policy_num(policy, LF_PO_RETRY_BACKOFF_FACTOR);
    p->backoff.max_interval = lf_policy_num(policy, LF_PO_RETRY_MAX_INTERVAL);
    p->backoff.randomness = lf_policy_num(policy, LF_PO_RETRY_INTERVAL_RANDOMNESS);
    p->connect_timeout = lf_policy_num(policy, LF_PO_CONNECT_TIMEOUT);
    p->first_token_timeout = lf_policy_num(policy, LF_PO_FIRST_TOKEN_TIMEOUT);
    p->idle_timeout = lf_policy_num(policy, LF_PO_IDLE_TIMEOUT);
    p->request_timeout = lf_policy_num(policy, LF_PO_REQUEST_TIMEOUT);
    p->failover_on_context_length = RTEST(LF_FIELD(policy, LF_PO_FAILOVER_ON_CONTEXT_LENGTH));
    p->max_response_bytes = (size_t)lf_policy_num(policy, LF_PO_MAX_RESPONSE_BYTES);
    hedge_after = LF_FIELD(policy, LF_PO_HEDGE_AFTER);
    p->hedge_after = NIL_P(hedge_after) ? 0 : lf_policy_num(policy, LF_PO_HEDGE_AFTER);
}

/* :circuits: a CircuitTable is the call's breaker in C (the loop asks no
 * Ruby); any other object is asked from Ruby (engine_listener.c). */
static void lf_fill_circuits(lf_engine_request *r, VALUE request)
{
    VALUE circuits = LF_FIELD(request, LF_RQ_CIRCUITS), policy = LF_FIELD(request, LF_RQ_POLICY), first;
    lf_circuits_call *cc = &r->circuits;
    size_t i;

    r->circuits_object = circuits;
    if (NIL_P(circuits) || !lf_is_circuit_table(circuits)) return;
    r->token = lf_copy(lf_required(request, LF_RQ_TOKEN, lf_request_members, "request"), "token");
    cc->table = lf_circuit_table_get(circuits);
    for (i = 0; i < r->n_targets; i++) cc->keys[i] = r->keys[i];
    cc->n_keys = r->n_targets;
    cc->token = r->token;
    cc->rules.threshold = NUM2INT(lf_required(policy, LF_PO_CIRCUIT_THRESHOLD, lf_policy_members, "policy"));
    cc->rules.cooldown = lf_policy_num(policy, LF_PO_CIRCUIT_COOLDOWN);
    first = LF_FIELD(policy, LF_PO_CIRCUIT_FIRST_PROBE);
    cc->rules.first = NIL_P(first) ? cc->rules.cooldown : lf_policy_num(policy, LF_PO_CIRCUIT_FIRST_PROBE);
    cc->probe_ttl = lf_policy_num(policy, LF_PO_CIRCUIT_PROBE_TTL);
    lf_circuits_bind(cc, &r->breaker);
}

/* :stay, one of the request's pool hosts or nil; :tokens, nil or a count. */
static void lf_fill_stay(lf_engine_request *r, VALUE request)
{
    VALUE stay = LF_FIELD(request, LF_RQ_STAY), tokens = LF_FIELD(request, LF_RQ_TOKENS);
    long i;

    if (!NIL_P(tokens)) r->tokens = NUM2LONG(tokens);
    if (NIL_P(stay)) return;
    for (i = 0; i < RARRAY_LEN(r->targets_value); i++)
        if (RARRAY_AREF(r->targets_value, i) == stay) r->stay = &r->targets[i];
    if (!r->stay) rb_raise(rb_eArgError, "llm_failover: :stay must be one of the request's targets");
}

void lf_engine_request_fill(lf_engine_request *r, VALUE request)
{
    VALUE targets, schema, schema_name, temperature, max_tokens, inputs;
    long i;

    lf_check_struct(request, lf_cRequest, "the request");
    targets = lf_required(request, LF_RQ_TARGETS, lf_request_members, "request");
    Check_Type(targets, T_ARRAY);
    if (RARRAY_LEN(targets) < 1 || RARRAY_LEN(targets) > LF_MAX_TIERS)
        rb_raise(rb_eArgError, "llm_failover: 1 or %d targets, got %ld", LF_MAX_TIERS, RARRAY_LEN(targets));
    r->targets_value = rb_ary_new();
    for (i = 0; i < RARRAY_LEN(targets); i++) lf_fill_tier(r, (size_t)i, RARRAY_AREF(targets, i));
    r->n_tiers = (size_t)RARRAY_LEN(targets);
    rb_obj_freeze(r->targets_value);
    lf_fill_stay(r, request);
    inputs = LF_FIELD(request, LF_RQ_INPUTS);
    if (NIL_P(inputs)) {
        lf_fill_messages(r, lf_required(request, LF_RQ_MESSAGES, lf_request_members, "request"));
        lf_fill_attachments(r, LF_FIELD(request, LF_RQ_ATTACHMENTS));
    } else {
        lf_fill_inputs(r, inputs);
    }

    r->params.messages = r->messages;
    r->params.n_messages = r->n_messages;
    temperature = LF_FIELD(request, LF_RQ_TEMPERATURE);
    if (!NIL_P(temperature)) {
        r->params.has_temperature = 1;
        r->params.temperature = NUM2DBL(temperature);
    }
    max_tokens = LF_FIELD(request, LF_RQ_MAX_TOKENS);
    r->params.max_tokens = NIL_P(max_tokens) ? 0 : NUM2LONG(max_tokens);
    r->params.stream = RTEST(LF_FIELD(request, LF_RQ_STREAM));
    r->params.json_mode = RTEST(LF_FIELD(request, LF_RQ_JSON));
    schema = LF_FIELD(request, LF_RQ_SCHEMA);
    if (!NIL_P(schema)) r->params.schema = lf_copy(schema, "schema");
    schema_name = LF_FIELD(request, LF_RQ_SCHEMA_NAME);
    if (!NIL_P(schema_name)) r->params.schema_name = lf_copy(schema_name, "schema_name");
    lf_fill_tools(r, request);
    lf_fill_policy(r, lf_required(request, LF_RQ_POLICY, lf_request_members, "request"));
    lf_fill_circuits(r, request);
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
        free(r->keys[i]);
        free((void *)r->targets[i].base_url);
        lf_free_secret(r->targets[i].api_key);
        free((void *)r->targets[i].model);
        free((void *)r->targets[i].api_version);
        free((void *)r->targets[i].vertex.project);
        free((void *)r->targets[i].vertex.location);
        free((void *)r->targets[i].origin);
        free((void *)r->targets[i].region);
        free((void *)r->targets[i].unusable);
        lf_free_secret(r->targets[i].aws_access_key_id);
        lf_free_secret(r->targets[i].aws_secret_access_key);
        lf_free_secret(r->targets[i].aws_session_token);
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
        free((void *)m->reasoning);
        free((void *)m->reasoning_origin);
        for (k = 0; k < m->n_tool_calls; k++) {
            free((void *)m->tool_calls[k].id);
            free((void *)m->tool_calls[k].name);
            free((void *)m->tool_calls[k].arguments);
            free((void *)m->tool_calls[k].signature);
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
    free(r->token);
    free((void *)r->params.schema);
    free((void *)r->params.schema_name);
    memset(r, 0, sizeof(*r));
}

/* Engine::Target#inspect (and #to_s, pp): the key never shows. */
static VALUE lf_target_inspect(VALUE self)
{
    return rb_sprintf("#<LlmFailover::Engine::Target %" PRIsVALUE ">", LF_FIELD(self, LF_TG_KEY));
}

static VALUE lf_target_pretty_print(VALUE self, VALUE pp)
{
    return rb_funcall(pp, rb_intern("text"), 1, lf_target_inspect(self));
}

void lf_init_engine_request(VALUE engine)
{
    lf_cRequest = lf_engine_struct(engine, "Request", lf_request_members, LF_RQ_COUNT, 1);
    lf_cTarget = lf_engine_struct(engine, "Target", lf_target_members, LF_TG_COUNT, 1);
    lf_cPool = lf_engine_struct(engine, "Pool", lf_pool_members, LF_PL_COUNT, 1);
    lf_cPolicy = lf_engine_struct(engine, "Policy", lf_policy_members, LF_PO_COUNT, 1);
    lf_cAttachment = lf_engine_struct(engine, "Attachment", lf_attachment_members, LF_AT_COUNT, 1);
    rb_global_variable(&lf_cRequest);
    rb_global_variable(&lf_cTarget);
    rb_global_variable(&lf_cPool);
    rb_define_const(engine, "MAX_POOL_HOSTS", INT2FIX(LF_MAX_POOL_HOSTS));
    rb_global_variable(&lf_cPolicy);
    rb_global_variable(&lf_cAttachment);
    rb_define_method(lf_cTarget, "inspect", lf_target_inspect, 0);
    rb_define_method(lf_cTarget, "to_s", lf_target_inspect, 0);
    rb_define_method(lf_cTarget, "pretty_print", lf_target_pretty_print, 1);
    lf_sym_auto = ID2SYM(rb_intern("auto"));
    lf_sym_required = ID2SYM(rb_intern("required"));
    lf_sym_none = ID2SYM(rb_intern("none"));
}
