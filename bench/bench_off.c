/* <bench/bench_off.c> -- the benchmark's loop in the off variety
 *
 * .design: design/runtime.txt .sol.variety
 *
 * Compiled with -DEVENT_VARIETY=0: the emitter compiles to nothing, so
 * this is the cost of the loop alone.
 */

#include <telltale/event.h>

extern void benchCompiledOut(size_t count, void *p);

void __attribute__((noinline)) benchCompiledOut(size_t count, void *p)
{
  for (size_t i = 0; i < count; ++i) {
    EVENT_PAW(TestPAW, p, (EventA)p + 8, i);
    __asm__ __volatile__("" ::: "memory");   /* keep the empty loop */
  }
}
