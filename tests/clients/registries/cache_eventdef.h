/* <tests/clients/registries/cache_eventdef.h> -- the registries test's static library's registry
 *
 * .design: design/tests.txt .test.registries
 *
 * THIS FILE IS READ BY A PROGRAM (gen).  A cache library linked
 * statically into the program: its code 0x1000 is the program's and
 * alloc's too.  tag is 3.
 */

#ifndef cache_eventdef_h
#define cache_eventdef_h

#define EVENT_REGISTRY_NAME "cache"

#define EVENT_KIND_LIST(KIND) \
  /*   name    doc */ \
  KIND(Lookup, "the cache's lookups")

#define EVENT_LIST(RELATION, RETIRED) \
  /*        name      code    always kind    format */ \
  RELATION( CacheHit, 0x1000, TRUE  , Lookup, UUWD  )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(CacheHit, "a lookup hit") \
    PARAM(U, tag,    "the registry's tag: 3") \
    PARAM(U, thread, "the emitting thread's slot") \
    PARAM(W, seq,    "the thread's event number") \
    PARAM(D, ratio,  "seq / 4") 

#endif /* cache_eventdef_h */
