/* expect: 13: has more than 16 parameters */
/* core */

#ifndef gentest_h
#define gentest_h

#define EVENT_REGISTRY_NAME "gen test"

#define EVENT_KIND_LIST(KIND) \
  KIND(Extra, "a kind of the test's own")

#define EVENT_LIST(RELATION, RETIRED) \
  RELATION( Alpha, 0x0100, TRUE , Extra, PAWUDPAWUDPAWUDPA ) \
  RELATION( Beta , 0x0101, FALSE, Extra, WS  )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(Alpha, "alpha happened") \
    PARAM(P, q01, "a parameter") \
    PARAM(A, q02, "a parameter") \
    PARAM(W, q03, "a parameter") \
    PARAM(U, q04, "a parameter") \
    PARAM(D, q05, "a parameter") \
    PARAM(P, q06, "a parameter") \
    PARAM(A, q07, "a parameter") \
    PARAM(W, q08, "a parameter") \
    PARAM(U, q09, "a parameter") \
    PARAM(D, q10, "a parameter") \
    PARAM(P, q11, "a parameter") \
    PARAM(A, q12, "a parameter") \
    PARAM(W, q13, "a parameter") \
    PARAM(U, q14, "a parameter") \
    PARAM(D, q15, "a parameter") \
    PARAM(P, q16, "a parameter") \
    PARAM(A, q17, "a parameter") \
  DOC(Beta, "beta happened") \
    PARAM(W, w, "a word") \
    PARAM(S, s, "a string")

#endif /* gentest_h */
