/* <bench/lttng_tp.h> -- the LTTng-UST tracepoint provider of the benchmark
 *
 * .design: design/tests.txt .bench.lttng
 *
 * LTTng-UST is telltale's nearest peer: a userspace tracer with
 * per-CPU ring buffers in shared memory, drained to disk by a consumer
 * daemon.  This provider gives it the benchmark's event: three 64-bit
 * fields, a pointer, an address and a word, like TestPAW.  There are
 * two instances of the one event class: bench:paw, which bench/run's
 * session enables, and bench:paw_off, which no session enables, so
 * that the enabled and the disabled tracepoint are measured in the
 * same run without switching the session between rounds.
 *
 * Compiled only where liblttng-ust-dev is installed (bench/peers.sh):
 * lttng_tp.c makes the probes, bench.c with -DBENCH_LTTNG fires them.
 */

#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "lttng_tp.h"

#if !defined(BENCH_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define BENCH_LTTNG_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT_CLASS(
  bench, paw_class,
  LTTNG_UST_TP_ARGS(uint64_t, p, uint64_t, a, uint64_t, w),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(uint64_t, p, p)
    lttng_ust_field_integer_hex(uint64_t, a, a)
    lttng_ust_field_integer(uint64_t, w, w)
  )
)

LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(
  bench, paw_class, bench, paw,
  LTTNG_UST_TP_ARGS(uint64_t, p, uint64_t, a, uint64_t, w)
)

LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(
  bench, paw_class, bench, paw_off,
  LTTNG_UST_TP_ARGS(uint64_t, p, uint64_t, a, uint64_t, w)
)

#endif /* BENCH_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
