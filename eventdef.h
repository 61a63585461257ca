/* <eventdef.h> -- the telltale event registry
 *
 * .design: design/registry.txt .reg
 *
 * THIS FILE IS READ BY A PROGRAM.  gen parses it line by line and
 * accepts exactly the row patterns below; anything else is an error
 * reported as "eventdef.h:LINE: message".  It is also valid C: define
 * the row macros and expand the lists.
 *
 * This registry holds telltale's own events (codes 0x0000-0x00FF,
 * design/registry.txt .reg.code) and the standard kinds.  A client
 * program brings a registry file of the same form; gen merges this one
 * into it, telltale's kinds first.
 */

#ifndef eventdef_h
#define eventdef_h

#define EVENT_REGISTRY_NAME "telltale"

/* Kinds.  design/registry.txt .reg.kind
 * A kind's index is its position in this list. */
#define EVENT_KIND_LIST(KIND) \
  /*   name       doc */ \
  KIND(Telltale, "telltale's own events: stream, clock, strings, labels, threads") \
  KIND(Arena,    "per arena or global: creation, destruction, policy changes") \
  KIND(Pool,     "per pool: creation, destruction, pool-level allocation") \
  KIND(Trace,    "per trace or scan: collection phases") \
  KIND(Seg,      "per segment: segments made, split, freed") \
  KIND(Ref,      "per reference or fix: very frequent") \
  KIND(Object,   "per object or allocation: very frequent") \
  KIND(User,     "events a program defines for itself")

/* Events.  design/registry.txt .reg.rel
 * RELATION(Name, code, always, Kind, FORMAT); a retired event keeps its
 * row as RETIRED(...) so that old logs decode. */
#define EVENT_LIST(RELATION, RETIRED) \
  /*        name           code    always kind      format */ \
  RELATION( StreamStart  , 0x0001, TRUE  , Telltale, UUUS ) \
  RELATION( StreamEnd    , 0x0002, TRUE  , Telltale, W    ) \
  RELATION( ClockSync    , 0x0003, TRUE  , Telltale, WW   ) \
  RELATION( Intern       , 0x0004, TRUE  , Telltale, WS   ) \
  RELATION( Label        , 0x0005, TRUE  , Telltale, AW   ) \
  RELATION( EventsDropped, 0x0006, TRUE  , Telltale, UW   ) \
  RELATION( ThreadStart  , 0x0007, TRUE  , Telltale, UW   ) \
  RELATION( ThreadName   , 0x0008, TRUE  , Telltale, US   ) \
  RELATION( ThreadExit   , 0x0009, TRUE  , Telltale, U    ) \
  RELATION( StreamExec   , 0x000A, TRUE  , Telltale, WU   ) \
  RELATION( StreamSnapshot, 0x000B, TRUE , Telltale, WW   ) \
  RELATION( EventsFiltered, 0x000C, TRUE , Telltale, UWW  ) \
  RELATION( RegistryRefused, 0x000D, TRUE, Telltale, US   ) \
  RELATION( ClockRate    , 0x000E, TRUE  , Telltale, WW   )

/* Documentation.  design/registry.txt .reg.doc
 * One DOC row per event, then one PARAM(LETTER, name, "doc") row per
 * format letter, in order. */
#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(StreamStart, "the stream began: its format version and the program") \
    PARAM(U, major,   "stream format version, major") \
    PARAM(U, median,  "stream format version, median") \
    PARAM(U, minor,   "stream format version, minor") \
    PARAM(S, program, "the program's name") \
  DOC(StreamEnd, "the stream ended cleanly; nothing follows") \
    PARAM(W, blocks,  "blocks written before the one holding this event") \
  DOC(ClockSync, "pairs the event clock with the system clocks") \
    PARAM(W, monotonic, "CLOCK_MONOTONIC in nanoseconds") \
    PARAM(W, realtime,  "CLOCK_REALTIME in nanoseconds since the epoch") \
  DOC(Intern, "a string was interned; later events refer to it by id") \
    PARAM(W, id,     "the string's id") \
    PARAM(S, string, "the string") \
  DOC(Label, "an address was labelled with an interned string") \
    PARAM(A, address, "the address") \
    PARAM(W, id,      "the id of the interned label") \
  DOC(EventsDropped, "events of a kind were dropped, not recorded") \
    PARAM(U, kind,  "the kind: in the stream its registry's number above its index, which readers show as the stream's kind") \
    PARAM(W, count, "how many events were dropped") \
  DOC(ThreadStart, "a thread emitted its first event") \
    PARAM(U, thread, "telltale's serial number for the thread") \
    PARAM(W, osid,   "the operating system's id for the thread") \
  DOC(ThreadName, "a thread's name") \
    PARAM(U, thread, "telltale's serial number for the thread") \
    PARAM(S, name,   "the name") \
  DOC(ThreadExit, "a thread exited; its buffers were flushed") \
    PARAM(U, thread, "telltale's serial number for the thread") \
  DOC(StreamExec, "the program is about to exec, every buffer sent; if the last says error 0, the stream ended at the exec") \
    PARAM(W, blocks,  "blocks written before the one holding this event") \
    PARAM(U, error,   "0 before the exec; its errno after an exec that failed, the stream going on") \
  DOC(StreamSnapshot, "a snapshot of the flight recorder (telltale-ctl snapshot) ends here: what the program held in memory when it was taken, while its threads ran on") \
    PARAM(W, blocks,  "blocks written before the one holding this event") \
    PARAM(W, events,  "events in those blocks") \
  DOC(EventsFiltered, "ends a block a dynamic filter wrote: events of the kind it left out, and how much of the buffer the block covers") \
    PARAM(U, kind,    "the block's kind, as its header carries it") \
    PARAM(W, count,   "events the filters left out of the block") \
    PARAM(W, covered, "bytes of the thread's buffer the block stands for, for recovery") \
  DOC(RegistryRefused, "a registry that joined the process was refused: nothing it emits is recorded") \
    PARAM(U, error,   "why, as an errno: 28 no room (the registry limits), 17 another has its name, 22 built against another telltale") \
    PARAM(S, which,   "the registry, the object that brought it, and why, as said on stderr") \
  DOC(ClockRate, "a ClockSync that fixes the clock's rate for the whole stream: one a stream, a second after the start or at the end") \
    PARAM(W, monotonic, "CLOCK_MONOTONIC in nanoseconds") \
    PARAM(W, realtime,  "CLOCK_REALTIME in nanoseconds since the epoch")

#endif /* eventdef_h */
