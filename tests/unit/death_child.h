/* <tests/unit/death_child.h> -- what tests/unit/death_child.c emits, for the test
 * that checks it (tests/unit/test_death.c)
 *
 * .design: design/tests.txt .test.death
 */

#ifndef death_child_h
#define death_child_h

#include <stdint.h>

#define CHILD_EVENTS 200u           /* TestW 0 .. CHILD_EVENTS-1 in the prelude */
#define CHILD_NOISY_AFTER 194u      /* TestPAW comes right after this TestW */
#define CHILD_NOISY_W 4242u         /* the TestPAW's w */
#define CHILD_THREADS 3u
#define CHILD_THREAD_EVENTS 5000u   /* TestThread per thread: more than one 64 KiB block */
#define CHILD_EXIT_STATUS 3         /* exit-thread */
#define CHILD_RETURN_STATUS 5       /* return-main */
#define CHILD_DROPS_STATUS 6        /* drops-exit */
#define CHILD_DROP_EVENTS 100000u   /* drops-*: TestW emitted, most dropped */
#define CHILD_STALL_EVENTS 20000u   /* stall-kill: TestW after the stall, several blocks */
#define CHILD_LATE_MS 150           /* late-segv: longer than EVENT_SYNC_SPAN_NS */
#define CHILD_LATE_EVENTS 10
#define CHILD_CHAIN_STATUS 42       /* the program's own SIGSEGV handler */
#define CHILD_CHAIN_MARKER "death_child: the program's own SIGSEGV handler ran"
#define CHILD_RECOVERED_MARKER "death_child: recovered from the barrier fault"
#define CHILD_HANDLER_MARKER "death_child: the handler returns"

/* ChildCheck -- a hash of thread and seq, so that a torn event shows */
static inline uint64_t ChildCheck(uint64_t thread, uint64_t seq)
{
  uint64_t z = (thread << 40 ^ seq) + UINT64_C(0x9E3779B97F4A7C15);
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return (z ^ (z >> 31)) & UINTPTR_MAX;
}

#endif /* death_child_h */
