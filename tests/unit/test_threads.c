/* <tests/unit/test_threads.c> -- threads and processes: nothing lost or torn
 *
 * .design: design/index.txt .req.threads .req.lossless design/runtime.txt .sol.thread
 *          .sol.thread.exit .sol.fork
 *
 * Covers:
 *   threads-1.1  two threads emit THREAD_EVENTS TestThread events each
 *                at once (thread, seq, check = a hash of both) into one
 *                memory stream; decoded, every thread's seq runs 0..N-1
 *                exactly once and in order, every check matches (no event
 *                lost or torn), the merged clock never goes back, and each
 *                thread has ThreadStart, its ThreadName and ThreadExit.
 *   threads-1.2  a thread that emits and returns without flushing: its
 *                events are in the stream as soon as it is joined, before
 *                EventFinish (the exit hook wrote them).
 *   threads-1.3  while two threads emit and intern strings, the main
 *                thread flips output and recording of their kind: no data
 *                race (build/tsan), every event decoded is whole, each
 *                thread's seqs only increase, and each string has one id
 *                and one Intern event.
 *   threads-1.4  while three threads emit TestThread events at full
 *                speed into 4 KiB buffers, the main thread flushes every
 *                thread's buffers (EventFlushAll) over and over, and
 *                forks now and then (the child exits at once): every
 *                thread's seq runs 0..N-1 exactly once, in order and
 *                whole.  A flush of a thread that is emitting sends its
 *                committed events only, each once (.sol.flush).
 *   threads-1.5  EventDumpTo(fd, 10) writes to fd what a death prints: a
 *                heading that names the calling thread, and its last 10
 *                events (TestW w=11..20 of 20 just emitted), in order.
 *   threads-1.6  a string another thread rewrites (a NUL coming and
 *                going inside it) while one thread emits it 200000 times:
 *                every TestS is read, none refused (.sol.string).  Not
 *                in build/tsan: the race is the point.
 *   threads-2.1  fork: the child writes its own log, telltale.log.PID,
 *                holding only its own events; the parent's stream holds
 *                none of the child's.
 *   threads-2.2  fork with TELLTALE_FILE=f.%p.log (a fresh process): the
 *                parent writes f.PARENT.log and the child f.CHILD.log,
 *                each with only its own events, and nothing else.
 *   threads-3.1  signal handlers emit on the thread they interrupt: a
 *                thread emits TestThread events into 4 KiB buffers (so
 *                its slow path is interrupted too) while another sends
 *                it SIGUSR1, until the handler has run 5000 times (or
 *                5 s, at least 100 times, under ThreadSanitizer); it
 *                emits one, and every 8th time raises SIGUSR2, whose
 *                handler emits one more (a second level).  Every event of
 *                the thread, of each handler, is there once, in order,
 *                and whole.  design/plinth.txt .sol.signal.level
 *   threads-3.2  TELLTALE_SIGNALS=none: in a fresh process, a handler the
 *                program installs is the kernel's handler as it is
 *                (not wrapped), and telltale installs no fatal-signal
 *                handler; by default, the program's handler is wrapped
 *                and telltale's SIGSEGV handler is there.  The kernel's
 *                actions are read with the raw system call.  Not in
 *                build/tsan, whose runtime puts its own handlers in the
 *                kernel.  design/plinth.txt .sol.signal.none
 * Run under build/tsan too: it must be clean there.
 */

#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture.h"

/* 10^6 events per thread: about 1 s in build/, 3 s under ASan and 6 s
 * under ThreadSanitizer. */
#define THREAD_EVENTS 1000000u
#define THREAD_COUNT 2

/* check -- a hash of thread and seq, so that a torn event shows */
static uint64_t check(uint64_t thread, uint64_t seq)
{
  uint64_t z = (thread << 40 ^ seq) + UINT64_C(0x9E3779B97F4A7C15);
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return (z ^ (z >> 31)) & UINTPTR_MAX;
}

static pthread_barrier_t startTogether, doneFlipping;

/* The threads a case starts, and the word that stops them: a case that
 * fails returns at once (cmocka's longjmp), and its teardown,
 * threadsStop, ends and joins what it left running, so that they cannot
 * fail the next case (issue 30: threads-1.5 failed after 1.4 had). */
#define RUNNING_MAX 8
static pthread_t running[RUNNING_MAX];
static unsigned runningCount;
static _Atomic int stopThreads;

#define STOPPING() atomic_load_explicit(&stopThreads, memory_order_relaxed)

/* threadStart -- start a case's thread, to be joined by threadsJoin */
static void threadStart(void *(*fn)(void *), void *arg)
{
  assert_true(runningCount < RUNNING_MAX);
  assert_int_equal(pthread_create(&running[runningCount], NULL, fn, arg), 0);
  ++runningCount;
}

/* threadsJoin -- join the case's threads, in the order started */
static void threadsJoin(void)
{
  while (runningCount > 0) {
    pthread_t first = running[0];
    memmove(&running[0], &running[1], (runningCount - 1) * sizeof running[0]);
    --runningCount;
    assert_int_equal(pthread_join(first, NULL), 0);
  }
}

/* emitter -- one test thread: THREAD_EVENTS TestThread events */
static void *emitter(void *arg)
{
  EventU thread = (EventU)(uintptr_t)arg;
  char name[16];
  snprintf(name, sizeof name, "emitter %u", (unsigned)thread);
  EventThreadNameSet(name);
  (void)pthread_barrier_wait(&startTogether);
  for (EventW seq = 0; seq < THREAD_EVENTS && !STOPPING(); ++seq)
    EVENT_UWW(TestThread, thread, seq, (EventW)check(thread, seq));
  return NULL;
}

/* expectSeqs -- every emitter thread 1..count's TestThread events are
 * there, seq 0..events-1 once each, in order and whole, in time order;
 * serialOf gets each one's serial */
static void expectSeqs(CaptureStruct *c, unsigned count, uint64_t events, uint32_t *serialOf)
{
  uint64_t nextSeq[8] = {0};
  EventRecordStruct rec;
  EventClock lastClock = 0;
  assert_true(count < 8);
  while (CaptureNext(c, &rec)) {
    if (rec.clock < lastClock)
      fail_msg("time order: clock %" PRIu64 " after %" PRIu64, rec.clock, lastClock);
    lastClock = rec.clock;
    if (rec.code == EventCodeTestThread) {
      uint64_t t = rec.values[0].u, seq = rec.values[1].u;
      if (t < 1 || t > count)
        fail_msg("TestThread with thread %" PRIu64, t);
      if (serialOf[t] == 0)
        serialOf[t] = rec.thread;
      if (rec.thread != serialOf[t])
        fail_msg("thread %" PRIu64 "'s events come from serials %u and %u",
                 t, (unsigned)serialOf[t], (unsigned)rec.thread);
      if (seq != nextSeq[t])
        fail_msg("thread %" PRIu64 ": seq %" PRIu64 " where %" PRIu64 " was due", t, seq, nextSeq[t]);
      if (rec.values[2].u != check(t, seq))
        fail_msg("thread %" PRIu64 " seq %" PRIu64 ": torn (check 0x%" PRIx64 ")",
                 t, seq, rec.values[2].u);
      ++nextSeq[t];
    }
  }
  for (unsigned t = 1; t <= count; ++t) {
    if (nextSeq[t] != events)
      fail_msg("thread %u: %" PRIu64 " events of %" PRIu64, t, nextSeq[t], events);
    assert_true(serialOf[t] != 0);
  }
}

/* threads-1.1: two threads at once, none lost or torn */
static void threads_1_1_two_threads_lossless(void **state)
{
  uint32_t serialOf[THREAD_COUNT + 1] = {0};
  int started[THREAD_COUNT + 1] = {0}, named[THREAD_COUNT + 1] = {0}, exited[THREAD_COUNT + 1] = {0};
  CaptureStruct c;
  EventRecordStruct rec;
  (void)state;

  CaptureStart(&c);
  assert_int_equal(pthread_barrier_init(&startTogether, NULL, THREAD_COUNT), 0);
  for (uintptr_t t = 1; t <= THREAD_COUNT; ++t)
    threadStart(emitter, (void *)t);
  threadsJoin();
  (void)pthread_barrier_destroy(&startTogether);
  CaptureFinish(&c);

  expectSeqs(&c, THREAD_COUNT, THREAD_EVENTS, serialOf);
  assert_true(serialOf[1] != serialOf[2]);

  /* each emitter's ThreadStart, ThreadName and ThreadExit, by serial */
  CaptureRewind(&c);
  while (CaptureNext(&c, &rec))
    for (unsigned t = 1; t <= THREAD_COUNT; ++t) {
      char name[16];
      if (rec.thread != serialOf[t])
        continue;
      snprintf(name, sizeof name, "emitter %u", t);
      if (rec.code == EventCodeThreadStart && rec.values[0].u == serialOf[t])
        ++started[t];
      else if (rec.code == EventCodeThreadName && rec.values[0].u == serialOf[t]
               && strcmp(rec.values[1].s, name) == 0)
        ++named[t];
      else if (rec.code == EventCodeThreadExit && rec.values[0].u == serialOf[t])
        ++exited[t];
    }
  for (unsigned t = 1; t <= THREAD_COUNT; ++t) {
    assert_int_equal(started[t], 1);
    assert_int_equal(named[t], 1);
    assert_int_equal(exited[t], 1);
  }
  assert_true(c.info->streamEnd);
  CaptureClose(&c);
}

#define FLUSHED_EVENTS 300000u
#define FLUSHED_THREADS 3

static atomic_uint flushedDone, flushesMade;

/* flushedEmitter -- FLUSHED_EVENTS TestThread events, at full speed but
 * for a wait halfway until main has flushed 11 times, so that it does
 * so while they emit however the threads are scheduled */
static void *flushedEmitter(void *arg)
{
  EventU thread = (EventU)(uintptr_t)arg;
  (void)pthread_barrier_wait(&startTogether);
  for (EventW seq = 0; seq < FLUSHED_EVENTS && !STOPPING(); ++seq) {
    EVENT_UWW(TestThread, thread, seq, (EventW)check(thread, seq));
    while (seq == FLUSHED_EVENTS / 2 && atomic_load(&flushesMade) <= 10 && !STOPPING()) {
      struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL);
    }
  }
  atomic_fetch_add(&flushedDone, 1);
  return NULL;
}

/* threads-1.4: flushing threads while they emit loses and repeats nothing */
static void threads_1_4_flush_live_threads(void **state)
{
  uint32_t serialOf[FLUSHED_THREADS + 1] = {0};
  const char *writer = getenv("TELLTALE_WRITER");
  int async = writer != NULL && strncmp(writer, "async", 5) == 0;
  unsigned flushes = 0, busy = 0;
  CaptureStruct c;
  (void)state;

  CaptureStart(&c);
  assert_int_equal(EventBufferSizeSet(4096), 0);
  atomic_store(&flushedDone, 0);
  atomic_store(&flushesMade, 0);
  assert_int_equal(pthread_barrier_init(&startTogether, NULL, FLUSHED_THREADS + 1), 0);
  for (uintptr_t t = 1; t <= FLUSHED_THREADS; ++t)
    threadStart(flushedEmitter, (void *)t);
  (void)pthread_barrier_wait(&startTogether);
  while (atomic_load(&flushedDone) < FLUSHED_THREADS) {
    int res = EventFlushAll();
    /* EAGAIN: another thread held the lock for 200 ms (a loaded
     * machine), as the interface allows; no flush made, try again. */
    if (res == 11) {
      ++busy;
      continue;
    }
    if (async)
      assert_int_equal(res, 16);        /* EBUSY: the writer writes */
    else
      assert_int_equal(res, 0);
    atomic_store(&flushesMade, ++flushes);
    if (flushes % 16 == 0) {
      int status;
      pid_t pid = fork();
      assert_true(pid >= 0);
      if (pid == 0)
        _exit(0);
      assert_int_equal(waitpid(pid, &status, 0), pid);
      assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
  }
  threadsJoin();
  (void)pthread_barrier_destroy(&startTogether);
  assert_int_equal(EventBufferSizeSet(64 * 1024), 0);
  if (busy > 0)
    print_message("threads-1.4: %u flushes found the lock held (EAGAIN), tried again\n", busy);
  CaptureFinish(&c);
  assert_true(flushes > 10);
  expectSeqs(&c, FLUSHED_THREADS, FLUSHED_EVENTS, serialOf);
  assert_true(c.info->streamEnd);
  CaptureClose(&c);
}

/* threads-1.5: the traceback to a descriptor, for a program's own logger */
static void threads_1_5_dump_to(void **state)
{
  char path[] = "/tmp/telltale-dump.XXXXXX", text[8192], *line, *save = NULL;
  int fd = mkstemp(path);
  EventW next = 11;
  ssize_t n;
  int heading = 0;
  (void)state;
  assert_true(fd >= 0);
  (void)unlink(path);
  EventThreadNameSet("dumper");
  for (EventW w = 1; w <= 20; ++w)
    EVENT_W(TestW, w);
  EventDumpTo(fd, 10);
  n = pread(fd, text, sizeof text - 1, 0);
  assert_true(n > 0);
  text[n] = '\0';
  (void)close(fd);
  for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
    char *w = strstr(line, " TestW ");
    if (strstr(line, "the last 10 events in the flight recorder, oldest first: 10 of T") != NULL
        && strstr(line, "(dumper), which called") != NULL)
      heading = 1;
    else if (w != NULL) {
      if (strtoull(strstr(w, "w=") + 2, NULL, 10) != next)
        fail_msg("EventDumpTo: \"%s\" where TestW w=%u was due", line, (unsigned)next);
      ++next;
    }
  }
  assert_true(heading);
  assert_int_equal(next, 21);
}

#define QUIET_EVENTS 1000u

/* quiet -- emit and return, without EventFlush */
static void *quiet(void *arg)
{
  (void)arg;
  for (EventW i = 0; i < QUIET_EVENTS && !STOPPING(); ++i)
    EVENT_W(TestW, 0x51000 + i);
  return NULL;
}

/* threads-1.2: a thread's events are written when it exits */
static void threads_1_2_exit_writes_events(void **state)
{
  CaptureStruct c;
  EventRecordStruct rec;
  EventW next = 0x51000;
  size_t exits = 0;
  (void)state;
  CaptureStart(&c);
  threadStart(quiet, NULL);
  threadsJoin();
  CaptureOpen(&c);                              /* before EventFinish */
  while (CaptureNext(&c, &rec)) {
    if (rec.code == EventCodeTestW) {
      assert_int_equal(rec.values[0].u, next);
      ++next;
    } else if (rec.code == EventCodeThreadExit)
      ++exits;
  }
  assert_int_equal(next, 0x51000 + QUIET_EVENTS);
  assert_int_equal(exits, 1);
  assert_false(c.info->streamEnd);
  EventStreamClose(c.reader);
  c.reader = NULL;
  CaptureFinish(&c);
  CaptureClose(&c);
}


#define RACE_EVENTS 200000u
#define RACE_STRINGS 64u

/* racer -- emit TestThread events and intern strings shared with the
 * other racer, labelling an address with each */
static void *racer(void *arg)
{
  EventU thread = (EventU)(uintptr_t)arg;
  (void)pthread_barrier_wait(&startTogether);
  for (EventW seq = 0; seq < RACE_EVENTS && !STOPPING(); ++seq) {
    EVENT_UWW(TestThread, thread, seq, (EventW)check(thread, seq));
    if (seq % 1000 == 0) {
      char name[32];
      snprintf(name, sizeof name, "shared %u", (unsigned)(seq / 1000 % RACE_STRINGS));
      EventLabelString((EventA)(0x1000 * thread + seq), name);
    }
  }
  /* Exit only when the flipping is over and every kind is on again:
   * a thread's exit sends its buffers only for kinds whose output is
   * on, so otherwise what it sent would depend on the timing.  Then
   * some more, so that the log has some even if the flipping (slowed,
   * under ThreadSanitizer) outlasted the loop above with the kind off. */
  (void)pthread_barrier_wait(&doneFlipping);
  for (EventW seq = RACE_EVENTS; seq < RACE_EVENTS + 1000; ++seq)
    EVENT_UWW(TestThread, thread, seq, (EventW)check(thread, seq));
  return NULL;
}

/* threads-1.3: control and interning race with emitters */
static void threads_1_3_control_and_intern_race(void **state)
{
  uint64_t lastSeq[THREAD_COUNT + 1];
  uint64_t ids[RACE_STRINGS] = {0};
  size_t interns[RACE_STRINGS] = {0}, decoded = 0;
  CaptureStruct c;
  EventRecordStruct rec;
  EventKindSet noisy = EVENT_KIND_BIT(EventKindNoisy);
  (void)state;

  CaptureStart(&c);
  assert_int_equal(pthread_barrier_init(&startTogether, NULL, THREAD_COUNT + 1), 0);
  assert_int_equal(pthread_barrier_init(&doneFlipping, NULL, THREAD_COUNT + 1), 0);
  for (uintptr_t t = 1; t <= THREAD_COUNT; ++t)
    threadStart(racer, (void *)t);
  (void)pthread_barrier_wait(&startTogether);
  for (unsigned i = 0; i < 20000; ++i) {
    if (i % 2 == 0)
      (void)EventControlFlip(noisy);
    else
      (void)EventRecord(0, noisy);
    if (i % 100 == 0)
      (void)EventInternString("shared 0");
  }
  (void)EventControlSet(noisy);
  (void)EventRecord(0, noisy & ~atomic_load(&EVENT_SOURCE_RECORD));
  (void)pthread_barrier_wait(&doneFlipping);
  threadsJoin();
  (void)pthread_barrier_destroy(&startTogether);
  (void)pthread_barrier_destroy(&doneFlipping);
  CaptureFinish(&c);

  for (unsigned t = 0; t <= THREAD_COUNT; ++t)
    lastSeq[t] = UINT64_MAX;
  while (CaptureNext(&c, &rec)) {
    if (rec.code == EventCodeTestThread) {
      uint64_t t = rec.values[0].u, seq = rec.values[1].u;
      assert_true(t >= 1 && t <= THREAD_COUNT);
      if (lastSeq[t] != UINT64_MAX && seq <= lastSeq[t])
        fail_msg("thread %" PRIu64 ": seq %" PRIu64 " after %" PRIu64, t, seq, lastSeq[t]);
      if (rec.values[2].u != check(t, seq))
        fail_msg("thread %" PRIu64 " seq %" PRIu64 ": torn", t, seq);
      lastSeq[t] = seq;
      ++decoded;
    } else if (rec.code == EventCodeIntern) {
      unsigned n;
      if (sscanf(rec.values[1].s, "shared %u", &n) == 1 && n < RACE_STRINGS) {
        if (interns[n]++ == 0)
          ids[n] = rec.values[0].u;
      }
    } else if (rec.code == EventCodeLabel) {
      const char *label = EventStreamLabel(c.reader, rec.values[0].u);
      assert_non_null(label);                   /* its Intern came first */
    }
  }
  assert_true(decoded >= 1000 * THREAD_COUNT);
  for (unsigned n = 0; n < RACE_STRINGS; ++n) {
    char name[32];
    snprintf(name, sizeof name, "shared %u", n);
    assert_int_equal(interns[n], 1);
    assert_int_equal(EventInternString(name), ids[n]);
  }
  CaptureClose(&c);
}


/* threads-2: fork ---------------------------------------------------- */

/* readFile -- a whole file, malloc'd; NULL if it cannot be read */
static unsigned char *readFile(const char *path, size_t *sizeReturn)
{
  FILE *f = fopen(path, "rb");
  unsigned char *buf = NULL;
  size_t size = 0, limit = 0, n;
  if (f == NULL)
    return NULL;
  do {
    if (size == limit) {
      limit = limit == 0 ? 65536 : 2 * limit;
      buf = realloc(buf, limit);
      assert_non_null(buf);
    }
    n = fread(buf + size, 1, limit - size, f);
    size += n;
  } while (n > 0);
  fclose(f);
  *sizeReturn = size;
  return buf;
}

#ifndef EVENT_TSAN
/* threads-1.6: a string rewritten by another thread while it is emitted.
 * The race is the test's point, so it is not run under ThreadSanitizer. */
#define STRING_EVENTS 200000u
static volatile char rewritten[64];
static _Atomic int rewriting;

static void *rewriter(void *arg)
{
  (void)arg;
  while (atomic_load(&rewriting) && !STOPPING())
    for (unsigned i = 1; i < sizeof rewritten - 1; ++i) {
      rewritten[i] = '\0';     /* the string is i long for a moment */
      rewritten[i] = 'b';
    }
  return NULL;
}

static void threads_1_6_string_rewritten(void **state)
{
  CaptureStruct c;
  EventRecordStruct rec;
  size_t strings = 0;
  (void)state;
  for (unsigned i = 0; i < sizeof rewritten - 1; ++i)
    rewritten[i] = 'a';
  rewritten[sizeof rewritten - 1] = '\0';
  CaptureStart(&c);
  atomic_store(&rewriting, 1);
  threadStart(rewriter, NULL);
  for (unsigned n = 0; n < STRING_EVENTS; ++n)
    EVENT_S(TestS, (const char *)rewritten);
  atomic_store(&rewriting, 0);
  threadsJoin();
  CaptureFinish(&c);
  while (CaptureNext(&c, &rec))         /* fails at a block the reader refuses */
    if (rec.code == EventCodeTestS) {
      size_t n = strlen(rec.values[0].s);
      if (n == 0 || strspn(rec.values[0].s, "ab?") != n)
        fail_msg("TestS %zu: \"%s\"", strings, rec.values[0].s);
      ++strings;
    }
  assert_int_equal(strings, STRING_EVENTS);
  CaptureClose(&c);
}
#endif

/* threads-2.1: the child of fork writes its own log with only its events */
static void threads_2_1_fork_child_own_log(void **state)
{
  CaptureStruct c;
  EventRecordStruct rec;
  char path[64];
  unsigned char *bytes;
  size_t size = 0;
  pid_t child;
  int status;
  (void)state;
  CaptureStart(&c);
  EVENT_W(TestW, 0x2100);                       /* buffered in the parent at fork */
  child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    /* No cmocka here: the child reports by its exit status. */
    EVENT_W(TestW, 0x2101);
    EventFinish();
    _exit(0);
  }
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EVENT_W(TestW, 0x2102);
  CaptureFinish(&c);
  assert_int_equal(CaptureCountValue(&c, EventCodeTestW, 0x2100), 1);
  assert_int_equal(CaptureCountValue(&c, EventCodeTestW, 0x2101), 0);
  assert_int_equal(CaptureCountValue(&c, EventCodeTestW, 0x2102), 1);
  CaptureClose(&c);

  /* The tests run in an empty directory with TELLTALE_FILE unset, so
   * the child's log is telltale.log.PID. */
  snprintf(path, sizeof path, "telltale.log.%ld", (long)child);
  bytes = readFile(path, &size);
  if (bytes == NULL)
    fail_msg("the child wrote no %s", path);
  {
    EventStreamStruct *reader;
    char msg[256];
    size_t mine = 0, others = 0;
    EventStreamRes res = EventStreamOpen(&reader, bytes, size, 0, msg, sizeof msg);
    if (res != EventStreamOK)
      fail_msg("%s: %s", path, msg);
    assert_int_equal(EventStreamInfo(reader)->pid, (uint32_t)child);
    while ((res = EventStreamNext(reader, &rec)) == EventStreamOK)
      if (rec.code == EventCodeTestW) {
        if (rec.values[0].u == 0x2101)
          ++mine;
        else
          ++others;
      }
    assert_int_equal(res, EventStreamEND);
    assert_int_equal(mine, 1);
    assert_int_equal(others, 0);
    assert_true(EventStreamInfo(reader)->streamEnd);
    EventStreamClose(reader);
  }
  free(bytes);
  assert_int_equal(unlink(path), 0);
}


/* forkPatternChild -- run with TELLTALE_FILE=f.%p.log: emit, fork, and
 * print "PARENT CHILD" */
static int forkPatternChild(void)
{
  pid_t child;
  int status;
  EVENT_W(TestW, 0x2201);
  child = fork();
  if (child < 0)
    return 1;
  if (child == 0) {
    EVENT_W(TestW, 0x2202);
    return 0;
  }
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return 1;
  printf("%ld %ld\n", (long)getpid(), (long)child);
  return 0;
}

/* expectLog -- path is a sound log of pid, ended cleanly, whose only
 * TestW is w */
static void expectLog(const char *path, long pid, uint64_t w)
{
  size_t size, mine = 0, others = 0;
  unsigned char *bytes = readFile(path, &size);
  EventStreamStruct *reader;
  EventRecordStruct rec;
  char msg[256];
  EventStreamRes res;
  if (bytes == NULL)
    fail_msg("no %s", path);
  res = EventStreamOpen(&reader, bytes, size, 0, msg, sizeof msg);
  if (res != EventStreamOK)
    fail_msg("%s: %s", path, msg);
  assert_int_equal(EventStreamInfo(reader)->pid, (uint32_t)pid);
  while ((res = EventStreamNext(reader, &rec)) == EventStreamOK)
    if (rec.code == EventCodeTestW)
      ++*(rec.values[0].u == w ? &mine : &others);
  assert_int_equal(res, EventStreamEND);
  assert_int_equal(mine, 1);
  assert_int_equal(others, 0);
  assert_true(EventStreamInfo(reader)->streamEnd);
  EventStreamClose(reader);
  free(bytes);
  assert_int_equal(unlink(path), 0);
}

/* threads-2.2: with %p in TELLTALE_FILE, the child of fork names its log
 * by the pattern with its own pid, and nothing else is written */
static void threads_2_2_fork_pattern(void **state)
{
  char command[4200], out[64] = "", self[4096], path[64];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  long parent = 0, child = 0;
  FILE *p;
  DIR *dir;
  struct dirent *d;
  (void)state;
  assert_true(n > 0);
  self[n] = '\0';
  assert_int_equal(mkdir("pattern", 0700), 0);
  /* No thread of telltale's runs when the child forks (sync writer, no
   * control thread): the ASan of clang 14 takes no lock around fork, so
   * a fork while another thread is inside its allocator leaves the
   * grandchild's allocator locked for ever (seen in build/san, the
   * grandchild hung at exit in LeakSanitizer). */
  snprintf(command, sizeof command,
           "cd pattern && env TELLTALE_FILE=f.%%p.log TELLTALE_WRITER=sync TELLTALE_CTL=off "
           "'%s' --fork-pattern-child", self);
  p = popen(command, "r");
  assert_non_null(p);
  if (fgets(out, sizeof out, p) == NULL)
    out[0] = '\0';
  assert_int_equal(pclose(p), 0);
  if (sscanf(out, "%ld %ld", &parent, &child) != 2)
    fail_msg("the child says \"%s\"", out);
  snprintf(path, sizeof path, "pattern/f.%ld.log", parent);
  expectLog(path, parent, 0x2201);
  snprintf(path, sizeof path, "pattern/f.%ld.log", child);
  expectLog(path, child, 0x2202);
  dir = opendir("pattern");
  assert_non_null(dir);
  while ((d = readdir(dir)) != NULL)
    if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0)
      fail_msg("pattern/%s was written too", d->d_name);
  closedir(dir);
  assert_int_equal(rmdir("pattern"), 0);
}

#define SIGNAL_EVENTS 400000u

static _Atomic int signalStop, signalGo, signalSenderDone;
static atomic_uint usr1Count, usr2Count;

/* onUsr2, onUsr1 -- the handlers: one event each, numbered */
static void onUsr2(int sig)
{
  unsigned n = atomic_fetch_add(&usr2Count, 1);
  (void)sig;
  EVENT_UWW(TestThread, 4, n, (EventW)check(4, n));
}

static void onUsr1(int sig, siginfo_t *info, void *context)
{
  unsigned n = atomic_fetch_add(&usr1Count, 1);
  (void)sig, (void)info, (void)context;
  EVENT_UWW(TestThread, 3, n, (EventW)check(3, n));
  if (n % 8 == 0)
    (void)raise(SIGUSR2);       /* SA_NODEFER not needed: another signal */
}

#define SIGNAL_HANDLED 5000u
static EventW signalledEvents;

/* signalled -- emit at least SIGNAL_EVENTS events, and on until the
 * handlers have run SIGNAL_HANDLED times or 5 seconds have passed
 * (ThreadSanitizer delivers signals only at its interceptors) */
static void *signalled(void *arg)
{
  EventW seq = 0;
  struct timespec start, now;
  (void)arg;
  clock_gettime(CLOCK_MONOTONIC, &start);
  /* The thread's first event sets it up (.sol.thread): before the
   * signals come, as that mallocs */
  EventThreadNameSet("signalled");
  atomic_store(&signalGo, 1);
  while (!STOPPING()) {
    EVENT_UWW(TestThread, 1, seq, (EventW)check(1, seq));
    ++seq;
    if (seq >= SIGNAL_EVENTS && seq % 1024 == 0) {
      if (atomic_load_explicit(&usr1Count, memory_order_relaxed) >= SIGNAL_HANDLED)
        break;
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec - start.tv_sec >= 5)
        break;
    }
  }
  signalledEvents = seq;
  atomic_store(&signalStop, 1);
  /* Not a handler's event while the thread exits, which would be its
   * first event again, in a handler: wait for the sender to stop, then
   * block SIGUSR1 (a pending one is dropped with the thread, uncounted) */
  while (!atomic_load(&signalSenderDone) && !STOPPING())
    ;
  {
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    (void)pthread_sigmask(SIG_BLOCK, &usr1, NULL);
  }
  return NULL;
}

/* threads-3.1: handlers' events never land inside an interrupted one */
static void threads_3_1_signal_handlers_emit(void **state)
{
  struct sigaction action, old1, old2;
  pthread_t thread;
  PlinthStream stream;
  EventStreamStruct *reader;
  EventStreamRes res;
  EventRecordStruct rec;
  uint64_t next[5] = {0};
  unsigned sent = 0;
  unsigned char *bytes;
  size_t size = 0;
  char msg[256];
  (void)state;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = onUsr1;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  assert_int_equal(sigaction(SIGUSR1, &action, &old1), 0);
  assert_true(signal(SIGUSR2, onUsr2) != SIG_ERR);
  /* what the program installed is what it reads back */
  assert_int_equal(sigaction(SIGUSR1, NULL, &action), 0);
  assert_true(action.sa_sigaction == onUsr1);
  assert_int_equal(sigaction(SIGUSR2, NULL, &old2), 0);
  assert_true(old2.sa_handler == onUsr2);

  /* A file, as a handler's flush must write() (a memory stream would
   * realloc in the handler) */
  assert_int_equal(PlinthStreamOpenFile(&stream, "signals.log"), 0);
  assert_int_equal(EventStreamAddBinary(stream), 0);
  assert_int_equal(EventBufferSizeSet(4096), 0);
  atomic_store(&signalStop, 0);
  atomic_store(&signalGo, 0);
  atomic_store(&signalSenderDone, 0);
  threadStart(signalled, NULL);
  thread = running[runningCount - 1];
  while (!atomic_load(&signalGo))
    ;
  while (!atomic_load(&signalStop)) {
    if (pthread_kill(thread, SIGUSR1) == 0)
      ++sent;
    for (volatile int spin = 0; spin < 200; ++spin)
      ;
  }
  atomic_store(&signalSenderDone, 1);
  threadsJoin();
  assert_int_equal(EventBufferSizeSet(65536), 0);
  EventFinish();
  PlinthStreamClose(stream);
  assert_true(atomic_load(&usr1Count) >= 100);  /* the handlers ran, often */
  assert_true(atomic_load(&usr1Count) <= sent);

  bytes = readFile("signals.log", &size);
  assert_non_null(bytes);
  res = EventStreamOpen(&reader, bytes, size, 0, msg, sizeof msg);
  if (res != EventStreamOK)
    fail_msg("signals.log: %s", msg);
  while ((res = EventStreamNext(reader, &rec)) == EventStreamOK)
    if (rec.code == EventCodeTestThread) {
      uint64_t t = rec.values[0].u, seq = rec.values[1].u;
      if (t != 1 && t != 3 && t != 4)
        fail_msg("TestThread from %" PRIu64, t);
      if (seq != next[t])
        fail_msg("source %" PRIu64 ": seq %" PRIu64 " where %" PRIu64 " was due", t, seq, next[t]);
      if (rec.values[2].u != check(t, seq))
        fail_msg("source %" PRIu64 " seq %" PRIu64 ": torn", t, seq);
      ++next[t];
    }
  assert_int_equal(next[1], signalledEvents);
  assert_int_equal(next[3], atomic_load(&usr1Count));
  assert_int_equal(next[4], atomic_load(&usr2Count));
  assert_int_equal(next[4], (atomic_load(&usr1Count) + 7) / 8);
  assert_int_equal(res, EventStreamEND);
  EventStreamClose(reader);
  free(bytes);
  assert_int_equal(unlink("signals.log"), 0);
  assert_int_equal(sigaction(SIGUSR1, &old1, NULL), 0);
  assert_true(signal(SIGUSR2, SIG_DFL) != SIG_ERR);
}

#ifndef EVENT_TSAN
/* kernelHandler -- the handler the kernel has for sig, by the raw call */
static void *kernelHandler(int sig)
{
  struct { void *handler; unsigned long flags; void *restorer; uint64_t mask; } k;
  if (syscall(SYS_rt_sigaction, sig, NULL, &k, sizeof k.mask) != 0)
    return (void *)-1;
  return k.handler;
}

static void usr1(int sig)
{
  (void)sig;
}

/* signalsChild -- threads-3.2's child: "raw" or "wrapped", then
 * "none" or "fatal" */
static int signalsChild(void)
{
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = usr1;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGUSR1, &action, NULL) != 0)
    return 1;
  printf("%s %s\n", kernelHandler(SIGUSR1) == (void *)usr1 ? "raw" : "wrapped",
         kernelHandler(SIGSEGV) == (void *)SIG_DFL ? "none" : "fatal");
  return 0;
}

/* threads-3.2: TELLTALE_SIGNALS=none leaves the program's handlers alone */
static void threads_3_2_signals_none(void **state)
{
  const char *expect[] = {"wrapped fatal\n", "raw none\n"};
  (void)state;
  for (int none = 0; none < 2; ++none) {
    char command[4200], out[64] = "", self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    FILE *p;
    assert_true(n > 0);
    self[n] = '\0';
    /* ASan keeps a SIGSEGV handler of its own unless told not to */
    snprintf(command, sizeof command,
             "env %s TELLTALE_FILE=none ASAN_OPTIONS=handle_segv=0 '%s' --signals-child",
             none ? "TELLTALE_SIGNALS=none" : "-u TELLTALE_SIGNALS", self);
    p = popen(command, "r");
    assert_non_null(p);
    if (fgets(out, sizeof out, p) == NULL)
      out[0] = '\0';
    assert_int_equal(pclose(p), 0);
    if (strcmp(out, expect[none]) != 0)
      fail_msg("TELLTALE_SIGNALS=%s: the child says \"%s\", not \"%s\"", none ? "none" : "(unset)",
               out, expect[none]);
  }
}
#endif

/* threadsStop -- every case's teardown: stop and join the threads a
 * failed case left running, and put back the buffer size */
static int threadsStop(void **state)
{
  (void)state;
  atomic_store(&stopThreads, 1);
  while (runningCount > 0)
    (void)pthread_join(running[--runningCount], NULL);
  atomic_store(&stopThreads, 0);
  (void)EventBufferSizeSet(64 * 1024);
  return 0;
}

int main(int argc, char **argv)
{
  char dir[] = "/tmp/test_threads.XXXXXX";
  int failures;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_teardown(threads_1_1_two_threads_lossless, threadsStop),
    cmocka_unit_test_teardown(threads_1_2_exit_writes_events, threadsStop),
    cmocka_unit_test_teardown(threads_1_3_control_and_intern_race, threadsStop),
    cmocka_unit_test_teardown(threads_1_4_flush_live_threads, threadsStop),
    cmocka_unit_test_teardown(threads_1_5_dump_to, threadsStop),
#ifndef EVENT_TSAN
    cmocka_unit_test_teardown(threads_1_6_string_rewritten, threadsStop),
#endif
    cmocka_unit_test_teardown(threads_2_1_fork_child_own_log, threadsStop),
    cmocka_unit_test_teardown(threads_2_2_fork_pattern, threadsStop),
    cmocka_unit_test_teardown(threads_3_1_signal_handlers_emit, threadsStop),
#ifndef EVENT_TSAN
    cmocka_unit_test_teardown(threads_3_2_signals_none, threadsStop),
#endif
  };
#ifndef EVENT_TSAN
  if (argc == 2 && strcmp(argv[1], "--signals-child") == 0)
    return signalsChild();
#endif
  if (argc == 2 && strcmp(argv[1], "--fork-pattern-child") == 0)
    return forkPatternChild();
  (void)argc, (void)argv;
  /* an empty directory: the fork case's child writes its log here */
  if (mkdtemp(dir) == NULL || chdir(dir) != 0) {
    perror("test_threads: temporary directory");
    return 1;
  }
  failures = cmocka_run_group_tests(tests, NULL, NULL);
  EventFinish();
  if (access("telltale.log", F_OK) == 0) {
    fprintf(stderr, "test_threads: a default telltale.log was written in %s\n", dir);
    ++failures;
  } else
    (void)rmdir(dir);
  return failures == 0 ? 0 : 1;
}
