/* expect: 10: kind name all is a word of TELLTALE_CONTROL */
/* core */

#ifndef gentest_h
#define gentest_h

#define EVENT_REGISTRY_NAME "gen test"

#define EVENT_KIND_LIST(KIND) \
  KIND(all, "a kind TELLTALE_CONTROL=all could not name")

#define EVENT_LIST(RELATION, RETIRED) \
  RELATION( Alpha, 0x0100, TRUE , all, W )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(Alpha, "alpha happened") \
    PARAM(W, w, "a word")

#endif /* gentest_h */
