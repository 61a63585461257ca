/* <examples/pool/pool.c> -- a small pool allocator, instrumented with telltale
 *
 * Each public function emits one event with EVENT_<FORMAT>(Name, ...);
 * the format in the macro's name must match the registry's row
 * (examples/pool/eventdef.h), or the build fails naming the event.
 */

#include <stdint.h>
#include <stdlib.h>

#include <telltale/event.h>
#include "pool.h"

#define CHUNK_SIZE ((size_t)16 * 1024)

typedef struct ArenaStruct {
  unsigned char *base, *free, *limit;
} ArenaStruct;

typedef struct FreeStruct {
  struct FreeStruct *next;
} FreeStruct;

typedef struct PoolStruct {
  Arena arena;
  size_t size;                  /* object size, at least a pointer */
  FreeStruct *freeList;
  size_t live, free, chunks;
} PoolStruct;

Arena ArenaCreate(size_t size)
{
  Arena arena = malloc(sizeof *arena);
  if (arena == NULL)
    return NULL;
  arena->base = malloc(size);
  if (arena->base == NULL) {
    free(arena);
    return NULL;
  }
  arena->free = arena->base;
  arena->limit = arena->base + size;
  EVENT_PAW(ArenaCreate, arena, (EventA)arena->base, size);
  EventLabelString((EventA)arena->base, "arena region");
  return arena;
}

void ArenaDestroy(Arena arena)
{
  EVENT_P(ArenaDestroy, arena);
  free(arena->base);
  free(arena);
}

Pool PoolCreate(Arena arena, size_t objectSize, const char *name)
{
  Pool pool = malloc(sizeof *pool);
  if (pool == NULL)
    return NULL;
  pool->arena = arena;
  pool->size = objectSize < sizeof(FreeStruct) ? sizeof(FreeStruct) : objectSize;
  pool->freeList = NULL;
  pool->live = pool->free = pool->chunks = 0;
  EVENT_PPWS(PoolCreate, pool, arena, pool->size, name);
  EventLabelString((EventA)pool, name);
  return pool;
}

void PoolDestroy(Pool pool)
{
  EVENT_PW(PoolDestroy, pool, pool->live);
  free(pool);
}

/* poolGrow -- take a chunk from the arena and put its objects on the free list */
static int poolGrow(Pool pool)
{
  Arena arena = pool->arena;
  size_t count = CHUNK_SIZE / pool->size;
  unsigned char *chunk = arena->free;
  if ((size_t)(arena->limit - chunk) < CHUNK_SIZE)
    return 0;
  arena->free += CHUNK_SIZE;
  for (size_t i = 0; i < count; ++i) {
    FreeStruct *object = (FreeStruct *)(chunk + i * pool->size);
    object->next = pool->freeList;
    pool->freeList = object;
  }
  pool->free += count;
  ++pool->chunks;
  EVENT_PAW(PoolGrow, pool, (EventA)chunk, CHUNK_SIZE);
  return 1;
}

void *PoolAlloc(Pool pool)
{
  FreeStruct *object;
  if (pool->freeList == NULL && !poolGrow(pool))
    return NULL;
  object = pool->freeList;
  pool->freeList = object->next;
  --pool->free;
  ++pool->live;
  EVENT_PAW(PoolAlloc, pool, (EventA)object, pool->size);
  return object;
}

void PoolFree(Pool pool, void *p)
{
  FreeStruct *object = p;
  object->next = pool->freeList;
  pool->freeList = object;
  ++pool->free;
  --pool->live;
  EVENT_PAW(PoolFree, pool, (EventA)object, pool->size);
}

/* PoolVerify -- count the free list; its event is in the checking variety only */
size_t PoolVerify(Pool pool)
{
  size_t n = 0;
  for (FreeStruct *f = pool->freeList; f != NULL; f = f->next)
    ++n;
  EVENT_PWWD(PoolVerify, pool, n, pool->live,
             pool->chunks == 0 ? 0.0 : (double)pool->live / (double)(pool->free + pool->live));
  return n;
}
