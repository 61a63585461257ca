/* expect: 29: parameter a of Alpha is A: the value of counter Live must be one of WUD */
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
  COUNTER( Live, Alpha, a, p )

#endif /* gentest_h */
