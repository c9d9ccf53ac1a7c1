/* LlmFailover::Circuit: the circuit breaker's numbers, the core's
 * (core/lf_circuit.h), for Ruby and RedisStateStore's Lua: the route codes
 * every state store answers with (SEND, SKIP, PROBE: lf_route, the one owner
 * of those numbers), the recovery schedule's share and Circuit.interval. The
 * circuits themselves are a CircuitTable's (circuit_table_class.c). */
#include "lf_ruby.h"

#include "lf_circuit.h"

#include "lf_banned.h"

/* @overload interval(first, cooldown, elapsed)
 *   The recovery schedule (lf_circuit_interval): seconds open before the next probe,
 *   elapsed seconds into the incident.
 *   @return [Float] */
static VALUE lf_circuit_s_interval(VALUE mod, VALUE first, VALUE cooldown, VALUE elapsed)
{
    (void)mod;
    return DBL2NUM(lf_circuit_interval(NUM2DBL(first), NUM2DBL(cooldown), NUM2DBL(elapsed)));
}

void lf_init_circuit(VALUE mod)
{
    VALUE c = rb_define_module_under(mod, "Circuit");

    /* Routes: what a call may do with a target (lf_route). */
    rb_define_const(c, "SEND", INT2FIX(LF_ROUTE_SEND));
    rb_define_const(c, "SKIP", INT2FIX(LF_ROUTE_SKIP));
    rb_define_const(c, "PROBE", INT2FIX(LF_ROUTE_PROBE));
    /* the schedule's share of the incident's age, for RedisStateStore's Lua (lf_circuit.h owns it) */
    rb_define_const(c, "RECOVERY_SHARE", DBL2NUM(LF_CIRCUIT_RECOVERY_SHARE));
    rb_define_singleton_method(c, "interval", lf_circuit_s_interval, 3);
}
