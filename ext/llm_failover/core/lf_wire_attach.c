/* Attachments, whatever the protocol: the kinds a provider may take, what a
 * target takes (lf_wire_attachments_refusal), what is wrong whatever the
 * target, and whether one goes by its URL. Each protocol's request file
 * renders them. */
#include "lf_wire.h"

#include <string.h>

#include "lf_wire_shared.h"

#include "lf_banned.h"

/* The one list of the types an attachment may have (Ruby's
 * Attachment::Mime::KINDS is read from it), each with its kind. */
static const struct {
    const char *type;
    lf_attach_kind kind;
} lf_attach_types[] = {
    { "image/png", LF_ATTACH_IMAGE },
    { "image/jpeg", LF_ATTACH_IMAGE },
    { "image/gif", LF_ATTACH_IMAGE },
    { "image/webp", LF_ATTACH_IMAGE },
    { "application/pdf", LF_ATTACH_DOCUMENT },
};

lf_attach_kind lf_wire_attachment_kind(const char *mime)
{
    size_t i;

    if (!mime) return LF_ATTACH_UNKNOWN;
    for (i = 0; i < sizeof lf_attach_types / sizeof lf_attach_types[0]; i++)
        if (strcmp(mime, lf_attach_types[i].type) == 0) return lf_attach_types[i].kind;
    return LF_ATTACH_UNKNOWN;
}

const char *lf_wire_attachment_type(size_t i)
{
    return i < sizeof lf_attach_types / sizeof lf_attach_types[0] ? lf_attach_types[i].type : NULL;
}

/* The bytes are written into the body as they are: only the base64 alphabet. */
static int lf_base64_ok(const char *s, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/' ||
              c == '='))
            return 0;
    }
    return 1;
}

static const char *lf_attach_name(const lf_attachment *a)
{
    return a->filename ? a->filename : "(no name)";
}

/* Whether this target takes the attachment's URL in place of its bytes. */
static int lf_attach_url_taken(const lf_request_params *p, const lf_attachment *a)
{
    if (!a->url || p->no_urls) return 0;
    /* Gemini's fileData takes its own Files API's URIs (Vertex AI: Cloud
     * Storage's), not a web URL: its bytes go as inlineData. Claude on Vertex
     * AI refuses Anthropic's url sources. Converse takes bytes or an S3
     * location, never a URL. */
    if (p->api == LF_API_GEMINI || p->api == LF_API_BEDROCK || p->layout == LF_LAYOUT_VERTEX) return 0;
    /* Chat completions' file parts take bytes or an uploaded file's id, never
     * a URL; Responses' input_file takes a file_url. */
    return !(p->api == LF_API_OPENAI && lf_wire_attachment_kind(a->mime_type) == LF_ATTACH_DOCUMENT);
}

/* Why a URL is refused, when the target's configuration does not say. */
static const char *lf_attach_url_refused_by(const lf_request_params *p)
{
    if (p->no_urls) return "attachment_urls: false";
    if (p->layout == LF_LAYOUT_VERTEX) return "Vertex AI takes a file's bytes";
    return p->api == LF_API_GEMINI ? "Gemini takes a file's bytes" : "an OpenAI file part";
}

int lf_wire_attachment_by_url(const lf_request_params *p, const lf_attachment *a)
{
    return a->url && (!a->base64 || lf_attach_url_taken(p, a));
}

/* The bytes a base64 text decodes to. */
static size_t lf_base64_decoded_len(const lf_attachment *a)
{
    size_t pad = 0;

    while (pad < 2 && pad < a->base64_len && a->base64[a->base64_len - 1 - pad] == '=') pad++;
    return a->base64_len / 4 * 3 + (a->base64_len % 4 ? a->base64_len % 4 - 1 : 0) - pad;
}

/* Who a refusal names: "the target" in a record of the target's own. */
static const char *lf_attach_who(const char *who)
{
    return who ? who : "the target";
}

lf_attach_refusal lf_wire_attachment_refusal(const lf_request_params *p, const lf_attachment *a, const char *who,
                                             lf_buf *why)
{
    lf_attach_kind kind = lf_wire_attachment_kind(a->mime_type);
    size_t size;

    if (kind == LF_ATTACH_UNKNOWN) return LF_ATTACH_TAKEN; /* wrong for every target: the build says so */
    if ((kind == LF_ATTACH_IMAGE && p->no_images) || (kind == LF_ATTACH_DOCUMENT && p->no_documents)) {
        lf_wire_fail(why, "attachment \"%.64s\": %.80s takes no %s", lf_attach_name(a), lf_attach_who(who),
                     kind == LF_ATTACH_IMAGE ? "images (images: false)" : "PDFs (documents: false)");
        return LF_ATTACH_NO_KIND;
    }
    if (!a->base64 && a->url && !lf_attach_url_taken(p, a)) {
        lf_wire_fail(why, "attachment \"%.64s\": %.80s takes no URL for it (%s) and its bytes were not "
                          "downloaded",
                     lf_attach_name(a), lf_attach_who(who), lf_attach_url_refused_by(p));
        return LF_ATTACH_NO_URL;
    }
    size = a->base64 ? lf_base64_decoded_len(a) : 0;
    if (p->max_attachment_bytes > 0 && size > (size_t)p->max_attachment_bytes) {
        lf_wire_fail(why, "attachment \"%.64s\" is %zu bytes, over %.80s's limit of %ld bytes "
                          "(max_attachment_bytes)",
                     lf_attach_name(a), size, lf_attach_who(who), p->max_attachment_bytes);
        return LF_ATTACH_TOO_BIG;
    }
    return LF_ATTACH_TAKEN;
}

lf_attach_refusal lf_wire_attachment_count_refusal(const lf_request_params *p, size_t n, const char *who,
                                                   lf_buf *why)
{
    if (p->max_attachments <= 0 || n <= (size_t)p->max_attachments) return LF_ATTACH_TAKEN;
    lf_wire_fail(why, "%zu attachments with one message, over %.80s's limit of %ld (max_attachments)", n,
                 lf_attach_who(who), p->max_attachments);
    return LF_ATTACH_TOO_MANY;
}

int lf_wire_attachments_refusal(const lf_request_params *p, lf_buf *why)
{
    size_t i, k;

    for (i = 0; i < p->n_messages; i++) {
        const lf_message *m = &p->messages[i];

        if (!m->n_attachments || !m->attachments) continue;
        if (lf_wire_attachment_count_refusal(p, m->n_attachments, NULL, why)) return 1;
        for (k = 0; k < m->n_attachments; k++)
            if (lf_wire_attachment_refusal(p, &m->attachments[k], NULL, why)) return 1;
    }
    return 0;
}

int lf_wire_check_attachments(const lf_request_params *p, lf_buf *errmsg)
{
    size_t i, k;

    for (i = 0; i < p->n_messages; i++) {
        const lf_message *m = &p->messages[i];

        if (!m->n_attachments) continue;
        if (!m->attachments || lf_wire_role(m->role) != LF_ROLE_USER) {
            lf_wire_fail(errmsg, "message %zu: only a user message has attachments", i);
            return -1;
        }
        for (k = 0; k < m->n_attachments; k++) {
            const lf_attachment *a = &m->attachments[k];

            if (lf_wire_attachment_kind(a->mime_type) == LF_ATTACH_UNKNOWN) {
                lf_wire_fail(errmsg, "attachment \"%.64s\": type %.64s is not an image or a PDF", lf_attach_name(a),
                             a->mime_type ? a->mime_type : "(none)");
                return -1;
            }
            if (!a->base64 && !a->url) {
                lf_wire_fail(errmsg, "attachment \"%.64s\" has neither bytes nor a URL", lf_attach_name(a));
                return -1;
            }
            if (a->base64 && !lf_base64_ok(a->base64, a->base64_len)) {
                lf_wire_fail(errmsg, "attachment \"%.64s\": its bytes are not base64", lf_attach_name(a));
                return -1;
            }
        }
    }
    /* What the target takes: the one rule the attempt loop skips a target by. */
    return lf_wire_attachments_refusal(p, errmsg) ? -1 : 0;
}

size_t lf_wire_attachments_size(const lf_message *m)
{
    size_t k, size = 0;

    for (k = 0; k < m->n_attachments; k++) {
        const lf_attachment *a = &m->attachments[k];

        size += 160 + a->base64_len + (a->url ? strlen(a->url) : 0) + (a->filename ? strlen(a->filename) : 0);
    }
    return size;
}
