/* <tests/clients/malloc_events.c> -- write allocation streams for replay's tests
 *
 * Emits the events of src/malloc/eventdef.h directly, with made-up
 * addresses, so that tests/tools/replay.sh can give replay every case a real
 * program cannot safely make: a free of something never allocated, a
 * double free, an address allocated twice, free(NULL), and pool events.
 * Usage: TELLTALE_FILE=out.log malloc_events SCENARIO
 *   clean      malloc, calloc, realloc (in place and moving), aligned, free
 *   unknown    a free of an address never allocated
 *   double     a block freed twice
 *   duplicate  an address allocated twice without a free between
 *   null       free(NULL)
 *   pool       two pools: allocations, frees, destruction
 *   skew       clocks out of causal order across two threads
 *              (.replay.skew): a block freed by the other thread stamped
 *              50 ns before its allocation, an address freed by the
 *              other thread stamped 50 ns after its reuse here, a free
 *              here of a block the other thread freed and allocated
 *              again, its allocation stamped 200 ns after this thread
 *              freed and was given the address back, and a free 900 us
 *              before an allocation of its address (an unknown free: no
 *              skew is that large)
 *   huge [N]   N (4096) mallocs of 4 GiB each, none freed: a log of tens
 *              of KB that asks for 16 TiB (tests/tools/hostile.sh)
 *   threads N [free]
 *              N threads, each one malloc (and with free, once all
 *              have, a free of it, so that every thread is live at
 *              once), all still running when the process exits, so the
 *              log has no ThreadExit: replay's many threads
 *              (tests/tools/replay.sh many-threads, bench/malloc.sh --threads)
 * It prints the operations it emitted, one "NAME COUNT" a line.
 */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "plinth.h"

#define A(n) ((void *)(uintptr_t)(0x10000 + (n) * 0x100))

/* The skew scenario: clocks set by hand, each thread's increasing */
static EventClock skewBase;
static double ticksPerNs;

static EventClock at(double ns)
{
  return skewBase + (EventClock)(ns * ticksPerNs);
}

static void mallocAt(double ns, void *p)
{
  EVENT_BEGIN(Malloc)
    _event->header.clock = at(ns);
    _event->size = 64;
    _event->result = p;
  EVENT_END(Malloc)
}

static void freeAt(double ns, void *p)
{
  EVENT_BEGIN(Free)
    _event->header.clock = at(ns);
    _event->pointer = p;
  EVENT_END(Free)
}

static void *skewOther(void *arg)
{
  (void)arg;
  freeAt(50, A(1));             /* 50 ns before its allocation */
  freeAt(20050, A(2));          /* 50 ns after the address's reuse */
  freeAt(100000, A(3));         /* 900 us before: a real unknown free */
  freeAt(300100, A(4));         /* passed on by the main thread */
  mallocAt(300400, A(4));       /* given back, stamped late: passed back */
  return NULL;
}

static int skew(void)
{
  pthread_t t;
  ticksPerNs = (double)PlinthClockFrequency() / 1e9;
  skewBase = PlinthClockNow() + (EventClock)(1e6 * ticksPerNs);
  mallocAt(100, A(1));
  mallocAt(1000, A(2));
  mallocAt(20000, A(2));        /* reused: the other thread freed it first */
  mallocAt(300000, A(4));
  freeAt(300200, A(4));         /* the other thread's, stamped before it */
  mallocAt(300200, A(4));       /* and the address again, here */
  if (pthread_create(&t, NULL, skewOther, NULL) != 0 || pthread_join(t, NULL) != 0)
    return 1;
  mallocAt(1000000, A(3));
  freeAt(2000000, A(2));
  freeAt(2000100, A(3));
  freeAt(2000200, A(4));
  printf("malloc 7\nfree 8\n");
  return 0;
}

/* The threads scenario: each thread mallocs, says so, and waits for
 * the process to end, so that no thread exits before it. */
static pthread_mutex_t manyLock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t manyDone = PTHREAD_COND_INITIALIZER;
static unsigned manyCount, manyFreed, manyThreads;
static int manyFree;

static __attribute__((noreturn)) void *manyThread(void *arg)
{
  EVENT_WP(Malloc, 64, A((uintptr_t)arg));
  pthread_mutex_lock(&manyLock);
  ++manyCount;
  pthread_cond_broadcast(&manyDone);
  if (manyFree) {
    while (manyCount < manyThreads)
      pthread_cond_wait(&manyDone, &manyLock);
    pthread_mutex_unlock(&manyLock);
    EVENT_P(Free, A((uintptr_t)arg));
    pthread_mutex_lock(&manyLock);
    ++manyFreed;
    pthread_cond_broadcast(&manyDone);
  }
  for (;;)
    pthread_cond_wait(&manyDone, &manyLock);
}

static int many(unsigned n, int withFree)
{
  pthread_attr_t attr;
  manyThreads = n;
  manyFree = withFree;
  if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, 65536) != 0
      || pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) != 0)
    return 1;
  for (unsigned i = 0; i < n; ++i) {
    pthread_t t;
    if (pthread_create(&t, &attr, manyThread, (void *)(uintptr_t)(i + 1)) != 0)
      return 1;
  }
  pthread_mutex_lock(&manyLock);
  while (manyCount < n || (withFree && manyFreed < n))
    pthread_cond_wait(&manyDone, &manyLock);
  pthread_mutex_unlock(&manyLock);
  printf("malloc %u\nfree %u\n", n, withFree ? n : 0);
  return 0;
}

int main(int argc, char **argv)
{
  const char *s = argc > 1 ? argv[1] : "clean";
  if (strcmp(s, "threads") == 0)
    return many(argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 1000,
                argc > 3 && strcmp(argv[3], "free") == 0);
  if (strcmp(s, "skew") == 0)
    return skew();
  if (strcmp(s, "huge") == 0) {
    unsigned n = argc > 2 ? (unsigned)atoi(argv[2]) : 4096;
    for (unsigned i = 0; i < n; ++i)
      EVENT_WP(Malloc, (EventW)1 << 32, A(i));
    printf("malloc %u\n", n);
    return 0;
  }
  if (strcmp(s, "pool") == 0) {
    EVENT_PPWS(PoolCreate, A(100), NULL, 32, "nodes");
    EVENT_PPWS(PoolCreate, A(101), NULL, 64, "strings");
    for (unsigned i = 0; i < 100; ++i)
      EVENT_PAW(PoolAlloc, A(100 + i % 2), (EventA)A(200 + i), i % 2 ? 64 : 32);
    for (unsigned i = 0; i < 60; ++i)
      EVENT_PAW(PoolFree, A(100 + i % 2), (EventA)A(200 + i), i % 2 ? 64 : 32);
    EVENT_PW(PoolDestroy, A(100), 20);
    EVENT_PW(PoolDestroy, A(101), 20);
    printf("pool create 2\npool alloc 100\npool free 60\npool destroy 2\n");
    return 0;
  }
  EVENT_WP(Malloc, 100, A(1));
  EVENT_WWP(Calloc, 10, 10, A(2));
  EVENT_PPW(Realloc, A(1), A(1), 120);          /* in place */
  EVENT_P(ReallocMove, A(1));                   /* moving: two events */
  EVENT_PPW(Realloc, A(1), A(3), 4000);
  EVENT_PPW(Realloc, NULL, A(4), 50);           /* realloc(NULL, n) */
  EVENT_WWP(Memalign, 64, 100, A(5));
  EVENT_WWP(AlignedAlloc, 128, 256, A(6));
  EVENT_WWPU(PosixMemalign, 32, 48, A(7), 0);
  EVENT_P(Free, A(3));
  EVENT_P(Free, A(2));
  EVENT_PW(FreeSized, A(4), 50);
  EVENT_P(Free, A(5));
  EVENT_P(Free, A(6));
  EVENT_P(Free, A(7));
  if (strcmp(s, "unknown") == 0)
    EVENT_P(Free, A(50));
  else if (strcmp(s, "double") == 0)
    EVENT_P(Free, A(2));
  else if (strcmp(s, "duplicate") == 0) {
    EVENT_WP(Malloc, 10, A(8));
    EVENT_WP(Malloc, 10, A(8));
    EVENT_P(Free, A(8));
  } else if (strcmp(s, "null") == 0)
    EVENT_P(Free, NULL);
  printf("malloc %d\ncalloc 1\nrealloc 3\nfree %d\nmemalign 1\naligned_alloc 1\nposix_memalign 1\n",
         strcmp(s, "duplicate") == 0 ? 3 : 1,
         strcmp(s, "clean") == 0 ? 6 : 7);
  return 0;
}
