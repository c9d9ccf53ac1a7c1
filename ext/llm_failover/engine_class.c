/* LlmFailover::Engine: a connection pool and #run, the core's attempt loop
 * driven from Ruby: one Engine::Request in, one Engine::Result out (the seam,
 * doc/architecture.md). This file only binds: the request's types and their
 * conversion are in engine_request.c, the listener and a Ruby breaker in
 * engine_listener.c, its waits in engine_wait.c, the result's types in
 * engine_result.c, the loop in core/lf_failover.c. */
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
    VALUE targets;
    int rc;

    lf_engine_request_fill(&c->args, c->request);
    targets = c->args.targets_value;
    lf_ruby_listener_init(&c->rl, c->listener, targets, &c->l);
    lf_engine_check_transcript(&c->args);
    rc = lf_run(&(lf_run_args){
                    .pool = c->engine->pool,
                    .targets = c->args.targets,
                    .n_targets = c->args.n_targets,
                    .tiers = c->args.tiers,
                    .n_tiers = c->args.n_tiers,
                    .stay = c->args.stay,
                    .tokens = c->args.tokens,
                    .params = &c->args.params,
                    .policy = &c->args.policy,
                    .listener = &c->l,
                    .breaker = lf_ruby_listener_breaker(&c->rl, &c->args),
                },
                &c->outcome);
    if (c->rl.state) rb_jump_tag(c->rl.state); /* what the listener raised, now that the core is out */
    if (rc != 0) rb_raise(rb_eArgError, "llm_failover: %s", lf_buf_cstr(&c->outcome.message));
    return lf_result_value(&c->outcome, targets);
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
 *   Runs one logical call (doc/architecture.md, "The seam", lists every field).
 *   @param request [Engine::Request]
 *   @param listener [#on_chunk, #on_reset, #on_attempt] on_chunk(text, target)
 *     per streamed delta; on_reset(target) before target answers after text
 *     was delivered; on_attempt(Engine::Attempt) per attempt record;
 *     on_interrupt (optional) after a wait an interrupt cut short;
 *     on_circuit_change(target, from, to, reason, error_class) (optional)
 *     when the call's attempt changed a CircuitTable's circuit. Targets are
 *     the request's Engine::Targets. Raising Engine::Cancel from any of them
 *     cancels the call; any other exception stops it and comes out of #run.
 *   @return [Engine::Result] :ok, :failed or :cancelled */
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

VALUE lf_engine_struct(VALUE engine, const char *name, const char *const *members, int n, int keyword_init)
{
    VALUE args[32], klass;
    int i;

    for (i = 0; i < n && i < 31; i++) args[i] = ID2SYM(rb_intern(members[i]));
    if (!keyword_init) {
        klass = rb_funcallv(rb_cStruct, rb_intern("new"), i, args);
    } else {
        args[i] = rb_hash_new();
        rb_hash_aset(args[i], ID2SYM(rb_intern("keyword_init")), Qtrue);
        klass = rb_funcallv_kw(rb_cStruct, rb_intern("new"), i + 1, args, RB_PASS_KEYWORDS);
    }
    rb_define_const(engine, name, klass);
    return klass;
}

void lf_init_engine(VALUE mod)
{
    VALUE cEngine = rb_define_class_under(mod, "Engine", rb_cObject);
    rb_define_alloc_func(cEngine, lf_engine_alloc);
    rb_define_method(cEngine, "run", lf_engine_run, 2);
    rb_define_method(cEngine, "idle_connections", lf_engine_idle_connections, 0);
    rb_define_singleton_method(cEngine, "curl_version", lf_engine_s_curl_version, 0);
    rb_define_singleton_method(cEngine, "uuid", lf_engine_s_uuid, 0);
    lf_init_engine_request(cEngine);
    lf_init_engine_result(cEngine);
    lf_init_engine_listener(cEngine);
}
