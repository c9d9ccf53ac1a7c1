/* Maps core error kinds to the Ruby error classes of lib/llm_failover/errors.rb,
 * which are defined in Ruby and looked up here once, and gives those classes
 * the core's rule of which kinds are retryable (Error.retryable_by_default?,
 * lf_kind_retryable). */
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

/* The kind of `klass` or its nearest ancestor that has one; LF_E_OTHER
 * (LlmFailover::Error) when none does. */
static int lf_kind_of_class(VALUE klass)
{
    int k;

    for (; RTEST(klass); klass = rb_class_superclass(klass))
        for (k = LF_OK + 1; k < LF_KIND_COUNT; k++)
            if (lf_error_classes[k] == klass) return k;
    return LF_E_OTHER;
}

int lf_error_kind_of(VALUE class_or_name)
{
    int k;

    if (RB_TYPE_P(class_or_name, T_CLASS)) return lf_kind_of_class(class_or_name);
    if (RB_TYPE_P(class_or_name, T_STRING))
        for (k = LF_OK + 1; k < LF_KIND_COUNT; k++)
            if (!NIL_P(lf_error_classes[k]) && rb_str_equal(rb_class_name(lf_error_classes[k]), class_or_name) == Qtrue)
                return k;
    return LF_E_OTHER;
}

/* @return [Boolean] whether errors of this class are retryable unless the provider
 *   said otherwise: the C core's rule for the class's kind (lf_kind_retryable). */
static VALUE lf_error_s_retryable_by_default(VALUE klass)
{
    return lf_kind_retryable((lf_kind)lf_kind_of_class(klass)) ? Qtrue : Qfalse;
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
    rb_define_singleton_method(lf_error_classes[LF_E_OTHER], "retryable_by_default?", lf_error_s_retryable_by_default, 0);
    /* Not a provider's error kind: a transcript the core refused to send. */
    lf_transcript_error = rb_path2class("LlmFailover::ToolTranscriptError");
    rb_global_variable(&lf_transcript_error);
}
