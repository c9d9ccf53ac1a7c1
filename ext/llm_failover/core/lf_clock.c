/* Clocks and the pid cache (lf_clock.h): nothing else. */
#include "lf_clock.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "lf_banned.h"

/* The process id, known without a system call per use (glibc does not cache
 * getpid): 0 until first asked, and again in a forked child, whose
 * pthread_atfork handler forgets the parent's. Every fork made through the C
 * library runs the handler (Ruby's Process.fork does). A pid_t is written
 * whole, and every thread that writes it writes the same value. */
static volatile pid_t lf_pid;
static pthread_once_t lf_pid_once = PTHREAD_ONCE_INIT;
static int lf_pid_cacheable;

static void lf_forget_pid(void)
{
    lf_pid = 0;
}

static void lf_pid_init_once(void)
{
    lf_pid_cacheable = pthread_atfork(NULL, NULL, lf_forget_pid) == 0;
}

pid_t lf_current_pid(void)
{
    pid_t pid = lf_pid;
    if (pid != 0) return pid;
    pthread_once(&lf_pid_once, lf_pid_init_once);
    pid = getpid();
    if (lf_pid_cacheable) lf_pid = pid; /* without the handler, ask every time */
    return pid;
}

double lf_now_monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double lf_now_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
