/* <src/plinth/plinthclock.h> -- the cycle counter read on the hot path
 *
 * .design: design/telemetry.txt .sol.clock
 *
 * On x86-64 this is rdtsc: two registers combined into one 64-bit value,
 * no call and no memory access.  Elsewhere it falls back to the plinth's
 * monotonic clock in nanoseconds, which is a call.
 */

#ifndef plinthclock_h
#define plinthclock_h

#include <stdint.h>

#if defined(__x86_64__)

#define PLINTH_CLOCK_IS_CYCLES 1

static inline uint64_t PlinthClockNow(void)
{
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return (uint64_t)hi << 32 | lo;
}

#else

#define PLINTH_CLOCK_IS_CYCLES 0

/* As plinth.h declares it, C++ included (design/telemetry.txt .pack.cxx) */
#ifdef __cplusplus
extern "C"
#endif
__attribute__((visibility("default"))) uint64_t PlinthMonotonicNs(void);

static inline uint64_t PlinthClockNow(void)
{
  return PlinthMonotonicNs();
}

#endif

#endif /* plinthclock_h */
