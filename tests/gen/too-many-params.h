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
    PARAM(q01, "a parameter") \
    PARAM(q02, "a parameter") \
    PARAM(q03, "a parameter") \
    PARAM(q04, "a parameter") \
    PARAM(q05, "a parameter") \
    PARAM(q06, "a parameter") \
    PARAM(q07, "a parameter") \
    PARAM(q08, "a parameter") \
    PARAM(q09, "a parameter") \
    PARAM(q10, "a parameter") \
    PARAM(q11, "a parameter") \
    PARAM(q12, "a parameter") \
    PARAM(q13, "a parameter") \
    PARAM(q14, "a parameter") \
    PARAM(q15, "a parameter") \
    PARAM(q16, "a parameter") \
    PARAM(q17, "a parameter") \
  DOC(Beta, "beta happened") \
    PARAM(w, "a word") \
    PARAM(s, "a string")

#endif /* gentest_h */
