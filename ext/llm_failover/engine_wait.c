/* The waits of Engine#run: every blocking wait of the core (transfer
 * progress, backoff sleeps) is the core's own (lf_wait_block), run here with
 * the GVL released and an unblocking function that really ends it
 * (lf_wait_wake), or, under a Fiber scheduler, a wait on the core's
 * descriptor through the scheduler (fiber_wait.c), with the listener's
 * wake_io watched beside the transfer. */
#include "lf_engine.h"

#include <ruby/thread.h>
#include <errno.h>

#include "lf_banned.h"

static ID lf_id_on_interrupt, lf_id_wake_io, lf_id_on_wake;

typedef struct lf_wait_args {
    lf_ruby_listener *rl;
    lf_wait *wait;
} lf_wait_args;

static void *lf_wait_nogvl(void *arg)
{
    lf_wait_args *w = arg;
    if (!w->rl->woken) lf_wait_block(w->wait);
    return NULL;
}

/* The unblocking function: Thread#kill, Thread#raise, Timeout and signals
 * call it from another thread. lf_wait_wake is safe from any thread and a
 * signal handler, and ends the wait at once. */
static void lf_wait_ubf(void *arg)
{
    lf_wait_args *w = arg;
    int saved_errno = errno; /* it may run in a signal handler */
    w->rl->woken = 1;
    lf_wait_wake(w->wait);
    errno = saved_errno;
}

static VALUE lf_check_ints(VALUE unused)
{
    rb_thread_check_ints();
    return Qnil;
}

static VALUE lf_call_on_interrupt(VALUE listener)
{
    return rb_funcall(listener, lf_id_on_interrupt, 0);
}

static int lf_rl_wait(void *ud, lf_wait *wait)
{
    lf_ruby_listener *rl = ud;
    lf_wait_args w = { rl, wait };
    int interrupted;

    rl->woken = 0;
    /* INTR_FAIL (what rb_thread_call_without_gvl2 passes) never raises: it
     * returns at once when an interrupt is pending, and leaves interrupts to
     * us. UBF_ASYNC_SAFE: lf_wait_ubf only stores a flag and write(2)s to
     * curl's wakeup socket, so Ruby may call it from a signal handler;
     * without the flag Ruby 3.1 starts and joins a helper thread on every
     * wait made from the main thread. */
    rb_nogvl(lf_wait_nogvl, &w, lf_wait_ubf, &w, RB_NOGVL_INTR_FAIL | RB_NOGVL_UBF_ASYNC_SAFE);
    /* Woken by the unblocking function, or an interrupt came while the GVL
     * was being taken back or before the wait began (then it never blocked):
     * read before the interrupts are run, which clears the flag. */
    interrupted = rl->woken || rb_thread_interrupted(rb_thread_current());
    /* Run pending interrupts now, under protection: a Thread#kill or an
     * exception from a signal handler stops the call, a signal handler
     * that returns normally lets it go on. */
    rb_protect(lf_check_ints, Qnil, &rl->state);
    /* Then the listener may stop the call by raising (Chat#cancel! wakes
     * the thread with Thread#wakeup; timer ticks make false alarms). */
    if (!rl->state && interrupted && rl->on_interrupt) rb_protect(lf_call_on_interrupt, rl->listener, &rl->state);
    return lf_ruby_stop(&rl->state);
}

/* Under a Fiber scheduler every wait goes through it instead (fiber_wait.c). */
static int lf_rl_wait_fd(void *ud, int fd, int timeout_ms)
{
    lf_ruby_listener *rl = ud;

    lf_fiber_wait_for(&rl->fiber, fd, timeout_ms, &rl->state);
    return lf_ruby_stop(&rl->state);
}

static VALUE lf_call_on_wake(VALUE listener)
{
    return rb_funcall(listener, lf_id_on_wake, 0);
}

/* The listener's wake_io became readable (Chat#cancel! under a scheduler):
 * its on_wake raises what stops the call, or drains the IO. */
static int lf_rl_on_wake(void *ud)
{
    lf_ruby_listener *rl = ud;
    rb_protect(lf_call_on_wake, rl->listener, &rl->state);
    return lf_ruby_stop(&rl->state);
}

/* Under a scheduler nothing is raised into the thread to end a wait (it
 * would hit whichever fiber runs): a listener with wake_io (an IO) and
 * on_wake has the core watch that IO instead. */
static void lf_ruby_listener_wake(lf_ruby_listener *rl, lf_listener *l)
{
    VALUE io;

    if (!rb_respond_to(rl->listener, lf_id_wake_io) || !rb_respond_to(rl->listener, lf_id_on_wake)) return;
    io = rb_funcall(rl->listener, lf_id_wake_io, 0);
    if (NIL_P(io)) return;
    l->wake_fd = lf_fiber_wait_wake(&rl->fiber, io);
    l->on_wake = lf_rl_on_wake;
}

void lf_ruby_listener_waits(lf_ruby_listener *rl, lf_listener *l)
{
    rl->woken = 0;
    rl->on_interrupt = rb_respond_to(rl->listener, lf_id_on_interrupt);
    l->wait = lf_rl_wait;
    l->wait_fd = lf_fiber_wait_init(&rl->fiber) ? lf_rl_wait_fd : NULL;
    l->wake_fd = -1;
    l->on_wake = NULL;
    if (l->wait_fd) lf_ruby_listener_wake(rl, l);
}

void lf_init_engine_wait(void)
{
    lf_id_on_interrupt = rb_intern("on_interrupt");
    lf_id_wake_io = rb_intern("wake_io");
    lf_id_on_wake = rb_intern("on_wake");
}
