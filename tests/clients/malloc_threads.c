/* <tests/clients/malloc_threads.c> -- a threaded program for the recorder's tests
 *
 * tests/tools/replay.sh runs it under libtelltale-malloc.so and replays the
 * log.  THREADS threads each make ITERATIONS rounds of malloc, calloc,
 * realloc, the aligned allocators and free, and pass every third block
 * to the next thread, which frees it: blocks freed by a thread other
 * than the one that allocated them.  It prints how many calls of each
 * function it made itself, in the form replay reports them:
 *   malloc N
 *   calloc N ...
 * Usage: malloc_threads [ITERATIONS] (default 20000; 0 for the baseline
 * run whose counts are the C library's own).
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <malloc.h>

#define THREADS 4
#define MAILBOX 1024

typedef struct MailboxStruct {
  pthread_mutex_t lock;
  void *slot[MAILBOX];
  size_t count;
} MailboxStruct;

static MailboxStruct mailbox[THREADS];
static long iterations = 20000;
static atomic_long nMalloc, nCalloc, nRealloc, nFree, nMemalign, nAlignedAlloc, nPosixMemalign;

/* use -- make the compiler keep an allocation it could otherwise drop */
static void use(void *p)
{
  __asm__ volatile("" : : "r"(p) : "memory");
}

/* post -- give a block to thread t to free; 0 if its mailbox is full */
static int post(unsigned t, void *p)
{
  int ok = 0;
  pthread_mutex_lock(&mailbox[t].lock);
  if (mailbox[t].count < MAILBOX) {
    mailbox[t].slot[mailbox[t].count++] = p;
    ok = 1;
  }
  pthread_mutex_unlock(&mailbox[t].lock);
  return ok;
}

/* drain -- free the blocks other threads gave thread t */
static void drain(unsigned t)
{
  void *p[MAILBOX];
  size_t n;
  pthread_mutex_lock(&mailbox[t].lock);
  n = mailbox[t].count;
  for (size_t i = 0; i < n; ++i)
    p[i] = mailbox[t].slot[i];
  mailbox[t].count = 0;
  pthread_mutex_unlock(&mailbox[t].lock);
  for (size_t i = 0; i < n; ++i) {
    free(p[i]);
    ++nFree;
  }
}

static void *worker(void *arg)
{
  unsigned self = (unsigned)(size_t)arg, next = (self + 1) % THREADS;
  unsigned seed = self * 7919u + 1;
  for (long i = 0; i < iterations; ++i) {
    size_t size = 8 + (seed = seed * 1103515245u + 12345u) % 2000;
    void *p = malloc(size), *q, *r;
    ++nMalloc;
    use(p);
    q = calloc(4, size / 4 + 1);
    ++nCalloc;
    use(q);
    p = realloc(p, size * 2);
    ++nRealloc;
    use(p);
    if (i % 16 == 0) {
      void *a = memalign(64, size), *b = aligned_alloc(128, 256), *c = NULL;
      ++nMemalign;
      ++nAlignedAlloc;
      ++nPosixMemalign;
      if (posix_memalign(&c, 32, size) != 0)
        c = NULL;
      use(a);
      use(b);
      use(c);
      free(a);
      free(b);
      free(c);
      nFree += 3;
    }
    r = malloc(16);
    ++nMalloc;
    use(r);
    free(r);
    ++nFree;
    if (i % 3 == 0 && post(next, p))
      p = NULL;
    if (p != NULL) {
      free(p);
      ++nFree;
    }
    free(q);
    ++nFree;
    if (i % 64 == 0)
      drain(self);
  }
  return NULL;
}

int main(int argc, char **argv)
{
  pthread_t thread[THREADS];
  if (argc > 1)
    iterations = atol(argv[1]);
  for (unsigned t = 0; t < THREADS; ++t)
    pthread_mutex_init(&mailbox[t].lock, NULL);
  for (unsigned t = 0; t < THREADS; ++t)
    pthread_create(&thread[t], NULL, worker, (void *)(size_t)t);
  for (unsigned t = 0; t < THREADS; ++t)
    pthread_join(thread[t], NULL);
  for (unsigned t = 0; t < THREADS; ++t)
    drain(t);
  printf("malloc %ld\ncalloc %ld\nrealloc %ld\nfree %ld\nmemalign %ld\n"
         "aligned_alloc %ld\nposix_memalign %ld\n",
         (long)nMalloc, (long)nCalloc, (long)nRealloc, (long)nFree,
         (long)nMemalign, (long)nAlignedAlloc, (long)nPosixMemalign);
  return 0;
}
