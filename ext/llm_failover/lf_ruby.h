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

/* The Ruby error class for a core error kind (LlmFailover::Error for kinds
 * without a class of their own). Looked up once at load. */
VALUE lf_error_class_for(int kind);

#endif
