/* <src/malloc/eventdef.h> -- the allocation registry: malloc and pools
 *
 * .design: design/recorder.txt .malloc design/registry.txt .reg
 *
 * THIS FILE IS READ BY A PROGRAM: gen accepts exactly the row patterns
 * of eventdef.h.  telltale's own registry is merged in first.
 *
 * The C allocation interface, as the recorder libtelltale-malloc.so
 * sees it (design/recorder.txt .malloc.events), and MPS-style pool
 * events that tools/replay replays against a pool implementation
 * (.replay.pool).  Codes start at 0x0200 so that they never collide
 * with the example and test registries (0x0100-0x01FF), and are never
 * reused.
 *
 * Threads: there are no thread events here.  telltale's own ThreadStart
 * and ThreadExit (eventdef.h) already mark a thread's first event and
 * its exit, and every block carries the thread's serial, so each event
 * below is attributed to its thread without a field for it.
 *
 * Realloc: a realloc that moves its block releases the old address
 * when it starts and gets the new one when it returns; another thread
 * may take the old address, or free the new one, in between.  So a
 * moving realloc is two events: ReallocMove(old) with the clock taken
 * before the call and Realloc(old, result, size) with the clock after
 * it (design/recorder.txt .malloc.order).  An in-place realloc, a
 * realloc(NULL, n) and a failed one are one Realloc event.
 *
 * Exec: an exec replaces the image without ending the session (it may
 * fail), so the log it leaves has no StreamEnd; Exec, emitted just before
 * every buffer is sent, says the log ends at an exec, not a death
 * (design/recorder.txt .malloc.ends).
 *
 * Call stacks (TELLTALE_STACKS=N, design/recorder.txt .stacks): each
 * allocation event has a twin named ...At with one more parameter, the id
 * of its interned call stack; StackFrames defines an id once, MapExec
 * gives the executable mappings the return addresses fall in, and MapUnmap
 * says one went away (design/recorder.txt .stacks.unmap).
 *
 * Processes: a forked child's log begins with Forked(parent, clock), so
 * that its frees of the blocks it inherited are known for what they are
 * (design/heap.txt .heap.tree).
 *
 * Sizes: an event is its 12-byte header and its fields, so Malloc is 28
 * bytes and Free 20 on a 64-bit platform (design/stream.txt
 * .stream.event).  A failed allocation records a null result.
 */

#ifndef malloc_eventdef_h
#define malloc_eventdef_h

#define EVENT_REGISTRY_NAME "telltale malloc"

#define EVENT_KIND_LIST(KIND) \
  /*   name     doc */ \
  KIND(Malloc, "the C allocation interface: malloc, free and their relatives")

#define EVENT_LIST(RELATION, RETIRED) \
  /*        name             code    always  kind    format      */ \
  RELATION( Malloc         , 0x0200, TRUE  , Malloc, WP         ) \
  RELATION( Calloc         , 0x0201, TRUE  , Malloc, WWP        ) \
  RELATION( Realloc        , 0x0202, TRUE  , Malloc, PPW        ) \
  RELATION( Free           , 0x0203, TRUE  , Malloc, P          ) \
  RELATION( FreeSized      , 0x0204, TRUE  , Malloc, PW         ) \
  RELATION( Memalign       , 0x0205, TRUE  , Malloc, WWP        ) \
  RELATION( AlignedAlloc   , 0x0206, TRUE  , Malloc, WWP        ) \
  RELATION( PosixMemalign  , 0x0207, TRUE  , Malloc, WWPU       ) \
  RELATION( ReallocMove    , 0x0208, TRUE  , Malloc, P          ) \
  RELATION( Exec           , 0x0209, TRUE  , Malloc, S          ) \
  RELATION( PoolCreate     , 0x0210, TRUE  , Pool  , PPWS       ) \
  RELATION( PoolDestroy    , 0x0211, TRUE  , Pool  , PW         ) \
  RELATION( PoolAlloc      , 0x0212, TRUE  , Object, PAW        ) \
  RELATION( PoolFree       , 0x0213, TRUE  , Object, PAW        ) \
  RELATION( MallocAt       , 0x0220, TRUE  , Malloc, WPU        ) \
  RELATION( CallocAt       , 0x0221, TRUE  , Malloc, WWPU       ) \
  RELATION( ReallocAt      , 0x0222, TRUE  , Malloc, PPWU       ) \
  RELATION( MemalignAt     , 0x0223, TRUE  , Malloc, WWPU       ) \
  RELATION( AlignedAllocAt , 0x0224, TRUE  , Malloc, WWPU       ) \
  RELATION( PosixMemalignAt, 0x0225, TRUE  , Malloc, WWPUU      ) \
  RELATION( StackFrames    , 0x0226, TRUE  , Malloc, UUUPPPPPPPP) \
  RELATION( MapExec        , 0x0227, TRUE  , Malloc, PPWS       ) \
  RELATION( MapUnmap       , 0x0228, TRUE  , Malloc, PP         ) \
  RELATION( Forked         , 0x0229, TRUE  , Malloc, UW         ) \
  RELATION( PeakRss        , 0x022A, TRUE  , Malloc, W          )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(Malloc, "malloc returned a block (or null)") \
    PARAM(W, size,   "the size asked for, in bytes") \
    PARAM(P, result, "the block, or null if it failed") \
  DOC(Calloc, "calloc returned a zeroed block (or null)") \
    PARAM(W, count,  "the number of elements") \
    PARAM(W, size,   "the size of each element, in bytes") \
    PARAM(P, result, "the block, or null if it failed") \
  DOC(Realloc, "realloc (or reallocarray) resized a block") \
    PARAM(P, old,    "the block passed in, or null: then it is malloc") \
    PARAM(P, result, "the block returned; null with size 0 means old was freed") \
    PARAM(W, size,   "the new size, in bytes") \
  DOC(ReallocMove, "a realloc that moved its block began: it released the old one") \
    PARAM(P, old, "the block passed in; the Realloc event that follows names its result") \
  DOC(Exec, "the program is calling exec: every event before this one is in the log") \
    PARAM(S, path, "the program or file named to the exec call; a later event of the thread means the exec failed") \
  DOC(MallocAt, "malloc returned a block, called from a recorded call stack (TELLTALE_STACKS)") \
    PARAM(W, size,   "the size asked for, in bytes") \
    PARAM(P, result, "the block, or null if it failed") \
    PARAM(U, stack,  "the call stack's id (StackFrames), or 0 if not recorded") \
  DOC(CallocAt, "calloc returned a zeroed block, called from a recorded call stack") \
    PARAM(W, count,  "the number of elements") \
    PARAM(W, size,   "the size of each element, in bytes") \
    PARAM(P, result, "the block, or null if it failed") \
    PARAM(U, stack,  "the call stack's id, or 0") \
  DOC(ReallocAt, "realloc resized a block, called from a recorded call stack") \
    PARAM(P, old,    "the block passed in, or null: then it is malloc") \
    PARAM(P, result, "the block returned; null with size 0 means old was freed") \
    PARAM(W, size,   "the new size, in bytes") \
    PARAM(U, stack,  "the call stack's id, or 0") \
  DOC(MemalignAt, "memalign, valloc or pvalloc, called from a recorded call stack") \
    PARAM(W, alignment, "the alignment, in bytes") \
    PARAM(W, size,      "the size asked for, in bytes") \
    PARAM(P, result,    "the block, or null if it failed") \
    PARAM(U, stack,     "the call stack's id, or 0") \
  DOC(AlignedAllocAt, "aligned_alloc, called from a recorded call stack") \
    PARAM(W, alignment, "the alignment, in bytes") \
    PARAM(W, size,      "the size asked for, in bytes") \
    PARAM(P, result,    "the block, or null if it failed") \
    PARAM(U, stack,     "the call stack's id, or 0") \
  DOC(PosixMemalignAt, "posix_memalign, called from a recorded call stack") \
    PARAM(W, alignment, "the alignment, in bytes") \
    PARAM(W, size,      "the size asked for, in bytes") \
    PARAM(P, result,    "the block stored, or null if it failed") \
    PARAM(U, status,    "its result: 0 or an errno code") \
    PARAM(U, stack,     "the call stack's id, or 0") \
  DOC(StackFrames, "up to 8 frames of an interned call stack, emitted once, before its id is used") \
    PARAM(U, id,    "the stack's id, from 1") \
    PARAM(U, depth, "the stack's number of frames") \
    PARAM(U, index, "the index of f0 in the stack: 0, 8, 16...") \
    PARAM(P, f0, "a return address, innermost first; 0 past the depth") \
    PARAM(P, f1, "the next") \
    PARAM(P, f2, "the next") \
    PARAM(P, f3, "the next") \
    PARAM(P, f4, "the next") \
    PARAM(P, f5, "the next") \
    PARAM(P, f6, "the next") \
    PARAM(P, f7, "the next") \
  DOC(MapExec, "an executable mapping of the process, from /proc/self/maps: stacks are symbolised with it") \
    PARAM(P, start,  "its first address") \
    PARAM(P, end,    "the address past its last") \
    PARAM(W, offset, "its offset in the file") \
    PARAM(S, path,   "the file mapped") \
  DOC(MapUnmap, "an executable mapping given by MapExec went away (dlclose): stacks defined after it are not symbolised with it") \
    PARAM(P, start,  "its first address") \
    PARAM(P, end,    "the address past its last") \
  DOC(Forked, "this process is a child that parent forked: the blocks the parent had live at clock are live here too, not allocated here") \
    PARAM(U, parent, "the parent's pid") \
    PARAM(W, clock,  "the parent's clock just before the fork") \
  DOC(PeakRss, "the process's peak resident set so far (getrusage), at its exit or exec") \
    PARAM(W, kib, "in KiB, the recorder's own buffers included") \
  DOC(Free, "free released a block; null is recorded as it was passed") \
    PARAM(P, pointer, "the block") \
  DOC(FreeSized, "a sized free (free_sized, free_aligned_sized) released a block") \
    PARAM(P, pointer, "the block") \
    PARAM(W, size,    "the size the caller gave") \
  DOC(Memalign, "memalign, valloc or pvalloc returned an aligned block") \
    PARAM(W, alignment, "the alignment, in bytes") \
    PARAM(W, size,      "the size asked for, in bytes") \
    PARAM(P, result,    "the block, or null if it failed") \
  DOC(AlignedAlloc, "aligned_alloc returned an aligned block") \
    PARAM(W, alignment, "the alignment, in bytes") \
    PARAM(W, size,      "the size asked for, in bytes") \
    PARAM(P, result,    "the block, or null if it failed") \
  DOC(PosixMemalign, "posix_memalign stored an aligned block") \
    PARAM(W, alignment, "the alignment, in bytes") \
    PARAM(W, size,      "the size asked for, in bytes") \
    PARAM(P, result,    "the block stored, or null if it failed") \
    PARAM(U, status,    "its result: 0 or an errno code") \
  DOC(PoolCreate, "a pool of objects was created in an arena") \
    PARAM(P, pool,  "the pool") \
    PARAM(P, arena, "the arena it takes memory from, or null") \
    PARAM(W, size,  "the size of its objects in bytes, or 0 if they vary") \
    PARAM(S, name,  "the pool's name") \
  DOC(PoolDestroy, "a pool was destroyed") \
    PARAM(P, pool, "the pool") \
    PARAM(W, live, "objects still allocated when it was destroyed") \
  DOC(PoolAlloc, "an object was allocated from a pool") \
    PARAM(P, pool, "the pool") \
    PARAM(A, addr, "the object") \
    PARAM(W, size, "its size in bytes") \
  DOC(PoolFree, "an object was freed to its pool") \
    PARAM(P, pool, "the pool") \
    PARAM(A, addr, "the object") \
    PARAM(W, size, "its size in bytes")

#endif /* malloc_eventdef_h */
