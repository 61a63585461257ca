/* <bench/lttng_tp.c> -- the probes of the benchmark's LTTng-UST provider
 *
 * .design: design/tests.txt .bench.lttng
 *
 * The one translation unit that expands lttng_tp.h into the probe
 * functions and the event descriptions, which register with
 * liblttng-ust when the program starts.
 */

#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "lttng_tp.h"
