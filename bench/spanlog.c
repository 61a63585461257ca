/* <bench/spanlog.c> -- a big log with many spans, for the HTML timeline
 *
 * .design: design/export.txt .export.html.big
 *
 * Usage: spanlog EVENTS THREADS: THREADS threads write EVENTS events
 * between them into TELLTALE_FILE (telltale.log), in the example pool's
 * registry: rounds of 20 events, each an object's life (PoolAlloc to
 * PoolFree: an ObjectLife span) with another nested in it, and PoolGrow
 * events between; every 50th round the inner object outlives the outer,
 * so that those two spans overlap and go on an async track; a
 * PoolVerify (PoolLive and PoolFill counters) every 100 rounds and a
 * UserMark "needle" every 10,000.  First each thread allocates 100
 * objects and frees them in the same order: 100 overlapping spans, more
 * than the page's 64 lanes, so that it folds some.  Prints per thread how many events
 * and spans it wrote, what tests/tools/html.py checks the page against.
 */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <telltale/event.h>

typedef struct WorkerStruct {
  pthread_t thread;
  unsigned index;
  unsigned long rounds, events, spans;
} WorkerStruct;

static void *worker(void *arg)
{
  WorkerStruct *w = arg;
  char name[32];
  EventP pool = (EventP)(uintptr_t)(0x10000 * (w->index + 1));
  snprintf(name, sizeof name, "spanlog %u", w->index);
  EventThreadNameSet(name);
  for (unsigned long i = 0; i < 200; ++i)   /* 100 allocated, then freed first to last */
    if (i < 100)
      EVENT_PAW(PoolAlloc, pool, (EventA)(0x100000 + 64 * i), 64);
    else
      EVENT_PAW(PoolFree, pool, (EventA)(0x100000 + 64 * (i - 100)), 64);
  w->events += 200;
  w->spans += 100;
  for (unsigned long r = 0; r < w->rounds; ++r) {
    EventA a = (EventA)(0x7f0000000000 + 64 * (2 * r)), b = a + 64;
    int overlap = r % 50 == 49;
    unsigned long filler = 17;
    EVENT_PAW(PoolAlloc, pool, a, 64);
    EVENT_PAW(PoolGrow, pool, a, 1);
    EVENT_PAW(PoolAlloc, pool, b, 64);
    for (unsigned i = 0; i < 6; ++i)
      EVENT_PAW(PoolGrow, pool, b, i);
    if (overlap) {                     /* a ends first: a and b overlap */
      EVENT_PAW(PoolFree, pool, a, 64);
      EVENT_PAW(PoolFree, pool, b, 64);
    } else {
      EVENT_PAW(PoolFree, pool, b, 64);
      EVENT_PAW(PoolFree, pool, a, 64);
    }
    if (r % 100 == 0) {
      EVENT_PWWD(PoolVerify, pool, r, r % 1000, (double)(r % 1000) / 1000.0);
      --filler;
    }
    if (r % 10000 == 0) {
      EVENT_US(UserMark, r, "needle");
      --filler;
    }
    for (unsigned long i = 0; i < filler - 8; ++i)
      EVENT_PAW(PoolGrow, pool, a, r);
    w->events += 20;
    w->spans += 2;
  }
  return NULL;
}

int main(int argc, char **argv)
{
  unsigned long events, threads;
  WorkerStruct *workers;
  if (argc != 3 || (events = strtoul(argv[1], NULL, 10)) == 0
      || (threads = strtoul(argv[2], NULL, 10)) == 0 || threads > 256) {
    fprintf(stderr, "usage: spanlog EVENTS THREADS\n");
    return 2;
  }
  workers = calloc(threads, sizeof *workers);
  if (workers == NULL)
    return 1;
  for (unsigned i = 0; i < threads; ++i) {
    workers[i].index = i;
    workers[i].rounds = events / 20 / threads;
    if (pthread_create(&workers[i].thread, NULL, worker, &workers[i]) != 0)
      return 1;
  }
  for (unsigned i = 0; i < threads; ++i) {
    pthread_join(workers[i].thread, NULL);
    printf("spanlog %u: %lu events %lu spans\n", i, workers[i].events, workers[i].spans);
  }
  free(workers);
  return 0;
}
