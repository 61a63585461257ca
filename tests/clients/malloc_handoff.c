/* <tests/clients/malloc_handoff.c> -- blocks freed by another thread at once
 *
 * .design: design/heap.txt .replay.skew
 *
 * Two producer/consumer pairs, four threads: a producer mallocs a block
 * and passes it through a lock-free ring; its consumer frees it as soon
 * as it sees it, some tens of ns later.  The recorder's clock may then
 * put a free before its allocation; replay must still find no anomaly.
 * Usage: malloc_handoff [BLOCKS]  (default 200000 per pair)
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define RING 64

typedef struct RingStruct {
  void *_Atomic slot[RING];
  unsigned long count;
} RingStruct;

static RingStruct rings[2];

static void *producer(void *arg)
{
  RingStruct *r = arg;
  for (unsigned long i = 0; i < r->count; ++i) {
    void *p = malloc(16 + (i & 63));
    while (atomic_load_explicit(&r->slot[i % RING], memory_order_acquire) != NULL)
      ;
    atomic_store_explicit(&r->slot[i % RING], p, memory_order_release);
  }
  return NULL;
}

static void *consumer(void *arg)
{
  RingStruct *r = arg;
  for (unsigned long i = 0; i < r->count; ++i) {
    void *p;
    while ((p = atomic_load_explicit(&r->slot[i % RING], memory_order_acquire)) == NULL)
      ;
    atomic_store_explicit(&r->slot[i % RING], NULL, memory_order_release);
    free(p);
  }
  return NULL;
}

int main(int argc, char **argv)
{
  pthread_t t[4];
  unsigned long count = argc > 1 ? strtoul(argv[1], NULL, 10) : 200000;
  for (int k = 0; k < 2; ++k) {
    rings[k].count = count;
    if (pthread_create(&t[2 * k], NULL, producer, &rings[k]) != 0 ||
        pthread_create(&t[2 * k + 1], NULL, consumer, &rings[k]) != 0)
      return 1;
  }
  for (int k = 0; k < 4; ++k)
    pthread_join(t[k], NULL);
  return 0;
}
