/* <tests/clients/toggle/eventdef.h> -- the toggle client's own registry
 *
 * .design: design/tests.txt .test.toggle
 *
 * THIS FILE IS READ BY A PROGRAM (gen).  One kind whose output is
 * switched, one always on.
 */

#ifndef toggle_eventdef_h
#define toggle_eventdef_h

#define EVENT_REGISTRY_NAME "toggle client"

#define EVENT_KIND_LIST(KIND) \
  /*   name   doc */ \
  KIND(Job,   "the workers' jobs: output switched on and off") \
  KIND(Beat,  "a heartbeat per 64 jobs: output always on")

#define EVENT_LIST(RELATION, RETIRED) \
  /*        name   code    always kind  format */ \
  RELATION( Done , 0x1100, TRUE  , Job , UWW  ) \
  RELATION( Pulse, 0x1101, TRUE  , Beat, UWS  )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(Done, "a worker finished a job") \
    PARAM(U, worker, "the worker, 1 to 4") \
    PARAM(W, seq,    "the worker's job number, from 0") \
    PARAM(W, epoch,  "the control changes the worker had seen returned") \
  DOC(Pulse, "a worker's heartbeat, after every 64th job") \
    PARAM(U, worker, "the worker") \
    PARAM(W, seq,    "the job it follows") \
    PARAM(S, note,   "a string, so that events differ in length")

#endif /* toggle_eventdef_h */
