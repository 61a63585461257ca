/* <bench/floor.c> -- the floors that bench/malloc.sh --floor measures the recorder against
 *
 * .design: design/tests.txt .malloc.perf.floor
 *
 * Built twice, as a library to preload:
 *   -DFLOOR_FORWARD  the least an interposer does: malloc, calloc,
 *                    realloc and free call the next definition (glibc's)
 *                    and nothing else, so its cost is the interposition
 *                    alone, which every LD_PRELOAD recorder pays;
 *   -DFLOOR_THREAD   a second thread that only sleeps, so its cost is
 *                    glibc's malloc leaving its single-thread shortcuts,
 *                    which every recorder with a writer thread pays.
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#if defined(FLOOR_FORWARD)

static void *(*nextMalloc)(size_t);
static void *(*nextCalloc)(size_t, size_t);
static void *(*nextRealloc)(void *, size_t);
static void (*nextFree)(void *);

/* dlsym may allocate before the next malloc is known: from here, never freed */
static unsigned char boot[1 << 16] __attribute__((aligned(16)));
static size_t bootUsed;

static void *bootAlloc(size_t size)
{
  void *p = boot + bootUsed;
  size = (size + 15) & ~(size_t)15;
  if (size > sizeof boot - bootUsed)
    return NULL;
  bootUsed += size;
  return p;
}

static int inBoot(const void *p)
{
  return (uintptr_t)p - (uintptr_t)boot < sizeof boot;
}

static int finding;

static void find(void)
{
  finding = 1;
  *(void **)&nextCalloc = dlsym(RTLD_NEXT, "calloc");
  *(void **)&nextRealloc = dlsym(RTLD_NEXT, "realloc");
  *(void **)&nextFree = dlsym(RTLD_NEXT, "free");
  *(void **)&nextMalloc = dlsym(RTLD_NEXT, "malloc");
  finding = 0;
}

void *malloc(size_t size)
{
  if (nextMalloc == NULL) {
    if (finding)
      return bootAlloc(size);
    find();
  }
  return nextMalloc(size);
}

void *calloc(size_t count, size_t size)
{
  if (nextCalloc == NULL)
    return count != 0 && size > SIZE_MAX / count ? NULL : bootAlloc(count * size);
  return nextCalloc(count, size);
}

void *realloc(void *p, size_t size)
{
  if (nextRealloc == NULL && !finding)
    find();
  if (inBoot(p) || nextRealloc == NULL) {      /* from the arena, or while finding */
    size_t most = p == NULL ? 0 : (size_t)(boot + bootUsed - (unsigned char *)p);
    void *q = malloc(size);
    if (q != NULL && most > 0)
      memcpy(q, p, size < most ? size : most);   /* its size is not kept: what can be its */
    return q;
  }
  return nextRealloc(p, size);
}

void free(void *p)
{
  if (inBoot(p))
    return;
  if (nextFree == NULL)
    find();
  nextFree(p);
}

#elif defined(FLOOR_THREAD)

static void *sleeper(void *arg)
{
  (void)arg;
  for (;;)
    pause();
  return NULL;
}

__attribute__((constructor)) static void floorThread(void)
{
  pthread_t thread;
  if (pthread_create(&thread, NULL, sleeper, NULL) == 0)
    (void)pthread_detach(thread);
}

#else
#error "bench/floor.c: build with -DFLOOR_FORWARD or -DFLOOR_THREAD"
#endif
