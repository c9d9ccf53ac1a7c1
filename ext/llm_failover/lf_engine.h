/* The pieces of LlmFailover::Engine#run, one file each: the request Hash
 * converted to the core's structs (engine_request.c), the core's listener
 * turned into calls on the Ruby listener (engine_listener.c), its waits with
 * the GVL released or through the Fiber scheduler (engine_wait.c), the
 * attempt records and the outcome as Hashes (engine_result.c), and the class
 * itself (engine_class.c). */
#ifndef LF_ENGINE_H
#define LF_ENGINE_H

#include "lf_ruby.h"
#include "lf_failover.h"

/* A request in the core's terms. Every string is a C copy: the Ruby Strings
 * may move (compaction) or change while the loop runs Ruby code. */
typedef struct lf_engine_request {
    lf_target targets[LF_MAX_TARGETS];
    size_t n_targets;
    char **headers[LF_MAX_TARGETS];   /* "Name: value" lines of each target */
    lf_message *messages;
    size_t n_messages;
    lf_text *inputs;                  /* :inputs: texts to embed (an embeddings request) */
    size_t n_inputs;
    lf_attachment *attachments;       /* every message's, in order (a message points at its run) */
    size_t n_attachments;
    lf_request_params params;
    lf_policy policy;
    int circuit;                      /* :circuit: the listener is the breaker (circuit_health, circuit_report) */
} lf_engine_request;

/* Fills a zeroed request from the Ruby Hash; raises on a value of the wrong
 * type, leaving what it copied so far for lf_engine_request_free. */
void lf_engine_request_fill(lf_engine_request *r, VALUE request);
/* Frees (and wipes: keys) every copy; safe on a partly filled request. */
void lf_engine_request_free(lf_engine_request *r);

/* The Ruby listener as the core sees it. */
typedef struct lf_ruby_listener {
    VALUE listener;
    int state;           /* rb_protect state of an exception to re-raise, or 0 */
    volatile int woken;  /* set by the unblocking function */
    int on_interrupt;    /* the listener has on_interrupt */
    lf_fiber_wait fiber; /* the calling fiber's scheduler, when it has one */
    VALUE stopped_attempt; /* the record of the attempt a stashed exception cut (an Array of
                            * two: a hedged request's), or Qnil */
} lf_ruby_listener;

/* Checks the listener's methods and fills the core's listener (l->ud = rl). */
void lf_ruby_listener_init(lf_ruby_listener *rl, VALUE listener, lf_listener *l);
/* Run by Engine#run's cleanup while the exception that stopped the call
 * unwinds: hands the listener the record of the attempt it cut, with
 * :stopped_by (the exception's class, nil for Thread#kill or a throw). */
void lf_ruby_listener_unwind(lf_ruby_listener *rl);
/* Adds the breaker's callbacks on the Ruby listener: circuit_health(n),
 * circuit_report(target, success, error_class, hold), and, when it answers
 * it, circuit_admit(target). */
void lf_ruby_listener_breaker(lf_ruby_listener *rl, lf_listener *l);

/* Fills the core's waits (wait, wait_fd, wake_fd, on_wake) for rl. */
void lf_ruby_listener_waits(lf_ruby_listener *rl, lf_listener *l);

/* One attempt's record as on_attempt gets it. */
VALUE lf_attempt_to_hash(const lf_attempt_record *r);
/* The outcome of lf_run as Engine#run returns it. */
VALUE lf_outcome_to_hash(const lf_outcome *o);

void lf_init_engine_request(void);
void lf_init_engine_listener(void);
void lf_init_engine_wait(void);
void lf_init_engine_result(void);

#endif
