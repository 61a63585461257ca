/* <src/malloc/recorder.c> -- libtelltale-malloc.so: record a program's allocations
 *
 * .design: design/recorder.txt .malloc
 *
 * Loaded with LD_PRELOAD, this library interposes on the C allocation
 * interface (malloc, calloc, realloc, reallocarray, free, free_sized,
 * free_aligned_sized, memalign, valloc, pvalloc, aligned_alloc,
 * posix_memalign), calls the next definition (normally glibc's), and
 * emits one event per call from src/malloc/eventdef.h.  The program is
 * not changed or rebuilt.
 *
 * Re-entry (design/recorder.txt .malloc.reentry):
 *   - dlsym may allocate while the real functions are being looked up:
 *     those allocations come from a small static arena and are never
 *     recorded; freeing them does nothing.
 *   - the runtime's own allocations (src/event, plinth.c) are compiled
 *     with malloc and free renamed to TelltaleReal* below, so they go
 *     straight to the real allocator and are never recorded.
 *   - anything else the runtime calls that allocates (pthread keys,
 *     atexit, and pthread_create, renamed too, for the writer thread)
 *     runs with the thread-local flag inside set, so the wrapper passes
 *     it through without emitting: an event is never emitted from inside
 *     another.
 *
 * Unloading (design/recorder.txt .stacks.unmap): dlclose is interposed,
 * so that the mappings it removes are recorded and stacks recorded after
 * it never take the ids of stacks of a library it unloaded.
 *
 * Ends (design/recorder.txt .malloc.ends): _exit and _Exit end the
 * session first, and the exec family ends the log at the exec
 * (EventExecBefore, .sol.exec), so that a shell's forked children and a
 * program that execs another lose nothing; the next image keeps the
 * previous image's log as LOG.execN, and its live file as LOG.execN.live.
 *
 * Order (design/recorder.txt .malloc.order): an allocation's clock is
 * taken after the real call returns, a free's before the real call, and
 * a realloc's on both sides of it (ReallocMove, Realloc), so that a block passed to another thread is
 * never seen freed before it was allocated, and an address reused by
 * another thread is seen freed before it is allocated again.  A
 * realloc's stack is taken before its first clock (reallocSlow), so a
 * thread's events are in clock order.
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <dirent.h>
#include <sys/syscall.h>
#include <sys/resource.h>

/* The emitters' slow path (a full buffer sent, a thread's first event)
 * is taken inside: recorderReserveIn below.  .malloc.reentry */
#define EventReserveIn recorderReserveIn
#include "event.h"
#undef EventReserveIn
#include "eventint.h"           /* eventAtExit */
#include "plinth.h"
#include "stacks.h"
#include "zstdblock.h"

/* The real functions, found with dlsym(RTLD_NEXT). */
static struct {
  void *(*malloc)(size_t);
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  void (*free)(void *);
  void *(*memalign)(size_t, size_t);
  void *(*aligned_alloc)(size_t, size_t);
  int (*posix_memalign)(void **, size_t, size_t);
  void *(*valloc)(size_t);
  void *(*pvalloc)(size_t);
} real;

/* inside -- set while this thread is in the runtime on the wrapper's
 * behalf: allocations it makes are passed through, not recorded.
 * INSIDE_ENDING: the process is ending, and it stays set.  A signal
 * handler running over an inside section (.malloc.signal):
 * INSIDE_HANDLER, its events are recorded without a stack;
 * INSIDE_LOST, nothing can be recorded, and its allocations are counted
 * as dropped. */
static _Thread_local int inside __attribute__((tls_model("initial-exec")));
enum { INSIDE = 1, INSIDE_ENDING, INSIDE_HANDLER, INSIDE_LOST, INSIDE_STACK };


/* Blocks allocated while a stack is taken ---------------------------- */

/* INSIDE_STACK is inside while the wrapper takes a call stack.  What is
 * allocated then is passed through, unrecorded, and kept here: in the
 * libunwind mode, each thread's first unwind makes glibc allocate
 * libunwind's thread-local block, which glibc frees at the thread's
 * exit, outside the recorder; recorded, that free was of a block never
 * seen.  A free of a block kept here is passed through and forgotten.
 * A lock-free open-addressed set, probed only while it holds anything.
 * design/recorder.txt .malloc.reentry.stack */
#define PASSED_SIZE 4096
#define PASSED_PROBES 64
#define PASSED_GONE ((uintptr_t)1)     /* a slot whose block was freed */
static _Atomic uintptr_t passed[PASSED_SIZE];
static _Atomic size_t passedCount;

static size_t passedHome(uintptr_t p)
{
  return (size_t)((p * 0x9E3779B97F4A7C15u) >> 40);
}

/* passedAdd -- keep p, a block allocated while a stack was taken; if
 * the set is full, it is not kept, and its free will be recorded */
static __attribute__((noinline, cold)) void passedAdd(void *p)
{
  uintptr_t a = (uintptr_t)p;
  if (p == NULL)
    return;
  for (size_t probe = 0; probe < PASSED_PROBES; ++probe) {
    _Atomic uintptr_t *slot = &passed[(passedHome(a) + probe) & (PASSED_SIZE - 1)];
    uintptr_t v = atomic_load_explicit(slot, memory_order_relaxed);
    if ((v == 0 || v == PASSED_GONE)
        && atomic_compare_exchange_strong(slot, &v, a)) {
      atomic_fetch_add(&passedCount, 1);
      return;
    }
  }
}

/* passedTake -- whether p is kept; if so, forgotten */
static __attribute__((noinline, cold)) int passedTake(void *p)
{
  uintptr_t a = (uintptr_t)p;
  if (a <= PASSED_GONE)
    return 0;
  for (size_t probe = 0; probe < PASSED_PROBES; ++probe) {
    _Atomic uintptr_t *slot = &passed[(passedHome(a) + probe) & (PASSED_SIZE - 1)];
    uintptr_t v = atomic_load_explicit(slot, memory_order_relaxed);
    if (v == 0)
      return 0;
    if (v == a && atomic_compare_exchange_strong(slot, &v, PASSED_GONE)) {
      atomic_fetch_sub(&passedCount, 1);
      return 1;
    }
  }
  return 0;
}

/* PASSED -- whether p is a block kept, forgotten now: one load while
 * the set is empty */
#define PASSED(p) \
  (__builtin_expect(atomic_load_explicit(&passedCount, memory_order_relaxed) != 0, 0) \
   && passedTake(p))


/* The bootstrap arena ----------------------------------------------- */

#define ARENA_SIZE ((size_t)64 << 10)
#define ARENA_ALIGN ((size_t)16)
static unsigned char arena[ARENA_SIZE] __attribute__((aligned(16)));
static _Atomic size_t arenaUsed;

/* arenaAlloc -- a block from the arena, with its size in the 16 bytes before it */
static void *arenaAlloc(size_t size)
{
  size_t need = (size + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN + ARENA_ALIGN;
  size_t at = atomic_fetch_add(&arenaUsed, need);
  if (size > ARENA_SIZE || at + need > ARENA_SIZE)
    return NULL;
  memcpy(arena + at, &size, sizeof size);
  return arena + at + ARENA_ALIGN;
}

/* inArena -- is p in the arena?  (Not NULL: one compare, by wrapping.) */
static int inArena(const void *p)
{
  return (uintptr_t)p - (uintptr_t)arena < ARENA_SIZE;
}

static size_t arenaSize(const void *p)
{
  size_t size;
  memcpy(&size, (const unsigned char *)p - ARENA_ALIGN, sizeof size);
  return size;
}


/* Bootstrap --------------------------------------------------------- */

static _Atomic int booting;

/* bootstrap -- find the real functions.  While dlsym runs, allocations
 * (from this thread or any other) are served from the arena. */
static __attribute__((noinline, cold)) void bootstrap(void)
{
  int expected = 0;
  if (!atomic_compare_exchange_strong(&booting, &expected, 1))
    return;
  real.calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
  real.realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
  real.free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
  real.memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
  real.aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
  real.posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
  real.valloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "valloc");
  real.pvalloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "pvalloc");
  /* malloc last: the hot paths test it to know the others are set. */
  atomic_signal_fence(memory_order_seq_cst);
  real.malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
  if (real.malloc == NULL || real.free == NULL || real.calloc == NULL || real.realloc == NULL) {
    static const char msg[] = "libtelltale-malloc: cannot find the real malloc\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(127);
  }
}

/* ready -- 1 if the real functions are known; bootstraps if not */
static inline int ready(void)
{
  if (__builtin_expect(real.malloc != NULL, 1))
    return 1;
  bootstrap();
  return real.malloc != NULL;
}


/* The runtime's own allocations -------------------------------------
 * The runtime's files (src/event) and plinth.c are
 * compiled for this library with -Dmalloc=TelltaleRealMalloc and so on
 * (ninja/targets.ninja, ninja/runtime.ninja), so that
 * telltale's buffers are never recorded.  design/recorder.txt .malloc.reentry */

extern void *TelltaleRealMalloc(size_t size);
extern void *TelltaleRealCalloc(size_t count, size_t size);
extern void *TelltaleRealRealloc(void *p, size_t size);
extern void TelltaleRealFree(void *p);

void *TelltaleRealMalloc(size_t size)
{
  return ready() ? real.malloc(size) : arenaAlloc(size);
}

void *TelltaleRealCalloc(size_t count, size_t size)
{
  if (ready())
    return real.calloc(count, size);
  if (size != 0 && count > SIZE_MAX / size)
    return NULL;
  return arenaAlloc(count * size);      /* the arena is zero and never reused */
}

void *TelltaleRealRealloc(void *p, size_t size)
{
  if (inArena(p)) {
    void *q = TelltaleRealMalloc(size);
    size_t old = arenaSize(p);
    if (q != NULL)
      memcpy(q, p, old < size ? old : size);
    return q;
  }
  return ready() ? real.realloc(p, size) : NULL;
}

void TelltaleRealFree(void *p)
{
  if (p == NULL || inArena(p))
    return;
  if (ready())
    real.free(p);
}

/* TelltaleRealPthreadCreate -- the runtime's pthread_create (its writer
 * thread, made when a block is first queued, which may be at a thread's
 * exit or the program's): made inside, as it allocates. */
extern int TelltaleRealPthreadCreate(pthread_t *thread, const pthread_attr_t *attr,
                                     void *(*run)(void *), void *arg);

int TelltaleRealPthreadCreate(pthread_t *thread, const pthread_attr_t *attr,
                              void *(*run)(void *), void *arg)
{
  int was = inside, res;
  inside = 1;
  res = pthread_create(thread, attr, run, arg);
  inside = was;
  return res;
}


/* The interposed functions ------------------------------------------ */

static __attribute__((noinline, cold)) void recorderStart(void);
static _Atomic int started;     /* recorderStart has run, or is running */

/* recordMode -- RECORD_OFF until recorderStart has run, then RECORD_PLAIN,
 * or RECORD_STACKS with TELLTALE_STACKS: one load tells the usual case */
enum { RECORD_OFF, RECORD_PLAIN, RECORD_STACKS };
static _Atomic int recordMode;

#define RECORD_MODE() atomic_load_explicit(&recordMode, memory_order_relaxed)

/* recorderReserveIn -- the emitters' slow path, inside, as it may
 * write a block, start the writer thread or make a thread's state.  The
 * usual event is emitted without setting inside: its fast path calls
 * nothing, and an event of a signal handler that interrupts it is the
 * handler's own (.sol.hot).  A thread's first event always comes here
 * (it has no buffer yet), so the recorder is started here if it has not
 * been (RECORD). */
extern void *EventReserveIn(EventSourceStruct *source, unsigned kind, size_t size);
__attribute__((noinline)) void *recorderReserveIn(EventSourceStruct *source, unsigned kind,
                                                  size_t size)
{
  int was = inside;
  void *p;
  if (RECORD_MODE() == RECORD_OFF)
    recorderStart();
  inside = 1;
  p = EventReserveIn(source, kind, size);
  inside = was;
  return p;
}

/* Signal handlers.  design/recorder.txt .malloc.signal
 *
 * A handler the program installs runs through the plinth's trampoline
 * (sigaction and signal are exported for it), which calls these around
 * it.  Its allocations are the program's even when it interrupted this
 * thread inside the recorder, where before they were passed through
 * unrecorded and uncounted: inside is INSIDE_HANDLER for the handler
 * and put back after, and its events, at the handler's own signal level
 * (.sol.signal.level), go without a stack, since the interrupted code
 * may hold the memory map's lock or be interning a stack.  Where the
 * recorder cannot record at all (starting, or the process ending),
 * inside is INSIDE_LOST, and they are counted as dropped.  Both are
 * tested only where inside is set, so the usual case costs nothing. */

/* recorderLost -- a handler's allocation that could not be recorded */
static __attribute__((noinline, cold)) void recorderLost(void)
{
  eventDropCount(EVENT_KIND_OF_Malloc);
}

/* recorderSignalEnter, recorderSignalLeave -- the runtime's level switch
 * (eventSignalEnter's token, below 256, in the low byte), then the
 * recorder's: inside as it was, in the bits above, put back when the
 * handler ends */
static int recorderSignalEnter(uintptr_t low, uintptr_t high, uintptr_t sp)
{
  int token = eventSignalEnter(low, high, sp) | inside << 8;
  if ((inside == INSIDE || inside == INSIDE_STACK) && RECORD_MODE() != RECORD_OFF)
    inside = INSIDE_HANDLER;
  else if (inside != 0 && inside != INSIDE_HANDLER)
    inside = INSIDE_LOST;
  return token;
}

static void recorderSignalLeave(int token)
{
  inside = token >> 8;
  eventSignalLeave(token & 0xff);
}

/* RECORD -- emit an event unless this thread is already inside telltale.
 * The recorder starts on the first event if its constructor has not
 * run yet: a library's constructor that allocates (libstdc++'s) may run
 * first, and its event would make the runtime open TELLTALE_FILE itself,
 * truncating it, before the recorder claims it (.malloc.file).  Before
 * the start no thread has a buffer, so the emitter's slow path starts it
 * (recorderReserveIn). */
#define RECORD(emit) \
  do { \
    if (!inside || inside == INSIDE_HANDLER) \
      emit; \
    else if (inside == INSIDE_LOST) \
      recorderLost(); \
  } while (0)

/* RECORD_AT -- RECORD(emit) in the usual case, else slow: a call to a
 * function made of RECORD_SLOW_AT, kept out of line so that the usual
 * case keeps no registers for it */
#define RECORD_AT(p, emit, slow) \
  do { \
    if (!inside) { \
      if (__builtin_expect(RECORD_MODE() == RECORD_PLAIN, 1)) { \
        emit; \
      } else { \
        slow; \
      } \
    } else if (inside == INSIDE_HANDLER) { \
      emit; \
    } else if (inside == INSIDE_LOST) \
      recorderLost(); \
    else if (inside == INSIDE_STACK) \
      passedAdd(p); \
  } while (0)

/* RECORD_SLOW_AT -- start if need be, then emit, or with TELLTALE_STACKS
 * emitAt, where emitAt names the call stack's id as stack, taken inside
 * (reading the memory map allocates) from frame, the interposed
 * function's own.  design/recorder.txt .stacks */
#define RECORD_SLOW_AT(emit, emitAt) \
  do { \
    if (RECORD_MODE() == RECORD_OFF) \
      recorderStart(); \
    inside = 1; \
    if (stacksDepth == 0) { \
      emit; \
    } else { \
      EventU stack; \
      inside = INSIDE_STACK; \
      stack = StackHere(frame); \
      inside = 1; \
      emitAt; \
    } \
    inside = 0; \
  } while (0)

#define SLOW static __attribute__((noinline))
#define HERE __builtin_frame_address(0)   /* the interposed function's frame */

SLOW void mallocSlow(size_t size, void *p, void *frame)
{
  RECORD_SLOW_AT(EVENT_WP(Malloc, size, p), EVENT_WPU(MallocAt, size, p, stack));
}

SLOW void callocSlow(size_t count, size_t size, void *p, void *frame)
{
  RECORD_SLOW_AT(EVENT_WWP(Calloc, count, size, p), EVENT_WWPU(CallocAt, count, size, p, stack));
}

SLOW void memalignSlow(size_t alignment, size_t size, void *p, void *frame)
{
  RECORD_SLOW_AT(EVENT_WWP(Memalign, alignment, size, p),
                 EVENT_WWPU(MemalignAt, alignment, size, p, stack));
}

SLOW void alignedAllocSlow(size_t alignment, size_t size, void *p, void *frame)
{
  RECORD_SLOW_AT(EVENT_WWP(AlignedAlloc, alignment, size, p),
                 EVENT_WWPU(AlignedAllocAt, alignment, size, p, stack));
}

SLOW void posixMemalignSlow(size_t alignment, size_t size, void *p, int res, void *frame)
{
  RECORD_SLOW_AT(EVENT_WWPU(PosixMemalign, alignment, size, p, (EventU)res),
                 EVENT_WWPUU(PosixMemalignAt, alignment, size, p, (EventU)res, stack));
}

/* mallocBoot -- malloc before the real functions are known */
static __attribute__((noinline, cold)) void *mallocBoot(size_t size)
{
  return ready() ? malloc(size) : arenaAlloc(size);
}

void *malloc(size_t size)
{
  void *(*realMalloc)(size_t) = real.malloc;
  void *p;
  if (__builtin_expect(realMalloc == NULL, 0))
    return mallocBoot(size);
  p = realMalloc(size);
  RECORD_AT(p, EVENT_WP(Malloc, size, p), mallocSlow(size, p, HERE));    /* clock after the call: .malloc.order */
  return p;
}

void *calloc(size_t count, size_t size)
{
  void *p;
  if (!ready())
    return TelltaleRealCalloc(count, size);
  p = real.calloc(count, size);
  RECORD_AT(p, EVENT_WWP(Calloc, count, size, p), callocSlow(count, size, p, HERE));
  return p;
}

/* reallocRecord -- emit a realloc.  One that moved its block is
 * ReallocMove with the clock from before the call, then Realloc with
 * the clock after it; a realloc that freed (size 0) has the clock from
 * before; any other one, the clock after.  design/recorder.txt .malloc.order */
static inline void reallocRecord(EventClock before, void *old, void *result, size_t size,
                                 int at, EventU stack)
{
  if (old != NULL && result != NULL && result != old) {
    EVENT_BEGIN(ReallocMove)
      _event->header.clock = before;
      _event->old = old;
    EVENT_END(ReallocMove)
  }
  if (at) {
    EVENT_BEGIN(ReallocAt)
      if (result == NULL)
        _event->header.clock = before;
      _event->old = old;
      _event->result = result;
      _event->size = size;
      _event->stack = stack;
    EVENT_END(ReallocAt)
    return;
  }
  EVENT_BEGIN(Realloc)
    if (result == NULL)
      _event->header.clock = before;
    _event->old = old;
    _event->result = result;
    _event->size = size;
  EVENT_END(Realloc)
}

/* reallocSlow -- realloc, started if need be, with TELLTALE_STACKS its
 * stack taken first: the StackFrames and MapExec that define it are
 * emitted before the clock ReallocMove carries is read, so that the
 * thread's events never go back in time (taken after the call, they
 * came before a ReallocMove stamped earlier).  design/recorder.txt
 * .malloc.order */
SLOW void *reallocSlow(void *(*realRealloc)(void *, size_t), void *old, size_t size, void *frame)
{
  EventClock before;
  EventU stack = 0;
  void *p;
  if (RECORD_MODE() == RECORD_OFF)
    recorderStart();
  if (stacksDepth != 0) {
    inside = INSIDE_STACK;
    stack = StackHere(frame);
    inside = 0;
  }
  before = PlinthClockNow();
  p = realRealloc(old, size);
  inside = 1;
  reallocRecord(before, old, p, size, stacksDepth != 0, stack);
  inside = 0;
  return p;
}

/* reallocBoot -- realloc before the real functions are known */
static __attribute__((noinline, cold)) void *reallocBoot(void *old, size_t size)
{
  if (ready())
    return realloc(old, size);
  return old == NULL ? arenaAlloc(size) : NULL;
}

void *realloc(void *old, size_t size)
{
  void *(*realRealloc)(void *, size_t) = real.realloc;
  void *p;
  EventClock before;
  if (inArena(old))
    return TelltaleRealRealloc(old, size);
  if (__builtin_expect(realRealloc == NULL, 0))
    return reallocBoot(old, size);
  if (__builtin_expect(!inside && RECORD_MODE() != RECORD_PLAIN, 0)) {
    p = reallocSlow(realRealloc, old, size, HERE);
    __asm__ __volatile__("" : : "r"(p) : "memory");   /* not a tail call: frame stays ours */
    return p;
  }
  before = PlinthClockNow();
  p = realRealloc(old, size);
  if (__builtin_expect(inside == INSIDE_STACK, 0)) {
    if (old != NULL && PASSED(old) && p == NULL && size != 0)
      passedAdd(old);           /* it failed: the old block stays */
    passedAdd(p);
    return p;
  }
  RECORD(reallocRecord(before, old, p, size, 0, 0));   /* RECORD_AT's usual case */
  return p;
}

void *reallocarray(void *old, size_t count, size_t size)
{
  if (size != 0 && count > SIZE_MAX / size) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc(old, count * size);
}

void free(void *p)
{
  if (inArena(p))
    return;
  if (!ready())
    return;
  if (PASSED(p)) {
    real.free(p);
    return;
  }
  RECORD(EVENT_P(Free, p));             /* clock before the call: .malloc.order */
  real.free(p);
}

void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t alignment, size_t size);

void free_sized(void *p, size_t size)
{
  if (inArena(p))
    return;
  if (!ready())
    return;
  if (PASSED(p)) {
    real.free(p);
    return;
  }
  RECORD(EVENT_PW(FreeSized, p, size));
  real.free(p);
}

void free_aligned_sized(void *p, size_t alignment, size_t size)
{
  (void)alignment;
  free_sized(p, size);
}

void *memalign(size_t alignment, size_t size)
{
  void *p;
  if (!ready() || real.memalign == NULL)
    return NULL;
  p = real.memalign(alignment, size);
  RECORD_AT(p, EVENT_WWP(Memalign, alignment, size, p), memalignSlow(alignment, size, p, HERE));
  return p;
}

void *valloc(size_t size)
{
  void *p;
  if (!ready() || real.valloc == NULL)
    return NULL;
  p = real.valloc(size);
  RECORD_AT(p, EVENT_WWP(Memalign, (EventW)sysconf(_SC_PAGESIZE), size, p),
            memalignSlow((size_t)sysconf(_SC_PAGESIZE), size, p, HERE));
  return p;
}

void *pvalloc(size_t size)
{
  void *p;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (!ready() || real.pvalloc == NULL)
    return NULL;
  p = real.pvalloc(size);
  RECORD_AT(p, EVENT_WWP(Memalign, page, (size + page - 1) / page * page, p),
            memalignSlow(page, (size + page - 1) / page * page, p, HERE));
  return p;
}

void *aligned_alloc(size_t alignment, size_t size)
{
  void *p;
  if (!ready() || real.aligned_alloc == NULL)
    return NULL;
  p = real.aligned_alloc(alignment, size);
  RECORD_AT(p, EVENT_WWP(AlignedAlloc, alignment, size, p), alignedAllocSlow(alignment, size, p, HERE));
  return p;
}

int posix_memalign(void **result, size_t alignment, size_t size)
{
  int res;
  if (!ready() || real.posix_memalign == NULL)
    return ENOMEM;
  res = real.posix_memalign(result, alignment, size);
  RECORD_AT(res == 0 ? *result : NULL, EVENT_WWPU(PosixMemalign, alignment, size, res == 0 ? *result : NULL, (EventU)res),
            posixMemalignSlow(alignment, size, res == 0 ? *result : NULL, res, HERE));
  return res;
}


/* Start -------------------------------------------------------------- */

/* previousImage -- is the log on fd one that this process wrote in the
 * image that exec'd this one?  (The stream header's pid is ours: exec
 * keeps the pid.)  design/stream.txt .stream.header */
static int previousImage(int fd)
{
  unsigned char h[64];
  uint32_t pid;
  if (pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h, "TELLTALE", 8) != 0)
    return 0;
  pid = (uint32_t)h[56] | (uint32_t)h[57] << 8 | (uint32_t)h[58] << 16 | (uint32_t)h[59] << 24;
  return pid == (uint32_t)getpid();
}

/* keepPrevious -- move a previous image's log at path aside, as
 * PATH.execN, the first N free, and its live file with it, as
 * PATH.execN.live: what other threads emitted after the exec sent
 * every buffer is there (.sol.exec); 0 if done */
static int keepPrevious(const char *path)
{
  char aside[4096 + 32], live[4096 + 64], liveAside[4096 + 64];
  for (unsigned n = 1; n < 1000; ++n) {
    (void)snprintf(aside, sizeof aside, "%s.exec%u", path, n);
    if (access(aside, F_OK) != 0) {
      (void)snprintf(live, sizeof live, "%s.live", path);
      (void)snprintf(liveAside, sizeof liveAside, "%s.live", aside);
      if (rename(path, aside) != 0)
        return -1;
      (void)rename(live, liveAside);
      (void)snprintf(live, sizeof live, "%s.live.done", path);
      (void)unlink(live);       /* a lone thread's: nothing in it (.malloc.exec.live) */
      return 0;
    }
  }
  return -1;
}

/* claimLog -- open and lock path for this process: the descriptor, or
 * -1 if another process holds it, or -2 if it cannot be opened.  The
 * lock lives as long as the process image: the descriptor is
 * close-on-exec, so a program that execs another hands the log on, and
 * one that runs meanwhile (a child of a shell) writes PATH.PID instead.
 * The log of the image that exec'd this one is kept as PATH.execN.
 * design/recorder.txt .malloc.file */
static int claimLog(const char *path)
{
  unsigned char magic[EVENT_STREAM_MAGIC_LEN];
  struct stat st;
  /* Never through a link, never on descriptors 0-2, never a file of
   * /proc, and a file that is not a telltale log is never truncated: the
   * runtime's default stream then says why.  design/plinth.txt .plinth.stream.file */
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd < 0)
    return -2;
  if (fd <= 2) {
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    (void)close(fd);
    if (high < 0)
      return -2;
    fd = high;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || PlinthFdRefused(fd) != 0 ||
      (st.st_size > 0 && (pread(fd, magic, sizeof magic, 0) != (ssize_t)sizeof magic ||
                          memcmp(magic, EVENT_STREAM_MAGIC, sizeof magic) != 0))) {
    (void)close(fd);
    return -2;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    (void)close(fd);
    return -1;
  }
  if (previousImage(fd) && keepPrevious(path) == 0) {
    (void)close(fd);
    return claimLog(path);
  }
  if (ftruncate(fd, 0) != 0) {
    (void)close(fd);
    return -2;
  }
  return fd;
}

/* RECORDER_BUFFER -- the buffer size unless TELLTALE_BUFFER says: 1 MiB
 * a thread and kind, resident only as far as it fills.  Sixteen times
 * fewer writes than the runtime's 64 KiB, which on a malloc-heavy
 * program is a measurable part of the cost.  design/recorder.txt .malloc.perf */
#define RECORDER_BUFFER ((size_t)1 << 20)

/* unset -- is the variable name unset or empty?  The runtime takes an
 * empty value as its default, so the recorder takes it as its own. */
static int unset(const char *name)
{
  const char *value = getenv(name);
  return value == NULL || value[0] == '\0';
}

/* cpusAvailable -- the processors this process may run on (1 if unknown) */
static int cpusAvailable(void)
{
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return 1;
  return CPU_COUNT(&set);
}

/* basePath -- the log named by TELLTALE_FILE (or the default);
 * logPath -- the log this process writes: basePath or basePath.PID */
static char basePath[4096], logPath[4096 + 24];

/* openLog -- open path as this process's log and add it as a stream */
static void openLog(const char *path)
{
  PlinthStream stream;
  const char *map = getenv("TELLTALE_MAP");
  int fd = claimLog(path);
  if (fd == -1) {               /* another process has it: BASE.PID */
    (void)snprintf(logPath, sizeof logPath, "%s.%ld", basePath, (long)getpid());
    path = logPath;
    fd = claimLog(path);
  }
  if (fd < 0)
    return;                     /* the runtime's default stream reports it */
  if (map == NULL || (strcmp(map, "off") != 0 && strcmp(map, "0") != 0)) {   /* .malloc.file */
    if (PlinthStreamOpenFile(&stream, path) == 0)
      (void)EventStreamAddBinary(stream);
  } else if (PlinthStreamOpenFd(&stream, fd, 1) == 0)
    (void)EventStreamAddBinary(stream);
}

/* recordPid -- the process the session is this one's: not so in the
 * child of vfork (or a raw clone), which shares this memory and must
 * not touch the session (.malloc.ends) */
static pid_t recordPid;
static EventClock forkClock;

/* afterFork -- in a child that did not exec: after the runtime has
 * dropped the parent's streams (.sol.fork), write LOG.PID.  Registered
 * after EventInit, so that it runs after the runtime's own handler. */
static void afterFork(void)
{
  inside = 1;
  recordPid = getpid();
  if (basePath[0] != '\0') {
    (void)snprintf(logPath, sizeof logPath, "%s.%ld", basePath, (long)getpid());
    openLog(logPath);
  }
  EVENT_UW(Forked, (EventU)getppid(), forkClock);      /* .heap.tree */
  StacksAfterFork();
  inside = 0;
}

/* beforeFork -- the parent's clock just before a fork: the child's
 * Forked says it, so the tools take the parent's blocks live then as
 * the child's inheritance.  design/heap.txt .heap.tree */
static void beforeFork(void)
{
  forkClock = PlinthClockNow();
}

/* recorderStart -- before the runtime's own constructor: find the real
 * functions, choose the log and start telemetry.
 *
 * The log has a live file (.sol.live), as every telltale log, unless
 * TELLTALE_MAP=off: then it is written through the claimed descriptor.
 * design/recorder.txt .malloc.file */
static void atExit(void);

__attribute__((constructor(101))) static void recorderStart(void)
{
  const char *file;
  int expected = 0, was = inside;
  if (!atomic_compare_exchange_strong(&started, &expected, 1))
    return;
  inside = 1;
  recordPid = getpid();
  (void)ready();
  file = getenv("TELLTALE_FILE");
  if (file == NULL || file[0] == '\0')
    (void)snprintf(basePath, sizeof basePath, "telltale-malloc.%ld.log", (long)getpid());
  else if (strcmp(file, "none") != 0)
    (void)snprintf(basePath, sizeof basePath, "%s", file);
  if (basePath[0] != '\0') {
    (void)snprintf(logPath, sizeof logPath, "%s", basePath);
    openLog(logPath);
  }
  {
    const char *compact = getenv("TELLTALE_COMPACT");
    if (compact == NULL || strcmp(compact, "0") != 0)
      ZstdBlocksStart();        /* .malloc.zstd: before the headers */
  }
  (void)EventInit();
  PlinthSignalHooks(recorderSignalEnter, recorderSignalLeave, eventSignalJump);  /* .malloc.signal */
  if (unset("TELLTALE_BUFFER"))
    (void)EventBufferSizeSet(RECORDER_BUFFER);
  if (unset("TELLTALE_COMPACT"))
    (void)EventCompact(1);      /* .malloc.compact */
  if (unset("TELLTALE_WRITER") && cpusAvailable() > 1)
    (void)EventWriterAsync(1, 0);       /* .malloc.writer */
  StacksStart();
  (void)pthread_atfork(beforeFork, NULL, afterFork);
  (void)atexit(atExit);         /* after EventInit's: runs before it */
  atomic_store(&recordMode, stacksDepth == 0 ? RECORD_PLAIN : RECORD_STACKS);
  inside = was;
}


#define REAL(name, type) ((type)dlsym(RTLD_NEXT, name))

/* Unloading ---------------------------------------------------------
 * dlclose may unmap a library, and another may be loaded at its
 * addresses: the mappings are read again after it, and its stacks'
 * ids are not reused (design/recorder.txt .stacks.unmap).  dlopen is
 * not interposed: glibc finds a name's RUNPATH by its caller's address,
 * which a wrapper would make this library's; a library it loads is
 * seen when a stack first holds one of its addresses. */

int dlclose(void *handle)
{
  int (*realDlclose)(void *) = REAL("dlclose", int (*)(void *));
  int res, record;
  uint64_t before;
  if (realDlclose == NULL)
    return -1;
  before = StacksCloseBegin();
  res = realDlclose(handle);    /* its destructors' allocations are recorded */
  record = !inside && atomic_load(&started) && recordPid == getpid();
  if (record)
    inside = 1;
  StacksCloseEnd(record, before);
  if (record)
    inside = 0;
  return res;
}


/* Ends.  design/recorder.txt .malloc.ends
 *
 * _exit ends the process without atexit: the session is ended first
 * (EventFinish), as exit would.  An exec replaces the image: every
 * thread's buffers are sent first (EventFlushAll), and the session stays
 * open in case the exec fails.  Neither is done in the child of vfork,
 * which shares the parent's memory: there the calls pass straight on. */

static int ours(void)
{
  return atomic_load(&started) && recordPid == getpid() && !inside;
}

/* peakRss -- PeakRss, the process's peak resident set: at its exit or
 * exec, for telltale-heap's summary.  Inside.  design/heap.txt .heap.rss */
static void peakRss(void)
{
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) == 0)
    EVENT_W(PeakRss, (EventW)ru.ru_maxrss);
}

/* atExit -- exit()'s: PeakRss, before the runtime's own handler ends
 * the session (registered after it, so run before it) */
static void atExit(void)
{
  if (ours()) {
    inside = 1;
    peakRss();
    inside = 0;
  }
}

/* beforeExit -- the session's end as exit() makes it (eventAtExit, not
 * EventFinish): threads still running keep the live file, where their
 * events until the process is gone are found */
static void beforeExit(void)
{
  if (ours()) {
    inside = INSIDE_ENDING;     /* and stays so: the process is ending */
    peakRss();
    eventAtExit();
  }
}

/* loneThread -- whether the calling thread is the program's only one:
 * every other of /proc/self/task is telltale's own (telltale-write,
 * telltale-ctl).  Read with getdents64 into the stack: nothing allocated. */
static int loneThread(void)
{
  char buf[4096];
  long self = syscall(SYS_gettid), n;
  int lone = 1, fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  while (lone && (n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
    for (long at = 0; lone && at < n; ) {
      struct dirent64 *d = (struct dirent64 *)(void *)(buf + at);
      char comm[64], path[320];
      int c;
      ssize_t got = 0;
      at += d->d_reclen;
      if (d->d_name[0] == '.' || atol(d->d_name) == self)
        continue;
      (void)snprintf(path, sizeof path, "/proc/self/task/%s/comm", d->d_name);
      if ((c = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
        got = read(c, comm, sizeof comm - 1);
        (void)close(c);
      }
      lone = got > 9 && strncmp(comm, "telltale-", 9) == 0;
    }
  (void)close(fd);
  return lone;
}

/* liveAtExec -- rename the live file at an exec (from LOG.live to
 * LOG.live.done) or back (after it failed), when there is one */
static int liveMoved;

static void liveAtExec(int back)
{
  char live[sizeof logPath + 8], done[sizeof logPath + 16];
  (void)snprintf(live, sizeof live, "%s.live", logPath);
  (void)snprintf(done, sizeof done, "%s.live.done", logPath);
  liveMoved = back ? 0 : rename(live, done) == 0;
  if (back)
    (void)rename(done, live);
}

/* beforeExec -- Exec(path), then every buffer sent and StreamExec
 * (EventExecBefore): the log the exec leaves ends there, whole.  If
 * this thread is the program's only one, nothing else can be emitted
 * after that, so the live file holds nothing the log does not: it is
 * renamed LOG.live.done, which the next image removes rather than
 * keep it as LOG.execN.live.  design/plinth.txt .sol.exec design/recorder.txt .malloc.exec.live */
static int beforeExec(const char *path)
{
  int before = 0;
  if (ours()) {
    inside = 1;
    peakRss();
    EVENT_S(Exec, path);
    before = EventExecBefore();
    if (logPath[0] != '\0' && loneThread())
      liveAtExec(0);
    inside = 0;
  }
  return before;
}

/* afterExec -- an exec failed and returned: the session goes on, as it
 * was (EventExecFailed), with its live file */
static int afterExec(int before, int res)
{
  if (before != 0) {
    int saved = errno;
    inside = 1;
    if (liveMoved)
      liveAtExec(1);
    EventExecFailed(before, saved);
    inside = 0;
    errno = saved;
  }
  return res;
}

void _exit(int status)
{
  beforeExit();
  REAL("_exit", void (*)(int))(status);
  __builtin_unreachable();
}

void _Exit(int status)
{
  beforeExit();
  REAL("_Exit", void (*)(int))(status);
  __builtin_unreachable();
}

int execve(const char *path, char *const argv[], char *const envp[])
{
  int before = beforeExec(path);
  return afterExec(before, REAL("execve", int (*)(const char *, char *const[], char *const[]))(path, argv, envp));
}

int execv(const char *path, char *const argv[])
{
  int before = beforeExec(path);
  return afterExec(before, REAL("execv", int (*)(const char *, char *const[]))(path, argv));
}

int execvp(const char *file, char *const argv[])
{
  int before = beforeExec(file);
  return afterExec(before, REAL("execvp", int (*)(const char *, char *const[]))(file, argv));
}

int execvpe(const char *file, char *const argv[], char *const envp[])
{
  int before = beforeExec(file);
  return afterExec(before, REAL("execvpe", int (*)(const char *, char *const[], char *const[]))(file, argv, envp));
}

int fexecve(int fd, char *const argv[], char *const envp[])
{
  char name[32];
  (void)snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
  int before = beforeExec(name);
  return afterExec(before, REAL("fexecve", int (*)(int, char *const[], char *const[]))(fd, argv, envp));
}

/* The execl family: the arguments into an array, then the v form. */
#define EXEC_ARGS_LIMIT 4096

static int execArgs(const char *arg, va_list ap, char **argv, char ***envpReturn)
{
  int n = 0;
  argv[n++] = (char *)arg;
  while (arg != NULL) {
    if (n == EXEC_ARGS_LIMIT) {
      errno = E2BIG;
      return -1;
    }
    arg = va_arg(ap, const char *);
    argv[n++] = (char *)arg;
  }
  if (envpReturn != NULL)
    *envpReturn = va_arg(ap, char **);
  return 0;
}

/* EXEC_LIST -- in an execl-family wrapper: argv (and, with envp, the
 * environment after the NULL) from the arguments after arg */
#define EXEC_LIST(envp) \
  char *argv[EXEC_ARGS_LIMIT + 1]; \
  va_list ap; \
  int res; \
  va_start(ap, arg); \
  res = execArgs(arg, ap, argv, (envp)); \
  va_end(ap); \
  if (res != 0) \
    return res

int execl(const char *path, const char *arg, ...)
{
  EXEC_LIST(NULL);
  return execv(path, argv);
}

int execlp(const char *file, const char *arg, ...)
{
  EXEC_LIST(NULL);
  return execvp(file, argv);
}

int execle(const char *path, const char *arg, ...)
{
  char **envp;
  EXEC_LIST(&envp);
  return execve(path, argv, envp);
}
