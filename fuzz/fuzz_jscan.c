/* libFuzzer target: the lf_jscan fast path of OpenAI stream events against
 * json-c's path. The input is a sequence of event data fields separated by
 * 0x1E; both stream states are fed the same events and must agree after each
 * one, on the return code, the delta and everything the state holds.
 *
 *   ruby fuzz/seed_jscan.rb    # tmp/fuzz/corpus_jscan from the recorded streams
 *   bundle exec rake fuzz FUZZ_TARGETS=jscan
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lf_sse.h"
#include "lf_wire.h"

#include "lf_banned.h"

#define CHECK(cond) do { if (!(cond)) abort(); } while (0)

static int fuzz_buf_eq(const lf_buf *a, const lf_buf *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->ptr, b->ptr, a->len) == 0);
}

static void fuzz_same(const lf_stream_state *a, const lf_stream_state *b)
{
    CHECK(a->done == b->done);
    CHECK(a->finished == b->finished);
    CHECK(a->has_usage == b->has_usage);
    CHECK(a->answer.input_tokens == b->answer.input_tokens);
    CHECK(a->answer.output_tokens == b->answer.output_tokens);
    CHECK(fuzz_buf_eq(&a->answer.text, &b->answer.text));
    CHECK(fuzz_buf_eq(&a->answer.model, &b->answer.model));
    CHECK(fuzz_buf_eq(&a->answer.id, &b->answer.id));
    CHECK(fuzz_buf_eq(&a->answer.finish_reason, &b->answer.finish_reason));
    CHECK(fuzz_buf_eq(&a->error.type, &b->error.type));
    CHECK(fuzz_buf_eq(&a->error.code, &b->error.code));
    CHECK(fuzz_buf_eq(&a->error.message, &b->error.message));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    lf_stream_state fast, slow;

    lf_stream_init(&fast, LF_API_OPENAI);
    lf_stream_init(&slow, LF_API_OPENAI);
    slow.json_c_only = 1;
    while (p <= end) {
        const char *sep = memchr(p, 0x1E, (size_t)(end - p));
        size_t n = (size_t)((sep ? sep : end) - p);
        lf_sse_event ev;
        const char *d1 = NULL, *d2 = NULL;
        size_t n1 = 0, n2 = 0;
        char *copy = malloc(n ? n : 1); /* exact size: ASan sees any overread */

        CHECK(copy != NULL);
        if (n) memcpy(copy, p, n);
        memset(&ev, 0, sizeof ev);
        ev.data = copy;
        ev.data_len = n;
        CHECK(lf_stream_event(&fast, &ev, &d1, &n1) == lf_stream_event(&slow, &ev, &d2, &n2));
        CHECK(n1 == n2 && (n1 == 0 || memcmp(d1, d2, n1) == 0));
        fuzz_same(&fast, &slow);
        free(copy);
        if (!sep) break;
        p = sep + 1;
    }
    lf_stream_free(&fast);
    lf_stream_free(&slow);
    return 0;
}
