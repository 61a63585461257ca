/* kernel.c -- what the kernel and the machine allow, without telltale
 *
 * Two of telltale's figures are limits of the platform, not of telltale,
 * and this program measures them with plain C so that the README's
 * explanations can be checked (design/tests.txt .bench.kernel):
 *
 * 1. One file from two threads.  write() of 64 KiB blocks to one file
 *    from one thread, from two threads, and from two threads each to a
 *    file of its own; and the same blocks copied into a shared mapping
 *    of one file (sized first, as telltale's live file is) from one
 *    thread and from two, each taking the next 64 KiB of the file.
 *    Then the same with the work of emitting in it ("filled"): each
 *    block's 36-byte records made first, as the floor makes them, and
 *    written, copied into the mapping, or made in place in it; every
 *    filled row's ratio is to one thread filling and writing, which is
 *    what telltale's default does.  The threads' voluntary context
 *    switches per write (sleeps/write) show whether a writer slept on a
 *    lock, and CPUs (processor time over elapsed time) whether two
 *    processors were to be had at all.
 *
 * 2. Handing blocks to a writer thread.  The floor's 36-byte records
 *    filled into 64 KiB blocks and written by the filling thread
 *    (sync), or handed to a writer thread through two slots (or eight), waiting
 *    on a condition variable (as telltale's asynchronous writer does)
 *    or by spinning; or submitted to io_uring by the filling thread; or
 *    written by it to a file opened O_DIRECT.  The CPUs column is the process's processor time
 *    over its elapsed time: near 1 means the two threads never ran at
 *    once.
 *
 * usage: kernel DIR [MiB]   (DIR: where the files go, e.g. /dev/shm) */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <liburing.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define BLOCK 65536
#define RECORD 36
#define ROUNDS 5
#define SLOTS_MOST 8

static double now(void)
{
  struct timespec ts;
  (void)clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpuTime(void)
{
  struct rusage ru;
  (void)getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static void writeAll(int fd, const char *buf)
{
  if (write(fd, buf, BLOCK) != BLOCK) {
    perror("kernel: write");
    exit(1);
  }
}

static int cmpDouble(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}


static uint64_t ticks(void)       /* the floor's clock: rdtsc */
{
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  static uint64_t n;
  return ++n;
#endif
}

/* fill -- the floor's 36-byte records into a 64 KiB block */
static void fill(char *b)
{
  for (size_t o = 0; o + RECORD <= BLOCK; o += RECORD) {
    uint64_t t = ticks();
    uint32_t header = 0x10001;
    memcpy(b + o, &header, 4);
    memcpy(b + o + 4, &t, 8);
    memcpy(b + o + 12, &o, 8);
    memcpy(b + o + 20, &t, 8);
    memcpy(b + o + 28, &o, 8);
  }
}


/* 1. One file from two threads ------------------------------------- */

typedef struct WriterStruct {
  int fd;
  long blocks;
  long switches;                /* voluntary context switches */
  char *map;                    /* the file mapped shared, or NULL: write() */
  atomic_long *next;            /* with map: the next block of the file to copy into */
  int fill;                     /* FILL_*: the records made first, and where */
} WriterStruct;

enum { FILL_NONE, FILL_COPY, FILL_IN_PLACE };

static void *writerLoop(void *arg)
{
  WriterStruct *w = arg;
  char *buf = aligned_alloc(4096, BLOCK);
  struct rusage before, after;
  memset(buf, 'x', BLOCK);
  (void)getrusage(RUSAGE_THREAD, &before);
  for (long i = 0; i < w->blocks; ++i) {
    char *to = w->map != NULL ? w->map + atomic_fetch_add(w->next, 1) * BLOCK : NULL;
    if (w->fill == FILL_IN_PLACE) {
      fill(to);
      continue;
    }
    if (w->fill == FILL_COPY)
      fill(buf);
    if (to != NULL)
      memcpy(to, buf, BLOCK);
    else
      writeAll(w->fd, buf);
  }
  (void)getrusage(RUSAGE_THREAD, &after);
  w->switches = after.ru_nvcsw - before.ru_nvcsw;
  free(buf);
  return NULL;
}

/* files: how many files the threads share (1) or have (threads);
 * mapped: the one file is sized, mapped and copied into, not written */
static void oneFile(const char *dir, long bytes, int threads, int files, int mapped, int filled,
                    double *gbs, double *switchesPerWrite, double *cpus)
{
  char path[2][4096];
  WriterStruct w[2];
  pthread_t t[2];
  double t0, c0;
  long switches = 0;
  atomic_long next = 0;
  char *map = NULL;
  for (int f = 0; f < files; ++f) {
    snprintf(path[f], sizeof path[f], "%s/kernel-%d-%d", dir, (int)getpid(), f);
    w[f].fd = open(path[f], (mapped ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC, 0600);
    if (w[f].fd < 0) {
      fprintf(stderr, "kernel: %s: %s\n", path[f], strerror(errno));
      exit(1);
    }
  }
  bytes = bytes / BLOCK / threads * threads * BLOCK;
  if (mapped) {
    if (posix_fallocate(w[0].fd, 0, bytes) != 0
        || (map = mmap(NULL, (size_t)bytes, PROT_WRITE, MAP_SHARED, w[0].fd, 0)) == MAP_FAILED) {
      fprintf(stderr, "kernel: %s: cannot size and map it\n", path[0]);
      exit(1);
    }
  }
  for (int i = 0; i < threads; ++i) {
    w[i].fd = w[i < files ? i : 0].fd;
    w[i].blocks = bytes / BLOCK / threads;
    w[i].map = map;
    w[i].next = &next;
    w[i].fill = filled;
  }
  t0 = now();
  c0 = cpuTime();
  for (int i = 0; i < threads; ++i)
    (void)pthread_create(&t[i], NULL, writerLoop, &w[i]);
  for (int i = 0; i < threads; ++i) {
    (void)pthread_join(t[i], NULL);
    switches += w[i].switches;
  }
  *gbs = (double)(bytes / BLOCK * BLOCK) / (now() - t0) / 1e9;
  *cpus = (cpuTime() - c0) / (now() - t0);
  *switchesPerWrite = (double)switches / (double)(bytes / BLOCK);
  if (map != NULL)
    (void)munmap(map, (size_t)bytes);
  for (int f = 0; f < files; ++f) {
    (void)close(w[f].fd);
    (void)unlink(path[f]);
  }
}


/* 2. Handing blocks to a writer thread ----------------------------- */

enum { SYNC, CONDITION, CONDITION8, SPIN, URING, DIRECT, HOWS };

static struct {
  int fd, how;
  unsigned slots;               /* in use: 2, or SLOTS_MOST */
  char *slot[SLOTS_MOST];
  atomic_int full[SLOTS_MOST];           /* 1: the writer's until it writes it */
  atomic_int done;
  pthread_mutex_t lock;
  pthread_cond_t cond;
} hand = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

/* await -- until slot s is full (want 1) or empty (want 0), or done */
static int await(unsigned s, int want)
{
  if (hand.how == SPIN) {
    while (atomic_load_explicit(&hand.full[s], memory_order_acquire) != want)
      if (want && atomic_load(&hand.done))
        return atomic_load(&hand.full[s]) == want;
    return 1;
  }
  (void)pthread_mutex_lock(&hand.lock);
  while (atomic_load(&hand.full[s]) != want && !(want && atomic_load(&hand.done)))
    (void)pthread_cond_wait(&hand.cond, &hand.lock);
  (void)pthread_mutex_unlock(&hand.lock);
  return atomic_load(&hand.full[s]) == want;
}

static void set(unsigned s, int full)
{
  if (hand.how == SPIN) {
    atomic_store_explicit(&hand.full[s], full, memory_order_release);
    return;
  }
  (void)pthread_mutex_lock(&hand.lock);
  atomic_store(&hand.full[s], full);
  (void)pthread_cond_broadcast(&hand.cond);
  (void)pthread_mutex_unlock(&hand.lock);
}

static void *handWriter(void *arg)
{
  (void)arg;
  for (unsigned s = 0; await(s, 1); s = (s + 1) % hand.slots) {
    writeAll(hand.fd, hand.slot[s]);
    set(s, 0);
  }
  return NULL;
}

/* reap -- wait for one io_uring write to complete, whole */
static void reap(struct io_uring *ring)
{
  struct io_uring_cqe *cqe;
  if (io_uring_wait_cqe(ring, &cqe) != 0 || cqe->res != BLOCK) {
    fprintf(stderr, "kernel: io_uring write failed\n");
    exit(1);
  }
  io_uring_cqe_seen(ring, cqe);
}

/* handOff -- ns an event, or -1 where this way cannot be had here */
static double handOff(const char *dir, long bytes, int how, double *cpus)
{
  struct io_uring ring;
  char path[4096];
  pthread_t writer;
  long blocks = bytes / BLOCK;
  double t0, c0, elapsed;
  snprintf(path, sizeof path, "%s/kernel-%d-hand", dir, (int)getpid());
  hand.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (hand.fd < 0) {
    fprintf(stderr, "kernel: %s: %s\n", path, strerror(errno));
    exit(1);
  }
  if (how == DIRECT) {                    /* the page cache left out */
    int fd = open(path, O_WRONLY | O_DIRECT);
    (void)close(hand.fd);
    if (fd < 0 || write(fd, hand.slot[0], BLOCK) != BLOCK) {
      if (fd >= 0)
        (void)close(fd);
      (void)unlink(path);
      return -1.0;
    }
    hand.fd = fd;
  }
  if (how == URING && io_uring_queue_init(4, &ring, 0) != 0) {
    (void)close(hand.fd);
    (void)unlink(path);
    return -1.0;
  }
  hand.slots = how == CONDITION8 ? SLOTS_MOST : 2;
  if (how == CONDITION8)
    how = CONDITION;
  hand.how = how;
  atomic_store(&hand.done, 0);
  t0 = now();
  c0 = cpuTime();
  if (how == CONDITION || how == SPIN)
    (void)pthread_create(&writer, NULL, handWriter, NULL);
  for (long n = 0; n < blocks; ++n) {
    unsigned s = (unsigned)(n % hand.slots);
    if (how == SYNC || how == DIRECT) {
      fill(hand.slot[0]);
      writeAll(hand.fd, hand.slot[0]);
      continue;
    }
    if (how == URING) {         /* reap slot s's write, fill, submit */
      struct io_uring_sqe *sqe;
      if (n >= 2)
        reap(&ring);
      fill(hand.slot[s]);
      sqe = io_uring_get_sqe(&ring);
      io_uring_prep_write(sqe, hand.fd, hand.slot[s], BLOCK, (uint64_t)n * BLOCK);
      (void)io_uring_submit(&ring);
      continue;
    }
    (void)await(s, 0);
    fill(hand.slot[s]);
    set(s, 1);
  }
  if (how == URING) {
    for (long n = blocks < 2 ? blocks : 2; n > 0; --n)
      reap(&ring);
    io_uring_queue_exit(&ring);
  }
  if (how == CONDITION || how == SPIN) {
    (void)pthread_mutex_lock(&hand.lock);
    atomic_store(&hand.done, 1);
    (void)pthread_cond_broadcast(&hand.cond);
    (void)pthread_mutex_unlock(&hand.lock);
    (void)pthread_join(writer, NULL);
  }
  elapsed = now() - t0;
  *cpus = (cpuTime() - c0) / elapsed;
  (void)close(hand.fd);
  (void)unlink(path);
  return elapsed * 1e9 / (double)(blocks * (BLOCK / RECORD));
}


int main(int argc, char **argv)
{
  const char *dir;
  long bytes;
  static const struct { int threads, files, mapped, fill, base; const char *what; } cases[] = {
    {1, 1, 0, FILL_NONE, 0, "one thread, one file"},
    {2, 1, 0, FILL_NONE, 0, "two threads, one file"},
    {2, 2, 0, FILL_NONE, 0, "two threads, a file each"},
    {1, 1, 1, FILL_NONE, 3, "mapped: one thread"},
    {2, 1, 1, FILL_NONE, 3, "mapped: two threads"},
    {1, 1, 0, FILL_COPY, 5, "filled: one thread"},
    {2, 1, 0, FILL_COPY, 5, "filled: two threads"},
    {1, 1, 1, FILL_COPY, 5, "filled, mapped: one"},
    {2, 1, 1, FILL_COPY, 5, "filled, mapped: two"},
    {1, 1, 1, FILL_IN_PLACE, 5, "filled in place: one"},
    {2, 1, 1, FILL_IN_PLACE, 5, "filled in place: two"},
  };
#define CASES (sizeof cases / sizeof cases[0])
  static const char *const how[HOWS] = {"sync", "condition", "cond-8", "spin", "io_uring",
                                        "O_DIRECT"};
  static const char *const howWhat[HOWS] = {
    "the filling thread writes",
    "a writer thread, waits on a condition variable",
    "the same with 8 slots",
    "a writer thread, waits by spinning",
    "the filling thread submits each block to io_uring",
    "the filling thread writes, the file opened O_DIRECT",
  };
  double gbs[CASES][ROUNDS], sw[CASES][ROUNDS], wcpus[CASES][ROUNDS], ns[HOWS][ROUNDS], cpus[HOWS][ROUNDS];
  if (argc < 2 || argc > 3 || strcmp(argv[1], "--help") == 0) {
    fprintf(argc < 2 ? stderr : stdout, "usage: kernel DIR [MiB]\n"
            "  Measures write() of 64 KiB blocks to one file from one and two threads,\n"
            "  copying them into a shared mapping of one file from one and two threads,\n"
            "  and handing blocks to a writer thread, with files in DIR.\n");
    return argc < 2 ? 2 : 0;
  }
  dir = argv[1];
  bytes = (argc > 2 ? atol(argv[2]) : 512) << 20;
  for (int s = 0; s < SLOTS_MOST; ++s) {
    hand.slot[s] = aligned_alloc(4096, BLOCK);
    memset(hand.slot[s], 0, BLOCK);
  }
  for (int r = 0; r < ROUNDS; ++r) {       /* interleaved rounds */
    for (size_t c = 0; c < CASES; ++c)
      oneFile(dir, bytes, cases[c].threads, cases[c].files, cases[c].mapped, cases[c].fill,
              &gbs[c][r], &sw[c][r], &wcpus[c][r]);
    for (int h = 0; h < HOWS; ++h)
      ns[h][r] = handOff(dir, bytes / 2, h, &cpus[h][r]);
  }
  printf("write() of 64 KiB blocks into %s, median of %d rounds\n", dir, ROUNDS);
  printf("%-26s %8s %8s %14s %8s\n", "case", "GB/s", "ratio", "sleeps/write", "CPUs");
  for (size_t c = 0; c < CASES; ++c) {
    double g[ROUNDS], one[ROUNDS];
    memcpy(g, gbs[c], sizeof g);
    memcpy(one, gbs[cases[c].base], sizeof one);
    qsort(g, ROUNDS, sizeof g[0], cmpDouble);
    qsort(one, ROUNDS, sizeof one[0], cmpDouble);
    qsort(sw[c], ROUNDS, sizeof sw[c][0], cmpDouble);
    qsort(wcpus[c], ROUNDS, sizeof wcpus[c][0], cmpDouble);
    printf("%-26s %8.2f %8.2f %14.2f %8.2f\n", cases[c].what, g[ROUNDS / 2],
           g[ROUNDS / 2] / one[ROUNDS / 2], sw[c][ROUNDS / 2], wcpus[c][ROUNDS / 2]);
  }
  printf("\n36-byte records filled into 64 KiB blocks and written (two slots unless said)\n");
  printf("%-10s %10s %8s  %s\n", "case", "ns/event", "CPUs", "how");
  for (int h = 0; h < HOWS; ++h) {
    if (ns[h][0] < 0) {
      printf("%-10s %10s %8s  %s: not to be had here\n", how[h], "-", "-", howWhat[h]);
      continue;
    }
    qsort(ns[h], ROUNDS, sizeof ns[h][0], cmpDouble);
    qsort(cpus[h], ROUNDS, sizeof cpus[h][0], cmpDouble);
    printf("%-10s %10.2f %8.2f  %s\n", how[h], ns[h][ROUNDS / 2], cpus[h][ROUNDS / 2], howWhat[h]);
  }
  return 0;
}
