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

/* One thing the last message's content holds: at index, path gives expected. */
typedef struct part_check {
    int index;
    const char *path, *expected;
} part_check;

/* The request of protocol api for "What?" with the PNG and the PDF: three
 * content parts, each check holding. */
static void check_parts(lf_api api, const part_check *checks, size_t n)
{
    lf_message m = { .role = "user", .content = "What?", .content_len = 5, .attachments = two, .n_attachments = 2 };
    lf_request_params p = params_for(api, &m);
    lf_buf err;
    json_object *body, *c;
    size_t i;

    lf_buf_init(&err);
    body = build(&p, &err);
    LF_CHECK(body != NULL);
    c = content_of_last(body);
    LF_CHECK_INT(json_object_array_length(c), 3);
    for (i = 0; i < n; i++)
        LF_CHECK_STR(at(json_object_array_get_idx(c, checks[i].index), checks[i].path), checks[i].expected);
    json_object_put(body);
    lf_buf_free(&err);
}

static void test_openai_parts(void)
{
    static const part_check checks[] = {
        { 0, "text", "What?" },
        { 1, "image_url.url", "data:image/png;base64,iVBORw0KGgo=" },
        { 2, "file.filename", "r.pdf" },
        { 2, "file.file_data", "data:application/pdf;base64,JVBERi0xLjQ=" },
    };
    check_parts(LF_API_OPENAI, checks, sizeof checks / sizeof checks[0]);
}

static void test_anthropic_blocks(void)
{
    static const part_check checks[] = {
        { 0, "type", "image" },
        { 0, "source.media_type", "image/png" },
        { 0, "source.data", "iVBORw0KGgo=" },
        { 1, "type", "document" },
        { 1, "source.type", "base64" },
        { 2, "text", "What?" },
    };
    check_parts(LF_API_ANTHROPIC, checks, sizeof checks / sizeof checks[0]);
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

/* The rule's parts Ruby asks of each file before anything is stored: which
 * part refused, and the target named as the caller names it. */
static void test_rule_parts(void)
{
    lf_request_params p = params_for(LF_API_OPENAI, NULL);
    lf_attachment url_pdf = { "application/pdf", "r.pdf", NULL, 0, "https://example.com/r.pdf" };
    lf_attachment url_png = { "image/png", "x.png", NULL, 0, "https://example.com/x.png" };
    lf_buf why;
    size_t i;

    lf_buf_init(&why);
    for (i = 0; lf_wire_attachment_type(i); i++) {}
    LF_CHECK_INT((long)i, 5);
    LF_CHECK_STR(lf_wire_attachment_type(4), "application/pdf");
    LF_CHECK_INT(lf_wire_attachment_kind("image/webp"), LF_ATTACH_IMAGE);
    LF_CHECK_INT(lf_wire_attachment_kind("application/pdf"), LF_ATTACH_DOCUMENT);
    LF_CHECK_INT(lf_wire_attachment_kind("image/svg+xml"), LF_ATTACH_UNKNOWN);

    /* OpenAI's file parts take no URL: the bytes are needed; its image parts take one. */
    LF_CHECK_INT(lf_wire_attachment_refusal(&p, &url_pdf, "openai/gpt-4o", &why), LF_ATTACH_NO_URL);
    LF_CHECK_STR(why.ptr, "attachment \"r.pdf\": openai/gpt-4o takes no URL for it (an OpenAI file part) and its "
                          "bytes were not downloaded");
    LF_CHECK_INT(lf_wire_attachment_refusal(&p, &url_png, NULL, &why), LF_ATTACH_TAKEN);
    p.api = LF_API_ANTHROPIC;
    LF_CHECK_INT(lf_wire_attachment_refusal(&p, &url_pdf, NULL, &why), LF_ATTACH_TAKEN);
    p.no_urls = 1;
    LF_CHECK_INT(lf_wire_attachment_refusal(&p, &url_png, NULL, &why), LF_ATTACH_NO_URL);
    /* The kind is said before the URL. */
    p.no_documents = 1;
    LF_CHECK_INT(lf_wire_attachment_refusal(&p, &url_pdf, "anthropic/claude", &why), LF_ATTACH_NO_KIND);
    LF_CHECK_STR(why.ptr, "attachment \"r.pdf\": anthropic/claude takes no PDFs (documents: false)");
    p.max_attachment_bytes = 7;
    LF_CHECK_INT(lf_wire_attachment_refusal(&p, &two[0], "anthropic/claude", &why), LF_ATTACH_TOO_BIG);
    LF_CHECK_STR(why.ptr, "attachment \"x.png\" is 8 bytes, over anthropic/claude's limit of 7 bytes "
                          "(max_attachment_bytes)");
    p.max_attachments = 20;
    LF_CHECK_INT(lf_wire_attachment_count_refusal(&p, 20, NULL, &why), LF_ATTACH_TAKEN);
    LF_CHECK_INT(lf_wire_attachment_count_refusal(&p, 21, "anthropic/claude", &why), LF_ATTACH_TOO_MANY);
    LF_CHECK_STR(why.ptr, "21 attachments with one message, over anthropic/claude's limit of 20 (max_attachments)");
    lf_buf_free(&why);
}

int main(void)
{
    LF_RUN(test_openai_parts);
    LF_RUN(test_anthropic_blocks);
    LF_RUN(test_urls);
    LF_RUN(test_refused);
    LF_RUN(test_rule_parts);
    return lf_test_summary("wire_attach");
}
