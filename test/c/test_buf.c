/* lf_buf: growth, the NUL after the bytes, reserve and move. */
#include <stdlib.h>
#include <string.h>

#include "lf_buf.h"
#include "lf_test.h"

static void test_append_keeps_a_nul(void)
{
    lf_buf b;

    lf_buf_init(&b);
    LF_CHECK_STR(lf_buf_cstr(&b), "");
    LF_CHECK_INT(lf_buf_append(&b, "abc", 3), 0);
    LF_CHECK_INT(lf_buf_append_char(&b, 'd'), 0);
    LF_CHECK_STR(b.ptr, "abcd");
    LF_CHECK_INT(b.len, 4);
    lf_buf_consume(&b, 1);
    LF_CHECK_STR(b.ptr, "bcd");
    lf_buf_clear(&b);
    LF_CHECK_STR(lf_buf_cstr(&b), "");
    lf_buf_free(&b);
    LF_CHECK(b.ptr == NULL && b.len == 0 && b.cap == 0);
}

/* After lf_buf_reserve(n), n bytes go in without moving the memory. */
static void test_reserve(void)
{
    lf_buf b;
    char *before;
    char big[1000];

    lf_buf_init(&b);
    LF_CHECK_INT(lf_buf_reserve(&b, 1000), 0);
    LF_CHECK(b.cap >= 1001);
    LF_CHECK_INT(b.len, 0);
    before = b.ptr;
    memset(big, 'z', sizeof big);
    LF_CHECK_INT(lf_buf_append(&b, big, 600), 0);
    LF_CHECK_INT(lf_buf_append(&b, big, 400), 0);
    LF_CHECK(b.ptr == before);
    LF_CHECK_INT(b.len, 1000);
    LF_CHECK(b.ptr[1000] == '\0');
    /* A reserve that already fits changes nothing. */
    LF_CHECK_INT(lf_buf_reserve(&b, 0), 0);
    LF_CHECK(b.ptr == before);
    /* One that cannot be met leaves the buffer as it was. */
    LF_CHECK_INT(lf_buf_reserve(&b, (size_t)-1), -1);
    LF_CHECK(b.ptr == before && b.len == 1000);
    lf_buf_free(&b);
}

static void test_move(void)
{
    lf_buf a, b;
    char *mem;

    lf_buf_init(&a);
    lf_buf_init(&b);
    lf_buf_append_str(&a, "answer");
    lf_buf_append_str(&b, "old contents, freed by the move");
    mem = a.ptr;
    lf_buf_move(&b, &a);
    LF_CHECK(b.ptr == mem);
    LF_CHECK_STR(b.ptr, "answer");
    LF_CHECK_INT(b.len, 6);
    LF_CHECK(a.ptr == NULL && a.len == 0 && a.cap == 0);
    /* Moving an empty buffer empties the destination. */
    lf_buf_move(&b, &a);
    LF_CHECK(b.ptr == NULL && b.len == 0);
    LF_CHECK_STR(lf_buf_cstr(&b), "");
    /* Onto itself: nothing happens. */
    lf_buf_append_str(&a, "same");
    lf_buf_move(&a, &a);
    LF_CHECK_STR(a.ptr, "same");
    lf_buf_free(&a);
    lf_buf_free(&b);
}

int main(void)
{
    LF_RUN(test_append_keeps_a_nul);
    LF_RUN(test_reserve);
    LF_RUN(test_move);
    return lf_test_summary("buf");
}
