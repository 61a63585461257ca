/* A small registry whose generated files are kept in tests/gen/expect/
 * (golden outputs): every format letter, no parameters, a string, a
 * retired event, a kind of its own and a standard kind it declares.
 * After a deliberate change to gen, regenerate them with
 *   python3 gen --core eventdef.h --out tests/gen/expect tests/gen/good/small.h
 * and read the diff.  tests/gen.sh */

#ifndef small_h
#define small_h

#define EVENT_REGISTRY_NAME "small"

#define EVENT_KIND_LIST(KIND) \
  KIND(Pool,  "telltale's kind, declared again: it merges") \
  KIND(Small, "the small registry's own kind")

#define EVENT_LIST(RELATION, RETIRED) \
  /*        name        code    always kind   format */ \
  RELATION( SmallAll  , 0x1000, TRUE  , Small, PAWUDS ) \
  RELATION( SmallNone , 0x1001, FALSE , Pool , 0      ) \
  RETIRED(  SmallOld  , 0x1002, FALSE , Small, W      )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(SmallAll, "one parameter of each letter: \"quoted\", tab\there") \
    PARAM(P, p, "a pointer") \
    PARAM(A, a, "an address") \
    PARAM(W, w, "a word") \
    PARAM(U, u, "an unsigned 32-bit number") \
    PARAM(D, d, "a double") \
    PARAM(S, s, "a string */ that ends a comment") \
  DOC(SmallNone, "no parameters") \
  DOC(SmallOld, "a retired event: old logs decode") \
    PARAM(W, w, "a word")

#endif /* small_h */
