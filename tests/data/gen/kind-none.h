/* expect: 10: kind name none is a word of TELLTALE_CONTROL */
/* core */

#ifndef gentest_h
#define gentest_h

#define EVENT_REGISTRY_NAME "gen test"

#define EVENT_KIND_LIST(KIND) \
  KIND(none, "a kind TELLTALE_CONTROL=none could not name")

#define EVENT_LIST(RELATION, RETIRED) \
  RELATION( Alpha, 0x0100, TRUE , none, W )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(Alpha, "alpha happened") \
    PARAM(W, w, "a word")

#endif /* gentest_h */
