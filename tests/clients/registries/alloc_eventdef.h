/* <tests/clients/registries/alloc_eventdef.h> -- the registries test's shared library's registry
 *
 * .design: design/tests.txt .test.registries
 *
 * THIS FILE IS READ BY A PROGRAM (gen).  An allocator library's own
 * events, in a shared object: the same codes as the program's (0x1000,
 * 0x1001), a kind and an event named as the program's (Work), and the
 * standard kind Pool.  tag is 2.
 */

#ifndef alloc_eventdef_h
#define alloc_eventdef_h

#define EVENT_REGISTRY_NAME "alloc"

#define EVENT_KIND_LIST(KIND) \
  /*   name  doc */ \
  KIND(Work, "the allocator's own work")

#define EVENT_LIST(RELATION, RETIRED) \
  /*        name        code    always kind  format */ \
  RELATION( AllocBlock, 0x1000, TRUE  , Pool, UUWW  ) \
  RELATION( Work      , 0x1001, TRUE  , Work, UUW   )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(AllocBlock, "a block was allocated") \
    PARAM(U, tag,    "the registry's tag: 2") \
    PARAM(U, thread, "the emitting thread's slot") \
    PARAM(W, seq,    "the thread's event number") \
    PARAM(W, size,   "the block's size: seq * 16") \
  DOC(Work, "a piece of the allocator's work") \
    PARAM(U, tag,    "the registry's tag: 2") \
    PARAM(U, thread, "the emitting thread's slot") \
    PARAM(W, seq,    "the thread's event number")

#endif /* alloc_eventdef_h */
