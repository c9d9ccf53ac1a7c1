/* Redaction of the call's secrets and wiping of freed ones (lf_redact): the
 * rule the attempt loop and the binding now share from one module. */
#include <stdlib.h>
#include <string.h>

#include "lf_redact.h"
#include "lf_test.h"

#include "lf_banned.h"

static const char *const HEADERS[] = { "X-Region: eu-west", "X-Tenant-Token: tenant-secret-42" };

static const lf_target TARGETS[] = {
    { .api = LF_API_OPENAI, .api_key = "sk-primary-0123456789", .headers = HEADERS, .n_headers = 2 },
    { .api = LF_API_ANTHROPIC, .api_key = "sk-ant-backup-9876" },
    { .api = LF_API_BEDROCK, .region = "us-east-1", .aws_access_key_id = "AKIDREDACT0042",
      .aws_secret_access_key = "redact/SECRET+key", .aws_session_token = "FwoG-session-token" },
};

static void redacted(const char *in, int cut, const char *want)
{
    lf_buf b;
    lf_buf_init(&b);
    lf_buf_append_str(&b, in);
    lf_redact(TARGETS, 3, &b, cut);
    LF_CHECK_STR(lf_buf_cstr(&b), want);
    lf_buf_free(&b);
}

/* Every target's key, wherever and however often it occurs. */
static void test_keys(void)
{
    redacted("Incorrect API key provided: sk-primary-0123456789.", 0, "Incorrect API key provided: [REDACTED].");
    redacted("sk-ant-backup-9876 and sk-ant-backup-9876", 0, "[REDACTED] and [REDACTED]");
    redacted("nothing secret here", 0, "nothing secret here");
    redacted("", 1, "");
}

/* A signed target's AWS credentials, each of them; its region is no secret. */
static void test_aws_credentials(void)
{
    redacted("The security token FwoG-session-token of AKIDREDACT0042 is invalid", 0,
             "The security token [REDACTED] of [REDACTED] is invalid");
    redacted("secret redact/SECRET+key in us-east-1", 0, "secret [REDACTED] in us-east-1");
    redacted("cut at redact/SEC", 1, "cut at [REDACTED]");
}

/* Header values of 8 bytes or more are secrets; shorter ones are settings. */
static void test_header_values(void)
{
    redacted("echo: tenant-secret-42", 0, "echo: [REDACTED]");
    redacted("region eu-west", 0, "region eu-west");
}

/* A body cut short may end in the start of a key: with cut, that tail goes
 * too (from 4 bytes of the key on); without, it is left (the text ended). */
static void test_cut_tail(void)
{
    redacted("key: sk-prim", 1, "key: [REDACTED]");
    redacted("key: sk-prim", 0, "key: sk-prim");
    redacted("key: sk-", 1, "key: sk-");
}

static void test_wipe(void)
{
    char *p = malloc(16);
    size_t i;
    int zero = 1;

    memcpy(p, "sk-secret-value", 16);
    lf_wipe(p, 16);
    for (i = 0; i < 16; i++) zero = zero && p[i] == 0;
    LF_CHECK(zero);
    lf_wipe(NULL, 0); /* nothing to do */
    free(p);
}

int main(void)
{
    LF_RUN(test_keys);
    LF_RUN(test_aws_credentials);
    LF_RUN(test_header_values);
    LF_RUN(test_cut_tail);
    LF_RUN(test_wipe);
    return lf_test_summary("redact");
}
