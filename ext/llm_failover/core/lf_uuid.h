/* Request ids: random (version 4) UUIDs, as SecureRandom.uuid makes them. */
#ifndef LF_UUID_H
#define LF_UUID_H

#define LF_UUID_LEN 36

/* Writes 36 characters (no NUL) from 16 bytes of the kernel's randomness,
 * drawn per id: nothing is kept between calls, so a forked child never hands
 * out its parent's ids and threads share nothing. 0, or -1 with errno set. */
int lf_uuid_v4(char out[LF_UUID_LEN]);

#endif
