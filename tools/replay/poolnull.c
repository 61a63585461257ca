/* <tools/replay/poolnull.c> -- a user pool for replay --pool: malloc underneath
 *
 * .design: design/heap.txt .replay.pool
 *
 * The smallest implementation of tools/replay/replaypool.h, built as
 * replay-pool-null.so.  It shows the shape of a user's pool and lets
 * the tests check that replay --pool loads one.  Every object comes
 * from malloc, with a header that links it into its pool's list, so
 * that destroying a pool frees what is still in it.
 */

#include <stddef.h>
#include <stdlib.h>

#include "replaypool.h"

typedef struct ObjectStruct {
  struct ObjectStruct *prev, *next;
  long double align[1];         /* the object follows, suitably aligned */
} ObjectStruct;

typedef struct NullPoolStruct {
  size_t size;
  ObjectStruct ring;            /* the live objects */
} NullPoolStruct;

void *ReplayPoolCreate(size_t objectSize, const char *name)
{
  NullPoolStruct *pool = malloc(sizeof *pool);
  (void)name;
  if (pool != NULL) {
    pool->size = objectSize;
    pool->ring.prev = pool->ring.next = &pool->ring;
  }
  return pool;
}

void *ReplayPoolAlloc(void *pool, size_t size)
{
  NullPoolStruct *np = pool;
  ObjectStruct *o = malloc(sizeof *o + size);
  if (o == NULL)
    return NULL;
  o->next = np->ring.next;
  o->prev = &np->ring;
  o->next->prev = o;
  np->ring.next = o;
  return o->align;
}

void ReplayPoolFree(void *pool, void *object, size_t size)
{
  ObjectStruct *o = (ObjectStruct *)((char *)object - offsetof(ObjectStruct, align));
  (void)pool;
  (void)size;
  o->prev->next = o->next;
  o->next->prev = o->prev;
  free(o);
}

void ReplayPoolDestroy(void *pool)
{
  NullPoolStruct *np = pool;
  while (np->ring.next != &np->ring)
    ReplayPoolFree(np, np->ring.next->align, 0);
  free(np);
}
