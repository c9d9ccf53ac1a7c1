/* LlmFailover::Chunk.build, the gem's own constructor of a Chunk: one per
 * streamed delta. The class, its readers and its public keyword constructor
 * are Ruby (lib/llm_failover/chunk.rb); a Chunk built here has exactly the
 * instance variables Chunk#initialize sets. From C it costs about a third less
 * than the Ruby builder did (allocate and a private method through __send__;
 * bench/README.md). */
#include "lf_ruby.h"

#include "lf_banned.h"

static ID id_content, id_index, id_source;

/* @overload build(content, index, source)
 *   @api private
 *   @param content [String] the delta
 *   @param index [Integer] its place in the answer
 *   @param source [Chunk::Source] frozen, shared by the chunks of one target
 *   @return [Chunk] frozen */
static VALUE lf_chunk_s_build(VALUE klass, VALUE content, VALUE index, VALUE source)
{
    VALUE c = rb_obj_alloc(klass);
    rb_ivar_set(c, id_content, content);
    rb_ivar_set(c, id_index, index);
    rb_ivar_set(c, id_source, source);
    return rb_obj_freeze(c);
}

void lf_init_chunk(VALUE mod)
{
    /* The class of lib/llm_failover/chunk.rb, or a new one that file reopens
     * when the extension happens to be loaded first. */
    VALUE cChunk = rb_define_class_under(mod, "Chunk", rb_cObject);
    id_content = rb_intern("@content");
    id_index = rb_intern("@index");
    id_source = rb_intern("@source");
    rb_define_singleton_method(cChunk, "build", lf_chunk_s_build, 3);
}
