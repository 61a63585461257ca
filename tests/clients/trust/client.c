/* <tests/clients/trust/client.c> -- a client of telltale that counts what it emits
 *
 * .design: design/tests.txt .test.trust
 *
 * A program written as a user would from the README: a registry of its
 * own (tests/clients/trust/eventdef.h), four worker threads named worker-1 to
 * worker-4 that emit Step events at full speed, each with the worker's
 * own sequence number, and a count of every event emitted kept outside
 * telltale, in a file mapped shared (TRUST_COUNTS), which survives the
 * process's death.  A count is stored after the emitter returns, so the
 * log may hold one event more than the count, never one fewer.  Then it
 * ends in the way its argument names; tests/clients/trust/check.py compares the
 * log with the counts.
 *
 * Usage: trust_client MODE
 *   return        main returns while the workers emit           exit 0
 *   exit-worker   worker 1 calls exit(3) while the others emit  exit 3
 *   finish        main calls EventFinish while the workers emit
 *                 (counts before it in atFinish), then returns  exit 0
 *   exec          main calls EventExecBefore and execs true while
 *                 the workers emit                               exit 0
 *   exec-failed   the same, but the exec fails: EventExecFailed,
 *                 then main returns while the workers emit      exit 0
 *   pthread-exit  main calls pthread_exit; the workers do STEPS
 *                 steps each and return                         exit 0
 *   segv          worker 2 emits Fault and stores through a
 *                 bad pointer                                    SIGSEGV
 *   segv-slow     the same, with a program handler installed
 *                 after telltale's that sleeps 50 ms (the others
 *                 go on emitting) and falls back to the default  SIGSEGV
 *   abort         main calls abort()                             SIGABRT
 *   assert        worker 3's EVENT_ASSERT fails                  SIGABRT
 *   overflow      worker 4 overflows its stack                   SIGSEGV
 *   kill          main says "ready" on stdout and waits to be
 *                 killed                                         SIGKILL
 *   fork          main forks a child that emits STEPS steps as
 *                 worker 7 and exits; the workers do STEPS steps
 *                 and return                                     exit 0
 *   signal        SIGUSR1 interrupts worker 1 again and again; its
 *                 handler emits Handled; the workers do STEPS
 *                 steps and return                               exit 0
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <telltale/event.h>

#define WORKERS 4
#define STEPS 50000u            /* steps per worker in the bounded modes */
#define FAULT_AFTER 5000u       /* steps before a worker faults or exits */

/* The counts, in a file mapped shared: tests/clients/trust/check.py reads them. */
typedef struct CountsStruct {
  _Atomic uint64_t steps[8];    /* Step events emitted, by worker (7: the child) */
  _Atomic uint64_t handled[8];  /* Handled events emitted, by worker */
  _Atomic uint64_t atFinish[8]; /* steps when main called EventFinish */
} CountsStruct;

static CountsStruct *counts;
static const char *mode;
static _Atomic int bounded;     /* the workers stop after STEPS steps */
static pthread_t workers[WORKERS];

static uint64_t check(uint64_t worker, uint64_t seq)
{
  uint64_t z = (worker << 40 ^ seq) + UINT64_C(0x9E3779B97F4A7C15);
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return (z ^ (z >> 31)) & 0xFFFFFFFFu;
}

static void step(EventU worker, EventW seq)
{
  EVENT_UWW(Step, worker, seq, (EventW)check(worker, seq));
  atomic_store_explicit(&counts->steps[worker], seq + 1, memory_order_release);
}

static void sleepMs(long ms)
{
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0)
    ;
}

/* overflow -- recurse with frames the compiler cannot drop, until the
 * stack runs out (depth never reaches the limit) */
static volatile unsigned long depthLimit = ~0ul;

static int overflow(volatile char *up, unsigned long depth)
{
  volatile char frame[4096];
  frame[0] = up != NULL ? up[0] : 1;
  if (depth == depthLimit)
    return frame[0];
  return overflow(frame, depth + 1) + frame[1];
}

/* badPointer -- a pointer that faults, hidden from the compiler */
static volatile uintptr_t badAddress = 8;

/* othersAt -- have the workers but w taken n steps? */
static int othersAt(EventU w, EventW n)
{
  for (unsigned o = 1; o <= WORKERS; ++o)
    if (o != w && atomic_load_explicit(&counts->steps[o], memory_order_acquire) < n)
      return 0;
  return 1;
}

static void *worker(void *arg)
{
  EventU w = (EventU)(uintptr_t)arg;
  char name[16];
  snprintf(name, sizeof name, "worker-%u", (unsigned)w);
  EventThreadNameSet(name);
  for (EventW seq = 0; !atomic_load(&bounded) || seq < STEPS; ++seq) {
    if (seq == FAULT_AFTER) {
      if (w == 1 && strcmp(mode, "exit-worker") == 0)
        exit(3);
      if (w == 2 && strncmp(mode, "segv", 4) == 0) {
        /* The others first reach this step too (for at most 5 s), so
         * that their rings hold what the traceback shows, however the
         * machine schedules them (trust.sh segv-4096). */
        for (int tries = 0; tries < 5000 && !othersAt(w, FAULT_AFTER); ++tries)
          sleepMs(1);
        EVENT_U(Fault, w);
        *(volatile int *)badAddress = 1;
      }
      if (w == 3 && strcmp(mode, "assert") == 0) {
        EVENT_U(Fault, w);
        EVENT_ASSERT(seq < FAULT_AFTER);
      }
      if (w == 4 && strcmp(mode, "overflow") == 0) {
        EVENT_U(Fault, w);
        (void)overflow(NULL, 0);
      }
    }
    step(w, seq);
  }
  return NULL;
}

/* slowHandler -- a program's own SIGSEGV handler that takes its time,
 * then gives the fault back to the default action */
static void slowHandler(int sig)
{
  sleepMs(50);
  signal(sig, SIG_DFL);
}

static void handled(int sig)
{
  uint64_t n = atomic_load(&counts->handled[1]);
  (void)sig;
  EVENT_UW(Handled, 1, n);
  atomic_store(&counts->handled[1], n + 1);
}

static _Atomic int workersDone;

static void *signaller(void *arg)
{
  (void)arg;
  while (!atomic_load(&workersDone)) {
    (void)pthread_kill(workers[0], SIGUSR1);
    usleep(20);
  }
  return NULL;
}

static void startWorkers(void)
{
  for (uintptr_t w = 1; w <= WORKERS; ++w)
    if (pthread_create(&workers[w - 1], NULL, worker, (void *)w) != 0) {
      perror("trust_client: pthread_create");
      exit(99);
    }
}

static void joinWorkers(void)
{
  for (int w = 0; w < WORKERS; ++w)
    (void)pthread_join(workers[w], NULL);
}

int main(int argc, char **argv)
{
  const char *path = getenv("TRUST_COUNTS");
  int fd;
  if (argc != 2 || path == NULL) {
    fprintf(stderr, "usage: TRUST_COUNTS=FILE trust_client MODE\n");
    return 2;
  }
  mode = argv[1];
  fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || ftruncate(fd, sizeof *counts) != 0 ||
      (counts = mmap(NULL, sizeof *counts, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0))
      == MAP_FAILED) {
    perror(path);
    return 99;
  }
  EventThreadNameSet("main");
  atomic_store(&bounded, strcmp(mode, "pthread-exit") == 0 || strcmp(mode, "fork") == 0 ||
                         strcmp(mode, "signal") == 0);
  if (strcmp(mode, "segv-slow") == 0)
    signal(SIGSEGV, slowHandler);
  if (strcmp(mode, "signal") == 0)
    signal(SIGUSR1, handled);
  startWorkers();
  if (strcmp(mode, "return") == 0) {
    sleepMs(5);
    return 0;
  } else if (strcmp(mode, "finish") == 0) {
    sleepMs(5);
    for (int w = 0; w < 8; ++w)
      atomic_store(&counts->atFinish[w], atomic_load(&counts->steps[w]));
    EventFinish();
    sleepMs(5);
    return 0;
  } else if (strcmp(mode, "exec") == 0 || strcmp(mode, "exec-failed") == 0) {
    /* the workers are still emitting when the image goes (.sol.exec) */
    int failing = strcmp(mode, "exec-failed") == 0, before;
    sleepMs(5);
    before = EventExecBefore();
    execlp(failing ? "telltale-no-such-program" : "true", "true", (char *)NULL);
    EventExecFailed(before, errno);
    if (!failing)
      return 96;
    sleepMs(5);
    return 0;
  } else if (strcmp(mode, "pthread-exit") == 0) {
    pthread_exit(NULL);
  } else if (strcmp(mode, "abort") == 0) {
    sleepMs(5);
    abort();
  } else if (strcmp(mode, "kill") == 0) {
    while (atomic_load(&counts->steps[WORKERS]) < 1000)
      sleepMs(1);
    printf("ready\n");
    fflush(stdout);
    for (;;)
      sleepMs(1000);
  } else if (strcmp(mode, "fork") == 0) {
    pid_t pid;
    int status;
    sleepMs(5);
    pid = fork();
    if (pid == 0) {
      EventThreadNameSet("child");
      for (EventW seq = 0; seq < STEPS; ++seq)
        step(7, seq);
      exit(0);
    }
    joinWorkers();
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
      return 98;
    return 0;
  } else if (strcmp(mode, "signal") == 0) {
    pthread_t s;
    if (pthread_create(&s, NULL, signaller, NULL) != 0)
      return 99;
    joinWorkers();
    atomic_store(&workersDone, 1);
    (void)pthread_join(s, NULL);
    return 0;
  }
  joinWorkers();                /* the modes where a worker ends it all */
  fprintf(stderr, "trust_client: %s did not end the program\n", mode);
  return 97;
}
