/* <tests/clients/drops/client.c> -- a client that drops events and dies
 *
 * .design: design/control.txt .sol.dropped design/tests.txt .test.drops
 *
 * A program written as a user would from the README, with a registry
 * of its own (tests/clients/drops/eventdef.h): its log (TELLTALE_FILE) and a
 * pipe that a thread of its own reads slowly (4 KiB a millisecond) are
 * its two binary streams, so that with TELLTALE_WRITER=async,drop and
 * small buffers the writer falls behind and most events are dropped.
 * Four workers emit Step (kind Work) with their own sequence numbers,
 * and Mark (kind Side) every eighth step.  What each worker emitted is
 * counted outside telltale, in a file mapped shared (DROPS_COUNTS),
 * which outlives the process: "started" is stored before the emitter
 * is called, "done" after it returns, so an event of a process killed
 * between the two may or may not be in the log.  Then the program ends
 * as its argument says; tests/clients/drops/check.py compares the log, and the
 * drops eventcnv reports, with the counts.
 *
 * Usage: drops_client MODE
 *   return       the workers do STEPS steps; main joins them, returns  exit 0
 *   labels       the same, each worker also calling EventLabel every
 *                other step, so that its Telltale buffer (which the
 *                EventsDropped reports go to) drops as well            exit 0
 *   return-racy  main returns while the workers emit                   exit 0
 *   exit-worker  worker 1 calls exit(3) while the others emit           exit 3
 *   _exit        main calls _exit(4) while the workers emit            exit 4
 *   abort        main calls abort() while the workers emit             SIGABRT
 *   segv         worker 2 stores through a bad pointer                 SIGSEGV
 *   kill         the workers emit until the parent kills the process   SIGKILL
 *   flush-kill   each worker calls EventFlush after FLUSH_AT steps
 *                (the drops so far reported), then main raises
 *                SIGKILL once all are FLUSH_AT steps further           SIGKILL
 *   finish-kill  main has the workers wait (each after DEATH_AFTER
 *                steps), calls EventFinish, adds
 *                streams anew (the log TELLTALE_FILE with ".2"), lets
 *                the workers go on in that second session, and raises
 *                SIGKILL 100 ms later                                  SIGKILL
 *   finish-return  the same, but then main joins the workers and
 *                returns                                               exit 0
 *   fork         main forks while the workers emit; the child adds its
 *                own log (TELLTALE_FILE with ".child") and slow pipe,
 *                emits CHILD_STEPS steps as worker 7 (most dropped) and
 *                raises SIGKILL; main waits for it, then the workers do
 *                STEPS steps and main returns                          exit 0
 *   fork-kill    the same, but then the workers emit until the parent
 *                kills the process                                    SIGKILL
 * Counts of the forked child are in slot 7 of the same file.
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
#include <telltale/plinth.h>

#define WORKERS 4
#define STEPS 100000u           /* steps per worker in the bounded modes */
#define FOREVER 50000000u       /* the unbounded modes' steps, should no one kill them */
#define DEATH_AFTER 20000u      /* steps before a worker exits or faults */
#define FLUSH_AT 20000u         /* flush-kill: each worker's EventFlush */
#define CHILD_STEPS 40000u      /* the forked child's steps */

/* The counts, in a file mapped shared: tests/clients/drops/check.py reads them. */
typedef struct CountsStruct {
  _Atomic uint64_t stepsStarted[8], stepsDone[8];   /* Step, by worker */
  _Atomic uint64_t marksStarted[8], marksDone[8];   /* Mark, by worker */
} CountsStruct;

static CountsStruct *counts;
static const char *mode;
static uint64_t steps = STEPS;
static int labels;              /* labels: EventLabel every other step */
static pthread_t workers[WORKERS];
static volatile uintptr_t badAddress = 8;
static _Atomic int pauseAsked, pausedWorkers;   /* finish-*: the workers wait */

static void die(const char *what)
{
  fprintf(stderr, "drops_client: %s: %s\n", what, strerror(errno));
  _exit(120);
}

static void sleepMs(long ms)
{
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0)
    ;
}

/* step -- one step of worker w, counted before and after */
static void step(EventU w, EventW seq)
{
  atomic_store(&counts->stepsStarted[w], seq + 1);
  EVENT_UW(Step, w, seq);
  atomic_store(&counts->stepsDone[w], seq + 1);
  if (seq % 8 == 0) {
    atomic_store(&counts->marksStarted[w], seq / 8 + 1);
    EVENT_UW(Mark, w, seq / 8);
    atomic_store(&counts->marksDone[w], seq / 8 + 1);
  }
}

/* slowReader -- reads the pipe at about 4 KiB a millisecond; emits nothing */
static void *slowReader(void *arg)
{
  int fd = (int)(intptr_t)arg;
  char buf[4096];
  while (read(fd, buf, sizeof buf) > 0)
    sleepMs(1);
  return NULL;
}

/* streamsAdd -- the log at path and a slowly read pipe, as the binary streams */
static void streamsAdd(const char *path)
{
  PlinthStream log, slow;
  int fds[2];
  pthread_t reader;
  if (pipe(fds) != 0)
    die("pipe");
  if (pthread_create(&reader, NULL, slowReader, (void *)(intptr_t)fds[0]) != 0)
    die("pthread_create");
  (void)pthread_detach(reader);
  if (PlinthStreamOpenFile(&log, path) != 0 || PlinthStreamOpenFd(&slow, fds[1], 1) != 0
      || EventStreamAddBinary(log) != 0 || EventStreamAddBinary(slow) != 0)
    die("streams");
}

static int allAt(uint64_t n)
{
  for (unsigned w = 1; w <= WORKERS; ++w)
    if (atomic_load(&counts->stepsDone[w]) < n)
      return 0;
  return 1;
}

static void *worker(void *arg)
{
  EventU w = (EventU)(uintptr_t)arg;
  for (EventW seq = 0; seq < steps; ++seq) {
    step(w, seq);
    if (seq + 1 == DEATH_AFTER) {
      /* every worker under way first: a thread whose first event
       * comes after the exit's end is not in the log (another matter) */
      while (!allAt(1))
        sleepMs(1);
      /* finish-*: each worker waits here until main has finished the
       * session, so that every worker goes on into the second one
       * (one that ran to its end first would never pause) */
      if (strncmp(mode, "finish-", 7) == 0) {
        while (!atomic_load(&pauseAsked))
          sleepMs(1);
        atomic_fetch_add(&pausedWorkers, 1);
        while (atomic_load(&pauseAsked))
          sleepMs(1);
      }
      if (w == 1 && strcmp(mode, "exit-worker") == 0)
        exit(3);
      if (w == 2 && strcmp(mode, "segv") == 0)
        *(volatile int *)badAddress = 1;
    }
    if (seq + 1 == FLUSH_AT && strcmp(mode, "flush-kill") == 0)
      EventFlush();
    if (labels && seq % 2 == 0)
      EventLabel((EventA)(seq + 1), w);
  }
  return NULL;
}

/* forkChild -- the child of fork: its own streams, then steps as
 * worker 7 until it has dropped some, then SIGKILL */
static void forkChild(void)
{
  char path[4096];
  snprintf(path, sizeof path, "%s.child", getenv("TELLTALE_FILE"));
  streamsAdd(path);
  for (EventW seq = 0; seq < CHILD_STEPS; ++seq)
    step(7, seq);
  (void)raise(SIGKILL);
  _exit(121);
}

int main(int argc, char **argv)
{
  const char *countsPath = getenv("DROPS_COUNTS"), *log = getenv("TELLTALE_FILE");
  int fd;
  mode = argc == 2 ? argv[1] : "";
  if (countsPath == NULL || log == NULL)
    return 2;
  fd = open(countsPath, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || ftruncate(fd, sizeof *counts) != 0)
    die(countsPath);
  counts = mmap(NULL, sizeof *counts, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (counts == MAP_FAILED)
    die("mmap");
  if (strcmp(mode, "return-racy") == 0 || strcmp(mode, "_exit") == 0
      || strcmp(mode, "abort") == 0 || strcmp(mode, "kill") == 0
      || strcmp(mode, "exit-worker") == 0 || strcmp(mode, "segv") == 0
      || strcmp(mode, "fork-kill") == 0 || strcmp(mode, "finish-kill") == 0)
    steps = FOREVER;
  labels = strcmp(mode, "labels") == 0;
  streamsAdd(log);
  for (unsigned w = 1; w <= WORKERS; ++w)
    if (pthread_create(&workers[w - 1], NULL, worker, (void *)(uintptr_t)w) != 0)
      die("pthread_create");
  if (strcmp(mode, "kill") == 0 || strcmp(mode, "exit-worker") == 0
      || strcmp(mode, "segv") == 0)
    for (;;)
      pause();
  while (!allAt(DEATH_AFTER))
    sleepMs(1);
  if (strcmp(mode, "return-racy") == 0)
    return 0;
  if (strcmp(mode, "_exit") == 0)
    _exit(4);
  if (strcmp(mode, "abort") == 0)
    abort();
  if (strncmp(mode, "finish-", 7) == 0) {
    char second[4096];
    atomic_store(&pauseAsked, 1);
    while (atomic_load(&pausedWorkers) < WORKERS)
      sleepMs(1);
    EventFinish();              /* the workers go on in a second session */
    snprintf(second, sizeof second, "%s.2", log);
    streamsAdd(second);
    atomic_store(&pauseAsked, 0);
    sleepMs(100);
    if (strcmp(mode, "finish-kill") == 0)
      (void)raise(SIGKILL);
  }
  if (strcmp(mode, "flush-kill") == 0) {
    while (!allAt(FLUSH_AT * 2))
      sleepMs(1);
    (void)raise(SIGKILL);
  }
  if (strncmp(mode, "fork", 4) == 0) {
    int status;
    pid_t child = fork();
    if (child < 0)
      die("fork");
    if (child == 0)
      forkChild();
    if (waitpid(child, &status, 0) != child || !WIFSIGNALED(status)
        || WTERMSIG(status) != SIGKILL) {
      fprintf(stderr, "drops_client: the child did not die of SIGKILL (status %#x)\n", status);
      return 122;
    }
    if (strcmp(mode, "fork-kill") == 0)
      for (;;)
        pause();
  }
  for (unsigned w = 0; w < WORKERS; ++w)
    (void)pthread_join(workers[w], NULL);
  return 0;
}
