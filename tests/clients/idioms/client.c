/* <tests/clients/idioms/client.c> -- a server-style client of telltale
 *
 * .design: design/tests.txt .test.trust design/plinth.txt .sol.signal.level
 * .sol.death.limits .sol.session .sol.fork .sol.exec
 *
 * A program written the way servers and runtimes are: a registry of its
 * own (tests/clients/idioms/eventdef.h, four kinds, string fields), threads that
 * emit at full speed, each event numbered in its thread's own sequence
 * and counted in a page mapped shared (tests/clients/idioms/page.h, IDIOMS_PAGE)
 * that survives any death and is shared with children.  Each mode is an
 * idiom; tests/tools/idioms.sh runs them and tests/clients/idioms/check.py compares the
 * logs with the page.
 *
 * Usage: IDIOMS_PAGE=FILE idioms_client MODE
 *   simple          one thread emits 20000 events, main returns    exit 0
 *   term            one thread emits until SIGTERM, whose handler
 *                   calls exit(3); says "ready" first               exit 3
 *   term-threads    the same, main and four workers emitting        exit 3
 *   segv-jmp        SIGSEGV, on a sigaltstack, handled (the handler
 *                   emits) and left by siglongjmp, 50 times
 *                   between events; then more events, return        exit 0
 *   alarm-jmp       SIGALRM every 200 us (setitimer), its handler
 *                   emits a timeout and siglongjmps out of whatever
 *                   main was emitting, 200 times; two workers emit
 *                   with SIGALRM blocked; then return               exit 0
 *   cancel-deferred four workers emit (pthread_testcancel every 64
 *                   events); main cancels and joins them, emits,
 *                   returns                                         exit 0
 *   cancel-async    the same, the workers cancelled asynchronously  exit 0
 *   pthread-exit    main emits, then pthread_exit while two
 *                   workers emit for 50 ms more                     exit 0
 *   spawn           main and two workers emit; main starts a child
 *                   by posix_spawn, one by vfork+exec (both this
 *                   program, mode child) and one by fork, which
 *                   emits; waits for them, emits, returns           exit 0
 *   child           (spawn's exec'd children) emit, return          exit 0
 *   overflow        three workers emit; a fourth sets a sigaltstack
 *                   of its own, emits, and recurses until its stack
 *                   runs out, storing the time in every frame       SIGSEGV
 *
 * Every process that emits records its log (tests/clients/idioms/page.h
 * idiomsProcRecord) once its first events are written and at its end.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <telltale/event.h>
#define IDIOMS_PAGE_FUNCTIONS
#include "page.h"

extern char **environ;

static IdiomsPage *page;
static const char *mode;
static _Atomic int stop;

static void emit(unsigned slot)
{
  IDIOMS_EMIT(page, slot, Accept, Request, Store, Note);
}

static uint64_t nowNs(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleepMs(long ms)
{
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0)
    ;
}

static void die(const char *what)
{
  perror(what);
  exit(99);
}

/* ready -- tell the driver the program is under way */
static void ready(void)
{
  static const char msg[] = "ready\n";
  (void)write(1, msg, sizeof msg - 1);
}

/* The workers: emit until told to stop (or until deadline, if set). */
typedef struct WorkerStruct {
  pthread_t thread;
  unsigned slot;
  int cancelAsync;              /* cancel-async: asynchronous cancellation */
  int testCancel;               /* cancel-deferred: a cancellation point every 64 */
  int blockAlarm;               /* alarm-jmp: SIGALRM is main's */
  uint64_t deadline;            /* pthread-exit: emit until then */
  char name[16];
} WorkerStruct;

#define WORKERS_MAX 8
static WorkerStruct workers[WORKERS_MAX];
static int nWorkers;

static void *worker(void *arg)
{
  WorkerStruct *w = arg;
  if (w->blockAlarm) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
  }
  EventThreadNameSet(w->name);
  if (w->cancelAsync)
    (void)pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
  for (uint64_t i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); ++i) {
    emit(w->slot);
    if (w->testCancel && i % 64 == 63)
      pthread_testcancel();
    if (w->deadline != 0 && i % 256 == 255 && nowNs() > w->deadline)
      break;
  }
  return NULL;
}

static void startWorkers(int n, int cancelAsync, int testCancel, int blockAlarm, uint64_t deadline)
{
  sigset_t alarm, old;
  /* A worker is made with SIGALRM blocked, not blocks it once it runs:
   * a timer that fired before a busy machine ran it would run main's
   * handler on the worker, and its siglongjmp to main's stack crashed
   * the program (one run in 20 under load). */
  sigemptyset(&alarm);
  sigaddset(&alarm, SIGALRM);
  if (blockAlarm)
    pthread_sigmask(SIG_BLOCK, &alarm, &old);
  for (int i = 0; i < n; ++i) {
    WorkerStruct *w = &workers[nWorkers++];
    snprintf(w->name, sizeof w->name, "worker-%d", i + 1);
    w->slot = idiomsSlotNew(page, w->name);
    w->cancelAsync = cancelAsync;
    w->testCancel = testCancel;
    w->blockAlarm = blockAlarm;
    w->deadline = deadline;
    if (pthread_create(&w->thread, NULL, worker, w) != 0)
      die("pthread_create");
  }
  if (blockAlarm)
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void joinWorkers(void)
{
  for (int i = 0; i < nWorkers; ++i)
    (void)pthread_join(workers[i].thread, NULL);
  nWorkers = 0;
}

static void workersAt(uint64_t n)
{
  for (int i = 0; i < nWorkers; ++i)
    while (atomic_load(&page->slots[workers[i].slot].done) < n)
      sleepMs(1);
}

/* term, term-threads: a server's SIGTERM handler that calls exit() */
static void onTerm(int sig)
{
  (void)sig;
  exit(3);
}

/* segv-jmp: a fault handler on a sigaltstack that reports and jumps back */
static sigjmp_buf faultJump;
static unsigned handlerSlot, mainSlot;
static volatile uintptr_t badAddress = 8;

static void onSegv(int sig, siginfo_t *info, void *context)
{
  (void)sig, (void)info, (void)context;
  emit(handlerSlot);            /* the server logs the fault */
  idiomsLeave(page, mainSlot);
  siglongjmp(faultJump, 1);
}

/* alarm-jmp: a request timeout by SIGALRM, left by siglongjmp */
static sigjmp_buf timeoutJump;
static volatile sig_atomic_t timeouts;

static void onAlarm(int sig)
{
  (void)sig;
  emit(handlerSlot);            /* the server logs the timeout */
  idiomsLeave(page, mainSlot);
  ++timeouts;
  siglongjmp(timeoutJump, 1);
}

/* overflow: recurse with frames the compiler cannot drop, storing the
 * time in each, until the stack runs out (depth never reaches the limit) */
static volatile unsigned long depthLimit = ~0ul;

static int recurse(volatile char *up, unsigned long depth)
{
  volatile char frame[4096];
  frame[0] = up != NULL ? up[0] : 1;
  atomic_store_explicit(&page->lastAliveNs, nowNs(), memory_order_relaxed);
  if (depth == depthLimit)
    return frame[0];
  return recurse(frame, depth + 1) + frame[1];
}

static void *recursor(void *arg)
{
  stack_t ss;
  unsigned slot = idiomsSlotNew(page, "recursor");
  (void)arg;
  EventThreadNameSet("recursor");
  /* its own alternate stack, as a program that handles overflow sets one */
  ss.ss_size = SIGSTKSZ;
  ss.ss_sp = malloc(ss.ss_size);
  ss.ss_flags = 0;
  if (ss.ss_sp == NULL || sigaltstack(&ss, NULL) != 0)
    die("sigaltstack");
  for (int i = 0; i < 20000; ++i)
    emit(slot);
  workersAt(20000);
  atomic_store(&page->faultSlot, slot);
  return (void *)(intptr_t)recurse(NULL, 0);
}

/* spawn: the children */
static char self[4096];

static int childMain(const char *how);

static pid_t spawnChild(const char *how)
{
  char *argv[] = {self, "child", (char *)how, NULL};
  pid_t pid;
  if (strcmp(how, "posix_spawn") == 0) {
    int res = posix_spawn(&pid, self, NULL, NULL, argv, environ);
    if (res != 0) {
      errno = res;
      die("posix_spawn");
    }
  } else if (strcmp(how, "vfork") == 0) {
    pid = vfork();
    if (pid == 0) {
      execve(self, argv, environ);
      _exit(127);
    }
    if (pid < 0)
      die("vfork");
  } else {                      /* fork: the child emits, no exec */
    pid = fork();
    if (pid == 0) {
      exit(childMain("fork-child"));
    }
    if (pid < 0)
      die("fork");
  }
  return pid;
}

static int childMain(const char *how)
{
  unsigned slot = idiomsSlotNew(page, how);
  unsigned proc = idiomsProcNew(page, slot);
  EventThreadNameSet(how);
  for (int i = 0; i < 5000; ++i)
    emit(slot);
  (void)EventFlushAll();
  idiomsProcRecord(page, proc, 0);
  for (int i = 0; i < 5000; ++i)
    emit(slot);
  (void)EventFlushAll();
  idiomsProcRecord(page, proc, 1);
  return 0;
}

int main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: IDIOMS_PAGE=FILE idioms_client MODE\n");
    return 2;
  }
  mode = argv[1];
  if (strcmp(mode, "child") == 0) {
    page = idiomsPageOpen(0);
    return childMain(argc > 2 ? argv[2] : "child");
  }
  page = idiomsPageOpen(1);
  mainSlot = idiomsSlotNew(page, "main");
  EventThreadNameSet("main");

  if (strcmp(mode, "simple") == 0) {
    for (int i = 0; i < 20000; ++i)
      emit(mainSlot);
    return 0;
  }

  if (strcmp(mode, "term") == 0 || strcmp(mode, "term-threads") == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = onTerm;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) != 0)
      die("sigaction");
    if (strcmp(mode, "term-threads") == 0)
      startWorkers(4, 0, 0, 0, 0);
    for (uint64_t i = 0;; ++i) {
      emit(mainSlot);
      if (i == 20000) {
        workersAt(20000);
        ready();
      }
    }
  }

  if (strcmp(mode, "segv-jmp") == 0) {
    struct sigaction sa;
    stack_t ss;
    ss.ss_size = SIGSTKSZ * 4;
    ss.ss_sp = malloc(ss.ss_size);
    ss.ss_flags = 0;
    if (ss.ss_sp == NULL || sigaltstack(&ss, NULL) != 0)
      die("sigaltstack");
    handlerSlot = idiomsSlotNew(page, "segv-handler");
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = onSegv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, NULL) != 0)
      die("sigaction");
    for (volatile int round = 0; round < 50; ++round) {
      if (sigsetjmp(faultJump, 1) == 0) {
        for (int i = 0; i < 500; ++i)
          emit(mainSlot);
        *(volatile int *)badAddress = 1;
        fprintf(stderr, "idioms_client: the fault did not fault\n");
        return 96;
      }
    }
    for (int i = 0; i < 5000; ++i)
      emit(mainSlot);
    return 0;
  }

  if (strcmp(mode, "alarm-jmp") == 0) {
    struct sigaction sa;
    struct itimerval it = {{0, 200}, {0, 200}}, off = {{0, 0}, {0, 0}};
    handlerSlot = idiomsSlotNew(page, "alarm-handler");
    startWorkers(2, 0, 0, 1, 0);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = onAlarm;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGALRM, &sa, NULL) != 0)
      die("sigaction");
    (void)sigsetjmp(timeoutJump, 1);
    if (timeouts == 0)
      setitimer(ITIMER_REAL, &it, NULL);
    while (timeouts < 200)
      emit(mainSlot);
    setitimer(ITIMER_REAL, &off, NULL);
    for (int i = 0; i < 5000; ++i)
      emit(mainSlot);
    atomic_store(&stop, 1);
    joinWorkers();
    return 0;
  }

  if (strcmp(mode, "cancel-deferred") == 0 || strcmp(mode, "cancel-async") == 0) {
    int async = strcmp(mode, "cancel-async") == 0;
    startWorkers(4, async, !async, 0, 0);
    workersAt(5000);
    sleepMs(rand() % 10 + (int)(nowNs() % 10));
    for (int i = 0; i < nWorkers; ++i)
      (void)pthread_cancel(workers[i].thread);
    joinWorkers();
    for (int i = 0; i < 5000; ++i)
      emit(mainSlot);
    return 0;
  }

  if (strcmp(mode, "pthread-exit") == 0) {
    startWorkers(2, 0, 0, 0, nowNs() + 50000000u);
    for (int i = 0; i < 5000; ++i)
      emit(mainSlot);
    pthread_exit(NULL);
  }

  if (strcmp(mode, "spawn") == 0) {
    unsigned proc = idiomsProcNew(page, mainSlot);
    pid_t pids[3];
    const char *hows[3] = {"posix_spawn", "vfork", "fork"};
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
      die("/proc/self/exe");
    self[n] = '\0';
    startWorkers(2, 0, 0, 0, 0);
    for (int i = 0; i < 5000; ++i)
      emit(mainSlot);
    (void)EventFlushAll();
    idiomsProcRecord(page, proc, 0);
    for (int c = 0; c < 3; ++c) {
      pids[c] = spawnChild(hows[c]);
      for (int i = 0; i < 1000; ++i)
        emit(mainSlot);
    }
    for (int c = 0; c < 3; ++c) {
      int status;
      if (waitpid(pids[c], &status, 0) != pids[c] || !WIFEXITED(status) ||
          WEXITSTATUS(status) != 0) {
        fprintf(stderr, "idioms_client: the %s child ended with status 0x%x\n", hows[c], status);
        return 98;
      }
    }
    for (int i = 0; i < 5000; ++i)
      emit(mainSlot);
    atomic_store(&stop, 1);
    joinWorkers();
    (void)EventFlushAll();
    idiomsProcRecord(page, proc, 1);
    return 0;
  }

  if (strcmp(mode, "overflow") == 0) {
    pthread_t r;
    startWorkers(3, 0, 0, 0, 0);
    if (pthread_create(&r, NULL, recursor, NULL) != 0)
      die("pthread_create");
    for (;;)
      emit(mainSlot);
  }

  fprintf(stderr, "idioms_client: unknown mode %s\n", mode);
  return 2;
}
