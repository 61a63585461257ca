/* <tests/lib/eventdef.h> -- the test registry: every format letter, the most
 * parameters, an event for the checking variety only, a retired event
 *
 * .design: design/registry.txt .reg
 *
 * THIS FILE IS READ BY A PROGRAM (gen).  The round-trip test
 * (tests/unit/test_roundtrip.c) emits every row through EVENT_RELATION.
 */

#ifndef test_eventdef_h
#define test_eventdef_h

#define EVENT_REGISTRY_NAME "telltale tests"

#define EVENT_KIND_LIST(KIND) \
  /*   name    doc */ \
  KIND(Test,   "events of the test suite") \
  KIND(Noisy,  "frequent test events, for kind control")

#define EVENT_LIST(RELATION, RETIRED) \
  /*        name          code    always kind    format */ \
  RELATION( TestNone    , 0x0100, TRUE  , Test  , 0    ) \
  RELATION( TestP       , 0x0101, TRUE  , Test  , P    ) \
  RELATION( TestA       , 0x0102, TRUE  , Test  , A    ) \
  RELATION( TestW       , 0x0103, TRUE  , Test  , W    ) \
  RELATION( TestU       , 0x0104, TRUE  , Test  , U    ) \
  RELATION( TestS       , 0x0105, TRUE  , Test  , S    ) \
  RELATION( TestD       , 0x0106, TRUE  , Test  , D    ) \
  RELATION( TestPAW     , 0x0107, TRUE  , Noisy , PAW  ) \
  RELATION( TestMany    , 0x0108, TRUE  , Test  , PAWUDPAWUDPAWUDS ) \
  RELATION( TestChecking, 0x0109, FALSE , Test  , W    ) \
  RETIRED(  TestRetired , 0x010A, TRUE  , Test  , W    ) \
  RELATION( TestThread  , 0x010B, TRUE  , Noisy , UWW  ) \
  RELATION( TestWS      , 0x010C, TRUE  , User  , WS   )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(TestNone, "no parameters") \
  DOC(TestP, "a pointer") \
    PARAM(P, p, "the pointer") \
  DOC(TestA, "an address") \
    PARAM(A, a, "the address") \
  DOC(TestW, "a word") \
    PARAM(W, w, "the word") \
  DOC(TestU, "an unsigned 32-bit value") \
    PARAM(U, u, "the value") \
  DOC(TestS, "a string") \
    PARAM(S, s, "the string") \
  DOC(TestD, "a double") \
    PARAM(D, d, "the double") \
  DOC(TestPAW, "a pointer, an address and a word: the benchmark's event") \
    PARAM(P, p, "a pointer") \
    PARAM(A, a, "an address") \
    PARAM(W, w, "a word") \
  DOC(TestMany, "sixteen parameters, every letter") \
    PARAM(P, p0, "first pointer") \
    PARAM(A, a0, "first address") \
    PARAM(W, w0, "first word") \
    PARAM(U, u0, "first unsigned") \
    PARAM(D, d0, "first double") \
    PARAM(P, p1, "second pointer") \
    PARAM(A, a1, "second address") \
    PARAM(W, w1, "second word") \
    PARAM(U, u1, "second unsigned") \
    PARAM(D, d1, "second double") \
    PARAM(P, p2, "third pointer") \
    PARAM(A, a2, "third address") \
    PARAM(W, w2, "third word") \
    PARAM(U, u2, "third unsigned") \
    PARAM(D, d2, "third double") \
    PARAM(S, s,  "the string") \
  DOC(TestChecking, "an event of the checking variety only") \
    PARAM(W, w, "a word") \
  DOC(TestRetired, "retired: kept so that old logs decode") \
    PARAM(W, w, "a word") \
  DOC(TestThread, "one event of a threaded test") \
    PARAM(U, thread, "the emitting test thread") \
    PARAM(W, seq,    "the event's number in its thread") \
    PARAM(W, check,  "a function of thread and seq, to detect torn events") \
  DOC(TestWS, "a word and a string") \
    PARAM(W, w, "a word") \
    PARAM(S, s, "a string")

#endif /* test_eventdef_h */
