/* <examples/pool/eventdef.h> -- the example pool allocator's event registry
 *
 * .design: design/registry.txt .reg
 *
 * THIS FILE IS READ BY A PROGRAM: gen accepts exactly the row patterns
 * of eventdef.h.  telltale's own registry is merged in first, so the
 * kinds Arena, Pool, Object and User are available here, and codes
 * start at 0x0100.  The pool events themselves (PoolCreate, PoolDestroy,
 * PoolAlloc, PoolFree) are the standard ones that ship with telltale in
 * src/malloc/eventdef.h, merged in with gen --with, so that tools/replay
 * replays this allocator's logs: this file adds only what is particular
 * to the example.
 */

#ifndef pool_eventdef_h
#define pool_eventdef_h

#define EVENT_REGISTRY_NAME "pool example"

/* No kinds of our own: telltale's standard kinds fit. */
#define EVENT_KIND_LIST(KIND) \
  /*   name     doc */

#define EVENT_LIST(RELATION, RETIRED) \
  /*        name          code    always kind    format */ \
  RELATION( ArenaCreate , 0x0100, TRUE  , Arena , PAW  ) \
  RELATION( ArenaDestroy, 0x0101, TRUE  , Arena , P    ) \
  RETIRED(  OldPoolCreate , 0x0102, TRUE , Pool  , PPWS ) \
  RETIRED(  OldPoolDestroy, 0x0103, TRUE , Pool  , PW   ) \
  RELATION( PoolGrow    , 0x0104, TRUE  , Pool  , PAW  ) \
  RETIRED(  OldPoolAlloc  , 0x0105, TRUE , Object, PAW  ) \
  RETIRED(  OldPoolFree   , 0x0106, TRUE , Object, PAW  ) \
  RETIRED(  PoolCheck   , 0x0107, FALSE , Pool  , P    ) \
  RELATION( PoolVerify  , 0x0108, FALSE , Pool  , PWWD ) \
  RELATION( UserMark    , 0x0109, TRUE  , User  , US   )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(ArenaCreate, "an arena was created over a region of memory") \
    PARAM(P, arena, "the arena") \
    PARAM(A, base,  "the region's first address") \
    PARAM(W, size,  "the region's size in bytes") \
  DOC(ArenaDestroy, "an arena was destroyed") \
    PARAM(P, arena, "the arena") \
  DOC(OldPoolCreate, "retired: the example emits the standard PoolCreate now") \
    PARAM(P, pool,  "the pool") \
    PARAM(P, arena, "the arena it takes memory from") \
    PARAM(W, size,  "the size of its objects in bytes") \
    PARAM(S, name,  "the pool's name") \
  DOC(OldPoolDestroy, "retired: the example emits the standard PoolDestroy now") \
    PARAM(P, pool, "the pool") \
    PARAM(W, live, "objects still allocated when it was destroyed") \
  DOC(OldPoolAlloc, "retired: the example emits the standard PoolAlloc now") \
    PARAM(P, pool, "the pool") \
    PARAM(A, addr, "the object") \
    PARAM(W, size, "its size in bytes") \
  DOC(OldPoolFree, "retired: the example emits the standard PoolFree now") \
    PARAM(P, pool, "the pool") \
    PARAM(A, addr, "the object") \
    PARAM(W, size, "its size in bytes") \
  DOC(PoolGrow, "a pool took a new chunk of memory from its arena") \
    PARAM(P, pool,  "the pool") \
    PARAM(A, chunk, "the chunk's first address") \
    PARAM(W, size,  "the chunk's size in bytes") \
  DOC(PoolCheck, "retired in favour of PoolVerify") \
    PARAM(P, pool, "the pool") \
  DOC(PoolVerify, "a pool's free list was checked (checking variety only)") \
    PARAM(P, pool, "the pool") \
    PARAM(W, free, "objects on the free list") \
    PARAM(W, live, "objects allocated") \
    PARAM(D, fill, "the fraction of the pool's memory in use") \
  DOC(UserMark, "the program marked a phase of its work") \
    PARAM(U, phase, "the phase's number") \
    PARAM(S, what,  "what the phase does")

/* Spans and counters.  design/registry.txt .reg.span
 * SPAN(Name, Begin, End, key): a Begin event opens a span, the next End
 * event whose parameter key has the same value closes it.
 * COUNTER(Name, Event, value, key): each Event sets the counter of its
 * key (0: a single counter) to its parameter value.  eventcnv --spans
 * times the spans; the Chrome export draws spans as slices and counters
 * as counter tracks, and the SQLite export has a span table. */
#define EVENT_SPAN_LIST(SPAN, COUNTER) \
  /*       name          begin         end           key   */ \
  SPAN(    ArenaLife   , ArenaCreate , ArenaDestroy, arena ) \
  SPAN(    PoolLife    , PoolCreate  , PoolDestroy , pool  ) \
  SPAN(    ObjectLife  , PoolAlloc   , PoolFree    , addr  ) \
  /*       name          event         value         key   */ \
  COUNTER( PoolLive    , PoolVerify  , live        , pool  ) \
  COUNTER( PoolFill    , PoolVerify  , fill        , pool  ) \
  COUNTER( Phase       , UserMark    , phase       , 0     )

#endif /* pool_eventdef_h */
