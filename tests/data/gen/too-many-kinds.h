/* expect: 34: more than 32 kinds */
/* core */

#ifndef gentest_h
#define gentest_h

#define EVENT_REGISTRY_NAME "gen test"

#define EVENT_KIND_LIST(KIND) \
  KIND(Extra, "a kind of the test's own") \
  KIND(K02, "one of too many kinds") \
  KIND(K03, "one of too many kinds") \
  KIND(K04, "one of too many kinds") \
  KIND(K05, "one of too many kinds") \
  KIND(K06, "one of too many kinds") \
  KIND(K07, "one of too many kinds") \
  KIND(K08, "one of too many kinds") \
  KIND(K09, "one of too many kinds") \
  KIND(K10, "one of too many kinds") \
  KIND(K11, "one of too many kinds") \
  KIND(K12, "one of too many kinds") \
  KIND(K13, "one of too many kinds") \
  KIND(K14, "one of too many kinds") \
  KIND(K15, "one of too many kinds") \
  KIND(K16, "one of too many kinds") \
  KIND(K17, "one of too many kinds") \
  KIND(K18, "one of too many kinds") \
  KIND(K19, "one of too many kinds") \
  KIND(K20, "one of too many kinds") \
  KIND(K21, "one of too many kinds") \
  KIND(K22, "one of too many kinds") \
  KIND(K23, "one of too many kinds") \
  KIND(K24, "one of too many kinds") \
  KIND(K25, "the 33rd kind, counting telltale's 8")

#define EVENT_LIST(RELATION, RETIRED) \
  RELATION( Alpha, 0x0100, TRUE , Extra, PAW ) \
  RELATION( Beta , 0x0101, FALSE, Extra, WS  )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(Alpha, "alpha happened") \
    PARAM(P, p, "a pointer") \
    PARAM(A, a, "an address") \
    PARAM(W, w, "a word") \
  DOC(Beta, "beta happened") \
    PARAM(W, w, "a word") \
    PARAM(S, s, "a string")

#endif /* gentest_h */
