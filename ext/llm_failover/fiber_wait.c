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

#include "lf_banned.h"

static ID lf_id_for_fd;
static VALUE lf_cWaitIO, lf_opts_no_autoclose;

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
    /* Without a timeout when the core has one in the fd (its timerfd): a
     * timer per wait is what costs a scheduler most (lf_transfer_wait_ms). */
    VALUE timeout = a->timeout_ms < 0 ? Qnil : DBL2NUM(a->timeout_ms / 1000.0);

    if (a->fd < 0) return rb_fiber_scheduler_kernel_sleep(w->scheduler, timeout);
    if (a->fd == w->wake_fd) /* a sleep that Chat#cancel! can end */
        return rb_fiber_scheduler_io_wait(w->scheduler, w->wake_io, INT2NUM(RUBY_IO_READABLE), timeout);
    if (w->fd != a->fd) {
        /* An IO over the core's descriptor that never closes it: the
         * descriptor belongs to the pooled connection. One per call. */
        VALUE args[2];
        args[0] = INT2NUM(a->fd);
        args[1] = lf_opts_no_autoclose;
        w->io = rb_funcallv_kw(lf_cWaitIO, lf_id_for_fd, 2, args, RB_PASS_KEYWORDS);
        w->fd = a->fd;
    }
    return rb_fiber_scheduler_io_wait(w->scheduler, w->io, INT2NUM(RUBY_IO_READABLE), timeout);
}

void lf_fiber_wait_for(lf_fiber_wait *w, int fd, int timeout_ms, int *state)
{
    lf_fiber_wait_args a = { w, fd, timeout_ms };
    rb_protect(lf_fiber_wait_body, (VALUE)&a, state);
}

/* IO#timeout: nil, the core's IO has no timeout of its own. Asked by async
 * 2.x when a wait has none (Ruby 3.1's IO lacks the method; 3.2's says nil). */
static VALUE lf_wait_io_timeout(VALUE self)
{
    return Qnil;
}

void lf_init_fiber_wait(void)
{
    lf_id_for_fd = rb_intern("for_fd");
    /* LlmFailover::Engine::WaitIO: the IO the scheduler waits on; private. */
    lf_cWaitIO = rb_define_class_under(rb_define_class_under(lf_mLlmFailover, "Engine", rb_cObject), "WaitIO", rb_cIO);
    rb_define_method(lf_cWaitIO, "timeout", lf_wait_io_timeout, 0);
    rb_global_variable(&lf_cWaitIO);
    lf_opts_no_autoclose = rb_hash_new();
    rb_hash_aset(lf_opts_no_autoclose, ID2SYM(rb_intern("autoclose")), Qfalse);
    rb_obj_freeze(lf_opts_no_autoclose);
    rb_global_variable(&lf_opts_no_autoclose);
}
