/* <tests/clients/ctl/client.c> -- a program for telltale-ctl to steer
 *
 * .design: design/tests.txt .test.ctl design/tools.txt .ctl
 *
 * Usage: ctl_client idle N COUNTS    each worker serves N requests, then waits
 *                                    (alive, so its buffers hold them)
 *        ctl_client busy COUNTS      the workers serve requests until told to stop
 *        ctl_client pexit N          main calls pthread_exit; workers serve N and end
 *
 * Four workers emit Request(worker, seq, size) and, after every 8th,
 * Remark(worker, seq, tag).  Each notes in COUNTS, a file mapped shared
 * (so that a kill keeps it), how many requests it served: per worker a
 * u64, stored after each event.  The program prints its pid and a
 * newline once it is ready (idle: every worker has served its N), then
 * waits for SIGUSR1, after which the workers stop and main returns.
 * tests/tools/ctl.sh steers it with telltale-ctl meanwhile.
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
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <telltale/event.h>

#define WORKERS 4

static _Atomic int stop;           /* lock-free: safe to store in a handler */
static _Atomic unsigned ready;
static unsigned long perWorker;         /* idle, pexit: requests each; busy: 0 */
static int idle;                        /* workers wait for the stop when done */
static _Atomic uint64_t *counts;

static void onStop(int sig)
{
  (void)sig;
  atomic_store(&stop, 1);
}

static uint64_t sizeOf(uint64_t seq)
{
  return (seq * 2654435761u) % 8192;
}

static void *work(void *arg)
{
  unsigned id = (unsigned)(uintptr_t)arg;
  uint64_t seq = 0;
  while (!atomic_load(&stop) && (perWorker == 0 || seq < perWorker)) {
    uint64_t size = sizeOf(seq);
    EVENT_UWW(Request, id, seq, size);
    if (seq % 8 == 7)
      EVENT_UWS(Remark, id, seq, size >= 4096 ? "big" : "small");
    atomic_store(&counts[id - 1], ++seq);
    if (seq % 16 == 0) {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
  }
  atomic_fetch_add(&ready, 1);
  while (!atomic_load(&stop) && idle) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

int main(int argc, char **argv)
{
  pthread_t threads[WORKERS];
  const char *mode = argc > 1 ? argv[1] : "";
  const char *path;
  struct sigaction sa;
  int fd;
  if (argc == 4 && (strcmp(mode, "idle") == 0 || strcmp(mode, "pexit") == 0))
    perWorker = strtoul(argv[2], NULL, 10), path = argv[3], idle = mode[0] == 'i';
  else if (argc == 3 && strcmp(mode, "busy") == 0)
    path = argv[2];
  else {
    fprintf(stderr, "usage: ctl_client idle N COUNTS | busy COUNTS | pexit N COUNTS\n");
    return 2;
  }
  fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || ftruncate(fd, WORKERS * 8) != 0)
    return 2;
  counts = mmap(NULL, WORKERS * 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (counts == MAP_FAILED)
    return 2;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = onStop;
  sigaction(SIGUSR1, &sa, NULL);
  for (unsigned i = 0; i < WORKERS; ++i)
    pthread_create(&threads[i], NULL, work, (void *)(uintptr_t)(i + 1));
  if (strcmp(mode, "pexit") == 0)
    pthread_exit(NULL);         /* the process ends with its last worker */
  while (strcmp(mode, "idle") == 0 && atomic_load(&ready) < WORKERS) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  printf("%ld\n", (long)getpid());
  fflush(stdout);
  while (!atomic_load(&stop)) {   /* SIGUSR1 may come to any thread */
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  for (unsigned i = 0; i < WORKERS; ++i)
    pthread_join(threads[i], NULL);
  return 0;
}
