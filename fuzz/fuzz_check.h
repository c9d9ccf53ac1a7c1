/* What every fuzz target of the wire layer checks of what a parser gave it:
 * buffers of valid UTF-8 (by test/c/utf8_ref.h's own decoder), NUL-terminated;
 * counts of -1 (none) or more; calls whole, their arguments never empty. A
 * target adds what only its protocol promises. */
#ifndef LF_FUZZ_CHECK_H
#define LF_FUZZ_CHECK_H

#include <stdlib.h>

#include "lf_buf.h"
#include "lf_wire.h"

#include "../test/c/utf8_ref.h"

#define CHECK(cond) do { if (!(cond)) abort(); } while (0)

static void check_buf(const lf_buf *b)
{
    CHECK(utf8_valid(lf_buf_cstr(b), b->len));
    CHECK(b->len == 0 || b->ptr[b->len] == '\0');
}

static void check_answer(const lf_answer *a)
{
    size_t i;

    check_buf(&a->text);
    check_buf(&a->model);
    check_buf(&a->finish_reason);
    check_buf(&a->id);
    check_buf(&a->reasoning);
    CHECK(a->input_tokens >= -1 && a->output_tokens >= -1);
    CHECK(a->cached_input_tokens >= -1 && a->cache_write_tokens >= -1);
    CHECK(a->n_tool_calls <= a->cap_tool_calls);
    for (i = 0; i < a->n_tool_calls; i++) {
        check_buf(&a->tool_calls[i].id);
        check_buf(&a->tool_calls[i].name);
        check_buf(&a->tool_calls[i].arguments);
        check_buf(&a->tool_calls[i].signature);
        CHECK(a->tool_calls[i].arguments.len > 0);
    }
}

static void check_error(const lf_wire_error *e)
{
    check_buf(&e->type);
    check_buf(&e->code);
    check_buf(&e->message);
}

#endif
