/* LlmFailover::Engine: the attempt loop of the core, driven from Ruby.
 *
 * The loop runs holding the GVL and gives it up only while it waits on the
 * network or sleeps between retries (rb_nogvl with INTR_FAIL and an
 * unblocking function that wakes curl_multi_poll). Ruby is called only from
 * the loop's listener, never from inside libcurl, and always under
 * rb_protect: an exception (or break/throw, Thread#kill, Timeout) is stashed,
 * the transfer is torn down, and the exception is re-raised once the core
 * has returned and freed everything. */
#include "lf_ruby.h"

#include <ruby/encoding.h>
#include <ruby/thread.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "lf_failover.h"
#include "lf_transport.h"

#include "lf_banned.h"

typedef struct lf_engine {
    lf_pool *pool;
} lf_engine;

static void lf_engine_free(void *p)
{
    lf_engine *e = p;
    /* dfree never calls Ruby: only libcurl and free(). */
    if (e->pool) lf_pool_free(e->pool);
    xfree(e);
}

static size_t lf_engine_memsize(const void *p)
{
    return sizeof(lf_engine);
}

/* The engine holds no Ruby objects, so it has nothing to mark or to update
 * after compaction. */
static const rb_data_type_t lf_engine_type = {
    .wrap_struct_name = "LlmFailover::Engine",
    .function = {
        .dmark = NULL,
        .dfree = lf_engine_free,
        .dsize = lf_engine_memsize,
        .dcompact = NULL,
    },
    .flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

static VALUE lf_engine_alloc(VALUE klass)
{
    lf_engine *e;
    VALUE obj = TypedData_Make_Struct(klass, lf_engine, &lf_engine_type, e);
    e->pool = lf_pool_new();
    if (!e->pool) rb_raise(rb_eNoMemError, "llm_failover: cannot allocate a connection pool");
    return obj;
}

static lf_engine *lf_engine_get(VALUE self)
{
    lf_engine *e;
    TypedData_Get_Struct(self, lf_engine, &lf_engine_type, e);
    return e;
}

/* ---- converting the request ------------------------------------------ */

static VALUE lf_sym_ok, lf_sym_target, lf_sym_content, lf_sym_model, lf_sym_finish_reason,
    lf_sym_input_tokens, lf_sym_output_tokens, lf_sym_provider_request_id, lf_sym_attempts,
    lf_sym_error_class, lf_sym_message, lf_sym_status, lf_sym_body, lf_sym_retry_after,
    lf_sym_retryable, lf_sym_partial_content, lf_sym_error_type, lf_sym_error_code, lf_sym_attempt,
    lf_sym_success, lf_sym_error_message, lf_sym_http_status, lf_sym_failover_eligible,
    lf_sym_latency_ms, lf_sym_first_token_ms, lf_sym_started_at, lf_sym_openai, lf_sym_anthropic;
static ID lf_id_on_chunk, lf_id_on_chunks, lf_id_on_reset, lf_id_on_attempt, lf_id_on_attempt_values;
/* The keys of an attempt Hash, in the order of on_attempt_values's arguments. */
static VALUE lf_attempt_keys[14];

/* The key's symbol is looked up through rb_intern on a string literal, which
 * Ruby's headers cache per call site: interning the name on every call cost
 * ~25 hash lookups per request (bench/README.md). */
#define lf_fetch(hash, key, required) lf_fetch_sym((hash), ID2SYM(rb_intern(key)), (key), (required))
#define lf_fetch_num(hash, key) lf_num_value(lf_fetch((hash), (key), 1), (key))

static VALUE lf_fetch_sym(VALUE hash, VALUE sym, const char *key, int required)
{
    VALUE v = rb_hash_lookup2(hash, sym, Qundef);
    if (v == Qundef) {
        if (required) rb_raise(rb_eArgError, "llm_failover: request is missing :%s", key);
        return Qnil;
    }
    return v;
}

static double lf_num_value(VALUE v, const char *key)
{
    double d;
    if (!RB_FLOAT_TYPE_P(v) && !RB_INTEGER_TYPE_P(v))
        rb_raise(rb_eArgError, "llm_failover: :%s must be a number", key);
    d = NUM2DBL(v);
    if (isnan(d) || d < 0) rb_raise(rb_eArgError, "llm_failover: :%s must not be negative", key);
    return d;
}

static void lf_check_string(VALUE v, const char *what)
{
    if (!RB_TYPE_P(v, T_STRING)) rb_raise(rb_eArgError, "llm_failover: %s must be a String", what);
    if (memchr(RSTRING_PTR(v), '\0', (size_t)RSTRING_LEN(v)))
        rb_raise(rb_eArgError, "llm_failover: %s contains a NUL byte", what);
}

/* All the C memory of one call, in one place so that it is freed on every
 * path. Filled only after every Ruby value was validated, so that nothing
 * can raise while it holds memory. */
typedef struct lf_call_args {
    lf_buf arena;                    /* every string, NUL-separated */
    lf_target targets[LF_MAX_TARGETS];
    size_t n_targets;
    const char **header_ptrs[LF_MAX_TARGETS];
    lf_message *messages;
    size_t n_messages;
    lf_request_params params;
    lf_policy policy;
} lf_call_args;

/* Copies into the arena and returns the offset (pointers are fixed later,
 * once the arena no longer grows). */
static size_t lf_arena_put(lf_buf *arena, const char *p, size_t n)
{
    size_t off = arena->len;
    if (lf_buf_append(arena, p, n) != 0 || lf_buf_append_char(arena, '\0') != 0)
        rb_raise(rb_eNoMemError, "llm_failover: out of memory");
    return off;
}

static void lf_validate_request(VALUE request, VALUE *targets, VALUE *messages)
{
    long i;
    Check_Type(request, T_HASH);
    *targets = lf_fetch(request, "targets", 1);
    Check_Type(*targets, T_ARRAY);
    if (RARRAY_LEN(*targets) < 1 || RARRAY_LEN(*targets) > LF_MAX_TARGETS)
        rb_raise(rb_eArgError, "llm_failover: 1 or %d targets, got %ld", LF_MAX_TARGETS, RARRAY_LEN(*targets));
    for (i = 0; i < RARRAY_LEN(*targets); i++) {
        VALUE t = RARRAY_AREF(*targets, i), api, headers;
        Check_Type(t, T_HASH);
        api = lf_fetch(t, "api", 1);
        if (api != lf_sym_openai && api != lf_sym_anthropic)
            rb_raise(rb_eArgError, "llm_failover: unknown api (expected :openai or :anthropic)");
        lf_check_string(lf_fetch(t, "base_url", 1), "base_url");
        lf_check_string(lf_fetch(t, "api_key", 1), "api_key");
        lf_check_string(lf_fetch(t, "model", 1), "model");
        headers = lf_fetch(t, "headers", 0);
        if (!NIL_P(headers)) {
            VALUE keys;
            long k;
            Check_Type(headers, T_HASH);
            keys = rb_funcall(headers, rb_intern("keys"), 0);
            for (k = 0; k < RARRAY_LEN(keys); k++) {
                VALUE key = RARRAY_AREF(keys, k);
                lf_check_string(key, "header name");
                lf_check_string(rb_hash_aref(headers, key), "header value");
            }
        }
    }
    *messages = lf_fetch(request, "messages", 1);
    Check_Type(*messages, T_ARRAY);
    for (i = 0; i < RARRAY_LEN(*messages); i++) {
        VALUE m = RARRAY_AREF(*messages, i);
        Check_Type(m, T_ARRAY);
        if (RARRAY_LEN(m) != 2) rb_raise(rb_eArgError, "llm_failover: a message is [role, content]");
        lf_check_string(RARRAY_AREF(m, 0), "message role");
        lf_check_string(RARRAY_AREF(m, 1), "message content");
    }
    if (!NIL_P(lf_fetch(request, "system", 0))) lf_check_string(lf_fetch(request, "system", 0), "system");
}

static void lf_call_args_free(lf_call_args *ca)
{
    size_t i;
    if (ca->arena.ptr) memset(ca->arena.ptr, 0, ca->arena.cap); /* it held API keys */
    lf_buf_free(&ca->arena);
    for (i = 0; i < LF_MAX_TARGETS; i++) {
        free(ca->header_ptrs[i]);
        ca->header_ptrs[i] = NULL;
    }
    free(ca->messages);
    ca->messages = NULL;
}

/* Offsets into the arena, recorded while it grows. */
typedef struct lf_offsets {
    size_t base_url, api_key, model;
    size_t headers_start, n_headers;
} lf_target_offsets;

/* The last frozen policy Hash read, and what was read from it: a
 * configuration hands the same frozen Hash to every call (Configuration#
 * engine_policy), so its eleven numbers are read once, not per call. The Hash
 * is kept alive (registered with the GC), so its address cannot be reused by
 * another. Only touched with the GVL held. */
static VALUE lf_policy_seen = Qnil;
static lf_policy lf_policy_seen_values;

static VALUE lf_build_args_body(VALUE arg)
{
    /* Everything here may raise (type conversions): the caller's rb_protect
     * frees the arena on that path. */
    VALUE *argv = (VALUE *)arg;
    VALUE request = argv[0], targets = argv[1], messages = argv[2];
    lf_call_args *ca = (lf_call_args *)argv[3];
    lf_target_offsets toff[LF_MAX_TARGETS];
    size_t *msg_off = NULL, *hdr_off[LF_MAX_TARGETS] = { NULL, NULL };
    size_t system_off = 0, i, k;
    VALUE system, temperature, max_tokens, policy;
    long n_msgs = RARRAY_LEN(messages);

    ca->n_targets = (size_t)RARRAY_LEN(targets);
    ca->n_messages = (size_t)n_msgs;
    ca->messages = calloc(n_msgs ? (size_t)n_msgs : 1, sizeof(lf_message));
    msg_off = calloc(n_msgs ? (size_t)n_msgs * 2 : 1, sizeof(size_t));
    if (!ca->messages || !msg_off) {
        free(msg_off);
        rb_raise(rb_eNoMemError, "llm_failover: out of memory");
    }
    for (i = 0; i < ca->n_targets; i++) {
        VALUE t = RARRAY_AREF(targets, (long)i), v, headers;
        v = lf_fetch(t, "base_url", 1);
        toff[i].base_url = lf_arena_put(&ca->arena, RSTRING_PTR(v), (size_t)RSTRING_LEN(v));
        v = lf_fetch(t, "api_key", 1);
        toff[i].api_key = lf_arena_put(&ca->arena, RSTRING_PTR(v), (size_t)RSTRING_LEN(v));
        v = lf_fetch(t, "model", 1);
        toff[i].model = lf_arena_put(&ca->arena, RSTRING_PTR(v), (size_t)RSTRING_LEN(v));
        ca->targets[i].api = lf_fetch(t, "api", 1) == lf_sym_anthropic ? LF_API_ANTHROPIC : LF_API_OPENAI;
        toff[i].n_headers = 0;
        headers = lf_fetch(t, "headers", 0);
        if (!NIL_P(headers) && RHASH_SIZE(headers) > 0) {
            VALUE keys = rb_funcall(headers, rb_intern("keys"), 0);
            toff[i].n_headers = (size_t)RARRAY_LEN(keys);
            hdr_off[i] = calloc(toff[i].n_headers, sizeof(size_t));
            ca->header_ptrs[i] = calloc(toff[i].n_headers, sizeof(char *));
            if (!hdr_off[i] || !ca->header_ptrs[i]) {
                free(msg_off);
                free(hdr_off[0]);
                free(hdr_off[1]);
                rb_raise(rb_eNoMemError, "llm_failover: out of memory");
            }
            for (k = 0; k < toff[i].n_headers; k++) {
                VALUE key = RARRAY_AREF(keys, (long)k), val = rb_hash_aref(headers, key);
                hdr_off[i][k] = ca->arena.len;
                if (lf_buf_append(&ca->arena, RSTRING_PTR(key), (size_t)RSTRING_LEN(key)) != 0 ||
                    lf_buf_append(&ca->arena, ": ", 2) != 0)
                    rb_raise(rb_eNoMemError, "llm_failover: out of memory");
                lf_arena_put(&ca->arena, RSTRING_PTR(val), (size_t)RSTRING_LEN(val));
            }
        }
    }
    for (i = 0; i < (size_t)n_msgs; i++) {
        VALUE m = RARRAY_AREF(messages, (long)i);
        VALUE role = RARRAY_AREF(m, 0), content = RARRAY_AREF(m, 1);
        msg_off[2 * i] = lf_arena_put(&ca->arena, RSTRING_PTR(role), (size_t)RSTRING_LEN(role));
        msg_off[2 * i + 1] = lf_arena_put(&ca->arena, RSTRING_PTR(content), (size_t)RSTRING_LEN(content));
    }
    system = lf_fetch(request, "system", 0);
    if (!NIL_P(system)) system_off = lf_arena_put(&ca->arena, RSTRING_PTR(system), (size_t)RSTRING_LEN(system));

    /* The arena is complete: turn offsets into pointers. */
    for (i = 0; i < ca->n_targets; i++) {
        ca->targets[i].base_url = ca->arena.ptr + toff[i].base_url;
        ca->targets[i].api_key = ca->arena.ptr + toff[i].api_key;
        ca->targets[i].model = ca->arena.ptr + toff[i].model;
        ca->targets[i].n_headers = toff[i].n_headers;
        for (k = 0; k < toff[i].n_headers; k++) ca->header_ptrs[i][k] = ca->arena.ptr + hdr_off[i][k];
        ca->targets[i].headers = (const char *const *)ca->header_ptrs[i];
        free(hdr_off[i]);
        hdr_off[i] = NULL;
    }
    for (i = 0; i < (size_t)n_msgs; i++) {
        ca->messages[i].role = ca->arena.ptr + msg_off[2 * i];
        ca->messages[i].content = ca->arena.ptr + msg_off[2 * i + 1];
    }
    free(msg_off);

    memset(&ca->params, 0, sizeof(ca->params));
    ca->params.messages = ca->messages;
    ca->params.n_messages = ca->n_messages;
    ca->params.system = NIL_P(system) ? NULL : ca->arena.ptr + system_off;
    temperature = lf_fetch(request, "temperature", 0);
    if (!NIL_P(temperature)) {
        ca->params.has_temperature = 1;
        ca->params.temperature = NUM2DBL(temperature);
    }
    max_tokens = lf_fetch(request, "max_tokens", 0);
    ca->params.max_tokens = NIL_P(max_tokens) ? 0 : NUM2LONG(max_tokens);
    ca->params.stream = RTEST(lf_fetch(request, "stream", 0));

    /* The policy: a Hash of its own under :policy (a configuration builds it
     * once and every call shares it), or the same keys in the request. */
    policy = lf_fetch(request, "policy", 0);
    if (NIL_P(policy)) policy = request;
    Check_Type(policy, T_HASH);
    if (policy == lf_policy_seen) { /* frozen, so what was read from it still holds */
        ca->policy = lf_policy_seen_values;
        return Qnil;
    }
    ca->policy.max_retries = NUM2INT(lf_fetch(policy, "max_retries", 1));
    if (ca->policy.max_retries < 0) rb_raise(rb_eArgError, "llm_failover: :max_retries must not be negative");
    ca->policy.backoff.interval = lf_fetch_num(policy, "retry_interval");
    ca->policy.backoff.factor = lf_fetch_num(policy, "retry_backoff_factor");
    ca->policy.backoff.max_interval = lf_fetch_num(policy, "retry_max_interval");
    ca->policy.backoff.randomness = lf_fetch_num(policy, "retry_interval_randomness");
    ca->policy.connect_timeout = lf_fetch_num(policy, "connect_timeout");
    ca->policy.first_token_timeout = lf_fetch_num(policy, "first_token_timeout");
    ca->policy.idle_timeout = lf_fetch_num(policy, "idle_timeout");
    ca->policy.request_timeout = lf_fetch_num(policy, "request_timeout");
    ca->policy.failover_on_context_length = RTEST(lf_fetch(policy, "failover_on_context_length", 1));
    ca->policy.max_response_bytes = (size_t)lf_fetch_num(policy, "max_response_bytes");
    if (OBJ_FROZEN(policy) && policy != request) {
        lf_policy_seen = policy;
        lf_policy_seen_values = ca->policy;
    }
    return Qnil;
}

/* ---- the listener ------------------------------------------------------ */

typedef struct lf_ruby_listener {
    VALUE listener;
    int state;            /* rb_protect state of a stashed exception, or 0 */
    CURLM *waiting_on;    /* the multi handle of the current wait */
    volatile int woken;
    int batches;          /* the listener has on_chunks: deltas go in batches */
    int pending_target;
    VALUE pending;        /* Array of deltas not yet delivered (batches), or Qnil */
    VALUE last_prid;      /* the provider request id String of the last attempt, or Qnil */
    int attempt_values;   /* the listener has on_attempt_values: attempts go positionally */
} lf_ruby_listener;

typedef struct lf_chunk_args {
    lf_ruby_listener *rl;
    int target;
    const char *text;
    size_t len;
} lf_chunk_args;

static VALUE lf_call_on_chunk(VALUE arg)
{
    lf_chunk_args *a = (lf_chunk_args *)arg;
    VALUE s = rb_utf8_str_new(a->text, (long)a->len);
    if (a->rl->batches) {
        if (NIL_P(a->rl->pending)) a->rl->pending = rb_ary_new();
        rb_ary_push(a->rl->pending, s);
        return Qnil;
    }
    return rb_funcall(a->rl->listener, lf_id_on_chunk, 2, s, INT2NUM(a->target));
}

static VALUE lf_call_on_chunks(VALUE arg)
{
    lf_ruby_listener *rl = (lf_ruby_listener *)arg;
    VALUE batch = rl->pending;
    rl->pending = Qnil;
    return rb_funcall(rl->listener, lf_id_on_chunks, 2, batch, INT2NUM(rl->pending_target));
}

/* Hands the deltas gathered so far to the listener in one call. The core
 * dispatches every event of a network read back to back, and the deltas are
 * handed over before anything else reaches the listener and before every
 * wait, so a batch never holds a delta back from the user: it only saves a
 * method call per delta. 0, or 1 when the listener raised. */
static int lf_rl_flush(lf_ruby_listener *rl)
{
    if (rl->state || NIL_P(rl->pending)) return rl->state != 0;
    rb_protect(lf_call_on_chunks, (VALUE)rl, &rl->state);
    return rl->state != 0;
}

static int lf_rl_on_chunk(void *ud, int target, const char *text, size_t len)
{
    lf_ruby_listener *rl = ud;
    lf_chunk_args a = { rl, target, text, len };
    if (rl->batches && target != rl->pending_target) {
        if (lf_rl_flush(rl)) return 1;
        rl->pending_target = target;
    }
    rb_protect(lf_call_on_chunk, (VALUE)&a, &rl->state);
    return rl->state != 0;
}

static VALUE lf_call_on_reset(VALUE listener)
{
    return rb_funcall(listener, lf_id_on_reset, 0);
}

static int lf_rl_on_reset(void *ud)
{
    lf_ruby_listener *rl = ud;
    if (lf_rl_flush(rl)) return 1;
    rb_protect(lf_call_on_reset, rl->listener, &rl->state);
    return rl->state != 0;
}

static VALUE lf_num_or_nil(double v)
{
    return v < 0 ? Qnil : DBL2NUM(v);
}

static VALUE lf_long_or_nil(long v)
{
    return v < 0 ? Qnil : LONG2NUM(v);
}

/* A Time from seconds since the epoch, to the microsecond the record keeps,
 * without the Rational arithmetic Time.at(Float) does. */
static VALUE lf_time_from_epoch(double t)
{
    double sec = floor(t);
    long usec = lround((t - sec) * 1e6);
    if (usec >= 1000000) {
        sec += 1;
        usec -= 1000000;
    }
    return rb_time_nano_new((time_t)sec, usec * 1000);
}

typedef struct lf_attempt_args {
    lf_ruby_listener *rl;
    const lf_attempt_record *rec;
} lf_attempt_args;

/* Hashes are filled with rb_hash_bulk_insert: a Hash of more than eight
 * pairs is then made at its final size once, instead of growing pair by pair
 * and being rebuilt as a table on the ninth. */
#define LF_PAIR(k, v) (pairs[n++] = (k), pairs[n++] = (v))

static VALUE lf_call_on_attempt(VALUE arg)
{
    lf_attempt_args *a = (lf_attempt_args *)arg;
    const lf_attempt_record *r = a->rec;
    VALUE v[14], pairs[28], h;
    long n = 0, i;
    v[0] = INT2NUM(r->attempt);
    v[1] = INT2NUM(r->target);
    v[2] = r->success ? Qtrue : Qfalse;
    v[3] = r->success ? Qnil : lf_error_class_for(r->kind);
    v[4] = r->error_message ? rb_utf8_str_new_cstr(r->error_message) : Qnil;
    v[5] = r->http_status ? LONG2NUM(r->http_status) : Qnil;
    v[6] = r->failover_eligible ? Qtrue : Qfalse;
    v[7] = lf_num_or_nil(r->retry_after);
    v[8] = DBL2NUM(r->latency_ms);
    v[9] = lf_num_or_nil(r->first_token_ms);
    v[10] = lf_long_or_nil(r->input_tokens);
    v[11] = lf_long_or_nil(r->output_tokens);
    v[12] = lf_time_from_epoch(r->started_at);
    v[13] = a->rl->last_prid = r->provider_request_id ? rb_utf8_str_new_cstr(r->provider_request_id) : Qnil;
    /* The positional form skips a Hash of fourteen pairs per attempt. */
    if (a->rl->attempt_values) return rb_funcallv(a->rl->listener, lf_id_on_attempt_values, 14, v);
    for (i = 0; i < 14; i++) LF_PAIR(lf_attempt_keys[i], v[i]);
    h = rb_hash_new();
    rb_hash_bulk_insert(n, pairs, h);
    return rb_funcall(a->rl->listener, lf_id_on_attempt, 1, h);
}

static int lf_rl_on_attempt(void *ud, const lf_attempt_record *rec)
{
    lf_ruby_listener *rl = ud;
    lf_attempt_args a = { rl, rec };
    if (lf_rl_flush(rl)) return 1;
    rb_protect(lf_call_on_attempt, (VALUE)&a, &rl->state);
    return rl->state != 0;
}

typedef struct lf_wait_args {
    lf_ruby_listener *rl;
    CURLM *multi;
    int timeout_ms;
} lf_wait_args;

static void *lf_wait_nogvl(void *arg)
{
    lf_wait_args *w = arg;
    int numfds = 0;
    if (!w->rl->woken) curl_multi_poll(w->multi, NULL, 0, w->timeout_ms, &numfds);
    return NULL;
}

/* The unblocking function: Thread#kill, Thread#raise, Timeout and signals
 * call it from another thread. curl_multi_wakeup is safe to call from any
 * thread and makes the poll return at once. */
static void lf_wait_ubf(void *arg)
{
    lf_wait_args *w = arg;
    int saved_errno = errno; /* it may run in a signal handler */
    w->rl->woken = 1;
    curl_multi_wakeup(w->multi);
    errno = saved_errno;
}

static VALUE lf_check_ints(VALUE unused)
{
    rb_thread_check_ints();
    return Qnil;
}

static int lf_rl_wait(void *ud, CURLM *multi, int timeout_ms)
{
    lf_ruby_listener *rl = ud;
    lf_wait_args w = { rl, multi, timeout_ms };

    if (lf_rl_flush(rl)) return 1;
    rl->woken = 0;
    /* INTR_FAIL (what rb_thread_call_without_gvl2 passes) never raises: it
     * returns at once when an interrupt is pending, and leaves interrupts to
     * us. UBF_ASYNC_SAFE: lf_wait_ubf only stores a flag and write(2)s to
     * curl's wakeup socket, so Ruby may call it from a signal handler;
     * without the flag Ruby 3.1 starts and joins a helper thread on every
     * wait made from the main thread (measured: 22 us each, bench/README.md). */
    rb_nogvl(lf_wait_nogvl, &w, lf_wait_ubf, &w, RB_NOGVL_INTR_FAIL | RB_NOGVL_UBF_ASYNC_SAFE);
    /* Run pending interrupts now, under protection: a Thread#kill or an
     * exception from a signal handler stops the call, a signal handler
     * that returns normally lets it go on. */
    rb_protect(lf_check_ints, Qnil, &rl->state);
    return rl->state != 0;
}

/* ---- the result ------------------------------------------------------- */

static VALUE lf_buf_to_str_or_nil(const lf_buf *b)
{
    return b->len ? rb_utf8_str_new(b->ptr, (long)b->len) : Qnil;
}

/* Model names and finish reasons repeat on every call: the same frozen String
 * each time (Ruby's table of interned strings), not a new object per call. */
static VALUE lf_buf_to_interned_or_nil(const lf_buf *b)
{
    return b->len ? rb_enc_interned_str(b->ptr, (long)b->len, rb_utf8_encoding()) : Qnil;
}

typedef struct lf_result_args {
    const lf_outcome *o;
    const lf_ruby_listener *rl;
} lf_result_args;

static VALUE lf_outcome_to_hash(VALUE arg)
{
    const lf_outcome *o = ((lf_result_args *)arg)->o;
    VALUE pairs[28], h, prid = ((lf_result_args *)arg)->rl->last_prid;
    long n = 0;
    /* The last attempt's record already holds the same id: share the String. */
    if (NIL_P(prid) || (size_t)RSTRING_LEN(prid) != o->provider_request_id.len ||
        memcmp(RSTRING_PTR(prid), o->provider_request_id.ptr, o->provider_request_id.len) != 0)
        prid = lf_buf_to_str_or_nil(&o->provider_request_id);
    LF_PAIR(lf_sym_ok, o->ok ? Qtrue : Qfalse);
    LF_PAIR(lf_sym_target, INT2NUM(o->target));
    LF_PAIR(lf_sym_attempts, INT2NUM(o->attempts));
    LF_PAIR(lf_sym_provider_request_id, prid);
    if (o->ok) {
        LF_PAIR(lf_sym_content, rb_utf8_str_new(o->answer.text.ptr ? o->answer.text.ptr : "",
                                                (long)o->answer.text.len));
        LF_PAIR(lf_sym_model, lf_buf_to_interned_or_nil(&o->answer.model));
        LF_PAIR(lf_sym_finish_reason, lf_buf_to_interned_or_nil(&o->answer.finish_reason));
        LF_PAIR(lf_sym_input_tokens, lf_long_or_nil(o->answer.input_tokens));
        LF_PAIR(lf_sym_output_tokens, lf_long_or_nil(o->answer.output_tokens));
    } else {
        VALUE body = o->body.len ? rb_str_new(o->body.ptr, (long)o->body.len) : Qnil;
        if (!NIL_P(body)) {
            rb_enc_associate(body, rb_utf8_encoding());
            if (rb_enc_str_coderange(body) == ENC_CODERANGE_BROKEN)
                body = rb_str_scrub(body, Qnil);
        }
        LF_PAIR(lf_sym_error_class, lf_error_class_for(o->kind));
        LF_PAIR(lf_sym_message, rb_utf8_str_new(o->message.ptr ? o->message.ptr : "", (long)o->message.len));
        LF_PAIR(lf_sym_status, o->status ? LONG2NUM(o->status) : Qnil);
        LF_PAIR(lf_sym_body, body);
        LF_PAIR(lf_sym_retry_after, lf_num_or_nil(o->retry_after));
        LF_PAIR(lf_sym_retryable, o->retryable ? Qtrue : Qfalse);
        LF_PAIR(lf_sym_partial_content, lf_buf_to_str_or_nil(&o->partial));
        LF_PAIR(lf_sym_error_type, lf_buf_to_str_or_nil(&o->error_type));
        LF_PAIR(lf_sym_error_code, lf_buf_to_str_or_nil(&o->error_code));
    }
    h = rb_hash_new();
    rb_hash_bulk_insert(n, pairs, h);
    return h;
}

/* The class of the last listener checked, and whether it has on_chunks: the
 * gem's listener is always a Call, and asking four respond_to? per call cost
 * more than the rest of the argument checks. Registered with the GC, like
 * lf_policy_seen. */
static VALUE lf_listener_seen = Qnil;
static int lf_listener_seen_batches, lf_listener_seen_values;

/* @overload run(request, listener)
 *   Runs one logical call (Call#engine_request builds the request).
 *   @param request [Hash] :targets (1 or 2 Hashes of :api, :base_url, :api_key,
 *     :model, :headers), :messages ([role, content] pairs), :system, :temperature,
 *     :max_tokens, :stream, and the policy (:max_retries, :retry_interval, ...,
 *     :max_response_bytes) either in a Hash under :policy or in the request itself
 *   @param listener [#on_chunk, #on_reset, #on_attempt] on_chunk(text, target),
 *     on_reset, on_attempt(Hash of :attempt, :target, :success, :error_class,
 *     :error_message, :http_status, :failover_eligible, :retry_after, :latency_ms,
 *     :first_token_ms, :input_tokens, :output_tokens, :started_at,
 *     :provider_request_id). A listener may also have on_chunks(texts, target)
 *     (the deltas of one read in one call) and on_attempt_values (the Hash's
 *     values as fourteen arguments, in that order): the engine then uses those.
 *   @return [Hash] :ok, :target, :attempts and the answer or the error */
static VALUE lf_engine_run(VALUE self, VALUE request, VALUE listener)
{
    lf_engine *e = lf_engine_get(self);
    lf_call_args ca;
    lf_outcome o;
    lf_ruby_listener rl;
    lf_listener l;
    lf_result_args ra;
    VALUE targets, messages, argv[4], result = Qnil;
    int state = 0, rc;

    lf_validate_request(request, &targets, &messages);
    if (CLASS_OF(listener) != lf_listener_seen) {
        if (!rb_respond_to(listener, lf_id_on_chunk) || !rb_respond_to(listener, lf_id_on_reset) ||
            !rb_respond_to(listener, lf_id_on_attempt))
            rb_raise(rb_eArgError, "llm_failover: listener must respond to on_chunk, on_reset and on_attempt");
        lf_listener_seen_batches = rb_respond_to(listener, lf_id_on_chunks);
        lf_listener_seen_values = rb_respond_to(listener, lf_id_on_attempt_values);
        lf_listener_seen = CLASS_OF(listener);
    }

    memset(&ca, 0, sizeof(ca));
    lf_buf_init(&ca.arena);
    argv[0] = request;
    argv[1] = targets;
    argv[2] = messages;
    argv[3] = (VALUE)&ca;
    rb_protect(lf_build_args_body, (VALUE)argv, &state);
    if (state) {
        lf_call_args_free(&ca);
        rb_jump_tag(state);
    }

    memset(&rl, 0, sizeof(rl));
    rl.listener = listener;
    rl.batches = lf_listener_seen_batches;
    rl.attempt_values = lf_listener_seen_values;
    rl.pending = Qnil;
    rl.last_prid = Qnil;
    l.ud = &rl;
    l.on_chunk = lf_rl_on_chunk;
    l.on_reset = lf_rl_on_reset;
    l.on_attempt = lf_rl_on_attempt;
    l.wait = lf_rl_wait;

    lf_outcome_init(&o);
    rc = lf_run(e->pool, ca.targets, ca.n_targets, &ca.params, &ca.policy, &l, &o);
    lf_call_args_free(&ca);
    lf_rl_flush(&rl); /* the last deltas, when the core had no reason to wait after them */
    if (rl.state) {
        lf_outcome_free(&o);
        rb_jump_tag(rl.state);
    }
    if (rc != 0) {
        VALUE msg = rb_utf8_str_new(o.message.ptr ? o.message.ptr : "", (long)o.message.len);
        lf_outcome_free(&o);
        rb_raise(rb_eArgError, "llm_failover: %" PRIsVALUE, msg);
    }
    ra.o = &o;
    ra.rl = &rl;
    result = rb_protect(lf_outcome_to_hash, (VALUE)&ra, &state);
    lf_outcome_free(&o);
    if (state) rb_jump_tag(state);
    RB_GC_GUARD(request);
    RB_GC_GUARD(listener);
    RB_GC_GUARD(rl.pending);
    RB_GC_GUARD(rl.last_prid);
    return result;
}

/* Idle pooled connections (for tests and diagnostics). */
static VALUE lf_engine_idle_connections(VALUE self)
{
    return SIZET2NUM(lf_pool_idle_count(lf_engine_get(self)->pool));
}

/* ---- request ids ------------------------------------------------------ */

/* Random bytes for request ids, drawn from the kernel in blocks rather than
 * with a system call per id. A forked child drops what it inherited (a
 * pthread_atfork handler, rather than a getpid system call per id), so that
 * parent and child never hand out the same ids. Only touched with the GVL
 * held, and by the handler in a child that has one thread. */
static unsigned char lf_uuid_pool[512];
static size_t lf_uuid_left;

static void lf_uuid_forget(void)
{
    memset(lf_uuid_pool, 0, sizeof(lf_uuid_pool));
    lf_uuid_left = 0;
}

static int lf_uuid_refill(void)
{
    size_t got = 0;
    while (got < sizeof(lf_uuid_pool)) {
        ssize_t n = getrandom(lf_uuid_pool + got, sizeof(lf_uuid_pool) - got, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        got += (size_t)n;
    }
    lf_uuid_left = sizeof(lf_uuid_pool);
    return 0;
}

/* @overload uuid
 *   A random (version 4) UUID, as SecureRandom.uuid makes, for request ids.
 *   @return [String] */
static VALUE lf_engine_s_uuid(VALUE klass)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[16];
    char out[36];
    size_t i, o = 0;

    if (lf_uuid_left < sizeof(b)) {
        if (lf_uuid_refill() != 0) rb_sys_fail("getrandom");
    }
    memcpy(b, lf_uuid_pool + sizeof(lf_uuid_pool) - lf_uuid_left, sizeof(b));
    memset(lf_uuid_pool + sizeof(lf_uuid_pool) - lf_uuid_left, 0, sizeof(b));
    lf_uuid_left -= sizeof(b);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    for (i = 0; i < sizeof(b); i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 0x0f];
    }
    return rb_utf8_str_new(out, (long)sizeof(out));
}

/* libcurl's version string, for diagnostics and bench output. */
static VALUE lf_engine_s_curl_version(VALUE klass)
{
    return rb_str_new_cstr(curl_version());
}

void lf_init_engine(VALUE mod)
{
    VALUE cEngine = rb_define_class_under(mod, "Engine", rb_cObject);
    rb_define_alloc_func(cEngine, lf_engine_alloc);
    rb_define_method(cEngine, "run", lf_engine_run, 2);
    rb_define_method(cEngine, "idle_connections", lf_engine_idle_connections, 0);
    rb_define_singleton_method(cEngine, "curl_version", lf_engine_s_curl_version, 0);
    rb_define_singleton_method(cEngine, "uuid", lf_engine_s_uuid, 0);

#define LF_SYM(var, name) do { var = ID2SYM(rb_intern(name)); rb_gc_register_mark_object(var); } while (0)
    LF_SYM(lf_sym_ok, "ok");
    LF_SYM(lf_sym_target, "target");
    LF_SYM(lf_sym_content, "content");
    LF_SYM(lf_sym_model, "model");
    LF_SYM(lf_sym_finish_reason, "finish_reason");
    LF_SYM(lf_sym_input_tokens, "input_tokens");
    LF_SYM(lf_sym_output_tokens, "output_tokens");
    LF_SYM(lf_sym_provider_request_id, "provider_request_id");
    LF_SYM(lf_sym_attempts, "attempts");
    LF_SYM(lf_sym_error_class, "error_class");
    LF_SYM(lf_sym_message, "message");
    LF_SYM(lf_sym_status, "status");
    LF_SYM(lf_sym_body, "body");
    LF_SYM(lf_sym_retry_after, "retry_after");
    LF_SYM(lf_sym_retryable, "retryable");
    LF_SYM(lf_sym_partial_content, "partial_content");
    LF_SYM(lf_sym_error_type, "error_type");
    LF_SYM(lf_sym_error_code, "error_code");
    LF_SYM(lf_sym_attempt, "attempt");
    LF_SYM(lf_sym_success, "success");
    LF_SYM(lf_sym_error_message, "error_message");
    LF_SYM(lf_sym_http_status, "http_status");
    LF_SYM(lf_sym_failover_eligible, "failover_eligible");
    LF_SYM(lf_sym_latency_ms, "latency_ms");
    LF_SYM(lf_sym_first_token_ms, "first_token_ms");
    LF_SYM(lf_sym_started_at, "started_at");
    LF_SYM(lf_sym_openai, "openai");
    LF_SYM(lf_sym_anthropic, "anthropic");
#undef LF_SYM
    if (pthread_atfork(NULL, NULL, lf_uuid_forget) != 0) rb_raise(rb_eLoadError, "llm_failover: pthread_atfork failed");
    rb_gc_register_address(&lf_policy_seen);
    rb_gc_register_address(&lf_listener_seen);
    lf_id_on_chunk = rb_intern("on_chunk");
    lf_id_on_chunks = rb_intern("on_chunks");
    lf_id_on_reset = rb_intern("on_reset");
    lf_id_on_attempt = rb_intern("on_attempt");
    lf_id_on_attempt_values = rb_intern("on_attempt_values");
    lf_attempt_keys[0] = lf_sym_attempt;
    lf_attempt_keys[1] = lf_sym_target;
    lf_attempt_keys[2] = lf_sym_success;
    lf_attempt_keys[3] = lf_sym_error_class;
    lf_attempt_keys[4] = lf_sym_error_message;
    lf_attempt_keys[5] = lf_sym_http_status;
    lf_attempt_keys[6] = lf_sym_failover_eligible;
    lf_attempt_keys[7] = lf_sym_retry_after;
    lf_attempt_keys[8] = lf_sym_latency_ms;
    lf_attempt_keys[9] = lf_sym_first_token_ms;
    lf_attempt_keys[10] = lf_sym_input_tokens;
    lf_attempt_keys[11] = lf_sym_output_tokens;
    lf_attempt_keys[12] = lf_sym_started_at;
    lf_attempt_keys[13] = lf_sym_provider_request_id;
}
