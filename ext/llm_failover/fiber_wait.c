/* Waits of a call made from a non-blocking fiber under a Fiber scheduler
 * (Async, Falcon, async-job): they go through the scheduler, so that the
 * other fibers of the thread run meanwhile, instead of holding the thread in
 * rb_nogvl. The core drives such a call by socket readiness and hands over
 * one file descriptor (an epoll set of the transfer's sockets, see
 * lf_conn_evented) to wait on, or -1 for a sleep between retries.
 *
 * The scheduler's own exceptions (Async::Stop from task.stop,
 * Async::TimeoutError from with_timeout, Timeout::Error) arrive from inside
 * these waits: they are stashed under rb_protect like any other, the core
 * tears the transfer down, and engine_class.c raises them afterwards. */
#include "lf_ruby.h"

#include <ruby/fiber/scheduler.h>
#include <ruby/io.h>
#include <fcntl.h>

#include "lf_banned.h"

static ID lf_id_autoclose_set;

int lf_fiber_wait_init(lf_fiber_wait *w)
{
    w->scheduler = rb_fiber_scheduler_current(); /* nil in a blocking fiber */
    w->io = Qnil;
    w->fd = -1;
    w->wake_io = Qnil;
    w->wake_fd = -1;
    return !NIL_P(w->scheduler);
}

int lf_fiber_wait_wake(lf_fiber_wait *w, VALUE io)
{
    w->wake_fd = rb_io_descriptor(io);
    w->wake_io = io;
    return w->wake_fd;
}

typedef struct lf_fiber_wait_args {
    lf_fiber_wait *w;
    int fd;
    int timeout_ms;
} lf_fiber_wait_args;

static VALUE lf_fiber_wait_body(VALUE arg)
{
    lf_fiber_wait_args *a = (lf_fiber_wait_args *)arg;
    lf_fiber_wait *w = a->w;
    VALUE timeout = DBL2NUM(a->timeout_ms / 1000.0);

    if (a->fd < 0) return rb_fiber_scheduler_kernel_sleep(w->scheduler, timeout);
    if (a->fd == w->wake_fd) /* a sleep that Chat#cancel! can end */
        return rb_fiber_scheduler_io_wait(w->scheduler, w->wake_io, INT2NUM(RUBY_IO_READABLE), timeout);
    if (w->fd != a->fd) {
        /* An IO over the core's descriptor that never closes it: the
         * descriptor belongs to the pooled connection. One per call. */
        w->io = rb_io_fdopen(a->fd, O_RDONLY, NULL);
        rb_funcall(w->io, lf_id_autoclose_set, 1, Qfalse);
        w->fd = a->fd;
    }
    return rb_fiber_scheduler_io_wait(w->scheduler, w->io, INT2NUM(RUBY_IO_READABLE), timeout);
}

void lf_fiber_wait_for(lf_fiber_wait *w, int fd, int timeout_ms, int *state)
{
    lf_fiber_wait_args a = { w, fd, timeout_ms };
    rb_protect(lf_fiber_wait_body, (VALUE)&a, state);
}

void lf_init_fiber_wait(void)
{
    lf_id_autoclose_set = rb_intern("autoclose=");
}
