/* <src/event/eventint.h> -- what the runtime's files share, and no one else
 *
 * .design: design/plinth.txt
 *
 * The runtime is one module in several files, split by concern:
 *   event.c      initialization, the environment, kind and event control,
 *                interned strings and labels, and messages
 *   eventbuf.c   threads and their buffers, the slow path, flushing,
 *                output control's cuts, drops, and fork
 *   eventlevel.c  signal levels: a handler's buffers, longjmp out of one
 *   eventfinish.c  the session's end: finish, exec, unload
 *   eventhead.c  the stream header, built
 *   eventout.c   the streams
 *   eventlive.c  the live file: its header, drop counts and regions
 *   eventwriter.c  the writes after the lock, and the asynchronous writer
 *   eventdump.c  the traceback, the snapshot, and what telltale does at
 *                a death
 *   eventctl.c   the control page and thread, for telltale-ctl
 *   eventfilter.c  dynamic filters, applied where a block is written
 *   eventsource.c  the registries in the process, their slots, and
 *                kind and event control by registry
 * The hot path is inline in event.h.  This header holds the session and
 * thread structures and the names that cross between the files.
 * Only those files include it.
 *
 * Names.  API names are EventXxx (event.h).  A function or variable one
 * of these files defines and another uses is eventXxx: the module's
 * prefix in lower case marks it internal (as SQLite's sqlite3Xxx do),
 * and it is declared here.  What one file uses alone is static and has
 * no prefix.  Types and macros, which the linker never sees, keep the
 * usual forms (EventXxxStruct, ...LIMIT, ...MAX).
 *
 * The gdb extension (tools/gdb/telltale.py) reads some of what is here
 * by name, out of memory, with no call into the program (.gdb): the
 * variable eventSession, and in it threads, liveName, startClock,
 * startRealtime, startMonotonic, interns and internSize (an entry's
 * string and id); in EventThreadStruct serial, hot, level, deeper,
 * saved, levels and next; in EventKindBufStruct slot, slotSize, current
 * and previousEnd.  (And event.c's static labels: address and id.)
 * Rename one of them and the extension must change with it;
 * tests/tools/gdb.sh checks it.
 */

#ifndef eventint_h
#define eventint_h

#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "plinth.h"

/* AVER -- an invariant of the runtime (.sol.aver), checked in the checking variety
 * as the MPS's AVERs are: a failure is EVENT_ASSERT's, which prints the
 * condition, its file and line and the latest events, flushes and
 * aborts (.sol.assert).  In the other varieties it compiles to nothing
 * and its condition is not evaluated, only type-checked: telemetry
 * never takes a program down there.  Never on the emitter's hot path
 * (event.h), in any variety (.req.perf).
 *
 * AVER_LOCKED -- the calling thread holds the plinth's lock, where a
 * comment says "Lock held"; AVER_UNLOCKED, where it says "Lock not held". */
#if EVENT_VARIETY == EVENT_VARIETY_CHECKING
#define AVER(condition) EVENT_ASSERT(condition)
#else
#define AVER(condition) ((void)sizeof(!(condition)))
#endif
#define AVER_LOCKED() AVER(PlinthLockHeld())
#define AVER_UNLOCKED() AVER(!PlinthLockHeld())

#define STREAM_LIMIT 8
#define TEXT_LINE_MAX 4096
#define FILE_NAME_MAX 1023      /* characters in TELLTALE_FILE */
#define THREAD_NAME_MAX 31      /* characters of a thread's name kept for the traceback */
#define MESSAGE_MAX 1023        /* characters in a line that say writes */
#define DECIMAL_MAX 20          /* digits of a uint64_t in decimal */
#define DUMP_LIMIT 4096         /* events in a traceback */


/* Registries and slots (eventsource.c).  design/registry.txt .reg.many
 * A slot is the runtime's index for one kind of one registry: a
 * thread's buffers, drop counts and output control are by slot. */

#define SLOT_LIMIT 64           /* kinds of all the registries in the process */
#define SOURCE_LIMIT 16         /* registries in the process at once */
#define REGISTRY_NUMBER_MAX 254 /* numbers in a process's life (0xFF: .stream.block.registry) */

typedef uint64_t EventSlotSet;
#define SLOT_BIT(slot) ((EventSlotSet)1 << (slot))

typedef struct EventSlotStruct {
  EventSourceStruct *source;    /* NULL: free */
  unsigned kind;                /* its kind in the source's registry */
} EventSlotStruct;

extern EventSlotStruct eventSlots[SLOT_LIMIT];
extern _Atomic unsigned eventSlotsEnd;  /* no slot at or past it has been used */
extern EventSourceStruct *eventSources[SOURCE_LIMIT];  /* in the process now */
extern void eventSourcesJoin(void);
extern int eventSourceReady(EventSourceStruct *source);
extern EventSlotSet eventSlotsOf(const EventSourceStruct *source, EventKindSet kinds);
extern EventSlotSet eventOutputNow(void);
extern EventBufStruct *eventSlotHot(unsigned slot);
extern unsigned eventSlotWire(unsigned slot);
extern const char *eventSlotName(unsigned slot);
extern void eventKindName(char *buf, size_t size, unsigned slot);
extern const EventRegistryStruct *eventSlotView(unsigned slot);
extern int eventRegistryNamed(const EventSourceStruct *source, const char *name, size_t len);
extern int eventRegistryPresent(const char *name, size_t len);
extern int eventParseNumber(const char *p, uint64_t *valueReturn, const char **endReturn);
extern int eventKindSpec(const EventSourceStruct *source, const char *spec, int strict,
                         EventKindSet *kindsReturn, char *err, size_t errSize);
extern int eventKindsKnown(const char *spec, char *err, size_t errSize);

/* slotRegistry -- the registry of a slot in use */
static inline const EventRegistryStruct *eventSlotRegistry(unsigned slot)
{
  return eventSlots[slot].source->registry;
}


/* Threads and their buffers (eventbuf.c) */

/* EventKindBufStruct -- the runtime's side of one thread's buffer for one kind.
 * The kind fills one slot while the other holds the events before
 * them, for the flight recorder.  .sol.ring, .sol.live */
typedef struct EventKindBufStruct {
  unsigned char *slot[2];       /* the kind's two buffers */
  size_t slotSize[2];           /* bytes in each */
  unsigned char mapped[2];      /* 1: the slot is a region of the live file */
  uint64_t seq[2];              /* live slots: the block's sequence number */
  unsigned liveGen[2];          /* live slots: the live file they are regions of
                                   (eventLiveGen): .sol.live.session */
  unsigned pending[2];          /* writer jobs reading the slot (queue lock) */
  unsigned current;             /* the slot being filled */
  uintptr_t previousEnd;        /* end of the data in the other slot, or 0 */
  uintptr_t sent;               /* the current slot has been sent up to here */
  _Atomic unsigned moves;       /* times the ring moved: a traceback read
                                   without the lock checks it (.sol.traceback) */
  unsigned long drops;          /* events the thread dropped at this level:
                                   dropsReport sees its own report go (.sol.dropped) */
} EventKindBufStruct;

/* Levels: a signal handler running on a thread emits into buffers of its
 * own level, so that its events never land inside an event it
 * interrupted.  Level 0 is the thread's ordinary code; handlers nested
 * deeper than LEVEL_LIMIT - 1 drop their events, counted.
 * design/plinth.txt .sol.signal.level */
#define LEVEL_LIMIT 4

/* EventHandlerFrameStruct -- a handler running on a thread: where its
 * frames lie, and the level its events go to.  A handler left by
 * longjmp is seen by a stack pointer outside its frames, and its level
 * goes on with the code that jumped.  design/plinth.txt .sol.signal.jump */
#define DEPTH_LIMIT 16          /* handlers nested on a thread, seen */
#define LEVEL_NONE 0xffu        /* a handler past the last level: drops */
typedef struct EventHandlerFrameStruct {
  uintptr_t low, high;          /* its frames are in [low, high) */
  unsigned level;               /* its level, or LEVEL_NONE */
} EventHandlerFrameStruct;

/* EventWriteStruct -- a block given its place in a file stream under
 * the lock, and written there after it by the thread that filled it;
 * until then anyone holding the lock may write it too (the same bytes
 * to the same place).  design/control.txt .sol.writer.at */
typedef struct EventWriteStruct {
  PlinthStream stream;
  size_t entry;                 /* its index among the session's streams */
  uint64_t offset;              /* its place (PlinthStreamReserve) */
  const unsigned char *data;    /* its events */
  size_t size;
  unsigned char header[36];     /* EVENT_BLOCK_HEADER_LEN, check not yet in */
  uint32_t place;               /* its place's ticket in the live file, or 0 */
} EventWriteStruct;

#define WRITE_LIMIT (2 * STREAM_LIMIT)  /* a full buffer and its Telltale kind's */

typedef struct EventThreadStruct {
  struct EventThreadStruct *next, *prev;
  uint32_t serial;
  int exitSaid;                 /* its ThreadExit is in the log: set up again after
                                   its exit (.sol.thread.late), or found gone */
  uint64_t osid;                /* the kernel's id of the thread */
  EventBufStruct *hot[SLOT_LIMIT];  /* the running level's next and limit, in its
                                   source's thread-local buffers (eventSlotHot),
                                   for each slot the thread has used */
  size_t bufferSize;            /* size of each of its buffers */
  void *altStack;               /* its alternate signal stack, or NULL */
  unsigned level;               /* the running level */
  unsigned deeper;              /* handlers running with no level (on top) */
  unsigned depth;               /* handlers running on the thread */
  unsigned unseen;              /* handlers nested past DEPTH_LIMIT */
  EventHandlerFrameStruct frames[DEPTH_LIMIT + 1];  /* frames[0]: the thread's own code */
  char name[THREAD_NAME_MAX + 1];  /* its name, for the traceback */
  EventBufStruct saved[LEVEL_LIMIT][SLOT_LIMIT];  /* levels not running: next, limit */
  EventKindBufStruct levels[LEVEL_LIMIT][SLOT_LIMIT];
  unsigned char sink[EVENT_SIZE_MAX + EVENT_END_SLACK];  /* its dropped events: .sol.dropped */
  int writesDefer;              /* its blocks now are written after the lock */
  _Atomic unsigned writesCount; /* writes[0 .. writesCount) not yet done */
  EventWriteStruct writes[WRITE_LIMIT];
} EventThreadStruct;

/* eventThreadState -- the calling thread's, or NULL before its first
 * event; initial-exec, like EventThreadBuf, so that a signal handler
 * may read it */
extern _Thread_local EventThreadStruct *eventThreadState
  __attribute__((tls_model("initial-exec")));


/* The session (event.c defines it).  design/runtime.txt .sol.session
 *
 * Its parts that one file uses are that file's own, static there, and
 * the others reach them through its functions: the streams are
 * eventout.c's (streamList), the live file's state eventlive.c's
 * (liveFile), the writer's mode eventwriter.c's.  What is left in
 * eventSession is what several files share, or what the gdb extension
 * reads by name. */

typedef struct EventStreamEntryStruct {
  PlinthStream stream;
  int binary;                   /* 1: the binary log; 0: a text mirror */
  int owned;                    /* 1: telltale opened it and closes it */
  int snapshot;                 /* 1: a snapshot's, which holds what the
                                   buffers hold, unfiltered (.ctl.snapshot) */
  EventSlotSet kinds;           /* text mirror: kinds to show */
  int failed;                   /* a write failed; reported once */
  uint32_t *index;              /* the next block's index (.stream.check) */
} EventStreamEntryStruct;

typedef struct EventSessionStruct {
  int initialized;
  int finished;                 /* EventFinish ran; no default stream now */
  int ending;                   /* it ran at exit with threads still running,
                                   whose later events still go out: .sol.finish */
  size_t bufferSize;
  uint64_t blocks;              /* blocks written: the next sequence number */
  uint32_t threadSerial;        /* serial of the last thread set up */
  EventThreadStruct *threads;
  char liveName[FILE_NAME_MAX + sizeof ".live"];  /* the live file's: eventlive.c
                                   writes it, the gdb extension reads it (.gdb) */
  int signals;                  /* the fatal-signal handlers are installed */
  volatile int dumped;          /* the traceback has been written */
  unsigned dumpCount;           /* events in the traceback: TELLTALE_DUMP */
  EventSlotSet mirrorKinds;     /* TELLTALE_MIRROR, as the registries so far have it */
  char filePattern[FILE_NAME_MAX + 1];  /* TELLTALE_FILE, or "telltale.log": %p, %t, %% */
  char fileName[FILE_NAME_MAX + 1];  /* the log: filePattern expanded */
  int noDefault;                /* TELLTALE_FILE=none */
  uint64_t startClock, startRealtime, startMonotonic;
  uint32_t id;                  /* the session id, in every block (.stream.check) */
  int rateClaimed;              /* ClockRate is emitted, or being: .sol.clock.rate */
  EventClock rateClock;         /* its pair, once emitted; 0 before */
  uint64_t rateMonotonic;
  EventClock syncClock;         /* the latest ClockSync's pair: .sol.clock */
  uint64_t syncMonotonic;
  /* the intern table: open addressing, strings owned.  inSession: the
   * string's Intern event is in this session's stream (.sol.intern) */
  struct { char *string; EventW id; int inSession; } *interns;
  size_t internCount, internSize;
} EventSessionStruct;

/* eventSession -- the one session: the plinth's lock guards it */
extern EventSessionStruct eventSession;


/* event.c: messages, the file's name, strings and labels */

/* eventSay -- write "telltale: ", the strings up to a NULL, and a
 * newline to stderr (eventSayTo: to fd); no stdio and no malloc, so
 * they can be used anywhere, a signal handler included */
extern void eventSay(const char *first, ...);
extern void eventSayTo(int fd, const char *first, ...);
/* eventAppend -- add src to the string in dst, cut to fit size */
extern void eventAppend(char *dst, size_t size, const char *src);
/* eventCopyString -- src into dst, cut to fit size */
extern void eventCopyString(char *dst, size_t size, const char *src);
/* eventFormatUnsigned -- value in decimal; its length.  Async-signal-safe. */
extern size_t eventFormatUnsigned(char *buf, uint64_t value);
extern void eventFileAfterFork(void);
extern void eventEnvApply(EventSourceStruct *source, _Atomic EventKindSet *control);
extern void eventEnvCheck(void);
extern void eventInternSessionEnd(void);
extern const char *eventLabelLookup(void *closure, uint64_t address);

/* eventRoundUp -- size rounded up to a multiple of to */
static inline size_t eventRoundUp(size_t size, size_t to)
{
  return (size + to - 1) / to * to;
}


/* eventbuf.c: threads, buffers, the slow path, flush, fork */

extern EventThreadStruct *eventThreadEnsure(void);
extern int eventCommitted(const EventRegistryStruct *registry, const unsigned char *p,
                          uintptr_t limit, size_t *lengthReturn);
extern uintptr_t eventCommittedEnd(unsigned slot, uintptr_t p, uintptr_t limit);
extern void eventThreadFlush(EventThreadStruct *thread, int own);
extern void eventThreadRelease(EventThreadStruct *thread);
extern void eventTlsClear(void);
extern void eventOwnFlush(void);
extern EventSlotSet eventOutputApplied;
extern void eventOutputCut(void);
extern void eventSlotsLeave(unsigned base, unsigned count);
extern void eventDropCount(unsigned kind);
extern void eventDropsReport(int last);
extern void eventRingsFreeze(int on);
extern void eventAfterFork(void);


/* eventlevel.c: signal levels (.sol.signal.level) */

extern void eventHandlersLeft(EventThreadStruct *thread, uintptr_t sp);
extern int eventSignalEnter(uintptr_t low, uintptr_t high, uintptr_t sp);
extern void eventSignalLeave(int token);
extern void eventSignalJump(uintptr_t sp);


/* eventfinish.c: the session's end (.sol.finish) */

extern void eventSessionClose(int flush);
extern void eventAtExit(void);
extern void eventUnload(void);


/* eventhead.c: the stream header (.stream.header) */

extern int eventHeaderBuild(size_t padTo, unsigned char **baseReturn, size_t *sizeReturn);
extern int eventRegistryBlockBuild(const EventSourceStruct *source, unsigned char **baseReturn,
                                   size_t *sizeReturn);


/* eventout.c: the streams */

extern void eventSessionClock(void);
extern void eventSessionStart(void);
typedef enum EventSyncMode {    /* eventClockSync's: .sol.clock.rate */
  EventSyncAny,                 /* ClockSync, or ClockRate if it is due */
  EventSyncFinal,               /* ClockRate if it is not sent, else ClockSync */
  EventSyncRate                 /* ClockRate if it is due, else nothing */
} EventSyncMode;
extern int eventClockSync(EventSyncMode mode);
extern uint64_t eventClockRateWait(void);
extern void eventClockRateSend(void);
extern uint64_t eventClockHz(void);
extern size_t eventStreamCount(void);
extern void eventStreamsFlush(void);
extern void eventStreamsClose(int flush);
extern void eventBlockHeader(unsigned char *base, size_t length, uint32_t serial, unsigned kind,
                             unsigned level, uint64_t seq);
extern void eventBlockSend(EventThreadStruct *thread, unsigned level, unsigned kind,
                           unsigned slot, const unsigned char *data, size_t size, uint64_t seq);
extern void eventBlockWriteTo(EventStreamEntryStruct *streams, size_t count, uint32_t serial,
                              unsigned kind, unsigned level, const unsigned char *data,
                              size_t size, uint64_t seq);
extern void eventStreamLost(size_t i, PlinthStream stream, int code, const unsigned char *data,
                            size_t size);
extern void eventStreamOpenFailed(const char *path, int code, const char *consequence);
extern void eventLostReport(void);
extern int eventSnapshotWrite(PlinthStream stream, uint64_t *eventsReturn);
extern int eventStreamWriteHeader(PlinthStream stream);
extern int eventStreamWriteBlock(PlinthStream stream, uint32_t *index, uint32_t serial,
                                 unsigned kind, unsigned level, const unsigned char *data,
                                 size_t size, uint64_t seq);
extern void eventRegistryAnnounce(EventSourceStruct *source);


/* eventlive.c: the live file (.sol.live) */

extern void eventLiveStart(PlinthStream log, int logFailed);
extern void eventLiveLogFailed(PlinthStream stream);
extern void eventLiveAllow(int allowed);
extern const char *eventLiveName(void);
extern int eventLiveSlot(const EventKindBufStruct *kb, unsigned s);
extern unsigned eventLiveGen(void);
extern void eventSlotRelease(EventKindBufStruct *kb, unsigned s);
extern int eventLiveSlotPrepare(EventThreadStruct *thread, unsigned level, unsigned kind,
                                unsigned s, int output);
extern void eventLiveRetag(EventThreadStruct *thread, unsigned level, unsigned kind, unsigned s,
                           uint32_t from);
extern void eventLiveRegionRelease(unsigned char *base, size_t size);
extern void eventLiveDropped(unsigned kind);
extern uint32_t eventLivePlace(PlinthStream stream, uint64_t offset, const unsigned char *header);
extern void eventLivePlaced(uint32_t ticket);
extern void eventLiveSlotsSay(void);
extern void eventLiveSlotsLeft(unsigned base, unsigned count);
extern void eventLiveEnd(void);
extern void eventLiveRetagging(int on);
extern void eventLiveAfterFork(void);


/* eventwriter.c: the writes after the lock, the writer thread (.sol.writer) */

extern int eventWriterEnqueue(EventThreadStruct *thread, unsigned level, unsigned kind,
                              unsigned slot, const unsigned char *data, size_t size,
                              uint64_t seq, const EventStreamEntryStruct *streams,
                              size_t streamCount);
extern void eventWriterIdle(void);
extern void eventWriterPoke(void);
extern void eventWriterStop(void);
extern void eventWritesDo(EventThreadStruct *thread);
extern void eventWritesFlush(void);
extern int eventWritesUnsettled(void);
extern int eventSlotBusy(EventKindBufStruct *kb, unsigned s, int wait);
extern int eventSlotFree(EventKindBufStruct *kb, unsigned s);
extern int eventWriterIsAsync(void);
extern void eventWriterAsyncSet(int async);
extern void eventWriterDropsSet(int drop);
extern void eventSlotsReturned(void);
extern void eventWriterAfterFork(void);


/* eventfilter.c: dynamic filters (.sol.filter) */

extern const unsigned char *eventFilterBlock(unsigned kind, const unsigned char *data,
                                             size_t *sizeIO, int *filteredReturn);
extern void eventFilterDone(const unsigned char *written);
extern int eventFilterKeep(unsigned kind, const unsigned char *p, size_t length);
extern void eventFilterSay(char *buf, size_t size);
extern const EventDescStruct *eventFind(const char *name, EventSourceStruct **sourceReturn,
                                        char *err, size_t errSize);
extern void eventFilterForget(EventSourceStruct *source);
extern const EventDescStruct *eventFindIn(const EventSourceStruct *source, const char *name);
extern void eventFilterEnv(int final);


/* eventctl.c: the control page and thread (.ctl) */

extern void eventCtlStart(int force);
extern void eventCtlStop(int join);
extern void eventCtlPoke(void);
extern void eventCtlAfterFork(void);

#endif /* eventint_h */
