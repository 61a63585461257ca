/* <src/plinth/plinthclock.h> -- the cycle counter read on the hot path
 *
 * .design: design/runtime.txt .sol.clock
 *
 * On x86-64 this is rdtsc: two registers combined into one 64-bit value,
 * or stored as they are, no call and no memory access.  Elsewhere it
 * falls back to the plinth's monotonic clock in nanoseconds, which is a
 * call.
 *
 * A build may coarsen the clock by PLINTH_CLOCK_SHIFT bits (the
 * allocation recorder's does, design/recorder.txt .malloc.clock): every
 * reading is shifted, so the runtime and its readers see a slower clock
 * and nothing else, at the cost of a shift on the hot path.
 */

#ifndef plinthclock_h
#define plinthclock_h

#include <stdint.h>

#ifndef PLINTH_CLOCK_SHIFT
#define PLINTH_CLOCK_SHIFT 0
#endif

#if defined(__x86_64__)

#define PLINTH_CLOCK_IS_CYCLES 1

static inline uint64_t PlinthClockNow(void)
{
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32 | lo) >> PLINTH_CLOCK_SHIFT;
}

/* PlinthClockStore -- the clock, stored at p (8 bytes, the machine's
 * order) as rdtsc gives it: two halves, two stores, nothing combined
 * (unless shifted) */
static inline void PlinthClockStore(void *p)
{
#if PLINTH_CLOCK_SHIFT == 0
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  __builtin_memcpy(p, &lo, 4);
  __builtin_memcpy((char *)p + 4, &hi, 4);
#else
  uint64_t now = PlinthClockNow();
  __builtin_memcpy(p, &now, 8);
#endif
}

#else

#define PLINTH_CLOCK_IS_CYCLES 0

/* As plinth.h declares it, C++ included (design/build.txt .pack.cxx) */
#ifdef __cplusplus
extern "C"
#endif
__attribute__((visibility("default"))) uint64_t PlinthMonotonicNs(void);

static inline uint64_t PlinthClockNow(void)
{
  return PlinthMonotonicNs() >> PLINTH_CLOCK_SHIFT;
}

static inline void PlinthClockStore(void *p)
{
  uint64_t now = PlinthClockNow();
  __builtin_memcpy(p, &now, 8);
}

#endif

#endif /* plinthclock_h */
