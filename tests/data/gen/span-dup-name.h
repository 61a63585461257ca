/* expect: 30: duplicate span or counter name Life */
/* core */

#ifndef gentest_h
#define gentest_h

#define EVENT_REGISTRY_NAME "gen test"

#define EVENT_KIND_LIST(KIND) \
  KIND(Extra, "a kind of the test's own")

#define EVENT_LIST(RELATION, RETIRED) \
  RELATION( Alpha, 0x0100, TRUE , Extra, PAW ) \
  RELATION( Beta , 0x0101, FALSE, Extra, WS  ) \
  RETIRED(  Gamma, 0x0102, FALSE, Extra, P   )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(Alpha, "alpha happened") \
    PARAM(P, p, "a pointer") \
    PARAM(A, a, "an address") \
    PARAM(W, w, "a word") \
  DOC(Beta, "beta happened") \
    PARAM(W, w, "a word") \
    PARAM(S, s, "a string") \
  DOC(Gamma, "retired") \
    PARAM(P, p, "a pointer")

#define EVENT_SPAN_LIST(SPAN, COUNTER) \
  SPAN(    Life, Alpha, Beta, w ) \
  COUNTER( Life, Alpha, w, 0 )

#endif /* gentest_h */
