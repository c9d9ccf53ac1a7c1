/* Maps core error kinds to the Ruby error classes of lib/llm_failover/errors.rb,
 * which are defined in Ruby and looked up here once. */
#include "lf_ruby.h"
#include "lf_classify.h"

#include "lf_banned.h"

static VALUE lf_error_classes[LF_KIND_COUNT];
static VALUE lf_transcript_error;

VALUE lf_transcript_error_class(void)
{
    return lf_transcript_error;
}

VALUE lf_error_class_for(int kind)
{
    if (kind <= LF_OK || kind >= LF_KIND_COUNT || NIL_P(lf_error_classes[kind]))
        return lf_error_classes[LF_E_OTHER];
    return lf_error_classes[kind];
}

void lf_init_errors(VALUE mod)
{
    int k;
    char path[128];

    /* The classes are Ruby's: loaded here unless they already are (lib requires
     * errors.rb first; a script that requires the extension alone gets them too). */
    if (!rb_const_defined_at(mod, rb_intern("Error"))) rb_require("llm_failover/errors");
    for (k = 0; k < LF_KIND_COUNT; k++) {
        const char *name = lf_kind_name((lf_kind)k);
        lf_error_classes[k] = Qnil;
        rb_global_variable(&lf_error_classes[k]);
        if (!name) continue;
        snprintf(path, sizeof path, "LlmFailover::%s", name);
        lf_error_classes[k] = rb_path2class(path);
    }
    /* Not a provider's error kind: a transcript the core refused to send. */
    lf_transcript_error = rb_path2class("LlmFailover::ToolTranscriptError");
    rb_global_variable(&lf_transcript_error);
}
