/* libFuzzer target: the lf_jscan fast paths against json-c's.
 *
 * Streams: the input is a sequence of OpenAI event data fields separated by
 * 0x1E; both stream states are fed the same events and must agree after each
 * one, on the return code, the delta and everything the state holds.
 * Answers: the whole input, and each field alone, is read as an OpenAI and as
 * an Anthropic answer by lf_wire_parse_response, by json-c alone and by the
 * fast path alone; all that answer must agree. And lf_jscan_index must accept
 * exactly what lf_jscan_document accepts.
 *
 *   ruby fuzz/seed_jscan.rb    # tmp/fuzz/corpus_jscan from the recorded streams
 *   bundle exec rake fuzz FUZZ_TARGETS=jscan
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lf_jscan.h"
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

static int fuzz_answer_eq(const lf_answer *a, const lf_answer *b)
{
    return fuzz_buf_eq(&a->text, &b->text) && fuzz_buf_eq(&a->model, &b->model) &&
           fuzz_buf_eq(&a->finish_reason, &b->finish_reason) && fuzz_buf_eq(&a->id, &b->id) &&
           a->input_tokens == b->input_tokens && a->output_tokens == b->output_tokens;
}

/* body is an exact-size copy: ASan sees any overread. */
static void fuzz_answer(lf_api api, const char *body, size_t n)
{
    lf_answer a, b, f;
    lf_wire_error ea, eb;
    int r1, r2, rf;

    lf_answer_init(&a);
    lf_answer_init(&b);
    lf_answer_init(&f);
    lf_wire_error_init(&ea);
    lf_wire_error_init(&eb);
    r1 = lf_wire_parse_response(api, body, n, &a, &ea);
    r2 = lf_wire_parse_response_json_c(api, body, n, &b, &eb);
    rf = lf_wire_parse_response_jscan(api, body, n, &f);
    CHECK(r1 == r2);
    CHECK(fuzz_answer_eq(&a, &b));
    CHECK(fuzz_buf_eq(&ea.type, &eb.type) && fuzz_buf_eq(&ea.code, &eb.code) &&
          fuzz_buf_eq(&ea.message, &eb.message));
    if (rf == LF_WIRE_OK) {
        CHECK(r2 == LF_WIRE_OK);
        CHECK(fuzz_answer_eq(&f, &b));
    } else {
        CHECK(rf == -1);
    }
    lf_answer_free(&a);
    lf_answer_free(&b);
    lf_answer_free(&f);
    lf_wire_error_free(&ea);
    lf_wire_error_free(&eb);
}

static void fuzz_text(const char *p, size_t n)
{
    char *copy = malloc(n ? n : 1);
    lf_jnode *nodes = malloc((n + 1) * sizeof *nodes); /* a value takes a byte at least */
    lf_jdoc d;
    lf_js root;
    int doc, idx;

    CHECK(copy != NULL && nodes != NULL);
    if (n) memcpy(copy, p, n);
    fuzz_answer(LF_API_OPENAI, copy, n);
    fuzz_answer(LF_API_ANTHROPIC, copy, n);
    lf_jdoc_init(&d, nodes, (uint32_t)(n + 1));
    idx = lf_jscan_index(&d, copy, n);
    doc = lf_jscan_document(copy, n, &root);
    CHECK(idx == doc);
    if (idx == 0) CHECK(root.type == lf_jdoc_type(&d, 0) && root.p == copy + d.nodes[0].off && root.n == d.nodes[0].len);
    free(nodes);
    free(copy);
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
        if (sep) fuzz_text(p, n);
        if (!sep) break;
        p = sep + 1;
    }
    lf_stream_free(&fast);
    lf_stream_free(&slow);
    fuzz_text((const char *)data, size);
    return 0;
}
