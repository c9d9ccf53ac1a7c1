/* Attachments in request bodies: an image and a PDF with a user message, as
 * OpenAI content parts and Anthropic blocks, base64 or URL; what a target
 * cannot take refused before a body exists. */
#include <string.h>

#include <json-c/json.h>

#include "lf_buf.h"
#include "lf_wire.h"
#include "lf_test.h"

#include "lf_banned.h"

static const lf_attachment two[] = {
    { "image/png", "x.png", "iVBORw0KGgo=", 12, NULL },
    { "application/pdf", "r.pdf", "JVBERi0xLjQ=", 12, NULL },
};

static const lf_attachment by_url[] = {
    { "image/jpeg", NULL, NULL, 0, "https://example.com/a.jpg" },
    { "application/pdf", "r.pdf", "JVBERi0xLjQ=", 12, "https://example.com/r.pdf" },
};

/* The body built for params, parsed; NULL when the build failed (err says why). */
static json_object *build(lf_request_params *p, lf_buf *err)
{
    lf_buf out;
    json_object *o = NULL;

    lf_buf_init(&out);
    if (lf_wire_build_request(p, &out, err) == 0) o = json_tokener_parse(out.ptr);
    lf_buf_free(&out);
    return o;
}

static json_object *content_of_last(json_object *body)
{
    json_object *messages, *last, *content;

    if (!json_object_object_get_ex(body, "messages", &messages)) return NULL;
    last = json_object_array_get_idx(messages, json_object_array_length(messages) - 1);
    return json_object_object_get_ex(last, "content", &content) ? content : NULL;
}

static const char *at(json_object *o, const char *path)
{
    char key[64];
    const char *dot;
    json_object *v = o;

    while (v && path) {
        dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        if (n >= sizeof key) return NULL;
        memcpy(key, path, n);
        key[n] = '\0';
        if (!json_object_object_get_ex(v, key, &v)) return NULL;
        path = dot ? dot + 1 : NULL;
    }
    return v ? json_object_get_string(v) : NULL;
}

static lf_request_params params_for(lf_api api, lf_message *m)
{
    lf_request_params p;

    memset(&p, 0, sizeof p);
    p.api = api;
    p.model = "m";
    p.messages = m;
    p.n_messages = 1;
    return p;
}

static void test_openai_parts(void)
{
    lf_message m = { .role = "user", .content = "What?", .content_len = 5, .attachments = two, .n_attachments = 2 };
    lf_request_params p = params_for(LF_API_OPENAI, &m);
    lf_buf err;
    json_object *body, *c;

    lf_buf_init(&err);
    body = build(&p, &err);
    LF_CHECK(body != NULL);
    c = content_of_last(body);
    LF_CHECK_INT(json_object_array_length(c), 3);
    LF_CHECK_STR(at(json_object_array_get_idx(c, 0), "text"), "What?");
    LF_CHECK_STR(at(json_object_array_get_idx(c, 1), "image_url.url"), "data:image/png;base64,iVBORw0KGgo=");
    LF_CHECK_STR(at(json_object_array_get_idx(c, 2), "file.filename"), "r.pdf");
    LF_CHECK_STR(at(json_object_array_get_idx(c, 2), "file.file_data"), "data:application/pdf;base64,JVBERi0xLjQ=");
    json_object_put(body);
    lf_buf_free(&err);
}

static void test_anthropic_blocks(void)
{
    lf_message m = { .role = "user", .content = "What?", .content_len = 5, .attachments = two, .n_attachments = 2 };
    lf_request_params p = params_for(LF_API_ANTHROPIC, &m);
    lf_buf err;
    json_object *body, *c;

    lf_buf_init(&err);
    body = build(&p, &err);
    LF_CHECK(body != NULL);
    c = content_of_last(body);
    LF_CHECK_INT(json_object_array_length(c), 3);
    LF_CHECK_STR(at(json_object_array_get_idx(c, 0), "type"), "image");
    LF_CHECK_STR(at(json_object_array_get_idx(c, 0), "source.media_type"), "image/png");
    LF_CHECK_STR(at(json_object_array_get_idx(c, 0), "source.data"), "iVBORw0KGgo=");
    LF_CHECK_STR(at(json_object_array_get_idx(c, 1), "type"), "document");
    LF_CHECK_STR(at(json_object_array_get_idx(c, 1), "source.type"), "base64");
    LF_CHECK_STR(at(json_object_array_get_idx(c, 2), "text"), "What?");
    json_object_put(body);
    lf_buf_free(&err);
}

/* A URL where the target takes one; OpenAI's file part always gets bytes;
 * no_urls sends the bytes, and a URL-only file to such a target is refused. */
static void test_urls(void)
{
    lf_message m = { .role = "user", .content = "See", .content_len = 3, .attachments = by_url, .n_attachments = 2 };
    lf_request_params p = params_for(LF_API_ANTHROPIC, &m);
    lf_buf err;
    json_object *body, *c;

    lf_buf_init(&err);
    body = build(&p, &err);
    c = content_of_last(body);
    LF_CHECK_STR(at(json_object_array_get_idx(c, 0), "source.url"), "https://example.com/a.jpg");
    LF_CHECK_STR(at(json_object_array_get_idx(c, 1), "source.url"), "https://example.com/r.pdf");
    json_object_put(body);

    p.api = LF_API_OPENAI;
    body = build(&p, &err);
    c = content_of_last(body);
    LF_CHECK_STR(at(json_object_array_get_idx(c, 1), "image_url.url"), "https://example.com/a.jpg");
    LF_CHECK_STR(at(json_object_array_get_idx(c, 2), "file.file_data"), "data:application/pdf;base64,JVBERi0xLjQ=");
    json_object_put(body);

    p.no_urls = 1;
    LF_CHECK(build(&p, &err) == NULL);
    LF_CHECK(strstr(err.ptr, "takes no URL") != NULL);
    lf_buf_free(&err);
}

static void test_refused(void)
{
    lf_attachment bad = { "text/plain", "n.txt", "aGk=", 4, NULL };
    lf_attachment not_b64 = { "image/png", "x.png", "\"},{\"", 5, NULL };
    lf_message m = { .role = "user", .content = "x", .content_len = 1, .attachments = two, .n_attachments = 2 };
    lf_request_params p = params_for(LF_API_OPENAI, &m);
    lf_buf err;

    lf_buf_init(&err);
    p.no_documents = 1;
    LF_CHECK(build(&p, &err) == NULL);
    LF_CHECK_STR(err.ptr, "attachment \"r.pdf\": the target takes no PDFs (documents: false)");
    p.no_documents = 0;
    p.no_images = 1;
    LF_CHECK(build(&p, &err) == NULL);
    LF_CHECK_STR(err.ptr, "attachment \"x.png\": the target takes no images (images: false)");
    p.no_images = 0;
    /* Each file decodes to 8 bytes: the limit is on the bytes, not on the base64. */
    p.max_attachment_bytes = 8;
    LF_CHECK_INT(lf_wire_attachments_refusal(&p, &err), 0);
    p.max_attachment_bytes = 7;
    LF_CHECK_INT(lf_wire_attachments_refusal(&p, &err), 1);
    LF_CHECK_STR(err.ptr, "attachment \"x.png\" is 8 bytes, over the target's limit of 7 bytes (max_attachment_bytes)");
    LF_CHECK(build(&p, &err) == NULL);
    p.max_attachment_bytes = 0;
    p.max_attachments = 1;
    LF_CHECK_INT(lf_wire_attachments_refusal(&p, &err), 1);
    LF_CHECK_STR(err.ptr, "2 attachments with one message, over the target's limit of 1 (max_attachments)");
    p.max_attachments = 2;
    LF_CHECK_INT(lf_wire_attachments_refusal(&p, NULL), 0);
    m.attachments = &bad;
    m.n_attachments = 1;
    /* Wrong whatever the target: no refusal, the build says so. */
    LF_CHECK_INT(lf_wire_attachments_refusal(&p, NULL), 0);
    LF_CHECK(build(&p, &err) == NULL);
    LF_CHECK(strstr(err.ptr, "text/plain is not an image or a PDF") != NULL);
    m.attachments = &not_b64;
    LF_CHECK(build(&p, &err) == NULL);
    LF_CHECK(strstr(err.ptr, "not base64") != NULL);
    m.attachments = two;
    m.role = "assistant";
    LF_CHECK(build(&p, &err) == NULL);
    LF_CHECK(strstr(err.ptr, "only a user message has attachments") != NULL);
    lf_buf_free(&err);
}

int main(void)
{
    LF_RUN(test_openai_parts);
    LF_RUN(test_anthropic_blocks);
    LF_RUN(test_urls);
    LF_RUN(test_refused);
    return lf_test_summary("wire_attach");
}
