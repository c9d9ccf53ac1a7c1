/* LlmFailover::Engine: a connection pool and #run, the core's attempt loop
 * driven from Ruby. This file only binds: the request's conversion is in
 * engine_request.c, the listener in engine_listener.c, its waits in
 * engine_wait.c, the result Hashes in engine_result.c, the loop (and the
 * quota's pick) in core/lf_failover.c. */
#include "lf_engine.h"

#include <string.h>

#include "lf_transport.h"
#include "lf_uuid.h"

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

/* Everything one #run holds, so that one function frees it on every path. */
typedef struct lf_engine_call {
    lf_engine *engine;
    VALUE request;
    VALUE listener;
    lf_engine_request args;
    lf_ruby_listener rl;
    lf_listener l;
    lf_outcome outcome;
} lf_engine_call;

/* The tool-call invariant, checked by the core before anything is sent (the
 * request builder checks it again): a transcript that breaks it raises
 * LlmFailover::ToolTranscriptError naming the call, never a provider's 400. */
static void lf_engine_check_transcript(const lf_engine_request *r)
{
    lf_buf why, id;
    VALUE message, call_id, args[2], kw, error;
    int rc;

    lf_buf_init(&why);
    lf_buf_init(&id);
    rc = lf_wire_check_transcript(r->messages, r->n_messages, &why, &id);
    if (rc == 0) {
        lf_buf_free(&why);
        lf_buf_free(&id);
        return;
    }
    message = rb_utf8_str_new(why.ptr ? why.ptr : "", (long)why.len);
    call_id = id.len ? rb_utf8_str_new(id.ptr, (long)id.len) : Qnil;
    lf_buf_free(&why);
    lf_buf_free(&id);
    if (rc != LF_WIRE_BAD_TRANSCRIPT) rb_raise(rb_eNoMemError, "llm_failover: out of memory checking the transcript");
    if (!NIL_P(error = rb_str_scrub(message, Qnil))) message = error; /* valid UTF-8 */
    kw = rb_hash_new();
    rb_hash_aset(kw, ID2SYM(rb_intern("call_id")), call_id);
    args[0] = message;
    args[1] = kw;
    error = rb_class_new_instance_kw(2, args, lf_transcript_error_class(), RB_PASS_KEYWORDS);
    rb_exc_raise(error);
}

static VALUE lf_engine_perform(VALUE arg)
{
    lf_engine_call *c = (lf_engine_call *)arg;
    int rc;

    lf_ruby_listener_init(&c->rl, c->listener, &c->l);
    lf_engine_request_fill(&c->args, c->request);
    lf_engine_check_transcript(&c->args);
    if (c->args.circuit) lf_ruby_listener_breaker(&c->rl, &c->l);
    rc = lf_run(&(lf_run_args){
                    .pool = c->engine->pool,
                    .targets = c->args.targets,
                    .n_targets = c->args.n_targets,
                    .params = &c->args.params,
                    .policy = &c->args.policy,
                    .listener = &c->l,
                },
                &c->outcome);
    if (c->rl.state) rb_jump_tag(c->rl.state); /* what the listener raised, now that the core is out */
    if (rc != 0) rb_raise(rb_eArgError, "llm_failover: %s", lf_buf_cstr(&c->outcome.message));
    return lf_outcome_to_hash(&c->outcome);
}

static VALUE lf_engine_cleanup(VALUE arg)
{
    lf_engine_call *c = (lf_engine_call *)arg;
    lf_ruby_listener_unwind(&c->rl);
    lf_engine_request_free(&c->args);
    lf_outcome_free(&c->outcome);
    return Qnil;
}

/* @overload run(request, listener)
 *   Runs one logical call (Call#engine_request builds the request).
 *   @param request [Hash] :targets (1 or 2 Hashes of :api, :base_url, :api_key,
 *     :model, :headers; the second is the backup), :messages ([role, content]
 *     pairs), :system, :temperature, :max_tokens, :stream, and the policy (:max_retries, :retry_interval, ...,
 *     :max_response_bytes) in a Hash under :policy or in the request itself,
 *     and :circuit (true: the listener also answers circuit_health(n) ->
 *     [route, failures, ...] before the first attempt and circuit_report(target,
 *     success, error_class, hold) -> open? after the attempts that bear on a
 *     circuit; when it answers circuit_admit(target) -> [route, failures] too,
 *     that is asked again before each request that is not the call's first)
 *   @param listener [#on_chunk, #on_reset, #on_attempt] on_chunk(text, target)
 *     per streamed delta; on_reset before a backup answers after text was
 *     delivered; on_interrupt (optional) after a wait an interrupt cut short
 *     (Thread#wakeup, a signal, a timer tick), where raising stops the call; on_attempt(Hash of :attempt, :target, :success, :error_class,
 *     :error_message, :phase, :http_status, :failover_eligible, :retry_after,
 *     :latency_ms, :first_token_ms, :input_tokens, :output_tokens, :started_at,
 *     :provider_request_id, :skipped) per HTTP attempt, and per target left out
 *     by its open circuit (skipped: true, no request); the attempt an exception
 *     from the listener or an interrupt cut comes once that exception is on its
 *     way out of #run, with :stopped_by (its class, nil for Thread#kill or a
 *     throw)
 *   @return [Hash] :ok, :target, :first_target, :attempts, :provider_request_id
 *     and the answer (:content, :model, ...) or the error (:error_class,
 *     :message, :phase, :status, :body, ...) */
static VALUE lf_engine_run(VALUE self, VALUE request, VALUE listener)
{
    lf_engine_call c;
    VALUE result;

    memset(&c, 0, sizeof(c));
    c.engine = lf_engine_get(self);
    c.request = request;
    c.listener = listener;
    lf_outcome_init(&c.outcome);
    result = rb_ensure(lf_engine_perform, (VALUE)&c, lf_engine_cleanup, (VALUE)&c);
    RB_GC_GUARD(request);
    RB_GC_GUARD(listener);
    return result;
}

/* Idle pooled connections (for tests and diagnostics). */
static VALUE lf_engine_idle_connections(VALUE self)
{
    return SIZET2NUM(lf_pool_idle_count(lf_engine_get(self)->pool));
}

/* @overload uuid
 *   A random (version 4) UUID, as SecureRandom.uuid makes, for request ids.
 *   @return [String] */
static VALUE lf_engine_s_uuid(VALUE klass)
{
    char out[LF_UUID_LEN];
    if (lf_uuid_v4(out) != 0) rb_sys_fail("getrandom");
    return rb_utf8_str_new(out, LF_UUID_LEN);
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
    lf_init_engine_request();
    lf_init_engine_listener();
}
