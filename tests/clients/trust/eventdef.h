/* <tests/clients/trust/eventdef.h> -- the trust client's own registry
 *
 * .design: design/tests.txt .test.trust
 *
 * THIS FILE IS READ BY A PROGRAM (gen).  A client's registry, as a
 * user would write one from the README: codes in the client's range.
 */

#ifndef trust_eventdef_h
#define trust_eventdef_h

#define EVENT_REGISTRY_NAME "trust client"

#define EVENT_KIND_LIST(KIND) \
  /*   name    doc */ \
  KIND(Work,   "the client's work, one event per step") \
  KIND(Sig,    "events emitted by signal handlers")

#define EVENT_LIST(RELATION, RETIRED) \
  /*        name        code    always kind  format */ \
  RELATION( Step      , 0x1000, TRUE  , Work, UWW  ) \
  RELATION( Fault     , 0x1001, TRUE  , Work, U    ) \
  RELATION( Handled   , 0x1002, TRUE  , Sig , UW   )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(Step, "a worker did one step of its work") \
    PARAM(U, worker, "the worker, 0 for main, 1 to 4") \
    PARAM(W, seq,    "the worker's step number, from 0") \
    PARAM(W, check,  "a hash of worker and seq") \
  DOC(Fault, "a worker is about to fault on purpose") \
    PARAM(U, worker, "the worker") \
  DOC(Handled, "a SIGUSR1 handler ran") \
    PARAM(U, worker, "the worker it interrupted") \
    PARAM(W, seq,    "the handler's run number, from 0")

#endif /* trust_eventdef_h */
