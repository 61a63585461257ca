/* <tests/clients/idioms/plugin_eventdef.h> -- the idioms plugin's own registry
 *
 * .design: design/tests.txt .test.trust
 *
 * THIS FILE IS READ BY A PROGRAM (gen).  The registry of a plugin
 * (tests/clients/idioms/plugin.c), a shared object linked with libtelltale.so
 * that a host which does not link telltale loads with dlopen.  Its
 * events have the client's fields (tests/clients/idioms/eventdef.h) under names
 * and codes of their own; the kind of an event is its seq modulo 4.
 */

#ifndef idioms_plugin_eventdef_h
#define idioms_plugin_eventdef_h

#define EVENT_REGISTRY_NAME "idioms plugin"

#define EVENT_KIND_LIST(KIND) \
  /*   name       doc */ \
  KIND(PlugNet,   "the plugin's connections") \
  KIND(PlugProto, "the plugin's requests") \
  KIND(PlugDisk,  "the plugin's records") \
  KIND(PlugLog,   "the plugin's log lines")

#define EVENT_LIST(RELATION, RETIRED) \
  /*        name        code    always kind       format */ \
  RELATION( PlugAccept , 0x2000, TRUE  , PlugNet  , UWWS  ) \
  RELATION( PlugRequest, 0x2001, TRUE  , PlugProto, UWWWS ) \
  RELATION( PlugStore  , 0x2002, TRUE  , PlugDisk , UWWWS ) \
  RELATION( PlugNote   , 0x2003, TRUE  , PlugLog  , UWWS  )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(PlugAccept, "a connection was accepted (seq % 4 == 0)") \
    PARAM(U, slot,   "the emitting thread's slot in the counts page") \
    PARAM(W, seq,    "the thread's event number, from 0, across every kind") \
    PARAM(W, check,  "a hash of slot and seq") \
    PARAM(S, peer,   "the peer, a string made from slot and seq") \
  DOC(PlugRequest, "a request was parsed (seq % 4 == 1)") \
    PARAM(U, slot,   "the emitting thread's slot") \
    PARAM(W, seq,    "the thread's event number") \
    PARAM(W, check,  "a hash of slot and seq") \
    PARAM(W, status, "the status the reply will have: 200 + seq % 300") \
    PARAM(S, path,   "the path, a string made from slot and seq") \
  DOC(PlugStore, "a record was stored (seq % 4 == 2)") \
    PARAM(U, slot,   "the emitting thread's slot") \
    PARAM(W, seq,    "the thread's event number") \
    PARAM(W, check,  "a hash of slot and seq") \
    PARAM(W, bytes,  "the record's size: seq times 3") \
    PARAM(S, key,    "the record's key, a string made from slot and seq") \
  DOC(PlugNote, "a log line (seq % 4 == 3)") \
    PARAM(U, slot,   "the emitting thread's slot") \
    PARAM(W, seq,    "the thread's event number") \
    PARAM(W, check,  "a hash of slot and seq") \
    PARAM(S, text,   "the line, a string made from slot and seq")

#endif /* idioms_plugin_eventdef_h */
