/* The core's CPU per streamed chunk, by framing: an OpenAI chat-completions
 * stream (lf_sse_feed + lf_stream_event) against a Bedrock ConverseStream
 * (lf_es_feed + lf_stream_message), the same 200 text deltas as each
 * provider sends them, fed a chunk at a time, three rounds. No network: what
 * the framing and the reading cost, not the transfer.
 *
 *   cc -std=gnu11 -O2 -Iext/llm_failover/core -Itest/c $(pkg-config --cflags json-c libcurl) \
 *     -o tmp/stream_chunks bench/stream_chunks.c ext/llm_failover/core/lf_*.c \
 *     $(pkg-config --libs libcurl json-c) -lm && tmp/stream_chunks
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lf_eventstream.h"
#include "lf_sse.h"
#include "lf_wire.h"
#include "lf_test_eventstream.h"

#include "lf_banned.h"

#define CHUNKS 200
#define ROUNDS 2000

/* An OpenAI chunk as OpenAI sends one, every field it carries. */
#define OPENAI_CHUNK                                                                                        \
    "data: {\"id\":\"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWx\",\"object\":\"chat.completion.chunk\","             \
    "\"created\":1767225600,\"model\":\"gpt-4o-mini-2024-07-18\",\"system_fingerprint\":\"fp_0123456789\"," \
    "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word%d \"},\"logprobs\":null,\"finish_reason\":null}]}\n\n"

static lf_stream_state state;

static int on_sse(void *ud, const lf_sse_event *ev)
{
    const char *d;
    size_t n;

    lf_stream_event(&state, ev, &d, &n);
    return 0;
}

static int on_message(void *ud, const lf_es_message *m)
{
    const char *d;
    size_t n;

    lf_stream_message(&state, m, &d, &n);
    return 0;
}

static double cpu_seconds(void)
{
    struct timespec t;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Both streams, and where each of their chunks starts (at[CHUNKS] is the end). */
static void build(lf_buf *sse, size_t *sse_at, lf_buf *es, size_t *es_at)
{
    char piece[512];
    int i;

    for (i = 0; i < CHUNKS; i++) {
        sse_at[i] = sse->len;
        es_at[i] = es->len;
        snprintf(piece, sizeof piece, OPENAI_CHUNK, i);
        lf_buf_append_str(sse, piece);
        snprintf(piece, sizeof piece, "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"word%d \"},\"p\":\"abcdefghijklmnopq\"}",
                 i);
        event(es, "contentBlockDelta", piece);
    }
    sse_at[CHUNKS] = sse->len;
    es_at[CHUNKS] = es->len;
    lf_buf_append_str(sse, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":"
                           "[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
    event(es, "messageStop", "{\"p\":\"abcd\",\"stopReason\":\"end_turn\"}");
    event(es, "metadata", "{\"p\":\"ab\",\"usage\":{\"inputTokens\":5,\"outputTokens\":200,\"totalTokens\":205}}");
    sse_at[CHUNKS + 1] = sse->len;
    es_at[CHUNKS + 1] = es->len;
}

int main(void)
{
    lf_buf sse, es;
    size_t sse_at[CHUNKS + 2], es_at[CHUNKS + 2];
    int round, r, i;

    lf_buf_init(&sse);
    lf_buf_init(&es);
    build(&sse, sse_at, &es, es_at);
    for (round = 0; round < 3; round++) {
        double t0 = cpu_seconds(), t1, t2;

        for (r = 0; r < ROUNDS; r++) {
            lf_sse_parser p;

            lf_sse_init(&p);
            lf_stream_init(&state, LF_API_OPENAI);
            for (i = 0; i <= CHUNKS; i++) lf_sse_feed(&p, sse.ptr + sse_at[i], sse_at[i + 1] - sse_at[i], on_sse, NULL);
            if (!lf_stream_complete(&state)) return 1;
            lf_stream_free(&state);
            lf_sse_free(&p);
        }
        t1 = cpu_seconds();
        for (r = 0; r < ROUNDS; r++) {
            lf_es_reader e;

            lf_es_init(&e);
            lf_stream_init(&state, LF_API_BEDROCK);
            for (i = 0; i <= CHUNKS; i++) lf_es_feed(&e, es.ptr + es_at[i], es_at[i + 1] - es_at[i], on_message, NULL);
            if (!lf_stream_complete(&state)) return 2;
            lf_stream_free(&state);
            lf_es_free(&e);
        }
        t2 = cpu_seconds();
        printf("per chunk: chat completions SSE %.0f ns, Bedrock ConverseStream %.0f ns (ratio %.2f)\n",
               (t1 - t0) / ROUNDS / CHUNKS * 1e9, (t2 - t1) / ROUNDS / CHUNKS * 1e9, (t2 - t1) / (t1 - t0));
    }
    lf_buf_free(&sse);
    lf_buf_free(&es);
    return 0;
}
