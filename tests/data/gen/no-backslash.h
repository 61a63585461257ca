/* expect: 15: EVENT_LIST: this line needs a backslash (\) at its end */
/* core */

#ifndef gentest_h
#define gentest_h

#define EVENT_REGISTRY_NAME "gen test"

#define EVENT_KIND_LIST(KIND) \
  KIND(Extra, "a kind of the test's own")

/* Beta's row lacks its backslash: one error, there, and Gamma is read */
#define EVENT_LIST(RELATION, RETIRED) \
  RELATION( Alpha, 0x0100, TRUE , Extra, W   ) \
  RELATION( Beta , 0x0101, FALSE, Extra, WS  )
  RELATION( Gamma, 0x0102, FALSE, Extra, W   )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(Alpha, "alpha happened") \
    PARAM(W, w, "a word") \
  DOC(Beta, "beta happened") \
    PARAM(W, w, "a word") \
    PARAM(S, s, "a string") \
  DOC(Gamma, "gamma happened") \
    PARAM(W, w, "a word")

#endif /* gentest_h */
