/* <bench/bench.c> -- what an event costs, beside the floor and its peers
 *
 * .design: design/tests.txt .bench
 *
 * Measures, in one run and side by side, the cost of a 3-word event
 * (TestPAW: a pointer, an address and a word) emitted in a loop:
 *
 *   floor       rdtsc and stores of the same 36-byte record into an
 *               L1-resident buffer: the least any recorder can do
 *   enabled     telltale, recorded and output to a file
 *   async       the same, with the asynchronous writer (.sol.writer)
 *   compact     enabled, the blocks written in the compact form (.compact)
 *   dynfilter   enabled, with a dynamic filter on the event that every
 *               event passes ("TestPAW w>=0"): the writer's whole cost of
 *               a filter, a decode, test and copy of each event (.sol.filter)
 *   write       the I/O floor: the floor's records, preformatted into a
 *               64 KiB buffer and written to a file of their own by one
 *               write() per 64 KiB
 *   recorded    telltale, recorded into the ring, output off
 *   filtered    telltale, kind not recorded
 *   compiled    telltale, variety off (bench_off.c)
 *   fprintf     the same three values formatted by fprintf to /dev/null
 *   lttng-off   an LTTng-UST tracepoint of the same three words that no
 *               session enables (lttng_tp.h)
 *   lttng-on    one that bench/run's lttng session enables and records
 *   spdlog      spdlog's asynchronous logger, the same values to a file,
 *               the round ending when its thread has written them
 *               (spdlog.cc)
 *   work100     a slice of computation of about 100 ns, no telltale
 *   duty100     the same slices with one event (enabled) after each
 *   work1us     the same, slices of about 1 us
 *   duty1us     and with one event after each
 *   duty100a    duty100 and duty1us, written by the writer thread (as
 *   duty1usa    async, the round ending when it has caught up)
 *
 * The duty-cycle cases are what a program that does work between events
 * pays: the slice is a chain of dependent multiplies, calibrated when
 * the bench starts, and their ratio, duty over work, is telltale's cost
 * on the program's thread.  Their ns are per slice; a 1 us case runs a
 * tenth of COUNT slices.  Each ratio is printed twice: of the wall
 * clock's medians, and of the thread's processor time, which on a
 * loaded machine counts neither the neighbours' turns nor the waits.
 * The async case's rounds also read the writer thread's processor
 * time (/proc/self/task/TID/schedstat), its work an event beside the
 * emitter's: whether the writer keeps up.
 *
 * The LTTng cases are built in only with -DBENCH_LTTNG, and spdlog's
 * with -DBENCH_SPDLOG (bench/peers.sh builds bench-peers so, with those
 * whose packages are installed); lttng-on
 * runs only if its tracepoint is enabled when the program starts, that
 * is, if an lttng session had enabled bench:paw before.  Elsewhere their
 * rows say why they did not run, given --lttng-note, and are otherwise
 * left out.
 *
 * Then two threads against one, recorded only and written to the file:
 * the ratio of their aggregate rates.
 *
 * Each case runs ROUNDS rounds of COUNT events; the median ns/event is
 * printed with its ratio to the floor's median.  Rounds of the cases
 * are interleaved so that a noisy neighbour hurts them alike.
 *
 * Usage: bench [--rounds R] [--count N] [--case NAME] [--file PATH]
 *              [--list] [--lttng-note WHY]
 * With --case, runs only that case once with N events and prints
 * nothing: bench/callgrind.sh uses it to count instructions, for each
 * case that --list names.
 */

#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <telltale/event.h>
#include <telltale/plinth.h>

#ifdef BENCH_LTTNG
#include "lttng_tp.h"
#endif

extern void benchCompiledOut(size_t count, void *p);   /* bench_off.c */
#ifdef BENCH_SPDLOG
extern int benchSpdlogOpen(const char *path);           /* spdlog.cc */
extern void benchSpdlogRun(size_t count, void *p);
extern void benchSpdlogClose(void);
#endif

#define RECORD_SIZE 36          /* TestPAW on the wire: .stream.event */

static unsigned char floorBuf[16384];   /* L1-resident */
static size_t floorPos;
static FILE *devnull;

/* runFloor -- the physical floor: the same record, no checks, no TLS */
static void __attribute__((noinline)) runFloor(size_t count, void *p)
{
  for (size_t i = 0; i < count; ++i) {
    unsigned char *r;
    uint32_t codeLength = EVENT_CODE_LENGTH(EventCodeTestPAW, RECORD_SIZE);
    uint64_t clock = PlinthClockNow(), a = (uint64_t)(uintptr_t)p + 8, w = i;
    if (floorPos + RECORD_SIZE > sizeof floorBuf)
      floorPos = 0;
    r = floorBuf + floorPos;
    floorPos += RECORD_SIZE;
    memcpy(r + 4, &clock, 8);
    memcpy(r + 12, &p, 8);
    memcpy(r + 20, &a, 8);
    memcpy(r + 28, &w, 8);
    __asm__ __volatile__("" ::: "memory");
    memcpy(r, &codeLength, 4);
  }
}

/* The I/O floor: what writing the same records to a file costs, with
 * nothing telltale does but the record and the write.  design/tests.txt .compact.bench */
#define WRITE_BUF_SIZE 65536
static unsigned char writeBuf[WRITE_BUF_SIZE];
static size_t writePos;
static int writeFd = -1;

static void __attribute__((noinline)) runWriteFloor(size_t count, void *p)
{
  for (size_t i = 0; i < count; ++i) {
    unsigned char *r;
    uint32_t codeLength = EVENT_CODE_LENGTH(EventCodeTestPAW, RECORD_SIZE);
    uint64_t clock = PlinthClockNow(), a = (uint64_t)(uintptr_t)p + 8, w = i;
    if (writePos + RECORD_SIZE > sizeof writeBuf) {
      if (write(writeFd, writeBuf, writePos) != (ssize_t)writePos)
        abort();
      writePos = 0;
    }
    r = writeBuf + writePos;
    writePos += RECORD_SIZE;
    memcpy(r, &codeLength, 4);
    memcpy(r + 4, &clock, 8);
    memcpy(r + 12, &p, 8);
    memcpy(r + 20, &a, 8);
    memcpy(r + 28, &w, 8);
  }
}

/* runTelltale -- the emitter, however the kind is controlled */
static void __attribute__((noinline)) runTelltale(size_t count, void *p)
{
  for (size_t i = 0; i < count; ++i)
    EVENT_PAW(TestPAW, p, (EventA)p + 8, i);
}

static void __attribute__((noinline)) runFprintf(size_t count, void *p)
{
  for (size_t i = 0; i < count; ++i)
    fprintf(devnull, "TestPAW p=%p a=%#lx w=%zu\n", p, (unsigned long)((uintptr_t)p + 8), i);
}

#ifdef BENCH_LTTNG
/* runLttng -- LTTng-UST's tracepoint: bench:paw, or bench:paw_off */
static void __attribute__((noinline)) runLttng(size_t count, void *p)
{
  for (size_t i = 0; i < count; ++i)
    lttng_ust_tracepoint(bench, paw, (uint64_t)(uintptr_t)p, (uint64_t)(uintptr_t)p + 8, i);
}

static void __attribute__((noinline)) runLttngOff(size_t count, void *p)
{
  for (size_t i = 0; i < count; ++i)
    lttng_ust_tracepoint(bench, paw_off, (uint64_t)(uintptr_t)p, (uint64_t)(uintptr_t)p + 8, i);
}
#endif

/* The duty cycle: slices of work with an event between them.  A slice
 * is a chain of dependent multiply-adds, which the compiler cannot fold
 * or vectorise and the processor cannot overlap with the next slice's. */
static unsigned workIters[2];           /* per slice: 100 ns, 1 us */
static volatile uint64_t workSink;     /* read by no one: volatile keeps the work */

static inline uint64_t workSlice(uint64_t x, unsigned iters)
{
  for (unsigned k = 0; k < iters; ++k)
    x = x * 6364136223846793005u + 1442695040888963407u;
  return x;
}

static void __attribute__((noinline)) runWork(size_t count, unsigned iters)
{
  uint64_t x = count;
  for (size_t i = 0; i < count; ++i)
    x = workSlice(x, iters);
  workSink = x;
}

static void __attribute__((noinline)) runDuty(size_t count, unsigned iters, void *p)
{
  uint64_t x = count;
  for (size_t i = 0; i < count; ++i) {
    x = workSlice(x, iters);
    EVENT_PAW(TestPAW, p, (EventA)p + 8, x);
  }
  workSink = x;
}

static double nowNs(void);

/* calibrate -- the iterations of a slice of 100 ns and of 1 us: the
 * fastest of five timings, as the slower ones are a neighbour's */
static void calibrate(void)
{
  const unsigned n = 2000000;
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    double t0 = nowNs(), t;
    runWork(1, n);
    t = nowNs() - t0;
    if (r == 0 || t < best)
      best = t;
  }
  workIters[0] = (unsigned)(100.0 * n / best + 0.5);
  workIters[1] = (unsigned)(1000.0 * n / best + 0.5);
  if (workIters[0] == 0)
    workIters[0] = 1;
}

/* scaling: each thread runs the emitter; the aggregate rate of two
 * threads against one shows whether anything on the hot path is shared,
 * and the threads' sleeps (voluntary context switches) whether they
 * waited for each other */
typedef struct ScaleArgStruct {
  size_t count;
  atomic_long sleeps;
} ScaleArgStruct;

static void *scaleThread(void *arg)
{
  ScaleArgStruct *a = arg;
  struct rusage before, after;
  (void)getrusage(RUSAGE_THREAD, &before);
  runTelltale(a->count, a);
  (void)getrusage(RUSAGE_THREAD, &after);
  atomic_fetch_add(&a->sleeps, after.ru_nvcsw - before.ru_nvcsw);
  return NULL;
}

/* scaleRun -- seconds for threads threads to emit count events each,
 * and their sleeps per 64 KiB of events */
static double scaleRun(int threads, size_t count, double *sleepsPerBlock)
{
  pthread_t t[2];
  ScaleArgStruct a = {count, 0};
  double seconds;
  double t0 = nowNs();
  for (int i = 0; i < threads; ++i)
    if (pthread_create(&t[i], NULL, scaleThread, &a) != 0)
      return -1;
  for (int i = 0; i < threads; ++i)
    pthread_join(t[i], NULL);
  seconds = (nowNs() - t0) / 1e9;
  *sleepsPerBlock = (double)atomic_load(&a.sleeps)
                    / ((double)threads * (double)count * RECORD_SIZE / 65536.0);
  return seconds;
}

static double nowNs(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* threadCpuNs -- this thread's processor time, user and system: what a
 * case costs the program's thread, less what waiting for a neighbour
 * on a loaded machine adds to the wall clock */
static double threadCpuNs(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* writerCpuNs -- the processor time of telltale's writer thread
 * (TELLTALE_WRITER=async, named telltale-write), from its schedstat;
 * -1 if it is not running */
static double writerCpuNs(void)
{
  DIR *tasks = opendir("/proc/self/task");
  struct dirent *e;
  double ns = -1;
  if (tasks == NULL)
    return -1;
  while (ns < 0 && (e = readdir(tasks)) != NULL) {
    char path[300], comm[32] = "";
    FILE *f;
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    if ((f = fopen(path, "r")) == NULL)
      continue;
    if (fgets(comm, sizeof comm, f) != NULL && strcmp(comm, "telltale-write\n") == 0) {
      unsigned long long run;
      fclose(f);
      snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
      if ((f = fopen(path, "r")) == NULL)
        continue;
      if (fscanf(f, "%llu", &run) == 1)
        ns = (double)run;
    }
    fclose(f);
  }
  closedir(tasks);
  return ns;
}

static int cmpDouble(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

enum { CASE_FLOOR, CASE_WRITE, CASE_ENABLED, CASE_ASYNC, CASE_COMPACT, CASE_DYNFILTER, CASE_RECORDED,
       CASE_FILTERED, CASE_COMPILED, CASE_FPRINTF, CASE_LTTNG_OFF, CASE_LTTNG_ON, CASE_SPDLOG,
       CASE_WORK100, CASE_DUTY100, CASE_WORK1US, CASE_DUTY1US, CASE_DUTY100A, CASE_DUTY1USA,
       CASES };
static const char *const caseNames[CASES] = {
  "floor", "write", "enabled", "async", "compact", "dynfilter", "recorded", "filtered", "compiled",
  "fprintf",
  "lttng-off", "lttng-on", "spdlog", "work100", "duty100", "work1us", "duty1us",
  "duty100a", "duty1usa"
};
static const char *const caseDocs[CASES] = {
  "rdtsc + stores of the 36-byte record, L1 buffer",
  "I/O floor: the same records, write() per 64 KiB to a file",
  "telltale: recorded, output to a file",
  "telltale: the same, written by the writer thread",
  "telltale: enabled, blocks written compact (TELLTALE_COMPACT)",
  "telltale: enabled, a dynamic filter every event passes",
  "telltale: recorded into the ring, output off",
  "telltale: kind not recorded",
  "telltale: variety off",
  "fprintf of the same values to /dev/null",
  "LTTng-UST: tracepoint not enabled",
  "LTTng-UST: tracepoint enabled, recorded by a session",
  "spdlog: asynchronous logger, the same values to a file",
  "duty cycle: a slice of ~100 ns of work, no telltale",
  "duty cycle: the same, an event (enabled) after each",
  "duty cycle: a slice of ~1 us of work, no telltale",
  "duty cycle: the same, an event (enabled) after each",
  "duty cycle: 100 ns slices, an event each, written by the writer thread",
  "duty cycle: 1 us slices, an event each, written by the writer thread",
};

/* caseCount -- the events (or slices) of a round of a case */
static size_t caseCount(int c, size_t count)
{
  return c == CASE_WORK1US || c == CASE_DUTY1US || c == CASE_DUTY1USA ? count / 10 + 1 : count;
}

/* caseWhyNot -- why a case cannot run in this process, or NULL */
static const char *caseWhyNot[CASES];

/* runCase -- set the controls for a case and run it */
static void runCase(int c, size_t count)
{
  void *p = &count;
  EventKindSet noisy = EVENT_KIND_BIT(EventKindNoisy);
  switch (c) {
  case CASE_FLOOR:
    runFloor(count, p);
    break;
  case CASE_ENABLED:
    EventRecord(0, noisy & ~atomic_load(&EVENT_SOURCE_RECORD));
    EventControlSet(noisy);
    runTelltale(count, p);
    break;
  case CASE_WRITE:
    runWriteFloor(count, p);
    break;
  case CASE_COMPACT:
    /* The blocks filled in the round are compacted when written, by
     * this thread: the encoder's work is inside the time. */
    EventRecord(0, noisy & ~atomic_load(&EVENT_SOURCE_RECORD));
    EventControlSet(noisy);
    EventCompact(1);
    runTelltale(count, p);
    EventFlush();
    EventCompact(0);
    break;
  case CASE_DYNFILTER:
    /* The blocks filled in the round are filtered when written, by this
     * thread: the filter's work is inside the time. */
    EventRecord(0, noisy & ~atomic_load(&EVENT_SOURCE_RECORD));
    EventControlSet(noisy);
    (void)EventFilterAdd("TestPAW w>=0", NULL, 0);
    runTelltale(count, p);
    EventFlush();
    (void)EventFilterClear("TestPAW");
    break;
  case CASE_ASYNC:
    /* The round ends when the writer has caught up: EventWriterAsync(0)
     * waits for it, so the writer's work is inside the time. */
    EventRecord(0, noisy & ~atomic_load(&EVENT_SOURCE_RECORD));
    EventControlSet(noisy);
    EventWriterAsync(1, 0);
    runTelltale(count, p);
    EventWriterAsync(0, 0);
    break;
  case CASE_RECORDED:
    EventRecord(0, noisy & ~atomic_load(&EVENT_SOURCE_RECORD));
    EventControlReset(noisy);
    runTelltale(count, p);
    break;
  case CASE_FILTERED:
    EventRecord(noisy, 0);
    runTelltale(count, p);
    break;
  case CASE_COMPILED:
    benchCompiledOut(count, p);
    break;
  case CASE_FPRINTF:
    runFprintf(count, p);
    break;
  case CASE_WORK100:
  case CASE_WORK1US:
    runWork(count, workIters[c == CASE_WORK1US]);
    break;
  case CASE_DUTY100:
  case CASE_DUTY1US:
    EventRecord(0, noisy & ~atomic_load(&EVENT_SOURCE_RECORD));
    EventControlSet(noisy);
    runDuty(count, workIters[c == CASE_DUTY1US], p);
    break;
  case CASE_DUTY100A:
  case CASE_DUTY1USA:
    /* as CASE_ASYNC: the round ends when the writer has caught up */
    EventRecord(0, noisy & ~atomic_load(&EVENT_SOURCE_RECORD));
    EventControlSet(noisy);
    EventWriterAsync(1, 0);
    runDuty(count, workIters[c == CASE_DUTY1USA], p);
    EventWriterAsync(0, 0);
    break;
#ifdef BENCH_SPDLOG
  case CASE_SPDLOG:
    benchSpdlogRun(count, p);
    break;
#endif
#ifdef BENCH_LTTNG
  case CASE_LTTNG_OFF:
    runLttngOff(count, p);
    break;
  case CASE_LTTNG_ON:
    runLttng(count, p);
    break;
#endif
  }
}

/* BenchOptionsStruct -- what the command line asks for */
typedef struct BenchOptionsStruct {
  size_t rounds, count;
  const char *only;             /* --case: one case, once */
  const char *path;             /* --file: keep the log there */
  const char *note;             /* --lttng-note */
  int list;
} BenchOptionsStruct;

static void usage(FILE *f)
{
  fprintf(f,
          "usage: bench [--rounds R] [--count N] [--case NAME] [--file PATH]\n"
          "             [--list] [--lttng-note WHY]\n"
          "  Prints the median ns per event of each case and its ratio to the floor.\n"
          "  --case NAME runs one case once, silently (for callgrind); --case\n"
          "  scaling runs only the two threads against one.\n"
          "  --file PATH keeps the log of the enabled case there, and the write\n"
          "  case's records in PATH.write.\n"
          "  --list prints the cases this process can run, one a line.\n"
          "  --lttng-note WHY is printed in the rows of LTTng cases that cannot run.\n"
          "  cases: floor write enabled async compact dynfilter recorded filtered compiled\n"
          "         fprintf work100 duty100 work1us duty1us duty100a duty1usa\n"
          "         lttng-off lttng-on (built with -DBENCH_LTTNG: bench/peers.sh)\n"
          "         spdlog (built with -DBENCH_SPDLOG: bench/peers.sh)\n");
}

/* options -- parse the command line; -1 to go on, else the exit status */
static int options(int argc, char **argv, BenchOptionsStruct *o)
{
  o->rounds = 21;
  o->count = 1000000;
  o->only = o->path = o->note = NULL;
  o->list = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
      o->rounds = strtoul(argv[++i], NULL, 0);
    else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc)
      o->count = strtoul(argv[++i], NULL, 0);
    else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc)
      o->only = argv[++i];
    else if (strcmp(argv[i], "--file") == 0 && i + 1 < argc)
      o->path = argv[++i];
    else if (strcmp(argv[i], "--list") == 0)
      o->list = 1;
    else if (strcmp(argv[i], "--lttng-note") == 0 && i + 1 < argc)
      o->note = argv[++i];
    else {
      int help = strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0;
      usage(help ? stdout : stderr);
      return help ? 0 : 2;
    }
  }
  if (o->rounds == 0 || o->count == 0) {
    fprintf(stderr, "bench: rounds and count must be positive\n");
    return 2;
  }
  return -1;
}

/* runOnly -- --case NAME: one case, once, silently (for callgrind) */
static int runOnly(const char *only, size_t count)
{
  int c;
  for (c = 0; c < CASES && strcmp(caseNames[c], only) != 0; ++c)
    ;
  if (c == CASES) {
    fprintf(stderr, "bench: unknown case %s\n", only);
    return 2;
  }
  if (caseWhyNot[c] != NULL) {
    fprintf(stderr, "bench: %s cannot run: %s\n", only,
            caseWhyNot[c][0] != '\0' ? caseWhyNot[c] : "not in this build");
    return 3;
  }
  runCase(CASE_ENABLED, 1000);     /* set the thread up outside the count */
  runCase(c, count);
  return 0;
}

/* runTable -- every case, rounds times, interleaved: the median table */
static int runTable(size_t rounds, size_t count)
{
  double *ns[CASES], median[CASES], *cpu[CASES], cpuMedian[CASES];
  double *writerCpu = calloc(rounds, sizeof(double));
  size_t writerRounds = 0;
  for (int c = 0; c < CASES; ++c) {
    ns[c] = calloc(rounds, sizeof(double));
    cpu[c] = calloc(rounds, sizeof(double));
    if (ns[c] == NULL || cpu[c] == NULL || writerCpu == NULL)
      return 1;
    if (caseWhyNot[c] == NULL)
      runCase(c, caseCount(c, count) / 10 + 1);     /* warm up */
  }
  for (size_t r = 0; r < rounds; ++r)
    for (int c = 0; c < CASES; ++c) {
      double t0, c0, w0 = c == CASE_ASYNC ? writerCpuNs() : -1;
      if (caseWhyNot[c] != NULL)
        continue;
      t0 = nowNs();
      c0 = threadCpuNs();
      runCase(c, caseCount(c, count));
      cpu[c][r] = (threadCpuNs() - c0) / (double)caseCount(c, count);
      ns[c][r] = (nowNs() - t0) / (double)caseCount(c, count);
      if (w0 >= 0)     /* the round waited for the writer: its work is done */
        writerCpu[writerRounds++] = (writerCpuNs() - w0) / (double)count;
    }
  for (int c = 0; c < CASES; ++c) {
    qsort(ns[c], rounds, sizeof(double), cmpDouble);
    qsort(cpu[c], rounds, sizeof(double), cmpDouble);
    median[c] = ns[c][rounds / 2];
    cpuMedian[c] = cpu[c][rounds / 2];
  }
  printf("telltale bench: %zu rounds of %zu events, median ns/event (min-max)\n", rounds, count);
  printf("%-10s %9s %9s %9s %8s  %s\n", "case", "ns/event", "min", "max", "x floor", "what");
  for (int c = 0; c < CASES; ++c)
    if (caseWhyNot[c] == NULL)
      printf("%-10s %9.2f %9.2f %9.2f %8.2f  %s\n", caseNames[c], median[c], ns[c][0],
             ns[c][rounds - 1], median[c] / median[CASE_FLOOR], caseDocs[c]);
    else if (caseWhyNot[c][0] != '\0')   /* "" leaves the row out */
      printf("%-10s %9s %9s %9s %8s  %s\n", caseNames[c], "-", "-", "-", "-", caseWhyNot[c]);
  if (writerRounds > 0) {
    qsort(writerCpu, writerRounds, sizeof(double), cmpDouble);
    printf("\nasync: the writer thread's processor time %.2f ns an event (%.0f M events/s,"
           " %.2f GB/s), the emitting thread's %.2f (medians of %zu rounds)\n",
           writerCpu[writerRounds / 2], 1e3 / writerCpu[writerRounds / 2],
           RECORD_SIZE / writerCpu[writerRounds / 2], cpuMedian[CASE_ASYNC], writerRounds);
  }
  printf("\nduty cycle, with telltale over the same work without it: the wall clock's\n"
         "medians, and the program's thread's processor time (CLOCK_THREAD_CPUTIME_ID)\n");
  for (int d = 0; d < 4; ++d) {
    static const int duty[4] = {CASE_DUTY100, CASE_DUTY1US, CASE_DUTY100A, CASE_DUTY1USA};
    int w = d % 2 ? CASE_WORK1US : CASE_WORK100, e = duty[d];
    printf("%-10s wall %6.3fx  thread %6.3fx  (work %.1f ns a slice, %u iterations;"
           " %.2f ns more an event, %.2f of the thread's)\n",
           caseNames[e], median[e] / median[w], cpuMedian[e] / cpuMedian[w], median[w],
           workIters[d % 2], median[e] - median[w], cpuMedian[e] - cpuMedian[w]);
  }
  if (caseWhyNot[CASE_LTTNG_ON] == NULL)   /* bench/lttng.sh finish checks the trace */
    printf("lttng-on emitted %zu events\n", count / 10 + 1 + rounds * count);
  for (int c = 0; c < CASES; ++c) {
    free(ns[c]);
    free(cpu[c]);
  }
  free(writerCpu);
  return 0;
}

/* runScaling -- two threads against one, recorded only and written */
static void runScaling(size_t rounds, size_t count)
{
  printf("\n2 threads against 1, aggregate events/s (median of %zu):\n", rounds / 2 + 1);
  for (int output = 0; output < 2; ++output) {
    EventKindSet noisy = EVENT_KIND_BIT(EventKindNoisy);
    size_t r, n = rounds / 2 + 1;
    double one[64], two[64], sleeps[64], ignored;
    EventRecord(0, noisy & ~atomic_load(&EVENT_SOURCE_RECORD));
    if (output)
      EventControlSet(noisy);
    else
      EventControlReset(noisy);
    if (n > 64)
      n = 64;
    for (r = 0; r < n; ++r) {
      one[r] = (double)count / scaleRun(1, count, &ignored);
      two[r] = 2.0 * (double)count / scaleRun(2, count, &sleeps[r]);
    }
    qsort(one, n, sizeof(double), cmpDouble);
    qsort(two, n, sizeof(double), cmpDouble);
    qsort(sleeps, n, sizeof(double), cmpDouble);
    printf("%-10s 1 thread %7.1f M/s   2 threads %7.1f M/s   ratio %.2f   sleeps/block %.2f\n",
           output ? "enabled" : "recorded", one[n / 2] / 1e6, two[n / 2] / 1e6,
           two[n / 2] / one[n / 2], sleeps[n / 2]);
  }
}

int main(int argc, char **argv)
{
  BenchOptionsStruct o;
  char tmpl[] = "/tmp/telltale-bench-XXXXXX";
  PlinthStream stream;
  int res = options(argc, argv, &o);
  if (res >= 0)
    return res;
  /* liblttng-ust's constructor has registered with the session daemon,
   * if one runs, and enabled what its sessions enable, before main. */
#ifdef BENCH_LTTNG
  if (!lttng_ust_tracepoint_enabled(bench, paw))
    caseWhyNot[CASE_LTTNG_ON] = o.note != NULL ? o.note : "bench:paw is not enabled: no lttng session";
#else
  caseWhyNot[CASE_LTTNG_OFF] = caseWhyNot[CASE_LTTNG_ON] = o.note != NULL ? o.note : "";
#endif
#ifndef BENCH_SPDLOG
  caseWhyNot[CASE_SPDLOG] = "spdlog: not installed (apt-get install libspdlog-dev)";
#endif
  if (o.list) {
    for (int c = 0; c < CASES; ++c)
      if (caseWhyNot[c] == NULL)
        printf("%s\n", caseNames[c]);
    return 0;
  }
  devnull = fopen("/dev/null", "w");
  if (devnull == NULL) {
    perror("bench: /dev/null");
    return 1;
  }
  if (o.path != NULL)
    res = PlinthStreamOpenFile(&stream, o.path);
  else {
    int fd = mkstemp(tmpl);
    if (fd < 0) {
      perror("bench: mkstemp");
      return 1;
    }
    res = PlinthStreamOpenFd(&stream, fd, 1);
  }
  {
    char writePath[sizeof tmpl + 4096];
    snprintf(writePath, sizeof writePath, "%s.write", o.path != NULL ? o.path : tmpl);
    writeFd = open(writePath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (writeFd < 0) {
      perror("bench: the write case's file");
      return 1;
    }
    if (o.path == NULL)
      unlink(writePath);
  }
  if (res != 0 || EventStreamAddBinary(stream) != 0) {
    fprintf(stderr, "bench: cannot open the log: %s\n", PlinthStrError(res));
    return 1;
  }
#ifdef BENCH_SPDLOG
  {
    char spdlogPath[sizeof tmpl + 4096];
    snprintf(spdlogPath, sizeof spdlogPath, "%s.spdlog", o.path != NULL ? o.path : tmpl);
    if (benchSpdlogOpen(spdlogPath) != 0)
      caseWhyNot[CASE_SPDLOG] = "spdlog: cannot open its file";
    else if (o.path == NULL)
      unlink(spdlogPath);
  }
#endif
  calibrate();
  if (o.only != NULL && strcmp(o.only, "scaling") == 0)
    runScaling(o.rounds, o.count);
  else if (o.only != NULL)
    res = runOnly(o.only, o.count);
  else if ((res = runTable(o.rounds, o.count)) == 0)
    runScaling(o.rounds, o.count);
#ifdef BENCH_SPDLOG
  benchSpdlogClose();
#endif
  EventFinish();
  PlinthStreamClose(stream);
  close(writeFd);
  if (o.path == NULL)
    unlink(tmpl);
  return res;
}
