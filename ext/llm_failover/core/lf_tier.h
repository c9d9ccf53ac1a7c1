/* A tier's host pick: which of a pool's hosts the call sends to next. By
 * weight among the hosts with headroom (lf_headroom_wait is 0) whose circuit
 * lets a request through, the turn's own host first while it is one of
 * them; with none, the host whose headroom comes back first, and the host
 * whose circuit reopens first. What the loop does with each is
 * lf_failover.c's (wait, fail over, or send anyway as a last hope). */
#ifndef LF_TIER_H
#define LF_TIER_H

#include "lf_failover.h"

typedef struct lf_tier_choice {
    int ready;      /* a host to send to now; -1: none */
    int cooling;    /* with none ready: the host whose headroom comes back first; -1: none */
    double wait;    /* ... in this many seconds */
    int open;       /* the host whose circuit reopens first (open_for, the tier's order on a tie); -1: none */
} lf_tier_choice;

/* Over tier t's hosts not in `excluded` (bit i: targets[i], tried or unable
 * to take the request), with health[i] each host's; `stay` the turn's host
 * (-1: none), `need` the tokens the request may be counted for, `u` a
 * uniform random number in [0, 1). */
lf_tier_choice lf_tier_pick(const lf_tier *t, const lf_health *health, unsigned excluded, int stay, long need,
                            double u);

#endif
