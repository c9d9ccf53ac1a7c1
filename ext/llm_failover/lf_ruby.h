/* Shared declarations of the binding files (one per Ruby class). */
#ifndef LF_RUBY_H
#define LF_RUBY_H

#include <ruby.h>

/* LlmFailover, set by Init_llm_failover before any class init runs. */
extern VALUE lf_mLlmFailover;

void lf_init_errors(VALUE mod);
void lf_init_engine(VALUE mod);
void lf_init_quota(VALUE mod);
void lf_init_sse_parser(VALUE mod);
void lf_init_circuit(VALUE mod);
void lf_init_circuit_table(VALUE mod);
void lf_init_answer_format(VALUE mod);
void lf_init_attachment(VALUE mod);
void lf_init_host(VALUE mod);
void lf_init_json_schema(VALUE mod);
void lf_init_scrubber(VALUE mod);
void lf_init_memory_index(VALUE mod);

/* A call's waits through the Fiber scheduler (fiber_wait.c). */
typedef struct lf_fiber_wait {
    VALUE scheduler;   /* the calling fiber's scheduler, or Qnil */
    VALUE io;          /* an IO over fd that does not own it, or Qnil */
    int fd;            /* the descriptor io wraps, -1 before the first wait */
    VALUE wake_io;     /* the listener's wake_io (the core watches it too), or Qnil */
    int wake_fd;       /* its descriptor, or -1 */
} lf_fiber_wait;

void lf_init_fiber_wait(void);
/* Fills w; nonzero when the calling fiber is non-blocking and has a
 * scheduler, so that the call's waits should go through it. */
int lf_fiber_wait_init(lf_fiber_wait *w);
/* One wait through the scheduler: until fd is readable or timeout_ms passed,
 * or a sleep of timeout_ms when fd is -1. An exception (the scheduler's
 * cancellation included) is stashed: *state is rb_protect's. */
void lf_fiber_wait_for(lf_fiber_wait *w, int fd, int timeout_ms, int *state);
/* Takes the listener's wake IO (a pipe's read end): the core watches its
 * descriptor beside the transfer's, and waits on it to sleep. Returns the
 * descriptor. */
int lf_fiber_wait_wake(lf_fiber_wait *w, VALUE io);

/* The Ruby error class for a core error kind (LlmFailover::Error for kinds
 * without a class of their own). Looked up once at load. */
VALUE lf_error_class_for(int kind);
/* The kind of an error class (its nearest ancestor with one) or of a class
 * name; LF_E_OTHER for one of no kind of its own. */
int lf_error_kind_of(VALUE class_or_name);
/* LlmFailover::ToolTranscriptError. */
VALUE lf_transcript_error_class(void);

#endif
