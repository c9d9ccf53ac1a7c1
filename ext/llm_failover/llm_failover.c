/* Entry point of the extension: only calls each class's init. */
#include "lf_ruby.h"
#include "lf_transport.h"

#include "lf_banned.h"

VALUE lf_mLlmFailover;

RUBY_FUNC_EXPORTED void Init_llm_failover(void)
{
    if (lf_transport_global_init() != 0) rb_raise(rb_eLoadError, "llm_failover: curl_global_init failed");
    lf_mLlmFailover = rb_define_module("LlmFailover");
    lf_init_errors(lf_mLlmFailover);
    lf_init_quota(lf_mLlmFailover);
    lf_init_sse_parser(lf_mLlmFailover);
    lf_init_fiber_wait();
    lf_init_engine(lf_mLlmFailover);
    lf_init_circuit(lf_mLlmFailover);
    lf_init_circuit_table(lf_mLlmFailover);
    lf_init_answer_format(lf_mLlmFailover);
    lf_init_attachment(lf_mLlmFailover);
    lf_init_host(lf_mLlmFailover);
    lf_init_json_schema(lf_mLlmFailover);
    lf_init_scrubber(lf_mLlmFailover);
    lf_init_memory_index(lf_mLlmFailover);
}
