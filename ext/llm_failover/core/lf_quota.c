/* Quota arithmetic and the model picker's choice; see lf_quota.h. */
#include "lf_quota.h"

#include <math.h>

#include "lf_banned.h"

int lf_quota_unlimited(const lf_quota *q)
{
    return !(q->limit > 0); /* zero, negative and NaN limits all mean "no limit" */
}

int lf_quota_exceeded(const lf_quota *q)
{
    return !lf_quota_unlimited(q) && q->used >= q->limit;
}

double lf_quota_remaining(const lf_quota *q)
{
    double left;

    if (lf_quota_unlimited(q)) return INFINITY;
    left = q->limit - q->used;
    return left > 0 ? left : 0; /* NaN (from a NaN used) reads as nothing left */
}

double lf_quota_percent_used(const lf_quota *q)
{
    if (lf_quota_unlimited(q)) return 0;
    return 100.0 * q->used / q->limit;
}

lf_pick_result lf_pick(const lf_quota *q, int has_backup, int enforce)
{
    if (!q || !lf_quota_exceeded(q)) return LF_PICK_PRIMARY;
    if (has_backup) return LF_PICK_BACKUP;
    /* A quota is a budget, not a switch: without a backup the primary is
     * still called unless the caller asked for enforcement. */
    return enforce ? LF_PICK_REFUSE : LF_PICK_PRIMARY;
}
