/* <tests/clients/registries/app_eventdef.h> -- the registries test's program's registry
 *
 * .design: design/tests.txt .test.registries
 *
 * THIS FILE IS READ BY A PROGRAM (gen).  One of four registries in one
 * process, each generated on its own: its codes are chosen as if no
 * other existed, so that 0x1000 and 0x1001 are also the alloc
 * library's, and its event Work and kind Work are alloc's names too.
 * Every event carries tag, 1 here, so that a reader can tell whose it
 * is whatever name it is shown under.
 */

#ifndef app_eventdef_h
#define app_eventdef_h

#define EVENT_REGISTRY_NAME "app"

#define EVENT_KIND_LIST(KIND) \
  /*   name  doc */ \
  KIND(Job,  "the program's jobs") \
  KIND(Work, "the program's work, which shares its name with alloc's")

#define EVENT_LIST(RELATION, RETIRED) \
  /*        name    code    always kind  format */ \
  RELATION( AppJob, 0x1000, TRUE  , Job , UUWS  ) \
  RELATION( Work  , 0x1001, TRUE  , Work, UUW   )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(AppJob, "a job ran") \
    PARAM(U, tag,    "the registry's tag: 1") \
    PARAM(U, thread, "the emitting thread's slot") \
    PARAM(W, seq,    "the thread's event number") \
    PARAM(S, name,   "job-SLOT-SEQ") \
  DOC(Work, "a piece of the program's work") \
    PARAM(U, tag,    "the registry's tag: 1") \
    PARAM(U, thread, "the emitting thread's slot") \
    PARAM(W, seq,    "the thread's event number")

#endif /* app_eventdef_h */
