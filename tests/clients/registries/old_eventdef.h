/* <tests/clients/registries/old_eventdef.h> -- a registry built with an older telltale
 *
 * .design: design/tests.txt .test.registries
 *
 * THIS FILE IS READ BY A PROGRAM (gen).  tests/clients/registries/check.py
 * generates it with the gen, and compiles old.c against the headers, of
 * telltale before registries had sources (stream 3.0.5, taken from git),
 * and links it with this libtelltale.so: an object compiled against an
 * older minor still emits, and its events still decode (.reg.many.old).
 */

#ifndef old_eventdef_h
#define old_eventdef_h

#define EVENT_REGISTRY_NAME "old"

#define EVENT_KIND_LIST(KIND) \
  /*   name  doc */ \
  KIND(Tick, "the old program's ticks")

#define EVENT_LIST(RELATION, RETIRED) \
  /*        name     code    always kind  format */ \
  RELATION( OldTick, 0x1000, TRUE  , Tick, UWS   )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(OldTick, "a tick") \
    PARAM(U, thread, "the emitting thread's slot") \
    PARAM(W, seq,    "the thread's event number") \
    PARAM(S, text,   "tick-SLOT-SEQ")

#endif /* old_eventdef_h */
