/* <src/event/event.h> -- event emission interface
 *
 * .design: design/runtime.txt
 *
 * A program includes this header to emit events and to control
 * telemetry.  It includes the program's generated eventgen.h (from the
 * include path), which defines the EVENT_<FORMAT>(Name, ...) emitters.
 *
 * The hot path is here, inline: EVENT_BEGIN and EVENT_END, which every
 * generated emitter uses.  design/runtime.txt .sol.hot
 */

#ifndef event_h
#define event_h

#include <stddef.h>
#include <string.h>

#include "eventcom.h"
#include "plinthclock.h"

/* The atomics of the hot path, in C and in C++, whose std::atomic of
 * an integer has the layout of C's _Atomic one.  design/build.txt
 * .pack.cxx */
#ifdef __cplusplus
#include <atomic>
#define EVENT_ATOMIC(type) std::atomic<type>
#define EVENT_THREAD_LOCAL __thread   /* no thread_local wrapper: the variable is C's, trivial */
#define EVENT_LOAD_RELAXED(object) (object).load(std::memory_order_relaxed)
#define EVENT_FENCE_RELEASE() std::atomic_thread_fence(std::memory_order_release)
#else
#include <stdatomic.h>
#define EVENT_ATOMIC(type) _Atomic type
#define EVENT_THREAD_LOCAL _Thread_local
#define EVENT_LOAD_RELAXED(object) atomic_load_explicit(&(object), memory_order_relaxed)
#define EVENT_FENCE_RELEASE() atomic_thread_fence(memory_order_release)
#endif

TELLTALE_BEGIN_DECLS

/* Varieties.  design/runtime.txt .sol.variety
 * Build with -DEVENT_VARIETY=n.  The default is checking. */
#define EVENT_VARIETY_OFF       0   /* no events: emitters compile to nothing */
#define EVENT_VARIETY_OPTIMISED 1   /* events whose always is TRUE */
#define EVENT_VARIETY_CHECKING  2   /* every event */
#ifndef EVENT_VARIETY
#define EVENT_VARIETY EVENT_VARIETY_CHECKING
#endif
#if EVENT_VARIETY < EVENT_VARIETY_OFF || EVENT_VARIETY > EVENT_VARIETY_CHECKING
#error "EVENT_VARIETY must be 0 (off), 1 (optimised) or 2 (checking)"
#endif

/* EventBufStruct -- a thread's buffer for one kind, as the hot path sees it.
 *
 * next is where the next event goes; limit is the end of the buffer.
 * Both are 0 until the thread's first event of the kind, so the first
 * reservation takes the slow path, which sets the thread up.  No other
 * thread writes these.  design/runtime.txt .sol.buffer */
typedef struct EventBufStruct {
  uintptr_t next;
  uintptr_t limit;
} EventBufStruct;

/* EventSourceStruct -- a registry in a process: its tables and its
 * emitters' state.  gen defines one per registry, in its eventgen.c,
 * with the state beside it, hidden in the object that holds it, so that
 * a program, its static libraries and its shared ones each bring their
 * own registry, and the hot path reaches its state by addresses fixed at
 * link or load time, as with one.  The runtime numbers a source when it
 * is registered (by eventgen.c's constructor, or by its first event) and
 * fills in the fields after "runtime".  design/registry.txt .reg.many
 *
 *   record   kinds whose events are recorded into buffers;
 *   control  kinds whose recorded events are output to the streams; the
 *            others stay in a ring of two buffers, the flight recorder;
 *   off      events turned off one by one, by code, below offLimit:
 *            nonzero means the event is not recorded even when its kind is
 *            (QNX's per-event bitmap);
 *   bufs     the calling thread's buffers, one per kind.
 * record and control are bit sets indexed by the registry's EventKind.
 * design/control.txt .sol.control, .sol.control.event */
typedef struct EventSourceStruct {
  unsigned size;                        /* sizeof(EventSourceStruct) as compiled */
  const EventRegistryStruct *registry;
  EVENT_ATOMIC(EventKindSet) *record;
  EVENT_ATOMIC(unsigned char) *off;
  unsigned offLimit;                    /* codes below it have an off entry */
  EventBufStruct *(*bufs)(void);
  /* the runtime's: */
  EVENT_ATOMIC(EventKindSet) control;
  unsigned number;                      /* the registry's number in the streams (.reg.many) */
  unsigned base;                        /* its kinds' first slot in the runtime's buffers */
  int state;                            /* 0 not joined (or left), 1 joined, 2 refused */
  int unloadable;                       /* its object came with dlopen: dlclose may unload it */
  struct EventSourceStruct *next;
} EventSourceStruct;

/* EventSourceRegister -- a registry joins the process: its kinds get
 * buffers, its tables go into every stream, and the environment's
 * settings apply to its kinds.  Refused, with a message on stderr, if
 * another registry has its name or there is no room: its events are
 * then not recorded.  EventSourceUnregister -- it leaves (its library is
 * unloaded with dlclose): its buffers are sent and freed; what it emitted
 * stays decodable.  eventgen.c calls both; both are idempotent. */
extern TELLTALE_API int EventSourceRegister(EventSourceStruct *source);
extern TELLTALE_API void EventSourceUnregister(EventSourceStruct *source);

extern TELLTALE_API void *EventReserveIn(EventSourceStruct *source, unsigned kind, size_t size);

#define EVENT_END_SLACK 4   /* bytes past limit that EVENT_END may zero */

/* EventReserve -- room for size bytes in the calling thread's buffer
 * buf, of its source's kind */
static inline void *EventReserve(EventBufStruct *buf, EventSourceStruct *source, unsigned kind,
                                 size_t size)
{
  uintptr_t next = buf->next;
  if (__builtin_expect(buf->limit - next < size, 0))
    return EventReserveIn(source, kind, size);
  buf->next = next + size;
  return (void *)next;
}

/* EVENT_BEGIN, EVENT_END -- the hot path of every emitter.
 *
 *   EVENT_BEGIN(Name)
 *     _event->field = value;   ...
 *   EVENT_END(Name)
 *
 * bracket the stores of event Name, as MPS's do, and take its kind, code,
 * struct and size from the name: the size is stated once, by gen, as
 * EVENT_SIZE_OF_<Name> (an event with a string reads the caller's local
 * _length, the string's length).  The source's state is the registry's
 * own (EVENT_SOURCE_RECORD, EVENT_SOURCE_OFF, EVENT_SOURCE_BUFS, which
 * eventgen.h names).
 * One load and branch when the kind is not recorded; one more when the
 * event itself is turned off.  Otherwise reserve
 * by bumping a pointer, store the clock and the fields, store a zero
 * code after the event (so that the data always end at a zero code, even
 * in a reused buffer), and commit by storing code and length together
 * last, after a release fence (no instruction on x86-64), so that
 * another thread that sees the code sees the whole event (a flush or a
 * traceback reading this thread's buffer).  design/runtime.txt
 * .sol.hot, design/control.txt .sol.live, .sol.flush
 * The buffer's limit leaves EVENT_END_SLACK bytes for that zero.
 * EVENT_BEGIN opens a block and declares in it _event, a pointer to the
 * event's struct, for the stores; EVENT_END closes it. */
#define EVENT_BEGIN(name) \
  if ((EVENT_LOAD_RELAXED(EVENT_SOURCE_RECORD) \
       & EVENT_KIND_BIT(EVENT_KIND_OF_##name)) && \
      !EVENT_LOAD_RELAXED(EVENT_SOURCE_OFF[EventCode##name])) { \
    EventStruct##name *_event = (EventStruct##name *)EventReserve( \
      &EVENT_SOURCE_BUFS[EVENT_KIND_OF_##name], &EVENT_SOURCE, EVENT_KIND_OF_##name, \
      EVENT_SIZE_OF_##name); \
    PlinthClockStore(&_event->header.clock);

#define EVENT_END(name) \
    ((EventHeaderStruct *)((char *)_event + EVENT_SIZE_OF_##name))->codeLength = 0; \
    EVENT_COMMIT(&_event->header, EVENT_CODE_LENGTH(EventCode##name, EVENT_SIZE_OF_##name)); \
  }

/* EVENT_HIDDEN -- the source's state is its object's own: a program's
 * and a shared library's registries never bind to each other's. */
#define EVENT_HIDDEN __attribute__((visibility("hidden")))

/* EVENT_TLS_MODEL -- the model of a source's thread-local buffers.  In
 * an executable (code compiled -fPIE, or not position-independent) the
 * hidden variable is the executable's own, at an offset from the thread
 * pointer that the link fixes: local-exec addresses it in the store
 * itself, one instruction fewer than initial-exec's load of the offset,
 * which a shared library (-fPIC) needs.  design/registry.txt
 * .reg.many.cost */
#if defined(__PIE__) || !defined(__PIC__)
#define EVENT_TLS_MODEL "local-exec"
#else
#define EVENT_TLS_MODEL "initial-exec"
#endif

/* EVENT_COMMIT -- store an event's code and length, after a release
 * fence.  ThreadSanitizer does not model fences, so there it is a
 * release store, in the same order: it then sees that a flush that reads
 * the code (an acquire load) reads the event after it was written. */
#if defined(__SANITIZE_THREAD__)
#define EVENT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define EVENT_TSAN 1
#endif
#endif
#ifdef EVENT_TSAN
#define EVENT_COMMIT(header, value) \
    __atomic_store_n((uint32_t *)(void *)(header), (value), __ATOMIC_RELEASE)
#else
#define EVENT_COMMIT(header, value) \
    (EVENT_FENCE_RELEASE(), (header)->codeLength = (value))
#endif

/* EventStringLength -- length of an S parameter, truncated to
 * EVENT_STRING_MAX.  A null pointer is sent as an empty string.
 * design/registry.txt .reg.limits */
static inline size_t EventStringLength(const char *s)
{
  size_t n = 0;
  if (s == NULL)
    return 0;
  while (n < EVENT_STRING_MAX && s[n] != '\0')
    ++n;
  return n;
}

/* EventStringCopy -- copy length characters of an S parameter and a NUL.
 * The string may have changed since EventStringLength measured it (another
 * thread rewrote it): a NUL copied inside it would end it before the
 * event's length does, and the reader would refuse the block, so each is
 * sent as '?'.  The compiler barrier keeps the compiler from assuming the
 * copy holds what the measuring loop read.  design/runtime.txt .sol.string */
static inline void EventStringCopy(char *dst, const char *src, size_t length)
{
  if (length > 0) {
    char *nul;
    memcpy(dst, src, length);
    __asm__ __volatile__("" : : : "memory");
    while ((nul = (char *)memchr(dst, '\0', length)) != NULL)
      *nul = '?';
  }
  dst[length] = '\0';
}

#include "eventgen.h"

/* Interface.  design/runtime.txt .sol.api
 * Functions that can fail return 0 or an errno-style code and, when
 * given one, write a message into err (at most errSize bytes). */

/* EventInit -- set telemetry up from the environment.
 * Idempotent; called before main by a constructor, and by the slow
 * path.  Reads the TELLTALE_ variables the README lists (TELLTALE_CONTROL,
 * TELLTALE_RECORD, TELLTALE_FILE, ...: design/runtime.txt .sol.env), and
 * starts the control thread unless TELLTALE_CTL=off (.ctl).
 * A bad setting is said once on stderr, naming the variable and what
 * was expected, and the default is used. */
extern TELLTALE_API int EventInit(void);

/* EventFlush -- write the calling thread's output buffers to the streams */
extern TELLTALE_API void EventFlush(void);

/* EventFinish -- end the session: flush every thread's buffers, write
 * StreamEnd and close the streams telltale opened.  Emitting afterwards
 * starts a new session. */
extern TELLTALE_API void EventFinish(void);

/* EventExecBefore -- the program is about to exec another image: every
 * thread's committed events are written, on this thread, then
 * StreamExec, which tells the tools that a log ending there ended at
 * an exec, whole, not at a death.  The session stays open.  Returns a
 * value for EventExecFailed.  EventExecFailed -- the exec failed with
 * error (errno): the session goes on as before, and the log says so.
 * design/plinth.txt .sol.exec */
extern TELLTALE_API int EventExecBefore(void);
extern TELLTALE_API void EventExecFailed(int before, int error);

/* Streams.  design/runtime.txt .sol.multi
 * The default stream is the file named by TELLTALE_FILE, or
 * "telltale.log", opened when the first block is written unless the
 * program added a binary stream first.  TELLTALE_FILE=none means no
 * default stream.  Streams the program adds stay the program's to close,
 * after EventFinish. */
struct PlinthStreamStruct;
extern TELLTALE_API int EventStreamAddBinary(struct PlinthStreamStruct *stream);
/* EventStreamAddText -- mirror kinds of the calling code's registry to
 * a stream as text */
extern TELLTALE_API int EventSourceStreamAddText(EventSourceStruct *source,
                                                 struct PlinthStreamStruct *stream, EventKindSet kinds);
#define EventStreamAddText(stream, kinds) EventSourceStreamAddText(EVENT_API_SOURCE, (stream), (kinds))

/* Kind control.  design/control.txt .sol.control, design/registry.txt .reg.many
 * Each returns the previous set; new = (old & ~reset) ^ flip, as in MPS.
 * The kinds are the calling code's registry's (EventKind in its
 * eventgen.h): a library's call changes its own kinds, a program's its
 * own.  (Each is a macro that passes its registry's source to an
 * EventSource function; the functions of the same names, which objects
 * built against telltale 0.1 call, change the registry that names
 * EventRegistry, if any.)
 * Output (EventControl...): in effect for every thread when the call
 * returns: what any thread committed before it follows the old setting,
 * what it emits after, the new; it takes the lock and walks the
 * buffers of the kinds it changes (.sol.control.cut).  Recording
 * (EventRecord...): one atomic store, seen by each thread's next event.
 * Both are async-signal-safe in a handler installed through sigaction
 * or signal (the lock blocks signals: .sol.signal.level). */
extern TELLTALE_API EventKindSet EventSourceControl(EventSourceStruct *source,
                                                    EventKindSet reset, EventKindSet flip);
extern TELLTALE_API EventKindSet EventSourceRecord(EventSourceStruct *source,
                                                   EventKindSet reset, EventKindSet flip);
/* EVENT_API_SOURCE -- the calling code's registry's source: none in the
 * off variety, whose eventgen.c has none (.sol.variety.off) */
#if EVENT_VARIETY == EVENT_VARIETY_OFF
#define EVENT_API_SOURCE ((EventSourceStruct *)0)
#else
#define EVENT_API_SOURCE (&EVENT_SOURCE)
#endif
#define EventControl(reset, flip) EventSourceControl(EVENT_API_SOURCE, (reset), (flip))
#define EventControlSet(kinds) EventControl((kinds), (kinds))      /* output on */
#define EventControlReset(kinds) EventControl((kinds), 0)          /* output off */
#define EventControlFlip(kinds) EventControl(0, (kinds))
#define EventRecord(reset, flip) EventSourceRecord(EVENT_API_SOURCE, (reset), (flip))
#define EventRecordSet(kinds) EventRecord((kinds), (kinds))        /* recorded */
#define EventRecordReset(kinds) EventRecord((kinds), 0)            /* not recorded */

/* EventKindsSwitch -- output (output 1) or recording (0) on or off for
 * kinds named as the environment names them: "Pool" is every
 * registry's kind Pool, "alloc:Pool" registry alloc's alone, "all" every
 * kind, "alloc:all" every kind of alloc.  For telltale-ctl and the gdb
 * extension, which know names, not bits.  0, or an errno-style code with
 * a message in err.  Not async-signal-safe. */
extern TELLTALE_API int EventKindsSwitch(const char *names, int output, int on,
                                         char *err, size_t errSize);

/* EventRecordByName -- turn one event off (on = 0) or back on, by name:
 * "PoolAlloc" in every registry that has it, "alloc:PoolAlloc" in one.
 * Its kind's control still applies.  telltale's own events (codes below
 * 0x0100) cannot be turned off.  Returns 0, or an errno-style code with
 * a message in err.  design/control.txt .sol.control.event */
extern TELLTALE_API int EventRecordByName(const char *name, int on, char *err, size_t errSize);

/* EventKindParse -- parse "all", "none", "Arena,Pool", "all,-Ref", or
 * MPS-style masks of kind bits, "0x3f", "all,-0x40" (decimal or 0x hex),
 * as kinds of the calling code's registry */
extern TELLTALE_API int EventSourceKindParse(EventSourceStruct *source, const char *spec,
                                             EventKindSet *kindsReturn, char *err, size_t errSize);
#define EventKindParse(spec, kindsReturn, err, errSize) \
  EventSourceKindParse(EVENT_API_SOURCE, (spec), (kindsReturn), (err), (errSize))
/* EventKindIndex -- a kind's index by name in the calling code's registry, or -1 */
extern TELLTALE_API int EventSourceKindIndex(EventSourceStruct *source, const char *name);
#define EventKindIndex(name) EventSourceKindIndex(EVENT_API_SOURCE, (name))

/* Strings and labels.  design/runtime.txt .sol.intern */
extern TELLTALE_API EventW EventInternString(const char *string);
extern TELLTALE_API void EventLabel(EventA address, EventW id);
extern TELLTALE_API void EventLabelString(EventA address, const char *label);

/* Thread names: emits ThreadName for the calling thread. */
extern TELLTALE_API void EventThreadNameSet(const char *name);

/* Death.  design/plinth.txt .sol.traceback, .sol.signal, .sol.assert */

/* EVENT_ASSERT -- check a condition in every variety.  On failure, print
 * the condition, the file and line and the latest events (the flight
 * recorder, decoded, in time order), flush every stream and abort. */
#define EVENT_ASSERT(condition) \
  do { \
    if (__builtin_expect(!(condition), 0)) \
      EventAssertFail(#condition, __FILE__, __LINE__); \
  } while (0)

extern TELLTALE_API void EventAssertFail(const char *condition, const char *file, unsigned line)
  __attribute__((noreturn));

/* EventDump -- write the latest count events of every thread to
 * stderr, oldest first.  Async-signal-safe; callable from a debugger:
 * "call EventDump(20)". */
extern TELLTALE_API void EventDump(unsigned count);

/* EventDumpTo -- the traceback a fatal signal prints, to a descriptor,
 * for a program's own fatal-signal handler or logger: up to half of the
 * events are the calling thread's, the rest the other threads' latest.
 * Async-signal-safe. */
extern TELLTALE_API void EventDumpTo(int fd, unsigned count);

/* EventFlushAll -- send every thread's committed events to the streams,
 * for a program's own fatal-signal handler.  Async-signal-safe.  Returns
 * 0; EAGAIN if another thread held telltale's lock for 200 ms; EBUSY
 * with the asynchronous writer, which writes on (the live file keeps
 * what it has not written).  design/plinth.txt .sol.death */
extern TELLTALE_API int EventFlushAll(void);

/* EventFatalSignals -- install (1) or remove (0) the handlers that dump
 * and flush on SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT, then pass the
 * signal on.  Installed before main unless TELLTALE_SIGNALS=off. */
extern TELLTALE_API int EventFatalSignals(int on);

/* EventWriterAsync -- write full buffers on a writer thread (async 1)
 * or on the emitting thread (0, the default); with drop, an emitter
 * whose next buffer the writer has not yet written drops its events,
 * counted as EventsDropped, instead of waiting.  TELLTALE_WRITER=sync,
 * async or async,drop.  design/control.txt .sol.writer */
extern TELLTALE_API int EventWriterAsync(int async, int drop);

/* Buffer size in bytes: a power of two, at least 4096 (TELLTALE_BUFFER).
 * Applies to buffers made after the call. */
extern TELLTALE_API int EventBufferSizeSet(size_t size);

/* EventCompact -- write the log's blocks in the compact form (on 1) or
 * as the buffers hold them (0, the default); TELLTALE_COMPACT=1 or 0.
 * Returns the previous setting.  design/runtime.txt .compact */
extern TELLTALE_API int EventCompact(int on);

/* EventFilterAdd -- keep, of one event, only those whose field passes a
 * test: "EVENT FIELD OP VALUE", OP one of == (or =) != < <= > >= (a
 * string field: == or !=, its value quoted or not), e.g.
 * "PoolAlloc size>=4096".  Filters on one event
 * must all pass; other events are untouched; at most 16 at once.  Applied
 * where a block is written, so the emitter pays nothing: to blocks
 * written after the call (events still in a buffer then included), and
 * not to the flight recorder.  EventFilterClear removes an event's
 * filters by name, or every filter (NULL, "" or "all"); ENOENT if it had
 * none, EINVAL if there is no such event.  TELLTALE_FILTER="A;B" adds filters at start.  Not
 * async-signal-safe.  design/control.txt .sol.filter */
extern TELLTALE_API int EventFilterAdd(const char *spec, char *err, size_t errSize);
extern TELLTALE_API int EventFilterClear(const char *name);

/* EventCtl -- let telltale-ctl steer this process (1) or not (0): with
 * 1 (the default, unless TELLTALE_CTL=off) the process has a control
 * file, mode 0600, in its user's control directory and a control thread
 * asleep on it; 0 removes both, and no fork's child makes them.  Not
 * async-signal-safe.  design/tools.txt .ctl */
extern TELLTALE_API int EventCtl(int on);

TELLTALE_END_DECLS

#endif /* event_h */
