/* <tests/clients/ctl/eventdef.h> -- the telltale-ctl test client's own registry
 *
 * .design: design/tests.txt .test.ctl
 *
 * THIS FILE IS READ BY A PROGRAM (gen).
 */

#ifndef ctl_eventdef_h
#define ctl_eventdef_h

#define EVENT_REGISTRY_NAME "ctl client"

#define EVENT_KIND_LIST(KIND) \
  /*   name   doc */ \
  KIND(Work,  "the workers' requests") \
  KIND(Note,  "a note per 8 requests")

#define EVENT_LIST(RELATION, RETIRED) \
  /*        name    code    always kind  format */ \
  RELATION( Request, 0x1000, TRUE  , Work, UWW  ) \
  RELATION( Remark , 0x1001, TRUE  , Note, UWS  )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(Request, "a worker served a request") \
    PARAM(U, worker, "the worker, 1 to 4") \
    PARAM(W, seq,    "the worker's request number, from 0") \
    PARAM(W, size,   "its size in bytes: (seq * 2654435761) % 8192") \
  DOC(Remark, "a worker's remark, after every 8th request") \
    PARAM(U, worker, "the worker") \
    PARAM(W, seq,    "the request it follows") \
    PARAM(S, tag,    "\"big\" when that request's size is 4096 or more, else \"small\"")

#endif /* ctl_eventdef_h */
