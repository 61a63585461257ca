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
 *     runs with the thread-local flag inside set (recorderInside), so the wrapper passes
 *     it through without emitting: an event is never emitted from inside
 *     another.
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
#include "recorderint.h"

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

/* recorderInside -- recorderint.h */
_Thread_local int recorderInside __attribute__((tls_model("initial-exec")));


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

/* recorderReady -- recorderint.h: ready(), for recorderStart */
int recorderReady(void)
{
  return ready();
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
  int was = recorderInside, res;
  recorderInside = 1;
  res = pthread_create(thread, attr, run, arg);
  recorderInside = was;
  return res;
}


/* The interposed functions ------------------------------------------ */

/* recorderMode -- recorderint.h */
_Atomic int recorderMode;

#define RECORD_MODE() atomic_load_explicit(&recorderMode, memory_order_relaxed)

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
  int was = recorderInside;
  void *p;
  if (RECORD_MODE() == RECORD_OFF)
    recorderStart();
  recorderInside = 1;
  p = EventReserveIn(source, kind, size);
  recorderInside = was;
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
int recorderSignalEnter(uintptr_t low, uintptr_t high, uintptr_t sp)
{
  int token = eventSignalEnter(low, high, sp) | recorderInside << 8;
  if ((recorderInside == INSIDE || recorderInside == INSIDE_STACK) && RECORD_MODE() != RECORD_OFF)
    recorderInside = INSIDE_HANDLER;
  else if (recorderInside != 0 && recorderInside != INSIDE_HANDLER)
    recorderInside = INSIDE_LOST;
  return token;
}

void recorderSignalLeave(int token)
{
  recorderInside = token >> 8;
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
    if (!recorderInside || recorderInside == INSIDE_HANDLER) \
      emit; \
    else if (recorderInside == INSIDE_LOST) \
      recorderLost(); \
  } while (0)

/* RECORD_AT -- RECORD(emit) in the usual case, else slow: a call to a
 * function made of RECORD_SLOW_AT, kept out of line so that the usual
 * case keeps no registers for it */
#define RECORD_AT(p, emit, slow) \
  do { \
    if (!recorderInside) { \
      if (__builtin_expect(RECORD_MODE() == RECORD_PLAIN, 1)) { \
        emit; \
      } else { \
        slow; \
      } \
    } else if (recorderInside == INSIDE_HANDLER) { \
      emit; \
    } else if (recorderInside == INSIDE_LOST) \
      recorderLost(); \
    else if (recorderInside == INSIDE_STACK) \
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
    recorderInside = 1; \
    if (stacksDepth == 0) { \
      emit; \
    } else { \
      EventU stack; \
      recorderInside = INSIDE_STACK; \
      stack = StackHere(frame); \
      recorderInside = 1; \
      emitAt; \
    } \
    recorderInside = 0; \
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
    recorderInside = INSIDE_STACK;
    stack = StackHere(frame);
    recorderInside = 0;
  }
  before = PlinthClockNow();
  p = realRealloc(old, size);
  recorderInside = 1;
  reallocRecord(before, old, p, size, stacksDepth != 0, stack);
  recorderInside = 0;
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
  if (__builtin_expect(!recorderInside && RECORD_MODE() != RECORD_PLAIN, 0)) {
    p = reallocSlow(realRealloc, old, size, HERE);
    __asm__ __volatile__("" : : "r"(p) : "memory");   /* not a tail call: frame stays ours */
    return p;
  }
  before = PlinthClockNow();
  p = realRealloc(old, size);
  if (__builtin_expect(recorderInside == INSIDE_STACK, 0)) {
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
