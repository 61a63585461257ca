/* <tests/clients/idioms/eventdef.h> -- the idioms client's own registry
 *
 * .design: design/tests.txt .test.trust
 *
 * THIS FILE IS READ BY A PROGRAM (gen).  A server's registry, as a user
 * would write one from the README: four kinds, each event carrying the
 * emitting thread's slot and its own sequence number (one sequence per
 * thread, across every kind), a hash of the two, and strings made from
 * them, so that tests/clients/idioms/check.py can tell a torn event from a
 * whole one.  The kind of an event is its seq modulo 4, in the order of
 * the list below.
 */

#ifndef idioms_eventdef_h
#define idioms_eventdef_h

#define EVENT_REGISTRY_NAME "idioms client"

#define EVENT_KIND_LIST(KIND) \
  /*   name    doc */ \
  KIND(Net,    "connections accepted") \
  KIND(Proto,  "requests parsed") \
  KIND(Disk,   "records stored") \
  KIND(Log,    "the server's log lines")

#define EVENT_LIST(RELATION, RETIRED) \
  /*        name        code    always kind   format */ \
  RELATION( Accept    , 0x1000, TRUE  , Net  , UWWS  ) \
  RELATION( Request   , 0x1001, TRUE  , Proto, UWWWS ) \
  RELATION( Store     , 0x1002, TRUE  , Disk , UWWWS ) \
  RELATION( Note      , 0x1003, TRUE  , Log  , UWWS  )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(Accept, "a connection was accepted (seq % 4 == 0)") \
    PARAM(U, slot,   "the emitting thread's slot in the counts page") \
    PARAM(W, seq,    "the thread's event number, from 0, across every kind") \
    PARAM(W, check,  "a hash of slot and seq") \
    PARAM(S, peer,   "the peer, a string made from slot and seq") \
  DOC(Request, "a request was parsed (seq % 4 == 1)") \
    PARAM(U, slot,   "the emitting thread's slot") \
    PARAM(W, seq,    "the thread's event number") \
    PARAM(W, check,  "a hash of slot and seq") \
    PARAM(W, status, "the status the reply will have: 200 + seq % 300") \
    PARAM(S, path,   "the path, a string made from slot and seq") \
  DOC(Store, "a record was stored (seq % 4 == 2)") \
    PARAM(U, slot,   "the emitting thread's slot") \
    PARAM(W, seq,    "the thread's event number") \
    PARAM(W, check,  "a hash of slot and seq") \
    PARAM(W, bytes,  "the record's size: seq times 3") \
    PARAM(S, key,    "the record's key, a string made from slot and seq") \
  DOC(Note, "a log line (seq % 4 == 3)") \
    PARAM(U, slot,   "the emitting thread's slot") \
    PARAM(W, seq,    "the thread's event number") \
    PARAM(W, check,  "a hash of slot and seq") \
    PARAM(S, text,   "the line, a string made from slot and seq")

#endif /* idioms_eventdef_h */
