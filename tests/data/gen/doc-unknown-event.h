/* expect: 15: event Beta has no DOC row */
/* expect: 22: DOC for unknown event Betta */
/* core */

#ifndef gentest_h
#define gentest_h

#define EVENT_REGISTRY_NAME "gen test"

#define EVENT_KIND_LIST(KIND) \
  KIND(Extra, "a kind of the test's own")

#define EVENT_LIST(RELATION, RETIRED) \
  RELATION( Alpha, 0x0100, TRUE , Extra, PAW ) \
  RELATION( Beta , 0x0101, FALSE, Extra, WS  )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(Alpha, "alpha happened") \
    PARAM(P, p, "a pointer") \
    PARAM(A, a, "an address") \
    PARAM(W, w, "a word") \
  DOC(Betta, "beta happened") \
    PARAM(W, w, "a word") \
    PARAM(W, s, "a string")

#endif /* gentest_h */
