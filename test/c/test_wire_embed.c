/* Embeddings in the wire layer: the /embeddings request body and path, and
 * the answer read into vectors (OpenAI's shape, which Azure, Mistral, Ollama
 * and OpenRouter answer with too), every way a short or broken answer is
 * refused, error bodies. */
#include <stdlib.h>
#include <string.h>

#include "lf_buf.h"
#include "lf_wire.h"
#include "lf_test.h"

#include "lf_banned.h"

static lf_request_params embed_params(const lf_text *inputs, size_t n)
{
    lf_request_params p;

    memset(&p, 0, sizeof(p));
    p.api = LF_API_OPENAI;
    p.model = "text-embedding-3-small";
    p.kind = LF_REQUEST_EMBEDDINGS;
    p.inputs = inputs;
    p.n_inputs = n;
    return p;
}

static void test_body(void)
{
    lf_text inputs[] = { { "the cat", 7 }, { "say \"hi\"\n\xff", 10 } };
    lf_request_params p = embed_params(inputs, 2);
    lf_buf out, err;

    lf_buf_init(&out);
    lf_buf_init(&err);
    LF_CHECK_INT(lf_wire_build_request(&p, &out, &err), 0);
    LF_CHECK_STR(lf_buf_cstr(&out), "{\"model\":\"text-embedding-3-small\",\"input\":[\"the cat\","
                                    "\"say \\\"hi\\\"\\n\xef\xbf\xbd\"],\"encoding_format\":\"float\"}");
    LF_CHECK_STR(lf_wire_path_for(LF_API_OPENAI, LF_REQUEST_EMBEDDINGS), "/embeddings");
    LF_CHECK_STR(lf_wire_path_for(LF_API_OPENAI, LF_REQUEST_CHAT), "/chat/completions");
    lf_buf_free(&out);
    lf_buf_free(&err);
}

static void expect_refused(lf_request_params *p, const char *why)
{
    lf_buf out, err;

    lf_buf_init(&out);
    lf_buf_init(&err);
    LF_CHECK_INT(lf_wire_build_request(p, &out, &err), -1);
    LF_CHECK_INT(out.len, 0);
    LF_CHECK(strstr(lf_buf_cstr(&err), why) != NULL);
    lf_buf_free(&out);
    lf_buf_free(&err);
}

static void test_refused(void)
{
    lf_text inputs[] = { { "a", 1 }, { "", 0 } };
    lf_request_params p = embed_params(inputs, 1);

    p.api = LF_API_ANTHROPIC;
    expect_refused(&p, "no embeddings endpoint");
    p = embed_params(inputs, 2);
    expect_refused(&p, "text 1 to embed is empty");
    p = embed_params(inputs, 0);
    expect_refused(&p, "1 to 2048 texts");
    p = embed_params(inputs, 1);
    p.model = "";
    expect_refused(&p, "model is missing");
}

static int parse(const char *body, size_t n, lf_answer *a, lf_wire_error *e)
{
    return lf_wire_parse_embeddings(body, strlen(body), n, a, e);
}

static void test_answer(void)
{
    /* Out of order: each vector goes to its index's row. */
    const char *body = "{\"object\":\"list\",\"data\":["
                       "{\"object\":\"embedding\",\"index\":1,\"embedding\":[0.5,-0.25,1e-3]},"
                       "{\"object\":\"embedding\",\"index\":0,\"embedding\":[1,0,-2]}],"
                       "\"model\":\"text-embedding-3-small\",\"usage\":{\"prompt_tokens\":8,\"total_tokens\":8}}";
    lf_answer a;
    lf_wire_error e;

    lf_answer_init(&a);
    lf_wire_error_init(&e);
    LF_CHECK_INT(parse(body, 2, &a, &e), LF_WIRE_OK);
    LF_CHECK_INT(a.n_vectors, 2);
    LF_CHECK_INT(a.dims, 3);
    LF_CHECK(a.vectors[0] == 1.0 && a.vectors[1] == 0.0 && a.vectors[2] == -2.0);
    LF_CHECK(a.vectors[3] == 0.5 && a.vectors[4] == -0.25 && a.vectors[5] == 1e-3);
    LF_CHECK_STR(lf_buf_cstr(&a.model), "text-embedding-3-small");
    LF_CHECK_INT(a.input_tokens, 8);
    LF_CHECK_INT(a.output_tokens, 0);
    /* Parsed again into the same answer: the old vectors go. */
    LF_CHECK_INT(parse("{\"data\":[{\"embedding\":[3]}]}", 1, &a, &e), LF_WIRE_OK);
    LF_CHECK(a.n_vectors == 1 && a.dims == 1 && a.vectors[0] == 3.0);
    LF_CHECK_INT(a.input_tokens, -1);
    lf_answer_free(&a);
    lf_wire_error_free(&e);
}

static void test_invalid(void)
{
    static const char *const bodies[] = {
        "{\"data\":[{\"index\":0,\"embedding\":[1,2]}]}",                                  /* one of two */
        "{\"data\":[{\"index\":0,\"embedding\":[1,2]},{\"index\":0,\"embedding\":[1,2]}]}", /* index twice */
        "{\"data\":[{\"index\":0,\"embedding\":[1,2]},{\"index\":2,\"embedding\":[1,2]}]}", /* out of range */
        "{\"data\":[{\"index\":0,\"embedding\":[1,2]},{\"index\":1,\"embedding\":[1]}]}",   /* two lengths */
        "{\"data\":[{\"index\":0,\"embedding\":[1,2]},{\"index\":1,\"embedding\":[1,\"x\"]}]}",
        "{\"data\":[{\"index\":0,\"embedding\":[1,2]},{\"index\":1,\"embedding\":[]}]}",
        "{\"data\":[{\"index\":0,\"embedding\":\"AAAA\"},{\"index\":1,\"embedding\":\"AAAA\"}]}", /* base64 */
        "{\"data\":[{\"index\":-1,\"embedding\":[1]},{\"index\":1,\"embedding\":[1]}]}",
        "{\"data\":{}}",
        "[1,2]",
        "not json",
        "",
    };
    size_t i;
    lf_answer a;
    lf_wire_error e;

    lf_answer_init(&a);
    lf_wire_error_init(&e);
    for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        if (parse(bodies[i], 2, &a, &e) != LF_WIRE_INVALID) fprintf(stderr, "accepted: %s\n", bodies[i]);
        LF_CHECK(parse(bodies[i], 2, &a, &e) == LF_WIRE_INVALID);
        LF_CHECK(a.vectors == NULL && a.n_vectors == 0);
    }
    lf_answer_free(&a);
    lf_wire_error_free(&e);
}

static void test_error_body(void)
{
    lf_answer a;
    lf_wire_error e;

    lf_answer_init(&a);
    lf_wire_error_init(&e);
    LF_CHECK_INT(parse("{\"error\":{\"message\":\"model not found\",\"type\":\"invalid_request_error\","
                       "\"code\":\"model_not_found\"}}", 1, &a, &e), LF_WIRE_ERROR_BODY);
    LF_CHECK_STR(lf_buf_cstr(&e.message), "model not found");
    LF_CHECK_STR(lf_buf_cstr(&e.code), "model_not_found");
    LF_CHECK_INT(parse("{\"detail\":\"Not Found\"}", 1, &a, &e), LF_WIRE_ERROR_BODY);
    lf_answer_free(&a);
    lf_wire_error_free(&e);
}

int main(void)
{
    LF_RUN(test_body);
    LF_RUN(test_refused);
    LF_RUN(test_answer);
    LF_RUN(test_invalid);
    LF_RUN(test_error_body);
    return lf_test_summary("wire_embed");
}
