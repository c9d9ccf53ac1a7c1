/* Request ids; see lf_uuid.h. */
#include "lf_uuid.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "lf_banned.h"

int lf_uuid_v4(char out[LF_UUID_LEN])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[16];
    size_t got = 0, i, o = 0;

    while (got < sizeof(b)) {
        ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        got += (size_t)n;
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    for (i = 0; i < sizeof(b); i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 0x0f];
    }
    memset(b, 0, sizeof(b));
    return 0;
}
