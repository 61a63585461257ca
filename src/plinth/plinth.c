/* <src/plinth/plinth.c> -- POSIX plinth
 *
 * .design: design/plinth.txt .plinth
 *
 * The implementation of plinth.h for Linux and other POSIX systems with
 * pthreads.  It is built with -D_GNU_SOURCE for pthread_getname_np,
 * program_invocation_short_name, syscall(SYS_gettid) and the static
 * recursive mutex initialiser.  It depends on libc and pthreads only.
 *
 * Functions that can fail return 0 or a positive errno code and never
 * print (plinth.h).  Checks on the interface (a NULL stream, say) are
 * assertions: they are the caller's mistakes, not run-time conditions.
 */

#include "plinth.h"
#include "plinthclock.h"

#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include "plinthint.h"

/* Clocks.  design/runtime.txt .sol.clock
 *
 * PlinthClockFrequency must be cheap, because the runtime calls it when
 * it starts: no sleeping.  It takes the first of:
 *   1. the TSC frequency that some Linux kernels publish in
 *      /sys/devices/system/cpu/cpu0/tsc_freq_khz;
 *   2. a calibration: count cycles while CLOCK_MONOTONIC advances
 *      PLINTH_CALIBRATE_NS (about 0.2 ms of spinning).
 * The estimate is good to a few parts in 10^4; the tools refine it from
 * ClockSync events.  It is found once, under pthread_once.
 */

#define PLINTH_CALIBRATE_NS     200000u   /* spin this long to calibrate */
#define PLINTH_CALIBRATE_TRIES  5         /* readings per sample; keep the tightest */
#define PLINTH_TSC_FREQ_PATH    "/sys/devices/system/cpu/cpu0/tsc_freq_khz"

static pthread_once_t clockOnce = PTHREAD_ONCE_INIT;
static uint64_t clockFrequency;           /* Hz; 0 if unknown; set under clockOnce */

/* PlinthMonotonicNs -- CLOCK_MONOTONIC in nanoseconds */

uint64_t PlinthMonotonicNs(void)
{
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
    return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* PlinthRealtimeNs -- CLOCK_REALTIME in nanoseconds since the epoch */

uint64_t PlinthRealtimeNs(void)
{
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
    return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if PLINTH_CLOCK_IS_CYCLES

/* clockFrequencyPublished -- the kernel's TSC frequency in Hz, or 0 */

static uint64_t clockFrequencyPublished(void)
{
  char text[32];
  uint64_t khz = 0;
  ssize_t n;
  int fd;

  fd = open(PLINTH_TSC_FREQ_PATH, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  do
    n = read(fd, text, sizeof text - 1);
  while (n < 0 && errno == EINTR);
  (void)close(fd);
  if (n <= 0)
    return 0;
  text[n] = '\0';
  for (const char *p = text; *p >= '0' && *p <= '9'; ++p) {
    if (khz > UINT64_MAX / 10000)
      return 0;
    khz = khz * 10 + (uint64_t)(*p - '0');
  }
  return khz * 1000;
}

/* clockSample -- read the cycle counter and CLOCK_MONOTONIC together
 *
 * Brackets clock_gettime between two cycle counts, takes their midpoint,
 * and keeps the tightest of a few tries, so that an interrupt during one
 * reading does not skew the calibration.
 */

static void clockSample(uint64_t *cyclesReturn, uint64_t *nsReturn)
{
  uint64_t best = UINT64_MAX;

  for (int i = 0; i < PLINTH_CALIBRATE_TRIES; ++i) {
    uint64_t before = PlinthClockNow();
    uint64_t ns = PlinthMonotonicNs();
    uint64_t after = PlinthClockNow();
    if (after >= before && after - before < best) {
      best = after - before;
      *cyclesReturn = before + best / 2;
      *nsReturn = ns;
    }
  }
  if (best == UINT64_MAX) {         /* the counter never went forward */
    *cyclesReturn = PlinthClockNow();
    *nsReturn = PlinthMonotonicNs();
  }
}

/* clockFrequencyCalibrate -- cycles per second over a short spin, or 0 */

static uint64_t clockFrequencyCalibrate(void)
{
  uint64_t cycles0, ns0, cycles1, ns1;

  clockSample(&cycles0, &ns0);
  if (ns0 == 0)
    return 0;                       /* no CLOCK_MONOTONIC */
  while (PlinthMonotonicNs() - ns0 < PLINTH_CALIBRATE_NS)
    continue;
  clockSample(&cycles1, &ns1);
  if (cycles1 <= cycles0 || ns1 <= ns0)
    return 0;
  /* In double: (cycles1 - cycles0) * 1e9 overflows 64 bits if the
     thread was descheduled for seconds. */
  return (uint64_t)((double)(cycles1 - cycles0) * 1e9 / (double)(ns1 - ns0) + 0.5);
}

#endif /* PLINTH_CLOCK_IS_CYCLES */

/* clockFrequencyInit -- find the frequency, once */

static void clockFrequencyInit(void)
{
#if PLINTH_CLOCK_IS_CYCLES
  uint64_t hz = clockFrequencyPublished();
  if (hz == 0)
    hz = clockFrequencyCalibrate();
  clockFrequency = hz;
#else
  clockFrequency = 1000000000u;     /* PlinthClockNow is PlinthMonotonicNs */
#endif
}

/* PlinthClockFrequency -- the rate of PlinthClockNow in Hz, 0 if unknown */

uint64_t PlinthClockFrequency(void)
{
  if (pthread_once(&clockOnce, clockFrequencyInit) != 0)
    return 0;
  return clockFrequency;
}


/* Threads.  design/plinth.txt .plinth.thread
 *
 * PlinthThreadOnExit uses one pthread key, whose destructor runs when a
 * thread exits through pthread_exit or by returning from its start
 * routine.  It does not run for the main thread when the process exits:
 * the runtime uses PlinthAtExit for that.  The key's value points to the
 * thread's own record of fn and arg, so it is never NULL (a NULL value
 * would skip the destructor) even when arg is.
 */

typedef struct ThreadExitStruct {
  void (*fn)(void *);
  void *arg;
} ThreadExitStruct;

static pthread_once_t threadExitOnce = PTHREAD_ONCE_INIT;
static pthread_key_t threadExitKey;
static int threadExitKeyError;            /* set under threadExitOnce */
static _Thread_local ThreadExitStruct threadExit;

/* threadExitDestructor -- call the thread's fn(arg) as it exits */

static void locksAbandon(void);

static void threadExitDestructor(void *value)
{
  ThreadExitStruct *te = value;
  void (*fn)(void *) = te->fn;

  locksAbandon();

  /* Clear first: if fn registers again, the key's value is set again and
     pthreads calls this destructor again, up to
     PTHREAD_DESTRUCTOR_ITERATIONS times. */
  te->fn = NULL;
  if (fn != NULL)
    fn(te->arg);
}

/* threadExitKeyCreate -- create the key, once */

static void threadExitKeyCreate(void)
{
  threadExitKeyError = pthread_key_create(&threadExitKey, threadExitDestructor);
}

/* PlinthThreadOnExit -- call fn(arg) when the calling thread exits */

int PlinthThreadOnExit(void (*fn)(void *), void *arg)
{
  int res;

  assert(fn != NULL);
  res = pthread_once(&threadExitOnce, threadExitKeyCreate);
  if (res != 0)
    return res;
  if (threadExitKeyError != 0)
    return threadExitKeyError;
  threadExit.fn = fn;
  threadExit.arg = arg;
  return pthread_setspecific(threadExitKey, &threadExit);
}

/* PlinthThreadOSId -- the kernel's thread id (gettid) */

uint64_t PlinthThreadOSId(void)
{
  return (uint64_t)syscall(SYS_gettid);
}

/* PlinthThreadAlive -- is the process's thread of kernel id osid still
 * there?  1 when it cannot be told. */

int PlinthThreadAlive(uint64_t osid)
{
  return syscall(SYS_tgkill, (long)getpid(), (long)osid, 0) == 0 || errno != ESRCH;
}

/* copyTruncated -- copy a string into a buffer, truncating to fit */

static void copyTruncated(char *buf, size_t size, const char *s)
{
  size_t length = strlen(s);
  if (length >= size)
    length = size - 1;
  memcpy(buf, s, length);
  buf[length] = '\0';
}

/* PlinthThreadName -- the calling thread's name, truncated to fit buf
 *
 * Linux names are at most 15 characters; a thread that was never named
 * has the name of the thread that created it, ultimately the program's.
 */

int PlinthThreadName(char *buf, size_t size)
{
  char name[64];
  int res;

  assert(buf != NULL);
  if (size == 0)
    return ERANGE;
  res = pthread_getname_np(pthread_self(), name, sizeof name);
  if (res != 0) {
    buf[0] = '\0';
    return res;
  }
  copyTruncated(buf, size, name);
  return 0;
}


/* The lock.  design/plinth.txt .plinth
 *
 * One recursive mutex.  PlinthAtFork makes it safe across fork(): the
 * forking thread claims it before the fork, so no other thread is inside
 * the runtime's slow path when the child's copy is made, and the child
 * reinitialises its copy (it cannot unlock it: glibc records the owner
 * by thread id, which differs in the child).
 */

static pthread_mutex_t plinthLock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

/* PlinthLockClaim -- claim the process-wide recursive lock */

/* Once the program has a handler of its own (PlinthWrapActive), the lock's
 * holder blocks signals, so that a handler on the same thread cannot
 * enter the runtime's slow path while the holder is half way through
 * it (the lock is recursive: it would not stop it).  Faults stay
 * unblocked: one raised here would be killed outright while blocked.
 * design/plinth.txt .sol.signal.level */
_Atomic int PlinthWrapActive;
static _Thread_local unsigned lockDepth;
static _Thread_local int lockBlocked;
static _Thread_local sigset_t lockSavedMask;

/* PlinthAllButFaults -- plinthint.h */
void PlinthAllButFaults(sigset_t *set)
{
  sigfillset(set);
  sigdelset(set, SIGSEGV);
  sigdelset(set, SIGBUS);
  sigdelset(set, SIGILL);
  sigdelset(set, SIGFPE);
  sigdelset(set, SIGTRAP);
}

/* lockBlock -- before this thread claims the lock, if it holds it not
 * already: block signals first, so that no handler runs inside
 * pthread_mutex_lock after it took the mutex but before it noted its
 * owner (the handler's claim would wait for itself).  Returns 1 if they
 * were blocked, with the mask to restore in *saved. */
static int lockBlock(sigset_t *saved)
{
  sigset_t all;
  if (lockDepth > 0 || !atomic_load_explicit(&PlinthWrapActive, memory_order_relaxed))
    return 0;
  PlinthAllButFaults(&all);
  return pthread_sigmask(SIG_BLOCK, &all, saved) == 0;
}

/* lockClaimed -- the lock is claimed: note the depth, and at the first
 * claim the mask to restore (blocking signals now if the program's
 * first handler came, from another thread, since lockBlock looked) */
static void lockClaimed(int blocked, const sigset_t *saved)
{
  if (lockDepth == 0) {
    if (blocked)
      lockSavedMask = *saved;
    else
      blocked = lockBlock(&lockSavedMask);
    lockBlocked = blocked;
  }
  ++lockDepth;
}

/* Cancellation.  design/plinth.txt .sol.cancel
 *
 * A thread cancelled while it held the lock would hold it for ever, and
 * one cancelled half way through a block's write would leave a hole in
 * the log; so the lock, the queue lock and the writes after the lock
 * hold cancellation off, and a cancel waits until they are done.  Held
 * after the signals are blocked, so that no handler comes between the
 * state's change and its note. */
static _Thread_local unsigned cancelDepth;
static _Thread_local int cancelOld, cancelOldType;

/* The type is made deferred too: glibc's SIGCANCEL handler (2.36) acts
 * on an asynchronous cancel by the type alone.  Not enough even so: a
 * cancel pthread_cancel sent before the hold acts in the next
 * cancellable system call (a write under the lock), which makes the
 * type asynchronous while it runs and waits for the signal if it is
 * blocked.  A thread that dies so, holding the lock, gives it up as it
 * exits (threadExitDestructor): its block may be cut short, and the
 * log says so, but no thread waits for ever. */
void PlinthCancelHold(void)
{
  if (cancelDepth == 0) {
    (void)pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &cancelOldType);
    (void)pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancelOld);
  }
  ++cancelDepth;
}

void PlinthCancelRelease(void)
{
  assert(cancelDepth > 0);
  if (--cancelDepth == 0) {
    (void)pthread_setcancelstate(cancelOld, NULL);
    (void)pthread_setcanceltype(cancelOldType, NULL);  /* a pending cancel may act here */
  }
}

void PlinthLockClaim(void)
{
  sigset_t saved;
  int blocked = lockBlock(&saved);
  int res;
  PlinthCancelHold();
  res = pthread_mutex_lock(&plinthLock);
  assert(res == 0);
  (void)res;
  lockClaimed(blocked, &saved);
}

/* PlinthLockRelease -- release the process-wide recursive lock */

void PlinthLockRelease(void)
{
  int res, restore = 0;
  sigset_t mask;
  assert(lockDepth > 0);
  if (--lockDepth == 0 && lockBlocked) {
    restore = 1;
    mask = lockSavedMask;
  }
  res = pthread_mutex_unlock(&plinthLock);
  assert(res == 0);   /* EPERM: released by a thread that did not claim it */
  (void)res;
  PlinthCancelRelease();
  if (restore)
    (void)pthread_sigmask(SIG_SETMASK, &mask, NULL);
}

/* PlinthLockHeld -- plinth.h */

int PlinthLockHeld(void)
{
  return lockDepth > 0;
}

/* The writer's queue lock and its condition.  design/control.txt .sol.writer */
static pthread_mutex_t queueLock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int queueHeld;     /* this thread holds queueLock */

/* locksAbandon -- a thread exits holding the locks (an asynchronous
 * cancel in a system call under them, PlinthCancelHold): give them up,
 * so that no other thread waits for ever.  .sol.cancel */
static void locksAbandon(void)
{
  if (queueHeld) {
    queueHeld = 0;
    (void)pthread_mutex_unlock(&queueLock);
  }
  while (lockDepth > 0) {
    --lockDepth;
    (void)pthread_mutex_unlock(&plinthLock);
  }
  cancelDepth = 0;
}
static pthread_cond_t queueCond = PTHREAD_COND_INITIALIZER;

/* lockForkChild -- give the child fresh, unowned locks */

static void lockForkChild(void)
{
  queueLock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
  queueCond = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
  plinthLock = (pthread_mutex_t)PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
  /* fork() ran with the lock held (the atfork prepare handler), and
   * perhaps with signals blocked by it */
  if (lockDepth > 0 && lockBlocked)
    (void)pthread_sigmask(SIG_SETMASK, &lockSavedMask, NULL);
  lockDepth = 0;
  lockBlocked = 0;
  if (cancelDepth > 0) {
    cancelDepth = 1;
    PlinthCancelRelease();
  }
}


/* Memory */

/* PlinthAlloc -- malloc */

void *PlinthAlloc(size_t size)
{
  return malloc(size);
}

/* PlinthFree -- free */

void PlinthFree(void *p)
{
  free(p);
}

/* PlinthPagesAlloc -- zeroed pages straight from the kernel: mmap, which
 * a signal handler may call, as it may not malloc */

void *PlinthPagesAlloc(size_t size)
{
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* PlinthPagesFree -- give back what PlinthPagesAlloc gave */

void PlinthPagesFree(void *p, size_t size)
{
  if (p != NULL)
    (void)munmap(p, size);
}


/* Process.  design/plinth.txt .plinth.process */

/* PlinthGetEnv -- an environment variable, or NULL */

const char *PlinthGetEnv(const char *name)
{
  assert(name != NULL);
  return getenv(name);
}

/* PlinthProcessId -- getpid */

uint64_t PlinthProcessId(void)
{
  return (uint64_t)getpid();
}

/* PlinthProgramName -- the program's short name, truncated to fit buf
 *
 * program_invocation_short_name is argv[0] after its last '/'.  If
 * that is empty, the kernel's name for the process, /proc/self/comm.
 */

int PlinthProgramName(char *buf, size_t size)
{
  const char *name = program_invocation_short_name;
  char comm[64];

  assert(buf != NULL);
  if (size == 0)
    return ERANGE;
  if (name == NULL || name[0] == '\0') {
    ssize_t n;
    int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      int res = errno;
      buf[0] = '\0';
      return res;
    }
    do
      n = read(fd, comm, sizeof comm - 1);
    while (n < 0 && errno == EINTR);
    (void)close(fd);
    if (n < 0)
      n = 0;
    if (n > 0 && comm[n - 1] == '\n')
      --n;
    comm[n] = '\0';
    name = comm;
  }
  copyTruncated(buf, size, name);
  return 0;
}

/* PlinthAtExit -- call fn at normal process exit (atexit), and, for a
 * library, when it is unloaded.  .sol.unload
 *
 * What tells the two apart: a semaphore in a page that is never
 * unmapped, posted by an exit handler that belongs to no library (so
 * that dlclose does not run it), which exit runs before any library's
 * destructor. */
extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);
static sem_t *exitSeen;

int PlinthAtExit(void (*fn)(void))
{
  assert(fn != NULL);
  if (exitSeen == NULL) {
    sem_t *sem = PlinthPagesAlloc(sizeof *sem);
    if (sem != NULL && sem_init(sem, 0, 0) == 0 &&
        __cxa_atexit((void (*)(void *))(void (*)(void))sem_post, sem, NULL) == 0)
      exitSeen = sem;
  }
  return atexit(fn) == 0 ? 0 : ENOMEM;
}

/* PlinthObjectName -- the file of the object (program or library)
 * that holds address, or "" */
void PlinthObjectName(const void *address, char *buf, size_t size)
{
  Dl_info info;
  if (size == 0)
    return;
  buf[0] = '\0';
  if (dladdr(address, &info) != 0 && info.dli_fname != NULL)
    copyTruncated(buf, size, info.dli_fname);
}

/* PlinthExitMark -- the exit handler that tells exit from unloading,
 * made again now, after the program has started: one made by a shared
 * library's constructor at start-up runs after the dynamic linker's,
 * which runs libraries' destructors, and so cannot tell them apart
 * there; one made later, by a library that dlopen loads, runs before. */
void PlinthExitMark(void)
{
  static _Atomic int marked;
  if (exitSeen != NULL && !atomic_exchange(&marked, 1))
    (void)__cxa_atexit((void (*)(void *))(void (*)(void))sem_post, exitSeen, NULL);
}

/* PlinthExiting -- is the process exiting (rather than this library
 * being unloaded)?  1 when it cannot be told. */
int PlinthExiting(void)
{
  int value = 0;
  return exitSeen == NULL || sem_getvalue(exitSeen, &value) != 0 || value > 0;
}

/* PlinthLoadedByDlopen -- was the caller's library loaded by dlopen
 * (rather than with the program), judged from its constructor: the
 * library comes after libc among the loaded objects, and dlopen is on
 * the stack.  Only then may it be unloaded.  .sol.unload */
int PlinthLoadedByDlopen(void)
{
  return PlinthLoadedByDlopenAt((const void *)PlinthLoadedByDlopen);
}

/* PlinthLoadedByDlopenAt -- the same for the object that holds address,
 * from that object's constructor (a registry's eventgen.c, .reg.many) */
int PlinthLoadedByDlopenAt(const void *address)
{
#ifdef __GLIBC__
  Dl_info info;
  struct link_map *map = NULL, *m;
  void *frames[64];
  int n, afterLibc = 0;
  if (dladdr1(address, &info, (void **)&map, RTLD_DL_LINKMAP) == 0 ||
      map == NULL)
    return 0;
  for (m = map->l_prev; m != NULL && !afterLibc; m = m->l_prev)
    afterLibc = m->l_name != NULL && strstr(m->l_name, "/libc.so") != NULL;
  if (!afterLibc)
    return 0;                   /* (the usual case: no unwinding needed) */
  n = backtrace(frames, 64);
  for (int i = 0; i < n; ++i)
    if (dladdr(frames[i], &info) != 0 && info.dli_sname != NULL &&
        (strcmp(info.dli_sname, "dlopen") == 0 || strcmp(info.dli_sname, "dlmopen") == 0))
      return 1;
#endif
  return 0;
}

/* PlinthThreadOnExitStop -- no more calls at threads' exits: the code
 * is about to be unloaded.  .sol.unload */
void PlinthThreadOnExitStop(void)
{
  if (threadExitKeyError == 0 && pthread_once(&threadExitOnce, threadExitKeyCreate) == 0
      && threadExitKeyError == 0) {
    (void)pthread_key_delete(threadExitKey);
    threadExitKeyError = EINVAL;
  }
}

static pthread_once_t forkOnce = PTHREAD_ONCE_INIT;
static int forkLockError;                 /* set under forkOnce */

/* forkLockRegister -- make the lock safe across fork, once
 *
 * Registered before any caller's handler, so that the lock's prepare
 * handler runs last before fork and its child handler runs first after.
 */

static void forkLockRegister(void)
{
  forkLockError = pthread_atfork(PlinthLockClaim, PlinthLockRelease, lockForkChild);
}

/* PlinthAtFork -- call child() in the child after fork() */

int PlinthAtFork(void (*child)(void))
{
  int res;

  assert(child != NULL);
  res = pthread_once(&forkOnce, forkLockRegister);
  if (res != 0)
    return res;
  if (forkLockError != 0)
    return forkLockError;
  return pthread_atfork(NULL, NULL, child);
}

/* The writer's thread and queue lock.  design/control.txt .sol.writer */

/* PlinthOwnThreadRun -- plinthint.h: signals are the program's
 * threads' business, not telltale's own threads' (the faults excepted,
 * which no thread may block); they have names, and PlinthLastThread
 * does not count them. */
void PlinthOwnThreadRun(const char *name, void (*run)(void))
{
  sigset_t all;
  PlinthAllButFaults(&all);
  (void)pthread_sigmask(SIG_SETMASK, &all, NULL);
#ifdef __GLIBC__
  (void)pthread_setname_np(pthread_self(), name);
#else
  (void)name;
#endif
  PlinthThreadOwn();
  run();
  PlinthThreadOwnEnd();
}

static void *writerRun(void *arg)
{
  PlinthOwnThreadRun("telltale-write", (void (*)(void))(uintptr_t)arg);
  return NULL;
}

/* PlinthWriterStart -- a thread running run(); PlinthWriterJoin waits
 * for it to end (only an unloading library does: .sol.unload) */
static pthread_t writerThread;

int PlinthWriterStart(void (*run)(void))
{
  return pthread_create(&writerThread, NULL, writerRun, (void *)(uintptr_t)run);
}

void PlinthWriterJoin(void)
{
  (void)pthread_join(writerThread, NULL);
}

void PlinthQueueClaim(void)
{
  PlinthCancelHold();
  (void)pthread_mutex_lock(&queueLock);
  queueHeld = 1;
}

void PlinthQueueRelease(void)
{
  queueHeld = 0;
  (void)pthread_mutex_unlock(&queueLock);
  PlinthCancelRelease();
}

void PlinthQueueWait(void)
{
  (void)pthread_cond_wait(&queueCond, &queueLock);
}

void PlinthQueueWaitFor(uint64_t ns)
{
  struct timespec until;
  (void)clock_gettime(CLOCK_REALTIME, &until);   /* the condition's clock */
  until.tv_sec += (time_t)(ns / 1000000000u);
  until.tv_nsec += (long)(ns % 1000000000u);
  if (until.tv_nsec >= 1000000000L) {
    until.tv_nsec -= 1000000000L;
    ++until.tv_sec;
  }
  (void)pthread_cond_timedwait(&queueCond, &queueLock, &until);
}

/* PlinthThreadOwn -- plinth.h.  The kernel's ids of telltale's own
 * threads, the writer and the control thread, which PlinthLastThread
 * does not count.  .sol.writer.last */
static _Atomic long ownThreads[2];

void PlinthThreadOwn(void)
{
  long self = syscall(SYS_gettid), none = 0;
  for (size_t i = 0; i < sizeof ownThreads / sizeof ownThreads[0]; ++i)
    if (atomic_compare_exchange_strong(&ownThreads[i], &none, self) || none == self)
      return;
    else
      none = 0;
}

void PlinthThreadOwnEnd(void)
{
  long self = syscall(SYS_gettid);
  for (size_t i = 0; i < sizeof ownThreads / sizeof ownThreads[0]; ++i) {
    long was = self;
    (void)atomic_compare_exchange_strong(&ownThreads[i], &was, 0);
  }
}

static int threadOwn(long tid)
{
  for (size_t i = 0; i < sizeof ownThreads / sizeof ownThreads[0]; ++i)
    if (atomic_load(&ownThreads[i]) == tid)
      return 1;
  return 0;
}

/* PlinthLastThread -- plinth.h.  Every task of the process but the
 * caller is a zombie (a main thread that called pthread_exit stays one
 * until the process ends) or gone.  No malloc: the allocation recorder
 * calls it from its writer thread. */
int PlinthLastThread(void)
{
#if defined(__linux__) && defined(SYS_getdents64)
  char buf[4096], path[64], stat[512];
  long self = syscall(SYS_gettid);
  int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC), alive = 0;
  long n;
  if (dir < 0)
    return 0;
  while (!alive && (n = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0)
    for (long at = 0; at < n && !alive; ) {
      /* struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name */
      unsigned short reclen;
      const char *name = buf + at + 19;
      memcpy(&reclen, buf + at + 16, sizeof reclen);
      at += reclen;
      if (name[0] < '0' || name[0] > '9' || strtol(name, NULL, 10) == self
          || threadOwn(strtol(name, NULL, 10)))
        continue;
      (void)snprintf(path, sizeof path, "/proc/self/task/%s/stat", name);
      {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t got = fd < 0 ? -1 : read(fd, stat, sizeof stat - 1);
        const char *paren;
        if (fd >= 0)
          (void)close(fd);
        if (got <= 0)
          continue;             /* gone meanwhile */
        stat[got] = '\0';
        paren = strrchr(stat, ')');
        alive = paren == NULL || (paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X');
      }
    }
  (void)close(dir);
  return n >= 0 && !alive;
#else
  return 0;
#endif
}

void PlinthQueueWake(void)
{
  (void)pthread_cond_broadcast(&queueCond);
}

/* PlinthLockTry -- claim the lock unless another thread holds it */

int PlinthLockTry(void)
{
  sigset_t saved;
  int blocked = lockBlock(&saved);
  PlinthCancelHold();
  if (pthread_mutex_trylock(&plinthLock) != 0) {
    PlinthCancelRelease();
    if (blocked)
      (void)pthread_sigmask(SIG_SETMASK, &saved, NULL);
    return 0;
  }
  lockClaimed(blocked, &saved);
  return 1;
}

/* PlinthFdWrite -- plinthint.h */

int PlinthFdWrite(int fd, const unsigned char *p, size_t size, size_t most)
{
  while (size > 0) {
    size_t chunk = size > most ? most : size;
    ssize_t n = write(fd, p, chunk);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return errno;     /* EAGAIN too: a non-blocking fd is not waited on */
    }
    if (n == 0)
      return EIO;       /* write made no progress and gave no reason */
    p += n;
    size -= (size_t)n;
  }
  return 0;
}

/* PlinthWriteError -- write to standard error; async-signal-safe
 *
 * Only write(), retried on EINTR and short writes.  Any other failure is
 * ignored: there is nowhere left to report it.  errno is preserved, so
 * a signal handler may call this.
 */

void PlinthWriteError(const char *buf, size_t size)
{
  int saved = errno;

  assert(buf != NULL || size == 0);
  (void)PlinthFdWrite(STDERR_FILENO, (const unsigned char *)buf, size, SSIZE_MAX);
  errno = saved;
}

/* PlinthWriteFd -- write to a descriptor, as PlinthWriteError */

void PlinthWriteFd(int fd, const char *buf, size_t size)
{
  int saved = errno;

  assert(buf != NULL || size == 0);
  (void)PlinthFdWrite(fd, (const unsigned char *)buf, size, SSIZE_MAX);
  errno = saved;
}

/* PlinthSleepNs -- nanosleep, which is async-signal-safe */

void PlinthSleepNs(uint64_t ns)
{
  struct timespec ts;
  int saved = errno;

  ts.tv_sec = (time_t)(ns / 1000000000u);
  ts.tv_nsec = (long)(ns % 1000000000u);
  (void)nanosleep(&ts, NULL);
  errno = saved;
}

/* PlinthStrError -- strerror */

const char *PlinthStrError(int code)
{
  return strerror(code);
}
