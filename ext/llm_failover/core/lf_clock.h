/* Clocks and the process id: seconds on the monotonic and the wall clock,
 * and getpid() cached until the process forks. Used by the transport, the
 * attempt loop and the connection pool's fork check. */
#ifndef LF_CLOCK_H
#define LF_CLOCK_H

#include <sys/types.h>

/* Seconds on the monotonic clock / the wall clock (epoch seconds). */
double lf_now_monotonic(void);
double lf_now_wall(void);

/* getpid(), cached until the process forks (a pthread_atfork handler). */
pid_t lf_current_pid(void);

#endif
