/* expect: 18: expected KIND(Name, "doc") in EVENT_KIND_LIST */
/* expect: 22: code 0x0007 of Beta is reserved for telltale's own events (0x0000-0x00FF) */
/* expect: 23: code 0x0000 of Gamma is reserved for telltale's own events (0x0000-0x00FF) */
/* expect: 24: unknown format letter 'X' in X of Delta; the letters are PAWUSD */
/* expect: 29: duplicate parameter p in Alpha */
/* expect: 35: expected DOC(Name, "doc") or PARAM(LETTER, name, "doc") in EVENT_DOC_LIST */
/* expect: 37: bad string: unknown escape \q */
/* expect: 37: EVENT_DOC_LIST does not end: this row ends with a backslash but the next line is blank */
/* core */

#ifndef gentest_h
#define gentest_h

#define EVENT_REGISTRY_NAME "gen test"

#define EVENT_KIND_LIST(KIND) \
  KIND(Extra, "a kind of the test's own") \
  KIND(Broken)

#define EVENT_LIST(RELATION, RETIRED) \
  RELATION( Alpha, 0x0100, TRUE , Extra, PAW ) \
  RELATION( Beta , 0x0007, FALSE, Extra, WS  ) \
  RELATION( Gamma, 0x0000, FALSE, Extra, W   ) \
  RELATION( Delta, 0x0102, FALSE, Extra, X   )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(Alpha, "alpha happened") \
    PARAM(P, p, "a pointer") \
    PARAM(A, p, "an address") \
    PARAM(W, w, "a word") \
  DOC(Beta, "beta happened") \
    PARAM(W, w, "a word") \
    PARAM(S, s, "a string") \
  DOC(Gamma, "gamma happened") \
    PARAM(W, w "a word") \
  DOC(Delta, "delta happened") \
    PARAM(W, x, "\q") \

#endif /* gentest_h */
