/* A tier's host pick (lf_tier.h). */
#include "lf_tier.h"

#include "lf_banned.h"

static double lf_weight(const lf_tier *t, size_t k)
{
    return t->weights && t->weights[k] > 0 ? t->weights[k] : 1.0;
}

lf_tier_choice lf_tier_pick(const lf_tier *t, const lf_health *health, unsigned excluded, int stay, long need,
                            double u)
{
    lf_tier_choice ch = { .ready = -1, .cooling = -1, .wait = 0, .open = -1 };
    double total = 0, at;
    size_t k;

    for (k = 0; k < t->n_hosts; k++) {
        size_t i = t->first + k;
        const lf_health *h = &health[i];
        double wait;

        if (excluded & (1u << i)) continue;
        if (h->route == LF_ROUTE_SKIP) {
            if (ch.open < 0 || h->open_for < health[ch.open].open_for) ch.open = (int)i;
            continue;
        }
        wait = lf_headroom_wait(&h->headroom, need);
        if (wait > 0) {
            if (ch.cooling < 0 || wait < ch.wait) {
                ch.cooling = (int)i;
                ch.wait = wait;
            }
            continue;
        }
        if ((int)i == stay) {
            ch.ready = stay;
            return ch;
        }
        total += lf_weight(t, k);
    }
    if (total <= 0) return ch;
    /* By weight: the host in whose share of the total u falls. */
    at = u * total;
    for (k = 0; k < t->n_hosts; k++) {
        size_t i = t->first + k;

        if ((excluded & (1u << i)) || health[i].route == LF_ROUTE_SKIP || lf_headroom_wait(&health[i].headroom, need) > 0)
            continue;
        ch.ready = (int)i;
        at -= lf_weight(t, k);
        if (at < 0) break;
    }
    ch.cooling = -1;
    ch.wait = 0;
    return ch;
}
