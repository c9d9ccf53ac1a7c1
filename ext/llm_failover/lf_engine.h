/* The pieces of LlmFailover::Engine#run, one file each: the seam's request
 * types converted to the core's structs (engine_request.c), the core's
 * listener turned into calls on the Ruby listener and a Ruby breaker
 * (engine_listener.c), its waits with the GVL released or through the Fiber
 * scheduler (engine_wait.c), the attempt records and the result as the
 * seam's result types (engine_result.c), and the class itself
 * (engine_class.c). */
#ifndef LF_ENGINE_H
#define LF_ENGINE_H

#include "lf_ruby.h"
#include "lf_circuits.h"
#include "lf_failover.h"

/* A request in the core's terms. Every string is a C copy: the Ruby Strings
 * may move (compaction) or change while the loop runs Ruby code. */
typedef struct lf_engine_request {
    lf_target targets[LF_MAX_TARGETS]; /* every host of the tiers, in order */
    size_t n_targets;
    lf_tier tiers[LF_MAX_TIERS];       /* a Target's one host, or a Pool's */
    size_t n_tiers;
    double weights[LF_MAX_TARGETS];    /* a pool host's weight */
    const lf_target *stay;            /* :stay's host, or NULL */
    long tokens;                      /* :tokens, or 0 */
    VALUE targets_value;              /* every host's Engine::Target, flat: what callbacks name */
    char **headers[LF_MAX_TARGETS];   /* "Name: value" lines of each target */
    lf_message *messages;
    size_t n_messages;
    lf_text *inputs;                  /* :inputs: texts to embed (an embeddings request) */
    size_t n_inputs;
    lf_attachment *attachments;       /* every message's, in order (a message points at its run) */
    size_t n_attachments;
    lf_request_params params;
    lf_policy policy;
    char *keys[LF_MAX_TARGETS];       /* each target's key ("provider:model") */
    char *token;                      /* the call's, with a CircuitTable */
    VALUE circuits_object;            /* :circuits: nil, a CircuitTable, or a Ruby breaker */
    lf_circuits_call circuits;        /* with a CircuitTable: the call's side of it */
    lf_breaker breaker;               /* ... and the breaker the loop asks */
} lf_engine_request;

/* Fills a zeroed request from an Engine::Request; raises on a value of the
 * wrong type, leaving what it copied so far for lf_engine_request_free. */
void lf_engine_request_fill(lf_engine_request *r, VALUE request);
/* Frees (and wipes: keys) every copy; safe on a partly filled request. */
void lf_engine_request_free(lf_engine_request *r);
/* An Engine::Target's protocol, layout and what it takes of attachments into
 * p (no copies): what the wire layer's rules ask of a target. */
void lf_engine_target_traits(VALUE target, lf_request_params *p);

/* The Ruby listener as the core sees it. */
typedef struct lf_ruby_listener {
    VALUE listener;
    VALUE targets;       /* the request's Engine::Targets: what the callbacks name */
    int state;           /* rb_protect state of an exception to re-raise, or 0 */
    volatile int woken;  /* set by the unblocking function */
    int on_interrupt;    /* the listener has on_interrupt */
    lf_fiber_wait fiber; /* the calling fiber's scheduler, when it has one */
    VALUE stopped_attempt; /* the record of the attempt a stashed exception cut (an Array of
                            * two: a hedged request's), or Qnil */
    VALUE breaker_object; /* a Ruby breaker (:circuits that is no CircuitTable), or Qnil */
    lf_breaker ruby_breaker; /* the core's breaker over it */
} lf_ruby_listener;

/* Checks the listener's methods and fills the core's listener (l->ud = rl);
 * targets: the request's, which the callbacks hand to Ruby for an index. */
void lf_ruby_listener_init(lf_ruby_listener *rl, VALUE listener, VALUE targets, lf_listener *l);
/* What a callback returns to the core after rb_protect left *state: 0, or
 * LF_CANCEL for an Engine::Cancel (cleared: the call ends cancelled, nothing
 * is raised), or 1 for any other exception (kept in *state, raised once the
 * core is out). */
int lf_ruby_stop(int *state);
/* Run by Engine#run's cleanup while the exception that stopped the call
 * unwinds: hands the listener the record of the attempt it cut, with
 * :stopped_by (the exception's class, nil for Thread#kill or a throw). */
void lf_ruby_listener_unwind(lf_ruby_listener *rl);
/* The call's breaker, or NULL: a CircuitTable's (the core's, with the
 * listener's on_circuit_change told of each change), or a Ruby breaker
 * object's health(n), admit(target) and report(target, success,
 * error_class, hold). */
const lf_breaker *lf_ruby_listener_breaker(lf_ruby_listener *rl, lf_engine_request *r);

/* An Engine::Headroom for h (nil when it says nothing), with `dry`; and
 * one (or nil) as the core's. */
VALUE lf_headroom_value(const lf_headroom *h, int dry);
lf_headroom lf_headroom_from(VALUE v);

/* Fills the core's waits (wait, wait_fd, wake_fd, on_wake) for rl. */
void lf_ruby_listener_waits(lf_ruby_listener *rl, lf_listener *l);

/* One attempt's record as on_attempt gets it (an Engine::Attempt); its
 * target is the request's Engine::Target. */
VALUE lf_attempt_value(const lf_attempt_record *r, VALUE targets);
/* Marks an Engine::Attempt stopped, by `cause` (an exception class, or nil). */
void lf_attempt_set_stopped_by(VALUE attempt, VALUE cause);
/* The outcome of lf_run as Engine#run returns it (an Engine::Result). */
VALUE lf_result_value(const lf_outcome *o, VALUE targets);
/* Engine::Cancel: raised by a listener callback, it cancels the call. */
VALUE lf_cancel_class(void);

/* The CircuitTable behind v (circuit_table_class.c), when v is one. */
int lf_is_circuit_table(VALUE v);
lf_circuits *lf_circuit_table_get(VALUE v);

/* A Struct class of the seam under Engine, its members listed once by the
 * file that converts it: Struct.new(*members, keyword_init:). */
VALUE lf_engine_struct(VALUE engine, const char *name, const char *const *members, int n, int keyword_init);

void lf_init_engine_request(VALUE engine);
void lf_init_engine_listener(VALUE engine);
void lf_init_engine_wait(void);
void lf_init_engine_result(VALUE engine);

#endif
