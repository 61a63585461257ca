/* <tests/unit/death_child.c> -- a program that emits known events and dies
 *
 * .design: design/plinth.txt .sol.death .sol.death.limits .sol.signal
 *          .sol.assert .test.death
 *
 * Run by tests/unit/test_death.c, one fresh process per case, with
 * TELLTALE_FILE naming the log it is to write (with its live file
 * unless TELLTALE_MAP=off) and stderr sent to a file.  Not a CMocka
 * program: its whole job is to die in the way its argument names.
 *
 * Usage: death_child DEATH
 *
 * Every death except kill first emits the prelude: with the output of
 * kind Noisy turned off, TestW 0 .. CHILD_EVENTS-1, and one TestPAW
 * (kind Noisy, so in the flight recorder but never in the log) with
 * w = CHILD_NOISY_W right after TestW CHILD_NOISY_AFTER.  (The thread
 * cases leave Noisy on, for their TestThread, and emit no TestPAW.)
 * Then:
 *
 *   assert       EVENT_ASSERT(deathZero == 1) fails         SIGABRT
 *   segv         a store to a PROT_NONE page                SIGSEGV
 *   late-segv    sleeps CHILD_LATE_MS, then emits TestW
 *                CHILD_EVENTS .. CHILD_EVENTS+CHILD_LATE_EVENTS-1
 *                and does segv: a traceback whose clock rate comes
 *                from a ClockSync (.sol.clock)                SIGSEGV
 *   bus          a store to a shared mapping of an empty
 *                file, beyond its end                       SIGBUS
 *   ill          __builtin_trap() (ud2 on x86-64)           SIGILL
 *   fpe          integer division by zero                   SIGFPE
 *   abort        abort()                                    SIGABRT
 *   exit-thread  a second thread emits CHILD_THREAD_EVENTS TestThread
 *                and calls exit(CHILD_EXIT_STATUS) while main waits
 *                                                           exit 3
 *   return-main  main returns CHILD_RETURN_STATUS           exit 5
 *   thread-exit  CHILD_THREADS threads emit CHILD_THREAD_EVENTS
 *                TestThread each and return; main joins them and
 *                returns 0                                  exit 0
 *   chain        the program's own SIGSEGV handler is installed
 *                between EventFatalSignals(0) and (1), so it is the
 *                disposition telltale found; then segv.  The handler
 *                runs first, writes CHILD_CHAIN_MARKER to stderr and
 *                _exit(42)s.
 *   after        the program installs its own SIGSEGV handler after
 *                telltale's, which chains to it; then segv.  Same
 *                handler.                                   exit 42
 *   kill         no prelude: TestW 0, 1, 2, ... for ever; after each
 *                1000 the count so far is written (a uint64_t) to
 *                fd 3, a pipe to the parent, which kills it with
 *                SIGKILL at a moment of its choosing.
 *   stall-kill   no prelude: a second thread emits TestThread 1, seq
 *                0, 1, ... until its first block's write after the
 *                lock, which never returns (pwritev, interposed here);
 *                then main emits CHILD_STALL_EVENTS TestW, whose
 *                blocks go after the stalled one's place, writes the
 *                stalled thread's seq (a uint64_t) to fd 3, and
 *                raise(SIGKILL)s: a block placed and never written,
 *                whose header only the live file has (.sol.writer.at)
 *   drops-kill, drops-exit, drops-segv
 *                no prelude: the log (TELLTALE_FILE) and fd 3, a pipe
 *                nobody reads, as its streams, 4 KiB buffers, and the
 *                writer thread with the drop policy: TestW 0 ..
 *                CHILD_DROP_EVENTS-1, most of them dropped (counted, not
 *                yet reported); then raise(SIGKILL), _exit(CHILD_DROPS_
 *                STATUS), or segv.        SIGKILL, exit 6, SIGSEGV
 *
 * Faults the program handles itself (.sol.signal.recover); see
 * handledDeath below.  Each installs the program's own SIGSEGV handler
 * after telltale's (chained), or with -before in its name between
 * EventFatalSignals(0) and (1) (found at install):
 *   recover[-before]  a barrier fault (a store to a PROT_NONE page the
 *                handler unprotects) first, CHILD_RECOVERED_MARKER on
 *                stderr, then the prelude, then segv, which the handler
 *                does not know: it puts back the action it replaced
 *                (SIG_DFL) and returns                      SIGSEGV
 *   recover-reset  the same with SA_RESETHAND               SIGSEGV
 *   recover-exit  the barrier fault, raise(SIGSEGV) (the handler
 *                returns), SIG_IGN and raise(SIGSEGV), a barrier fault
 *                the handler leaves by siglongjmp, then the prelude
 *                and a return from main                     exit 0
 *   unfixable    the prelude, then segv; the handler writes
 *                CHILD_HANDLER_MARKER and returns without fixing it
 *                                                           SIGSEGV
 *   fallback     the same, but the handler also puts SIG_DFL back
 *                (signal()) before it returns               SIGSEGV
 *   handler-abort  the same, but the handler calls abort()  SIGABRT
 */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "event.h"
#include "plinth.h"
#include "death_child.h"

static volatile int deathZero = 0;  /* volatile: the compiler cannot see the death coming */

/* prelude -- the events every death but kill emits first.  Without
 * noisy (the thread cases, whose TestThread is of kind Noisy), Noisy's
 * output stays on and there is no TestPAW. */
static void prelude(int noisy)
{
  if (noisy)
    (void)EventControlReset(EVENT_KIND_BIT(EventKindNoisy));
  for (EventW i = 0; i < CHILD_EVENTS; ++i) {
    EVENT_W(TestW, i);
    if (noisy && i == CHILD_NOISY_AFTER)
      EVENT_PAW(TestPAW, (void *)&deathZero, (EventA)0x1000, CHILD_NOISY_W);
  }
}

static void *threadEmit(void *arg)
{
  EventU thread = (EventU)(uintptr_t)arg;
  for (EventW seq = 0; seq < CHILD_THREAD_EVENTS; ++seq)
    EVENT_UWW(TestThread, thread, seq, ChildCheck(thread, seq));
  return NULL;
}

static void *threadExitProcess(void *arg)
{
  (void)threadEmit(arg);
  exit(CHILD_EXIT_STATUS);
}

/* ownHandler -- the program's own SIGSEGV handler */
static void ownHandler(int sig)
{
  static const char marker[] = CHILD_CHAIN_MARKER "\n";
  (void)sig;
  (void)!write(2, marker, sizeof marker - 1);
  _exit(CHILD_CHAIN_STATUS);
}

static void installOwn(void)
{
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = ownHandler;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGSEGV, &action, NULL) != 0) {
    perror("death_child: sigaction");
    exit(99);
  }
}

static void segv(void)
{
  volatile int *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if ((void *)p == MAP_FAILED) {
    perror("death_child: mmap");
    exit(99);
  }
  *p = 1;
}

static void bus(void)
{
  int fd = open("bus.tmp", O_RDWR | O_CREAT | O_TRUNC, 0600);
  volatile int *p;
  if (fd < 0 || ftruncate(fd, 0) != 0) {
    perror("death_child: bus.tmp");
    exit(99);
  }
  p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if ((void *)p == MAP_FAILED) {
    perror("death_child: mmap");
    exit(99);
  }
  *p = 1;                       /* beyond the end of the file: SIGBUS */
}

static void fpe(void)
{
#if defined(__x86_64__)
  /* idiv by zero in assembly: UndefinedBehaviorSanitizer (build/san)
   * would otherwise report the C division itself and exit, and the
   * point is the hardware's SIGFPE. */
  int64_t a = 1, d = 0, q;
  __asm__ volatile("cqto; idivq %2" : "=a"(q), "+d"(d) : "r"((int64_t)deathZero), "a"(a));
  (void)q;
#else
  volatile int zero = deathZero;
  volatile int q = 1 / zero;
  (void)q;
#endif
}

static void kill9Loop(void)
{
  for (EventW seq = 0;; ++seq) {
    EVENT_W(TestW, seq);
    if ((seq + 1) % 1000 == 0) {
      uint64_t count = seq + 1;
      if (write(3, &count, sizeof count) != sizeof count)
        _exit(98);              /* the parent has gone: stop */
    }
  }
}

/* Faults the program handles itself.  design/plinth.txt
 * .sol.signal.recover ---------------------------------------------- */

static volatile char *barrierPage;      /* PROT_NONE until the handler fixes it */
static struct sigaction barrierPrevious; /* what barrierHandler replaced */
static sigjmp_buf barrierJump;
static volatile sig_atomic_t barrierJumps;  /* leave by siglongjmp */

static void marker(const char *text)
{
  (void)!write(2, text, strlen(text));
  (void)!write(2, "\n", 1);
}

/* barrierHandler -- a garbage collector's barrier: a fault on its page
 * is fixed; a fault it does not know is handed back to the action it
 * replaced, and returns to fault again there; a signal sent by kill or
 * raise is nothing to fix */
static void barrierHandler(int sig, siginfo_t *info, void *context)
{
  char *addr = info->si_addr;
  (void)context;
  if (info->si_code <= 0)
    return;
  if (barrierPage != NULL && addr >= barrierPage && addr < barrierPage + 4096) {
    (void)mprotect((void *)barrierPage, 4096, PROT_READ | PROT_WRITE);
    if (barrierJumps)
      siglongjmp(barrierJump, 1);
    return;
  }
  (void)sigaction(sig, &barrierPrevious, NULL);
}

static void installBarrier(int flags)
{
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = barrierHandler;
  action.sa_flags = SA_SIGINFO | flags;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGSEGV, &action, &barrierPrevious) != 0) {
    perror("death_child: sigaction");
    exit(99);
  }
}

/* barrierFault -- a store to a fresh PROT_NONE page, which the handler fixes */
static void barrierFault(void)
{
  void *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("death_child: mmap");
    exit(99);
  }
  barrierPage = p;
  barrierPage[100] = 1;         /* faults; fixed; the store is done again */
  if (barrierPage[100] != 1) {
    fprintf(stderr, "death_child: the store after the barrier fault is lost\n");
    exit(94);
  }
  barrierPage = NULL;
}

static void unfixableHandler(int sig)
{
  (void)sig;
  marker(CHILD_HANDLER_MARKER);
}

static void fallbackHandler(int sig)
{
  marker(CHILD_HANDLER_MARKER);
  (void)signal(sig, SIG_DFL);
}

static void abortHandler(int sig)
{
  (void)sig;
  marker(CHILD_HANDLER_MARKER);
  abort();
}

/* handledDeath -- the deaths with a handler of the program's own:
 * -1 if death is not one of them, else the exit status (or dies) */
static int handledDeath(const char *death)
{
  int before = strstr(death, "-before") != NULL;
  void (*plain)(int) = NULL;
  if (strncmp(death, "recover", 7) != 0 && strcmp(death, "unfixable") != 0 &&
      strcmp(death, "fallback") != 0 && strcmp(death, "handler-abort") != 0)
    return -1;
  if (before)
    (void)EventFatalSignals(0);
  if (strcmp(death, "unfixable") == 0)
    plain = unfixableHandler;
  else if (strcmp(death, "fallback") == 0)
    plain = fallbackHandler;
  else if (strcmp(death, "handler-abort") == 0)
    plain = abortHandler;
  if (plain != NULL) {
    if (signal(SIGSEGV, plain) == SIG_ERR)
      return 99;
  } else
    installBarrier(strcmp(death, "recover-reset") == 0 ? SA_RESETHAND : 0);
  if (before && EventFatalSignals(1) != 0)
    return 99;
  if (plain != NULL) {
    prelude(1);
    segv();
    return 95;
  }
  barrierFault();
  marker(CHILD_RECOVERED_MARKER);
  if (strcmp(death, "recover-reset") == 0) {
    struct sigaction now;
    if (sigaction(SIGSEGV, NULL, &now) != 0 || now.sa_handler != SIG_DFL) {
      fprintf(stderr, "death_child: SA_RESETHAND did not put SIG_DFL back\n");
      return 93;
    }
  }
  if (strcmp(death, "recover-exit") == 0) {
    if (raise(SIGSEGV) != 0)    /* sent, not a fault: the handler returns */
      return 99;
    (void)signal(SIGSEGV, SIG_IGN);
    if (raise(SIGSEGV) != 0)    /* ignored */
      return 99;
    installBarrier(0);
    barrierJumps = 1;
    if (sigsetjmp(barrierJump, 1) == 0)
      barrierFault();           /* left by siglongjmp from the handler */
    barrierPage = NULL;
    prelude(1);
    return 0;
  }
  prelude(1);
  segv();                       /* not the barrier's page: falls back */
  return 95;
}

/* dropsEmit -- the drops deaths' emitting (above) */
static void dropsEmit(void)
{
  PlinthStream log, stalled;
  const char *path = getenv("TELLTALE_FILE");
  if (path == NULL || PlinthStreamOpenFile(&log, path) != 0
      || PlinthStreamOpenFd(&stalled, 3, 0) != 0 || EventStreamAddBinary(log) != 0 || EventStreamAddBinary(stalled) != 0
      || EventBufferSizeSet(4096) != 0 || EventWriterAsync(1, 1) != 0)
    _exit(120);
  for (EventW i = 0; i < CHILD_DROP_EVENTS; ++i)
    EVENT_W(TestW, i);
}

/* stall-kill (above): pwritev64, the write after the lock
 * (PlinthStreamWriteTwoAt), never returns for the stalling thread once
 * it is armed; every other call is libc's. */
static _Atomic int stallState;          /* 0 off, 1 armed, 2 stalled */
static pthread_t stallThread;
static _Atomic uint64_t stallSeq;       /* the seq the thread is emitting */

ssize_t stallPwritev(int fd, const struct iovec *iov, int count, int64_t offset)
  __asm__("pwritev64");         /* the plinth's, built with 64-bit offsets */

ssize_t stallPwritev(int fd, const struct iovec *iov, int count, int64_t offset)
{
  static ssize_t (*real)(int, const struct iovec *, int, int64_t);
  if (atomic_load(&stallState) == 1 && pthread_equal(pthread_self(), stallThread)) {
    atomic_store(&stallState, 2);
    for (;;)
      pause();
  }
  if (real == NULL)
    *(void **)&real = dlsym(RTLD_NEXT, "pwritev64");
  return real(fd, iov, count, offset);
}

static void *stallEmit(void *arg)
{
  (void)arg;
  stallThread = pthread_self();
  atomic_store(&stallState, 1);
  for (EventW seq = 0;; ++seq) {
    atomic_store(&stallSeq, seq);
    EVENT_UWW(TestThread, 1, seq, ChildCheck(1, seq));
  }
  return NULL;
}

static void stallKill(void)
{
  pthread_t thread;
  uint64_t seq;
  if (pthread_create(&thread, NULL, stallEmit, NULL) != 0)
    _exit(99);
  for (unsigned waited = 0; atomic_load(&stallState) != 2; ++waited) {
    if (waited == 20000)
      _exit(98);                /* 20 s, and no write stalled */
    usleep(1000);
  }
  for (EventW i = 0; i < CHILD_STALL_EVENTS; ++i)
    EVENT_W(TestW, i);
  seq = atomic_load(&stallSeq);
  if (write(3, &seq, sizeof seq) != sizeof seq)
    _exit(97);
  (void)raise(SIGKILL);
}

int main(int argc, char **argv)
{
  const char *death = argc == 2 ? argv[1] : "";
  pthread_t threads[CHILD_THREADS];
  int status;

  if (strcmp(death, "kill") == 0) {
    kill9Loop();
    return 97;
  }
  if (strcmp(death, "stall-kill") == 0) {
    stallKill();
    return 2;
  }
  if (strncmp(death, "drops-", 6) == 0) {
    dropsEmit();
    if (strcmp(death, "drops-kill") == 0)
      (void)raise(SIGKILL);
    else if (strcmp(death, "drops-exit") == 0)
      _exit(CHILD_DROPS_STATUS);
    else if (strcmp(death, "drops-segv") == 0)
      segv();
    return 2;
  }
  if ((status = handledDeath(death)) >= 0)
    return status;
  if (strcmp(death, "chain") == 0) {
    /* The disposition telltale finds when it installs is the program's:
     * it is called first.  .sol.signal.recover */
    (void)EventFatalSignals(0);
    installOwn();
    if (EventFatalSignals(1) != 0)
      return 99;
  }
  prelude(strcmp(death, "exit-thread") != 0 && strcmp(death, "thread-exit") != 0);
  if (strcmp(death, "assert") == 0) {
    EVENT_ASSERT(deathZero == 1);
  } else if (strcmp(death, "segv") == 0 || strcmp(death, "chain") == 0) {
    segv();
  } else if (strcmp(death, "late-segv") == 0) {
    usleep(CHILD_LATE_MS * 1000);
    for (EventW i = CHILD_EVENTS; i < CHILD_EVENTS + CHILD_LATE_EVENTS; ++i)
      EVENT_W(TestW, i);
    segv();
  } else if (strcmp(death, "after") == 0) {
    installOwn();               /* chained to: .sol.signal.after */
    segv();
  } else if (strcmp(death, "bus") == 0) {
    bus();
  } else if (strcmp(death, "ill") == 0) {
    __builtin_trap();
  } else if (strcmp(death, "fpe") == 0) {
    fpe();
  } else if (strcmp(death, "abort") == 0) {
    abort();
  } else if (strcmp(death, "exit-thread") == 0) {
    if (pthread_create(&threads[0], NULL, threadExitProcess, (void *)(uintptr_t)1) != 0)
      return 99;
    (void)pthread_join(threads[0], NULL);
    return 96;                  /* not reached: the thread exits the process */
  } else if (strcmp(death, "return-main") == 0) {
    return CHILD_RETURN_STATUS;
  } else if (strcmp(death, "thread-exit") == 0) {
    for (uintptr_t t = 0; t < CHILD_THREADS; ++t)
      if (pthread_create(&threads[t], NULL, threadEmit, (void *)(t + 1)) != 0)
        return 99;
    for (uintptr_t t = 0; t < CHILD_THREADS; ++t)
      (void)pthread_join(threads[t], NULL);
    return 0;
  } else {
    fprintf(stderr, "death_child: unknown death '%s'\n", death);
    return 2;
  }
  fprintf(stderr, "death_child: %s did not kill me\n", death);
  return 95;
}
