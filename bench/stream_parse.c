/* The wire layer's cost per streamed chunk, by protocol: N chunks in the shape
 * of the recordings (OpenAI chat completions, Gemini's streamGenerateContent,
 * whose every chunk is a whole response with its counts, Bedrock's
 * ConverseStream, binary event-stream frames with their CRCs) fed to lf_sse and
 * lf_stream_event, or lf_es and lf_stream_message, nothing else. Prints the CPU
 * microseconds per chunk; under bench/icount.sh, the instructions:
 *
 *   cc -O2 -std=gnu11 -Iext/llm_failover/core -Itest/c $(pkg-config --cflags json-c) -o tmp/bench/stream_parse \
 *     bench/stream_parse.c ext/llm_failover/core/lf_*.c $(pkg-config --libs libcurl json-c) -lm
 *   tmp/bench/stream_parse openai 20000; tmp/bench/stream_parse gemini 20000; tmp/bench/stream_parse bedrock 20000
 *   bench/icount.sh 200 1200 tmp/bench/stream_parse gemini {N} */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lf_buf.h"
#include "lf_eventstream.h"
#include "lf_sse.h"
#include "lf_wire.h"
#include "lf_test_eventstream.h"

#include "lf_banned.h"

static const char openai_chunk[] =
    "data: {\"id\":\"chatcmpl-BkT9zT0ZQ8xYwVb2f1Hc3\",\"object\":\"chat.completion.chunk\",\"created\":1750000000,"
    "\"model\":\"gpt-4.1-nano-2025-04-14\",\"service_tier\":\"default\",\"system_fingerprint\":\"fp_38343a2f8f\","
    "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word \"},\"logprobs\":null,\"finish_reason\":null}],"
    "\"usage\":null}\n\n";
static const char gemini_chunk[] =
    "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"word \"}],\"role\": \"model\"},\"index\": 0}],"
    "\"usageMetadata\": {\"promptTokenCount\": 13,\"candidatesTokenCount\": 29,\"totalTokenCount\": 179,"
    "\"promptTokensDetails\": [{\"modality\": \"TEXT\",\"tokenCount\": 13}],\"thoughtsTokenCount\": 137,"
    "\"serviceTier\": \"standard\"},\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"Bb-Fapr3DvG_nsEPhfTU6Ag\"}"
    "\r\n\r\n";
/* A contentBlockDelta's payload, padded with "p" as AWS pads it. */
static const char bedrock_payload[] = "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"word \"},\"p\":\"abcdefghijklmnopq\"}";

static int on_event(void *ud, const lf_sse_event *ev)
{
    const char *delta;
    size_t len;

    lf_stream_event(ud, ev, &delta, &len);
    return 0;
}

static int on_message(void *ud, const lf_es_message *m)
{
    const char *delta;
    size_t len;

    lf_stream_message(ud, m, &delta, &len);
    return 0;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "openai";
    lf_api api = strcmp(name, "gemini") == 0 ? LF_API_GEMINI : strcmp(name, "bedrock") == 0 ? LF_API_BEDROCK
                                                                                             : LF_API_OPENAI;
    long n = argc > 2 ? atol(argv[2]) : 10000, i;
    lf_stream_state s;
    lf_sse_parser p;
    lf_es_reader e;
    struct timespec a, b;
    lf_buf body;
    int empty;

    lf_buf_init(&body);
    for (i = 0; i < n; i++) {
        if (api == LF_API_BEDROCK) event(&body, "contentBlockDelta", bedrock_payload);
        else lf_buf_append_str(&body, api == LF_API_GEMINI ? gemini_chunk : openai_chunk);
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    lf_stream_init(&s, api);
    if (api == LF_API_BEDROCK) {
        lf_es_init(&e);
        lf_es_feed(&e, body.ptr, body.len, on_message, &s);
        lf_es_free(&e);
    } else {
        lf_sse_init(&p);
        lf_sse_feed(&p, body.ptr, body.len, on_event, &s);
        lf_sse_finish(&p, on_event, &s);
        lf_sse_free(&p);
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    printf("%s: %ld chunks of %zu bytes, %.2f us of CPU per chunk\n", name, n, body.len / (size_t)n,
           ((double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3) / (double)n);
    empty = s.answer.text.len == 0;   /* the chunks were read as text */
    lf_stream_free(&s);
    lf_buf_free(&body);
    return empty;
}
