/* expect: 14: EVENT_DOC_LIST: this line needs a backslash (\) at its end */
/* core */

#ifndef gentest_h
#define gentest_h

#define EVENT_REGISTRY_NAME "gen test"

#define EVENT_KIND_LIST(KIND) \
  KIND(Extra, "a kind of the test's own")

#define EVENT_LIST(RELATION, RETIRED) \
  RELATION( Alpha, 0x0100, TRUE , Extra, W   )
#define EVENT_DOC_LIST(DOC, PARAM)
  /*  name   doc */ \
  DOC(Alpha, "alpha happened") \
    PARAM(W, w, "a word")

#endif /* gentest_h */
