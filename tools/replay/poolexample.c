/* <tools/replay/poolexample.c> -- replay's default pool: the example allocator
 *
 * .design: design/heap.txt .replay.pool
 *
 * Implements tools/replay/replaypool.h with examples/pool/pool.c,
 * compiled in the off variety (no events).  Each replayed pool gets an
 * arena of its own of ARENA_SIZE bytes: malloc'd address space, resident
 * only where the pool touches it.
 */

#include <stdint.h>
#include <stdlib.h>

#include "eventcom.h"
#include "pool.h"
#include "replaypool.h"

#define ARENA_SIZE ((size_t)64 << 20)

typedef struct ExamplePoolStruct {
  Arena arena;
  Pool pool;
  size_t size;
} ExamplePoolStruct;

/* EventLabelString -- the example labels its arenas and pools; in the
 * off variety there is no runtime to label them in, so this does
 * nothing.  (replay links the decoder but not the runtime.) */
extern void EventLabelString(EventA address, const char *label);
void EventLabelString(EventA address, const char *label)
{
  (void)address;
  (void)label;
}

static void *exampleCreate(size_t objectSize, const char *name)
{
  ExamplePoolStruct *ep = malloc(sizeof *ep);
  if (ep == NULL)
    return NULL;
  ep->size = objectSize == 0 ? 64 : objectSize;
  ep->arena = ArenaCreate(ARENA_SIZE);
  ep->pool = ep->arena == NULL ? NULL : PoolCreate(ep->arena, ep->size, name);
  if (ep->pool == NULL) {
    if (ep->arena != NULL)
      ArenaDestroy(ep->arena);
    free(ep);
    return NULL;
  }
  return ep;
}

static void *exampleAlloc(void *pool, size_t size)
{
  ExamplePoolStruct *ep = pool;
  if (size > ep->size)
    return NULL;                /* the example's pools hold one size */
  return PoolAlloc(ep->pool);
}

static void exampleFree(void *pool, void *object, size_t size)
{
  ExamplePoolStruct *ep = pool;
  (void)size;
  PoolFree(ep->pool, object);
}

static void exampleDestroy(void *pool)
{
  ExamplePoolStruct *ep = pool;
  PoolDestroy(ep->pool);
  ArenaDestroy(ep->arena);
  free(ep);
}

const ReplayPoolInterfaceStruct ReplayPoolExample = {
  exampleCreate, exampleAlloc, exampleFree, exampleDestroy
};
