/* The vector index's fork safety (lf_vindex.h): every live index is listed,
 * and pthread_atfork handlers hand the child each one whole with its locks
 * free. */
#include "lf_vindex.h"
#include "lf_vindex_internal.h"

#include <pthread.h>
#include <stddef.h>

#include "lf_banned.h"

void lf_vi_locks_init(lf_vindex *ix)
{
    pthread_rwlockattr_t attr;

    pthread_rwlockattr_init(&attr);
#ifdef __GLIBC__
    /* glibc's default lets a stream of lookups starve an add forever. */
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
    pthread_rwlock_init(&ix->lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    pthread_mutex_init(&ix->lru_lock, NULL);
}

/* Fork safety. A fork copies the locks as they are: a scan or an add running
 * in another thread at that moment would leave the child's copy locked for
 * good (no thread there will release it) and, for an add, half written. So
 * every live index is listed, and pthread_atfork handlers take each one's
 * write lock and recency lock before the fork (waiting for the scans and
 * adds under way, none starting meanwhile), so the child copies an index no
 * thread is changing. The parent then releases them; the child makes its
 * locks new, since glibc tells a rwlock's writer by thread id and the child's
 * one thread has another id than the thread that took it. Ruby's
 * Process.fork runs these handlers, as any fork made through the C library. */
static pthread_mutex_t lf_vi_live_lock = PTHREAD_MUTEX_INITIALIZER;
static lf_vindex *lf_vi_live;
static pthread_once_t lf_vi_atfork_once = PTHREAD_ONCE_INIT;

static void lf_vi_before_fork(void)
{
    pthread_mutex_lock(&lf_vi_live_lock);
    for (lf_vindex *ix = lf_vi_live; ix; ix = ix->live_next) {
        pthread_rwlock_wrlock(&ix->lock);
        pthread_mutex_lock(&ix->lru_lock);
    }
}

static void lf_vi_after_fork_parent(void)
{
    for (lf_vindex *ix = lf_vi_live; ix; ix = ix->live_next) {
        pthread_mutex_unlock(&ix->lru_lock);
        pthread_rwlock_unlock(&ix->lock);
    }
    pthread_mutex_unlock(&lf_vi_live_lock);
}

static void lf_vi_after_fork_child(void)
{
    for (lf_vindex *ix = lf_vi_live; ix; ix = ix->live_next) lf_vi_locks_init(ix);
    pthread_mutex_init(&lf_vi_live_lock, NULL);
}

static void lf_vi_atfork_init(void)
{
    pthread_atfork(lf_vi_before_fork, lf_vi_after_fork_parent, lf_vi_after_fork_child);
}

void lf_vi_live_add(lf_vindex *ix)
{
    pthread_once(&lf_vi_atfork_once, lf_vi_atfork_init);
    pthread_mutex_lock(&lf_vi_live_lock);
    ix->live_prev = NULL;
    ix->live_next = lf_vi_live;
    if (lf_vi_live) lf_vi_live->live_prev = ix;
    lf_vi_live = ix;
    pthread_mutex_unlock(&lf_vi_live_lock);
}

void lf_vi_live_remove(lf_vindex *ix)
{
    pthread_mutex_lock(&lf_vi_live_lock);
    if (ix->live_prev) ix->live_prev->live_next = ix->live_next;
    else lf_vi_live = ix->live_next;
    if (ix->live_next) ix->live_next->live_prev = ix->live_prev;
    pthread_mutex_unlock(&lf_vi_live_lock);
}
