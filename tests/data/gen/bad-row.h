/* expect: 13: expected RELATION(Name, code, always, Kind, FORMAT) */
/* core */

#ifndef gentest_h
#define gentest_h

#define EVENT_REGISTRY_NAME "gen test"

#define EVENT_KIND_LIST(KIND) \
  KIND(Extra, "a kind of the test's own")

#define EVENT_LIST(RELATION, RETIRED) \
  RELATION( Alpha, 0x0100, TRUE , Extra ) \
  RELATION( Beta , 0x0101, FALSE, Extra, WS  )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(Alpha, "alpha happened") \
    PARAM(W, p, "a pointer") \
    PARAM(W, a, "an address") \
    PARAM(W, w, "a word") \
  DOC(Beta, "beta happened") \
    PARAM(W, w, "a word") \
    PARAM(S, s, "a string")

#endif /* gentest_h */
