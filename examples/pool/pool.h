/* <examples/pool/pool.h> -- a small pool allocator, instrumented with telltale
 *
 * An arena hands out chunks of one region of memory; a pool carves its
 * chunks into objects of one size and keeps a free list.  Every
 * operation emits an event (eventdef.h in this directory).
 */

#ifndef pool_h
#define pool_h

#include <stddef.h>

typedef struct ArenaStruct *Arena;
typedef struct PoolStruct *Pool;

extern Arena ArenaCreate(size_t size);
extern void ArenaDestroy(Arena arena);
extern Pool PoolCreate(Arena arena, size_t objectSize, const char *name);
extern void PoolDestroy(Pool pool);
extern void *PoolAlloc(Pool pool);
extern void PoolFree(Pool pool, void *object);
extern size_t PoolVerify(Pool pool);

#endif /* pool_h */
