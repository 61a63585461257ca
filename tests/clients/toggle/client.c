/* <tests/clients/toggle/client.c> -- output switched on and off while threads emit
 *
 * .design: design/tests.txt .test.toggle design/control.txt .sol.control.cut
 *
 * Usage: toggle_client TOGGLES EXPECT [kill]
 *        toggle_client TOGGLES EXPECT ctl TELLTALE-CTL
 *        toggle_client 0 EXPECT gdb N
 *
 * Four workers emit Done(worker, seq, epoch) as fast as they can, and a
 * Pulse (kind Beat, always output) after every 64th.  The main thread
 * switches kind Job's output off and on TOGGLES times with
 * EventControlReset and EventControlSet, at random intervals.  Before
 * each call it stores started = i, after it epoch = i; a worker reads
 * epoch before an event and started after it (a full fence between), so
 * an event whose two reads agree was emitted wholly between change i's
 * return and change i+1's start, and must follow change i's setting.
 * Each worker notes what it emitted in EXPECT, a file mapped shared so
 * that a kill keeps it: per event its epoch, and whether it raced a
 * change (then either outcome is right).  Output is on at epoch 0 and
 * after every even change.  With kill, the program kills itself with
 * SIGKILL after the last change, the workers still emitting.  With gdb,
 * the main thread makes no change: a debugger does, N times, setting
 * started and epoch around each "telltale off Job" or "telltale on Job";
 * the program ends once epoch is N.  With ctl, each change is made from
 * outside: the main thread runs "TELLTALE-CTL PID output off Job" (or
 * on) and waits for it, between started and epoch as before.
 * tests/clients/toggle/check.py compares the log with EXPECT.
 */

#define _GNU_SOURCE

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <telltale/event.h>

#define WORKERS 4
#define STEPS_MAX ((size_t)4 << 20)     /* events a worker records, at most */

static _Atomic unsigned long started, epoch;
static _Atomic int stop;

/* EXPECT: per worker, its count (u64), then STEPS_MAX u32 marks */
#define WORKER_BYTES (8 + 4 * STEPS_MAX)

typedef struct WorkerStruct {
  pthread_t thread;
  unsigned id;
  size_t count;
  _Atomic uint64_t *counted;    /* in EXPECT: count, after each mark */
  uint32_t *seen;               /* in EXPECT: per event, epoch << 1 | raced */
} WorkerStruct;

static void *work(void *arg)
{
  WorkerStruct *w = arg;
  while (!atomic_load_explicit(&stop, memory_order_acquire) && w->count < STEPS_MAX) {
    unsigned long e = atomic_load(&epoch), s;
    EVENT_UWW(Done, w->id, w->count, e);
    atomic_thread_fence(memory_order_seq_cst);
    s = atomic_load(&started);
    w->seen[w->count] = (uint32_t)(e << 1 | (s != e));
    atomic_store_explicit(w->counted, w->count + 1, memory_order_release);
    if (++w->count % 64 == 0)
      EVENT_UWS(Pulse, w->id, w->count - 1, w->count % 128 == 0 ? "tick" : "tock tock");
    if (w->count % 16 == 0) {
      struct timespec ts = {0, 1000};
      nanosleep(&ts, NULL);     /* events by the hundred thousand, not million */
    }
  }
  return NULL;
}

/* ctlRun -- "CTL PID output on|off Job", waited for; 0 if it exited 0 */
static int ctlRun(const char *ctl, int on)
{
  extern char **environ;
  char pid[32];
  char *args[] = {(char *)ctl, pid, "output", on ? "on" : "off", "Job", NULL};
  pid_t child;
  int status;
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  if (posix_spawn(&child, ctl, NULL, NULL, args, environ) != 0
      || waitpid(child, &status, 0) != child)
    return 1;
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv)
{
  WorkerStruct workers[WORKERS];
  unsigned long toggles;
  unsigned seed = (unsigned)time(NULL);
  unsigned char *expect;
  int fd;
  if (argc < 3 || argc > 5) {
    fprintf(stderr, "usage: toggle_client TOGGLES EXPECT [kill | gdb N | ctl TELLTALE-CTL]\n");
    return 2;
  }
  toggles = strtoul(argv[1], NULL, 10);
  fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || ftruncate(fd, (off_t)(WORKERS * WORKER_BYTES)) != 0)
    return 2;
  expect = mmap(NULL, WORKERS * WORKER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (expect == MAP_FAILED)
    return 2;
  for (unsigned i = 0; i < WORKERS; ++i) {
    workers[i].id = i + 1;
    workers[i].count = 0;
    workers[i].counted = (_Atomic uint64_t *)(void *)(expect + i * WORKER_BYTES);
    workers[i].seen = (uint32_t *)(void *)(expect + i * WORKER_BYTES + 8);
    pthread_create(&workers[i].thread, NULL, work, &workers[i]);
  }
  for (unsigned long i = 1; i <= toggles; ++i) {
    struct timespec ts = {0, (long)(rand_r(&seed) % 400000)};
    nanosleep(&ts, NULL);
    atomic_store(&started, i);
    if (argc == 5 && strcmp(argv[3], "ctl") == 0) {
      if (ctlRun(argv[4], i % 2 == 0) != 0) {
        fprintf(stderr, "toggle_client: %s failed at change %lu\n", argv[4], i);
        return 1;
      }
    } else if (i % 2 == 1)
      (void)EventControlReset(EVENT_KIND_BIT(EVENT_KIND_OF_Done));
    else
      (void)EventControlSet(EVENT_KIND_BIT(EVENT_KIND_OF_Done));
    atomic_store(&epoch, i);
  }
  if (argc == 5 && strcmp(argv[3], "gdb") == 0) {
    unsigned long n = strtoul(argv[4], NULL, 10);
    printf("%ld\n", (long)getpid());
    fflush(stdout);
    while (atomic_load(&epoch) < n) {
      struct timespec ts = {0, 10000000};
      nanosleep(&ts, NULL);
    }
  }
  if (argc == 4 && strcmp(argv[3], "kill") == 0)
    raise(SIGKILL);
  atomic_store(&stop, 1);
  for (unsigned i = 0; i < WORKERS; ++i)
    pthread_join(workers[i].thread, NULL);
  return 0;
}
