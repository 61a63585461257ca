/* <tests/clients/drops/eventdef.h> -- the drops client's own registry
 *
 * .design: design/control.txt .sol.dropped
 *
 * THIS FILE IS READ BY A PROGRAM (gen).  Two kinds, so that drops are
 * checked kind by kind.
 */

#ifndef drops_eventdef_h
#define drops_eventdef_h

#define EVENT_REGISTRY_NAME "drops client"

#define EVENT_KIND_LIST(KIND) \
  /*   name    doc */ \
  KIND(Work,   "the client's work, one event per step") \
  KIND(Side,   "a second kind, one event every eighth step")

#define EVENT_LIST(RELATION, RETIRED) \
  /*        name        code    always kind  format */ \
  RELATION( Step      , 0x1000, TRUE  , Work, UW   ) \
  RELATION( Mark      , 0x1001, TRUE  , Side, UW   )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(Step, "a worker did one step") \
    PARAM(U, worker, "the worker: 1 to 4, 7 for a forked child") \
    PARAM(W, seq,    "the worker's step number, from 0") \
  DOC(Mark, "a worker passed a mark") \
    PARAM(U, worker, "the worker") \
    PARAM(W, seq,    "the worker's mark number, from 0")

#endif /* drops_eventdef_h */
