/* <src/plinth/plinththread.c> -- POSIX plinth: threads, the lock and fork
 *
 * .design: design/plinth.txt .plinth
 *
 * Part of the plinth (plinth.c says what it is built with and returns):
 * threads' exits, ids and names, the process-wide lock and the writer's
 * queue lock, fork, and telltale's own threads.
 */

#include "plinth.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "plinthint.h"



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
  PlinthCopyTruncated(buf, size, name);
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

/* PlinthOwnThreadCreate -- plinthint.h: the creator's mask is the new
 * thread's first, so it is blocked around pthread_create; else a
 * process-directed signal (a program's timer) may find the thread
 * before it runs at all, and run the program's handler there.
 * design/plinth.txt .sol.signal.own */
int PlinthOwnThreadCreate(pthread_t *thread, const pthread_attr_t *attr,
                          void *(*start)(void *), void *arg)
{
  sigset_t all, saved;
  int blocked, res;
  PlinthAllButFaults(&all);
  blocked = pthread_sigmask(SIG_BLOCK, &all, &saved) == 0;
  res = pthread_create(thread, attr, start, arg);
  if (blocked)
    (void)pthread_sigmask(SIG_SETMASK, &saved, NULL);
  return res;
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
  return PlinthOwnThreadCreate(&writerThread, NULL, writerRun, (void *)(uintptr_t)run);
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
