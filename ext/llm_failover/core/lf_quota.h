/* Quota and model picking. A limit of zero (or none) means unlimited: a quota
 * of 0 never stops a call. */
#ifndef LF_QUOTA_H
#define LF_QUOTA_H

typedef struct lf_quota {
    double limit;   /* <= 0: unlimited */
    double used;
} lf_quota;

int lf_quota_unlimited(const lf_quota *q);
/* !unlimited && used >= limit */
int lf_quota_exceeded(const lf_quota *q);
/* INFINITY when unlimited; never below 0 */
double lf_quota_remaining(const lf_quota *q);
/* 0 when unlimited; 100 * used / limit otherwise (may exceed 100) */
double lf_quota_percent_used(const lf_quota *q);

typedef enum lf_pick_result { LF_PICK_PRIMARY = 0, LF_PICK_BACKUP = 1, LF_PICK_REFUSE = 2 } lf_pick_result;

/* has_backup: both a backup model and a backup provider are configured.
 * A NULL quota is an unlimited one.
 * Exceeded + backup -> BACKUP; exceeded + no backup -> PRIMARY, or REFUSE when
 * enforce is set; otherwise PRIMARY. */
lf_pick_result lf_pick(const lf_quota *q, int has_backup, int enforce);

#endif
