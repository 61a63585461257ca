/* <tools/replay/replaypool.h> -- the interface replay uses to replay pool events
 *
 * .design: design/heap.txt .replay.pool
 *
 * replay replays PoolCreate, PoolAlloc, PoolFree and PoolDestroy events
 * (src/malloc/eventdef.h; examples/pool writes the same events) against
 * a pool implementation.  The default is the example allocator in
 * examples/pool.  To replay against your own, build a shared object
 * that defines these four functions and run
 *     replay --pool ./libmypool.so LOG
 *
 * Pool operations are replayed in recorded order on one thread, so an
 * implementation need not be thread-safe.  Null from ReplayPoolCreate
 * or ReplayPoolAlloc is a failure, counted and reported; replay never
 * passes a null object to ReplayPoolFree.
 */

#ifndef replaypool_h
#define replaypool_h

#include <stddef.h>

/* ReplayPoolCreate -- a pool; objectSize is from the PoolCreate event
 * (0 if the recorded pool's objects vary in size), name its name. */
extern void *ReplayPoolCreate(size_t objectSize, const char *name);

/* ReplayPoolAlloc -- an object of size bytes from pool */
extern void *ReplayPoolAlloc(void *pool, size_t size);

/* ReplayPoolFree -- give object (of size bytes) back to pool */
extern void ReplayPoolFree(void *pool, void *object, size_t size);

/* ReplayPoolDestroy -- destroy pool and any objects still in it */
extern void ReplayPoolDestroy(void *pool);

/* ReplayPoolInterfaceStruct -- the four, as replay holds them */
typedef struct ReplayPoolInterfaceStruct {
  void *(*create)(size_t objectSize, const char *name);
  void *(*alloc)(void *pool, size_t size);
  void (*free)(void *pool, void *object, size_t size);
  void (*destroy)(void *pool);
} ReplayPoolInterfaceStruct;

/* ReplayPoolExample -- the example allocator's implementation
 * (tools/replay/poolexample.c), linked into replay */
extern const ReplayPoolInterfaceStruct ReplayPoolExample;

#endif /* replaypool_h */
