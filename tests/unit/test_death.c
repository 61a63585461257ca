/* <tests/unit/test_death.c> -- every kind of death: nothing emitted is lost
 *
 * .design: design/index.txt .req.lossless design/control.txt .sol.live design/plinth.txt .sol.death
 *          .sol.death.limits .sol.signal .sol.assert .sol.traceback
 *          .test.death
 *
 * Each case runs tests/death_child (from the same build directory as
 * this program) in a fresh process: fork, then exec with a clean
 * environment whose TELLTALE_FILE names a log in a temporary directory,
 * the child's working directory, and with stderr sent to a file there.
 * So every child is a new session with the default log, written with
 * write(), and its live file LOG.live, mapped (.sol.live), unless the
 * case sets TELLTALE_MAP=off.  death_child.c says what each death
 * emits; the test checks
 *   - the exit status: the signal (WIFSIGNALED, WTERMSIG) or exit code;
 *   - the log, read with the shared reader (EventStreamOpen, Next),
 *     alone and merged with its live file by EventRecover as eventcnv
 *     does (.sol.recover): it is sound and holds exactly the events
 *     emitted, count and values, none twice, and no event of kind
 *     Noisy, whose output was off;
 *   - StreamEnd and no live file after a clean end; after an assertion
 *     or a fatal signal, the log alone already whole (.sol.death) and
 *     the live file adding nothing;
 *   - for an assertion and a fatal signal, the dump on stderr: one
 *     traceback, headed by the condition or the signal's name, whose
 *     TestW values are the last ones emitted, in order, ending with the
 *     last, with the Noisy TestPAW (output off: flight recorder only)
 *     in its place among them.
 *
 * Cases (each with the live file and with TELLTALE_MAP=off unless said):
 *   death-1.x   assert, segv, bus, ill (x86-64), fpe, abort
 *   death-2.x   exit() from a non-main thread; return from main;
 *               threads that exit, then return from main
 *   death-3.1   chaining: the program's handler, installed before
 *               telltale's (EventFatalSignals(0), sigaction,
 *               EventFatalSignals(1)), runs first and _exits: no dump,
 *               the log whole with its live file
 *   death-3.2   a handler installed after telltale's is chained to too
 *   death-3.3   TELLTALE_SIGNALS=off: no dump, plain SIGSEGV, the log
 *               whole once the live file is recovered
 *   death-3.4   core dumps as before: with RLIMIT_CORE unlimited and a
 *               plain core_pattern, WCOREDUMP with and without
 *               telltale's handler (not under AddressSanitizer, which
 *               turns core dumps off)
 *   death-4.1   SIGKILL at a random moment: the log with its live file
 *               holds TestW 0..k, contiguous and every value right, with
 *               k+1 at least the last count the child reported
 *   death-4.2   SIGKILL, TELLTALE_MAP=off: what the design promises
 *               (.sol.death.limits: no live file, so the unsent buffers
 *               are lost): the
 *               log is readable, its TestW are a contiguous prefix, and
 *               at most the buffer being filled and the one being
 *               written are lost
 *   death-4.3   stall-kill: a thread's block placed in the log and never
 *               written (its write after the lock stalls), blocks of
 *               another thread after it, then SIGKILL: the log alone
 *               has zeros where the block's header would be, as the
 *               header is no longer written under the lock, and says
 *               the block lost; with its live file every event of both
 *               threads is there and nothing is said lost
 *               (.sol.writer.at)
 *   death-5.1   eventcnv --header says "end  clean" after a clean end
 *   death-5.2   late-segv: every TestW in the traceback has the same
 *               elapsed and wall-clock times as in eventcnv's output of
 *               the log: the two use one clock rate (.sol.clock)
 *               and "recovered after a crash" after a crash
 *   death-6.x   faults the program handles itself (.sol.signal.recover):
 *               6.1 a barrier fault its handler fixes is silent and the
 *               program goes on; a later real fault dumps (handler
 *               installed after telltale's, before it, with
 *               SA_RESETHAND); 6.2 recovered faults, a raise()d SIGSEGV
 *               the handler returns from, an ignored one and a handler
 *               left by siglongjmp, then exit 0 with nothing from
 *               telltale; 6.3 a handler that cannot fix the fault and
 *               returns: one dump after it has run, death by SIGSEGV;
 *               6.4 one that puts SIG_DFL back and returns: the same;
 *               6.5 one that calls abort(): a dump, death by SIGABRT
 *   death-7.x   drops not yet reported at death (the writer thread with
 *               the drop policy, stalled): 7.1 SIGKILL, 7.2 _exit, 7.3
 *               SIGSEGV; every TestW is in the log with its live file
 *               or counted as dropped, the live file counting those
 *               the program died before reporting (.sol.dropped), and
 *               eventcnv --summary totals them
 *
 * Under AddressSanitizer (build/san) the child runs with
 * ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_sigfpe=0:
 * handle_sigill=0:handle_abort=0: with its defaults ASan installs its
 * own SIGSEGV, SIGBUS and SIGFPE handlers before telltale's, so
 * telltale, chaining to them as designed, would hand the signal to ASan,
 * which reports it and exits with status 1 instead of dying by the
 * signal.  The child is still instrumented, so its emitting and the
 * dump are checked by ASan and UBSan.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "event.h"
#include "eventread.h"
#include "death_child.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

extern char **environ;

static char dir[PATH_MAX];              /* the temporary directory */
static char logPath[PATH_MAX + 16], livePath[PATH_MAX + 32], errPath[PATH_MAX + 16];
static char childPath[PATH_MAX], eventcnvPath[PATH_MAX];
static unsigned seed;

/* Running the child ------------------------------------------------- */

typedef struct ChildStruct {
  const char *death;
  int mapOff;                   /* TELLTALE_MAP=off */
  int signalsOff;               /* TELLTALE_SIGNALS=off */
  int core;                     /* RLIMIT_CORE unlimited, else 0 */
  int pipeFd;                   /* becomes the child's fd 3, or -1 */
} ChildStruct;

/* childStart -- fork and exec death_child; returns its pid */
static pid_t childStart(const ChildStruct *c)
{
  static char file[PATH_MAX + 32];
  char *envp[256];
  size_t n = 0;
  pid_t pid;
  (void)unlink(logPath);
  (void)unlink(livePath);
  snprintf(file, sizeof file, "TELLTALE_FILE=%s", logPath);
  envp[n++] = file;
  if (c->mapOff)
    envp[n++] = "TELLTALE_MAP=off";
  if (c->signalsOff)
    envp[n++] = "TELLTALE_SIGNALS=off";
  envp[n++] = "ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_sigfpe=0:"
              "handle_sigill=0:handle_abort=0:detect_leaks=1";
  for (char **e = environ; *e != NULL && n < sizeof envp / sizeof envp[0] - 1; ++e)
    if (strncmp(*e, "TELLTALE_", 9) != 0 && strncmp(*e, "ASAN_OPTIONS=", 13) != 0)
      envp[n++] = *e;
  envp[n] = NULL;
  fflush(NULL);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    struct rlimit rl;
    char *argv[] = {childPath, (char *)c->death, NULL};
    int fd = open(errPath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, 2) < 0 || chdir(dir) != 0)
      _exit(126);
    if (c->pipeFd >= 0 && dup2(c->pipeFd, 3) < 0)
      _exit(126);
    /* No cores unless the case asks: the signal cases would leave them. */
    if (getrlimit(RLIMIT_CORE, &rl) == 0) {
      rl.rlim_cur = c->core ? rl.rlim_max : 0;
      (void)setrlimit(RLIMIT_CORE, &rl);
    }
    execve(childPath, argv, envp);
    _exit(127);
  }
  return pid;
}

static int childWait(pid_t pid)
{
  int status;
  while (waitpid(pid, &status, 0) < 0)
    assert_int_equal(errno, EINTR);
  return status;
}

static int childRun(const ChildStruct *c)
{
  return childWait(childStart(c));
}

static void expectSignal(int status, int sig, const char *death)
{
  if (!WIFSIGNALED(status) || WTERMSIG(status) != sig)
    fail_msg("%s: expected death by signal %d (%s), got %s %d", death, sig, strsignal(sig),
             WIFSIGNALED(status) ? "signal" : "exit status",
             WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

static void expectExit(int status, int code, const char *death)
{
  if (!WIFEXITED(status) || WEXITSTATUS(status) != code)
    fail_msg("%s: expected exit status %d, got %s %d", death, code,
             WIFSIGNALED(status) ? "signal" : "exit status",
             WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

/* readFile -- a whole file into malloc'd memory, NUL-terminated */
static char *readFile(const char *path, size_t *sizeReturn)
{
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t size = 0, cap = 0, got;
  if (f == NULL)
    fail_msg("cannot open %s: %s", path, strerror(errno));
  do {
    if (cap - size < 65536) {
      cap = cap == 0 ? 1 << 20 : cap * 2;
      buf = realloc(buf, cap + 1);
      assert_non_null(buf);
    }
    got = fread(buf + size, 1, cap - size, f);
    size += got;
  } while (got > 0);
  fclose(f);
  buf[size] = '\0';
  *sizeReturn = size;
  return buf;
}


/* Reading the log ---------------------------------------------------- */

typedef struct LogStruct {
  size_t w;                     /* TestW events */
  size_t wWrong;                /* TestW whose value is not its position */
  size_t paw;                   /* TestPAW events: must be none */
  uint64_t threadNext[CHILD_THREADS + 2];  /* next TestThread seq per thread */
  size_t threadWrong;           /* out of order, bad thread or torn */
  size_t names;                 /* ThreadName events */
  int streamEnd;
  size_t events, blocks;
  size_t problems;
  char problem[256];            /* the first */
  int live;                     /* a live file was there and was merged */
  size_t recovered;             /* events that only the live file had */
} LogStruct;

/* streamRead -- what a stream holds, read with the shared reader */
static void streamRead(LogStruct *log, const unsigned char *bytes, size_t size, const char *what)
{
  char msg[256];
  EventStreamStruct *stream;
  EventRecordStruct rec;
  EventStreamRes res;
  memset(log, 0, sizeof *log);
  res = EventStreamOpen(&stream, bytes, size, 0, msg, sizeof msg);
  if (res != EventStreamOK)
    fail_msg("%s: EventStreamOpen: %s", what, msg);
  while ((res = EventStreamNext(stream, &rec)) == EventStreamOK) {
    if (rec.code == EventCodeTestW) {
      if (rec.values[0].u != log->w)
        ++log->wWrong;
      ++log->w;
    } else if (rec.code == EventCodeTestPAW) {
      ++log->paw;
    } else if (rec.code == EventCodeThreadName) {
      ++log->names;
    } else if (rec.code == EventCodeTestThread) {
      uint64_t t = rec.values[0].u, seq = rec.values[1].u;
      if (t < 1 || t > CHILD_THREADS || seq != log->threadNext[t]
          || rec.values[2].u != ChildCheck(t, seq))
        ++log->threadWrong;
      else
        ++log->threadNext[t];
    }
  }
  log->streamEnd = EventStreamInfo(stream)->streamEnd;
  log->events = EventStreamInfo(stream)->eventCount;
  log->blocks = EventStreamInfo(stream)->blockCount;
  log->problems = EventStreamProblemCount(stream);
  if (log->problems > 0)
    snprintf(log->problem, sizeof log->problem, "%s", EventStreamProblem(stream, 0));
  if (res != EventStreamEND && log->problems == 0)
    snprintf(log->problem, sizeof log->problem, "EventStreamNext failed"), log->problems = 1;
  EventStreamClose(stream);
}

/* logRead -- the log alone, and the log with what its live file adds
 * (EventRecover, as eventcnv does: design/control.txt .sol.recover).
 * Without a live file, merged is the log alone. */
static void logRead(LogStruct *alone, LogStruct *merged)
{
  size_t size, liveSize, mergedSize;
  EventRecoverStruct recovery;
  char *bytes = readFile(logPath, &size), *live, msg[256];
  unsigned char *mergedBytes;
  streamRead(alone, (unsigned char *)bytes, size, logPath);
  if (access(livePath, F_OK) != 0) {
    *merged = *alone;
    free(bytes);
    return;
  }
  live = readFile(livePath, &liveSize);
  if (EventRecover((unsigned char *)bytes, size, (unsigned char *)live, liveSize, &mergedBytes,
                   &mergedSize, &recovery, msg, sizeof msg) != 0)
    fail_msg("%s: EventRecover: %s", livePath, msg);
  streamRead(merged, mergedBytes, mergedSize, "the log and its live file");
  merged->live = 1;
  merged->recovered = recovery.events;
  if (recovery.rejected > 0)
    fail_msg("%s: %lu live blocks did not fit the log", livePath, (unsigned long)recovery.rejected);
  free(mergedBytes);
  free(live);
  free(bytes);
}

/* expectPrelude -- the log is sound and holds exactly the prelude's
 * events: TestW 0..CHILD_EVENTS-1 in order, no TestPAW */
static void expectPrelude(const LogStruct *log, const char *death)
{
  if (log->problems != 0)
    fail_msg("%s: the log has %zu problem(s); first: %s", death, log->problems, log->problem);
  if (log->w != CHILD_EVENTS || log->wWrong != 0)
    fail_msg("%s: the log holds %zu TestW (%zu wrong); expected %u, 0..%u", death, log->w,
             log->wWrong, CHILD_EVENTS, CHILD_EVENTS - 1);
  if (log->paw != 0)
    fail_msg("%s: the log holds %zu TestPAW, whose kind's output was off", death, log->paw);
}


/* Reading the dump ---------------------------------------------------- */

/* expectDump -- stderr holds one traceback, after headline, whose TestW
 * are the last ones emitted, in order, with the TestPAW in its place */
static void expectDump(const char *headline, const char *death)
{
  size_t size, dumps = 0;
  char *err = readFile(errPath, &size), *p, *line;
  uint64_t first = 0, last = 0, pawAfter = UINT64_MAX;
  size_t ws = 0, paws = 0;
  int inDump = 0;
  char *head = strstr(err, headline);
  if (head == NULL)
    fail_msg("%s: stderr lacks \"%s\"; it is:\n%s", death, headline, err);
  for (p = err; (p = strstr(p, "events in the flight recorder, oldest first")) != NULL; ++p)
    ++dumps;
  if (dumps != 1)
    fail_msg("%s: %zu tracebacks on stderr; expected 1:\n%s", death, dumps, err);
  if (strstr(err, "events in the flight recorder") < head)
    fail_msg("%s: the traceback comes before \"%s\":\n%s", death, headline, err);
  for (line = strtok(head, "\n"); line != NULL; line = strtok(NULL, "\n")) {
    char *w;
    if (strstr(line, "flight recorder, oldest first") != NULL) {
      inDump = 1;
      continue;
    }
    if (!inDump || strncmp(line, "telltale:", 9) == 0 || strncmp(line, "death_child:", 12) == 0)
      continue;
    w = strstr(line, " w=");
    if (strstr(line, " TestW ") != NULL && w != NULL) {
      uint64_t v = strtoull(w + 3, NULL, 10);
      if (ws > 0 && v != last + 1)
        fail_msg("%s: the traceback's TestW go from %" PRIu64 " to %" PRIu64 ":\n%s", death,
                 last, v, line);
      if (ws++ == 0)
        first = v;
      last = v;
    } else if (strstr(line, " TestPAW ") != NULL && w != NULL) {
      assert_int_equal(strtoull(w + 3, NULL, 10), CHILD_NOISY_W);
      ++paws;
      pawAfter = ws > 0 ? last : UINT64_MAX;
    }
  }
  if (ws < 5 || last != CHILD_EVENTS - 1)
    fail_msg("%s: the traceback's TestW are %zu from %" PRIu64 " to %" PRIu64
             "; expected the last, ending at %u", death, ws, first, last, CHILD_EVENTS - 1);
  if (paws != 1 || pawAfter != CHILD_NOISY_AFTER)
    fail_msg("%s: the traceback has %zu TestPAW (Noisy, output off), after TestW %" PRIu64
             "; expected 1, after %u", death, paws, pawAfter, CHILD_NOISY_AFTER);
  free(err);
}

static int stderrHas(const char *s)
{
  size_t size;
  char *err = readFile(errPath, &size);
  int has = strstr(err, s) != NULL;
  free(err);
  return has;
}


/* death-1.x: an assertion and the fatal signals ------------------------ */

typedef struct FatalStruct {
  const char *death;
  int sig;
  const char *headline;
} FatalStruct;

static const FatalStruct fatals[] = {
  {"assert", SIGABRT, "telltale: assertion failed: deathZero == 1 at tests/unit/death_child.c:"},
  {"segv", SIGSEGV, "telltale: fatal signal SIGSEGV in thread T1"},
  {"bus", SIGBUS, "telltale: fatal signal SIGBUS in thread T1"},
#if defined(__x86_64__)
  {"ill", SIGILL, "telltale: fatal signal SIGILL in thread T1"},
#endif
  {"fpe", SIGFPE, "telltale: fatal signal SIGFPE in thread T1"},
  {"abort", SIGABRT, "telltale: fatal signal SIGABRT in thread T1"},
};

static void fatalCase(const FatalStruct *f, int mapOff)
{
  ChildStruct c = {f->death, mapOff, 0, 0, -1};
  char what[64];
  LogStruct alone, log;
  int status = childRun(&c);
  snprintf(what, sizeof what, "%s%s", f->death, mapOff ? " (TELLTALE_MAP=off)" : "");
  expectSignal(status, f->sig, what);
  logRead(&alone, &log);
  /* .sol.death: the handler sent every unsent event to the log, so the
   * live file (there unless TELLTALE_MAP=off) adds none. */
  expectPrelude(&alone, what);
  expectPrelude(&log, what);
  assert_false(log.streamEnd);
  assert_int_equal(log.live, !mapOff);
  assert_int_equal(log.recovered, 0);
  expectDump(f->headline, what);
}

static void death_1_1_fatal_mapped(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof fatals / sizeof fatals[0]; ++i)
    fatalCase(&fatals[i], 0);
}

static void death_1_2_fatal_written(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof fatals / sizeof fatals[0]; ++i)
    fatalCase(&fatals[i], 1);
}


/* death-2.x: exits ----------------------------------------------------- */

/* exitCase -- running: threads other than the exiting one still alive
 * at exit (.sol.finish: the live file stays for what they emit after
 * StreamEnd; here they emit nothing more) */
static void exitCase(const char *death, int code, unsigned threads, int mapOff, int running)
{
  ChildStruct c = {death, mapOff, 0, 0, -1};
  char what[64];
  LogStruct alone, log;
  snprintf(what, sizeof what, "%s%s", death, mapOff ? " (TELLTALE_MAP=off)" : "");
  expectExit(childRun(&c), code, what);
  logRead(&alone, &log);
  /* .sol.finish: a clean end removes the live file, unless threads
   * still running may emit after StreamEnd */
  if (log.live && !(running && !mapOff))
    fail_msg("%s: the live file %s is still there after a clean exit", what, livePath);
  if (running && !mapOff && !log.live)
    fail_msg("%s: no live file for the threads still running at exit", what);
  assert_int_equal(log.recovered, 0);
  expectPrelude(&log, what);
  if (!log.streamEnd)
    fail_msg("%s: no StreamEnd after a clean exit", what);
  assert_int_equal(log.threadWrong, 0);
  for (unsigned t = 1; t <= CHILD_THREADS; ++t)
    if (log.threadNext[t] != (t <= threads ? CHILD_THREAD_EVENTS : 0))
      fail_msg("%s: thread %u has %" PRIu64 " TestThread in the log", what, t, log.threadNext[t]);
  if (stderrHas("telltale:"))
    fail_msg("%s: telltale wrote to stderr at a clean exit", what);
}

static void death_2_1_exit_thread(void **state)
{
  (void)state;
  exitCase("exit-thread", CHILD_EXIT_STATUS, 1, 0, 1);
  exitCase("exit-thread", CHILD_EXIT_STATUS, 1, 1, 1);
}

static void death_2_2_return_main(void **state)
{
  (void)state;
  exitCase("return-main", CHILD_RETURN_STATUS, 0, 0, 0);
  exitCase("return-main", CHILD_RETURN_STATUS, 0, 1, 0);
}

static void death_2_3_thread_exit(void **state)
{
  (void)state;
  exitCase("thread-exit", 0, CHILD_THREADS, 0, 0);
  exitCase("thread-exit", 0, CHILD_THREADS, 1, 0);
}


/* death-3.x: handlers -------------------------------------------------- */

/* expectChained -- the child died in the program's own SIGSEGV handler,
   which runs first (.sol.signal.recover) and ends the process itself
   with _exit: telltale says nothing, and the log is whole with its live
   file, as after SIGKILL (.sol.death.limits) */
static void expectChained(const char *death)
{
  ChildStruct c = {death, 0, 0, 0, -1};
  LogStruct alone, log;
  expectExit(childRun(&c), CHILD_CHAIN_STATUS, death);
  if (!stderrHas(CHILD_CHAIN_MARKER))
    fail_msg("%s: the program's handler did not run", death);
  if (stderrHas("telltale:"))
    fail_msg("%s: telltale spoke, though the program's handler handled the signal", death);
  logRead(&alone, &log);
  assert_true(log.live);
  expectPrelude(&log, death);
}

/* death-3.1: a handler found at install is chained to */
static void death_3_1_chain(void **state)
{
  (void)state;
  expectChained("chain");
}

/* death-3.2: a handler installed after telltale's is chained to, as one
   installed before is (plinth.c's sigaction; .sol.signal.after) */
static void death_3_2_after(void **state)
{
  (void)state;
  expectChained("after");
}

/* death-3.3: TELLTALE_SIGNALS=off: the program dies as without telltale */
static void death_3_3_signals_off(void **state)
{
  ChildStruct c = {"segv", 0, 1, 0, -1};
  LogStruct alone, log;
  (void)state;
  expectSignal(childRun(&c), SIGSEGV, "segv (TELLTALE_SIGNALS=off)");
  logRead(&alone, &log);
  assert_true(log.live);
  expectPrelude(&log, "segv (TELLTALE_SIGNALS=off)");
  assert_false(stderrHas("telltale:"));
}

/* death-3.4: core dumps are as they would have been */
static void death_3_4_core(void **state)
{
  size_t size;
  char *pattern;
  char corePath[PATH_MAX + 16];
  (void)state;
  if (SANITIZED)
    skip();                     /* ASan sets RLIMIT_CORE to 0 (disable_coredump) */
  pattern = readFile("/proc/sys/kernel/core_pattern", &size);
  if (strcmp(pattern, "core\n") != 0 && strcmp(pattern, "core") != 0) {
    free(pattern);
    skip();                     /* cores go elsewhere: nothing to compare here */
  }
  free(pattern);
  snprintf(corePath, sizeof corePath, "%s/core", dir);
  for (int signalsOff = 1; signalsOff >= 0; --signalsOff) {
    ChildStruct c = {"segv", 0, signalsOff, 1, -1};
    struct rlimit rl;
    int status;
    if (getrlimit(RLIMIT_CORE, &rl) == 0 && rl.rlim_max == 0)
      skip();                   /* no cores may be made at all */
    (void)unlink(corePath);
    status = childRun(&c);
    expectSignal(status, SIGSEGV, signalsOff ? "segv, core (TELLTALE_SIGNALS=off)" : "segv, core");
    if (signalsOff && !WCOREDUMP(status))
      skip();                   /* this system makes no cores, even without telltale */
    if (!WCOREDUMP(status))
      fail_msg("segv with telltale's handler: no core dump, though there was one without it");
    (void)unlink(corePath);
  }
}


/* death-4.x: SIGKILL at a random moment -------------------------------- */

/* cutShort -- the reader's problem is a last block cut short by death
 * in the middle of write() */
static int cutShort(const char *problem)
{
  return strstr(problem, "block cut short") != NULL
         || strstr(problem, "block header cut short") != NULL;
}

static void killCase(int mapOff)
{
  const char *what = mapOff ? "kill (TELLTALE_MAP=off)" : "kill";
  int fds[2];
  ChildStruct c = {"kill", mapOff, 0, 0, -1};
  uint64_t count = 0, reported = 0;
  LogStruct alone, log;
  pid_t pid;
  ssize_t n;
  unsigned sleepUs = 500 + (unsigned)(rand() % 4500);
  struct timespec ts;
  assert_int_equal(pipe(fds), 0);
  c.pipeFd = fds[1];
  pid = childStart(&c);
  assert_int_equal(close(fds[1]), 0);
  /* The first count, then a random few ms, then SIGKILL. */
  n = read(fds[0], &count, sizeof count);
  assert_int_equal(n, sizeof count);
  ts.tv_sec = 0;
  ts.tv_nsec = (long)sleepUs * 1000;
  (void)nanosleep(&ts, NULL);
  assert_int_equal(kill(pid, SIGKILL), 0);
  expectSignal(childWait(pid), SIGKILL, what);
  /* Every count in the pipe was written after its events were emitted. */
  reported = count;
  while ((n = read(fds[0], &count, sizeof count)) == sizeof count)
    if (count > reported)
      reported = count;
  close(fds[0]);
  logRead(&alone, &log);
  print_message("%s: killed after %u us; reported %" PRIu64 "; the log holds %zu TestW, "
                "%zu with the live file's %zu recovered events\n", what, sleepUs, reported,
                alone.w, log.w, log.recovered);
  assert_int_equal(log.live, !mapOff);
  assert_false(log.streamEnd);
  assert_int_equal(log.paw, 0);
  if (log.wWrong != 0)
    fail_msg("%s: %zu TestW in the log are not in place 0..%zu (torn or missing)", what,
             log.wWrong, log.w);
  if (!mapOff) {
    /* .sol.live, .sol.recover: nothing stored is lost; the event being
     * stored at the moment of death has code 0 and ends its block's
     * data.  The log alone may end in a block cut short (killed in
     * the middle of write()): at most that one problem, and what it
     * holds before is in place; EventRecover leaves the cut block out
     * and takes its events from the live file. */
    if (alone.problems > 1 || alone.wWrong != 0 ||
        (alone.problems == 1 && !cutShort(alone.problem)))
      fail_msg("%s: the log alone has %zu problem(s), %zu TestW out of place; first: %s", what,
               alone.problems, alone.wWrong, alone.problem);
    if (log.problems != 0)
      fail_msg("%s: the log has %zu problem(s); first: %s", what, log.problems, log.problem);
    if (log.w < reported)
      fail_msg("%s: the log holds TestW 0..%zu, but the child had reported %" PRIu64, what,
               log.w, reported);
  } else {
    /* .sol.death.limits: SIGKILL loses the unsent buffers of a stream
     * written with write(): the 64 KiB buffer being filled, and the one
     * being written at the moment of death, which the kernel may have
     * cut short (a fatal signal ends a regular file's write early), so
     * the last block may run past the end of the file.  The log is
     * still readable up to there. */
    uint64_t perBlock = (64 * 1024 - EVENT_BLOCK_HEADER_LEN) / sizeof(EventStructTestW) + 1;
    if (log.problems > 1 || (log.problems == 1 && !cutShort(log.problem)))
      fail_msg("%s: the log has %zu problem(s); first: %s", what, log.problems, log.problem);
    if (log.w + 2 * perBlock < reported)
      fail_msg("%s: the log holds TestW 0..%zu, but the child had reported %" PRIu64
               ": more than two buffers lost", what, log.w, reported);
    /* The thread's own events went out with its first full buffer. */
    if (log.w > 0 && log.names == 0)
      fail_msg("%s: the log holds %zu TestW but not the thread's name", what, log.w);
  }
}

static void death_4_1_kill_mapped(void **state)
{
  (void)state;
  for (int i = 0; i < 3; ++i)
    killCase(0);
}

static void death_4_2_kill_written(void **state)
{
  (void)state;
  for (int i = 0; i < 2; ++i)
    killCase(1);
}


/* death-4.3: a block placed and never written -------------------------- */

/* firstGap -- the offset of the first place after the stream header
 * where the log has no block magic, walking the blocks by their
 * lengths; 0 if there is none before the end */
static size_t firstGap(const unsigned char *bytes, size_t size)
{
  size_t at;
  uint32_t length;
  assert_true(size >= EVENT_STREAM_FIXED_LEN);
  memcpy(&length, bytes + 20, 4);
  at = length;
  while (size - at >= EVENT_BLOCK_HEADER_LEN) {
    if (memcmp(bytes + at, EVENT_BLOCK_MAGIC, 4) != 0)
      return at;
    memcpy(&length, bytes + at + 4, 4);
    if (length < EVENT_BLOCK_HEADER_LEN || length > size - at)
      return 0;
    at += length;
  }
  return 0;
}

static void death_4_3_stall_kill(void **state)
{
  int fds[2];
  ChildStruct c = {"stall-kill", 0, 0, 0, -1};
  uint64_t seq = 0;
  LogStruct alone, log;
  size_t size, gap;
  unsigned char *bytes;
  (void)state;
  assert_int_equal(pipe(fds), 0);
  c.pipeFd = fds[1];
  {
    pid_t pid = childStart(&c);
    assert_int_equal(close(fds[1]), 0);
    expectSignal(childWait(pid), SIGKILL, "stall-kill");
  }
  assert_int_equal(read(fds[0], &seq, sizeof seq), sizeof seq);
  close(fds[0]);
  bytes = (unsigned char *)readFile(logPath, &size);
  gap = firstGap(bytes, size);
  if (gap == 0)
    fail_msg("stall-kill: the log has no gap where the stalled block was placed");
  for (size_t i = 0; i < EVENT_BLOCK_HEADER_LEN; ++i)
    if (bytes[gap + i] != 0)
      fail_msg("stall-kill: byte %zu of the header at offset %zu is %u, not 0: "
               "written under the lock", i, gap, bytes[gap + i]);
  free(bytes);
  /* Places are freed as their writes end: only the stalled thread's
   * (its block, and its Telltale kind's after it) are left. */
  {
    size_t liveSize, used = 0;
    uint32_t headerLength;
    unsigned char *live = (unsigned char *)readFile(livePath, &liveSize);
    const unsigned char *places;
    memcpy(&headerLength, live + 20, 4);
    assert_true(headerLength <= liveSize);
    places = live + headerLength - (EVENT_LIVE_PLACES_LEN + EVENT_LIVE_SLOTS_LEN
                                    + EVENT_LIVE_DROPS_LEN + EVENT_LIVE_REGIONS_LEN);
    for (unsigned i = 0; i < EVENT_LIVE_PLACES; ++i) {
      uint32_t ticket;
      memcpy(&ticket, places + i * EVENT_LIVE_PLACE_LEN, 4);
      used += ticket != 0;
    }
    free(live);
    if (used < 1 || used > 2)
      fail_msg("stall-kill: %zu places used in the live file, not the stalled thread's 1 or 2",
               used);
  }
  logRead(&alone, &log);
  print_message("stall-kill: the thread stalled at seq %" PRIu64 ", the hole at offset %zu; "
                "the log holds %zu TestW and %" PRIu64 " TestThread, %zu recovered\n", seq, gap,
                log.w, log.threadNext[1], log.recovered);
  if (alone.problems == 0 || strstr(alone.problem, "died before writing whole") == NULL)
    fail_msg("stall-kill: the log alone does not say the block lost: %s",
             alone.problems > 0 ? alone.problem : "no problem said");
  assert_int_equal(log.live, 1);
  if (log.problems != 0)
    fail_msg("stall-kill: the log has %zu problem(s); first: %s", log.problems, log.problem);
  if (log.w != CHILD_STALL_EVENTS || log.wWrong != 0)
    fail_msg("stall-kill: %zu TestW (%zu out of place), not %u", log.w, log.wWrong,
             CHILD_STALL_EVENTS);
  if (log.threadWrong != 0 || log.threadNext[1] != seq)
    fail_msg("stall-kill: TestThread 0..%" PRIu64 " (%zu wrong), where the thread was "
             "emitting seq %" PRIu64 " when it stalled", log.threadNext[1], log.threadWrong, seq);
}


/* death-5.1: eventcnv says how the stream ended ------------------------- */

static void eventcnvHeader(const char *expect, const char *what)
{
  char command[4 * PATH_MAX], outPath[PATH_MAX + 16];
  size_t size;
  char *out;
  snprintf(outPath, sizeof outPath, "%s/eventcnv.out", dir);
  snprintf(command, sizeof command, "'%s' --header '%s' >'%s' 2>&1", eventcnvPath, logPath,
           outPath);
  if (system(command) != 0)
    fail_msg("%s: %s failed", what, command);
  out = readFile(outPath, &size);
  if (strstr(out, expect) == NULL)
    fail_msg("%s: eventcnv --header lacks \"%s\":\n%s", what, expect, out);
  free(out);
}

static void death_5_1_eventcnv_end(void **state)
{
  ChildStruct c = {"return-main", 0, 0, 0, -1};
  (void)state;
  if (access(eventcnvPath, X_OK) != 0)
    skip();
  expectExit(childRun(&c), CHILD_RETURN_STATUS, "return-main");
  eventcnvHeader("end           clean", "return-main");
  c.death = "segv";
  expectSignal(childRun(&c), SIGSEGV, "segv");
  eventcnvHeader("end           no StreamEnd: recovered after a crash", "segv");
  eventcnvHeader("the program died before it could end it", "segv");
}


/* death-7.x: drops not yet reported when the program dies ------------ */

/* dropsCase -- run a drops death (death_child.c): the writer stalled on
 * a pipe this process never reads, so that most events are dropped and
 * none reported before the death.  The log with its live file holds
 * TestW in rising order, and every one of the CHILD_DROP_EVENTS is
 * there or counted as dropped: by EventsDropped, or by the live file's
 * count beyond it, which must be what shows the rest (.sol.dropped).
 * eventcnv --summary then totals the same drops. */
static void dropsCase(const char *death, int sig, int code)
{
  int fds[2];
  ChildStruct c = {death, 0, 0, 0, -1};
  size_t size, liveSize, mergedSize, found = 0, wrong = 0;
  uint64_t last = 0, reported, unreported;
  EventRecoverStruct recovery;
  EventStreamStruct *stream;
  EventRecordStruct rec;
  char *bytes, *live, msg[256], command[4 * PATH_MAX], outPath[PATH_MAX + 16], expect[64], *out;
  unsigned char *merged;
  int status;
  assert_int_equal(pipe(fds), 0);
  c.pipeFd = fds[1];
  status = childWait(childStart(&c));
  close(fds[0]);
  close(fds[1]);
  if (sig != 0)
    expectSignal(status, sig, death);
  else
    expectExit(status, code, death);
  if (access(livePath, F_OK) != 0)
    fail_msg("%s: no live file", death);
  bytes = readFile(logPath, &size);
  live = readFile(livePath, &liveSize);
  if (EventRecover((unsigned char *)bytes, size, (unsigned char *)live, liveSize, &merged,
                   &mergedSize, &recovery, msg, sizeof msg) != 0)
    fail_msg("%s: EventRecover: %s", death, msg);
  assert_int_equal(EventStreamOpen(&stream, merged, mergedSize, 0, msg, sizeof msg),
                   EventStreamOK);
  while (EventStreamNext(stream, &rec) == EventStreamOK)
    if (rec.code == EventCodeTestW) {
      wrong += found > 0 && rec.values[0].u <= last;
      last = rec.values[0].u;
      ++found;
    }
  reported = EventStreamInfo(stream)->dropped[EventKindTest];
  unreported = EventDropsUnreported(&recovery, EventStreamInfo(stream), EventKindTest);
  if (!recovery.dropsCounted || wrong != 0 || unreported == 0
      || found + reported + unreported != CHILD_DROP_EVENTS)
    fail_msg("%s: the log holds %zu TestW (%zu out of order), EventsDropped reports %" PRIu64
             " and the live file %s %" PRIu64 " more: %" PRIu64 " in all, of %u emitted",
             death, found, wrong, reported, recovery.dropsCounted ? "counts" : "does not count",
             unreported, found + reported + unreported, CHILD_DROP_EVENTS);
  EventStreamClose(stream);
  free(merged);
  free(live);
  free(bytes);
  /* eventcnv says so too */
  snprintf(outPath, sizeof outPath, "%s/eventcnv.out", dir);
  snprintf(command, sizeof command, "'%s' --summary '%s' >'%s' 2>&1", eventcnvPath, logPath,
           outPath);
  (void)system(command);
  out = readFile(outPath, &size);
  snprintf(expect, sizeof expect, "dropped     %" PRIu64 "\n", reported + unreported);
  if (strstr(out, expect) == NULL || strstr(out, "it died before reporting them") == NULL)
    fail_msg("%s: eventcnv --summary lacks \"%s\" or the live file's count:\n%s", death, expect,
             out);
  free(out);
}

static void death_7_1_drops_kill(void **state)
{
  (void)state;
  dropsCase("drops-kill", SIGKILL, 0);
}

static void death_7_2_drops_exit(void **state)
{
  (void)state;
  dropsCase("drops-exit", 0, CHILD_DROPS_STATUS);
}

static void death_7_3_drops_segv(void **state)
{
  (void)state;
  dropsCase("drops-segv", SIGSEGV, 0);
}


/* timesOf -- from text lines "ELAPSED WALL T1  Test  TestW  w=N", the
 * times of TestW w=N into times[N] (NULL where missing) */
static void timesOf(char *text, char **times, size_t limit)
{
  for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
    char *w = strstr(line, " TestW ");
    char *eq = w != NULL ? strstr(w, "w=") : NULL;
    unsigned long n;
    if (eq == NULL || strstr(line, " T1 ") == NULL)
      continue;
    n = strtoul(eq + 2, NULL, 10);
    if (n < limit) {
      while (*line == ' ')
        ++line;
      /* the two time columns */
      times[n] = line;
      line = strchr(strchr(line, ' ') + 1, ' ');
      *line = '\0';
    }
  }
}

static void death_5_2_traceback_times(void **state)
{
  ChildStruct c = {"late-segv", 0, 0, 0, -1};
  char command[4 * PATH_MAX], outPath[PATH_MAX + 16];
  static char *dumped[CHILD_EVENTS + CHILD_LATE_EVENTS], *logged[CHILD_EVENTS + CHILD_LATE_EVENTS];
  size_t size, compared = 0;
  char *out, *err;
  (void)state;
  if (access(eventcnvPath, X_OK) != 0)
    fail_msg("%s is not built", eventcnvPath);
  expectSignal(childRun(&c), SIGSEGV, "late-segv");
  snprintf(outPath, sizeof outPath, "%s/eventcnv.out", dir);
  snprintf(command, sizeof command, "'%s' '%s' >'%s' 2>/dev/null", eventcnvPath, logPath,
           outPath);
  (void)system(command);
  out = readFile(outPath, &size);
  err = readFile(errPath, &size);
  memset(dumped, 0, sizeof dumped);
  memset(logged, 0, sizeof logged);
  timesOf(err, dumped, CHILD_EVENTS + CHILD_LATE_EVENTS);
  timesOf(out, logged, CHILD_EVENTS + CHILD_LATE_EVENTS);
  for (size_t i = 0; i < CHILD_EVENTS + CHILD_LATE_EVENTS; ++i)
    if (dumped[i] != NULL) {
      if (logged[i] == NULL)
        fail_msg("late-segv: TestW w=%zu is in the traceback, not the log", i);
      if (strcmp(dumped[i], logged[i]) != 0)
        fail_msg("late-segv: TestW w=%zu at %s in the traceback, %s in the log", i, dumped[i],
                 logged[i]);
      ++compared;
    }
  if (dumped[CHILD_EVENTS + CHILD_LATE_EVENTS - 1] == NULL || compared < 10)
    fail_msg("late-segv: the traceback lacks the late TestW events (%zu compared)", compared);
  free(out);
  free(err);
}

/* death-6.x: faults the program handles itself ------------------------ */

/* handledCase -- for the log and TELLTALE_MAP=off: the program's handler ran (marker on stderr)
 * before the one dump, which came under headline; the log is whole */
static void handledCase(const char *death, int sig, const char *headline, const char *marker,
                        size_t markersAtLeast)
{
  for (int mapOff = 0; mapOff <= 1; ++mapOff) {
    ChildStruct c = {death, mapOff, 0, 0, -1};
    LogStruct alone, log;
    char what[64];
    size_t size, markers = 0;
    char *err, *p;
    snprintf(what, sizeof what, "%s%s", death, mapOff ? " (TELLTALE_MAP=off)" : "");
    expectSignal(childRun(&c), sig, what);
    err = readFile(errPath, &size);
    for (p = err; (p = strstr(p, marker)) != NULL; ++p)
      ++markers;
    if (markers < markersAtLeast)
      fail_msg("%s: %zu \"%s\" on stderr; expected at least %zu:\n%s", what, markers, marker,
               markersAtLeast, err);
    if (strstr(err, "telltale:") < strstr(err, marker))
      fail_msg("%s: telltale spoke before the program's handler ran:\n%s", what, err);
    free(err);
    logRead(&alone, &log);
    expectPrelude(&alone, what);
    expectPrelude(&log, what);
    assert_int_equal(log.recovered, 0);
    expectDump(headline, what);
  }
}

/* death-6.1: a fault the program's handler fixes is silent, and
   telltale's handler stays: a later fault the handler does not know,
   which it hands back to SIG_DFL, dumps */
static void death_6_1_recover_then_fault(void **state)
{
  static const char *const deaths[] = {"recover", "recover-before", "recover-reset"};
  (void)state;
  for (size_t i = 0; i < sizeof deaths / sizeof deaths[0]; ++i)
    handledCase(deaths[i], SIGSEGV, "telltale: fatal signal SIGSEGV in thread T1",
                CHILD_RECOVERED_MARKER, 1);
}

/* death-6.2: recovered faults and handled signals, then a clean exit */
static void death_6_2_recover_exit(void **state)
{
  (void)state;
  exitCase("recover-exit", 0, 0, 0, 0);
  exitCase("recover-exit", 0, 0, 1, 0);
}

/* death-6.3: a handler that cannot fix the fault returns, again and
   again: telltale sees the fault come back, dumps once and dies */
static void death_6_3_unfixable(void **state)
{
  (void)state;
  handledCase("unfixable", SIGSEGV, "telltale: fatal signal SIGSEGV in thread T1",
              CHILD_HANDLER_MARKER, 2);
}

/* death-6.4: a handler that puts SIG_DFL back and returns */
static void death_6_4_fallback(void **state)
{
  (void)state;
  handledCase("fallback", SIGSEGV, "telltale: fatal signal SIGSEGV in thread T1",
              CHILD_HANDLER_MARKER, 1);
}

/* death-6.5: a handler that calls abort() */
static void death_6_5_handler_abort(void **state)
{
  (void)state;
  handledCase("handler-abort", SIGABRT, "telltale: fatal signal SIGABRT in thread T1",
              CHILD_HANDLER_MARKER, 1);
}


static int setup(void **state)
{
  char self[2048], *slash;
  ssize_t n;
  const char *tmp = getenv("TMPDIR");
  (void)state;
  n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return -1;
  self[n] = '\0';
  slash = strrchr(self, '/');
  *slash = '\0';
  snprintf(childPath, sizeof childPath, "%s/death_child", self);
  snprintf(eventcnvPath, sizeof eventcnvPath, "%s/../eventcnv", self);
  snprintf(dir, sizeof dir, "%s/test_death.XXXXXX", tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
  if (mkdtemp(dir) == NULL)
    return -1;
  snprintf(logPath, sizeof logPath, "%s/log", dir);
  snprintf(livePath, sizeof livePath, "%s.live", logPath);
  snprintf(errPath, sizeof errPath, "%s/stderr", dir);
  seed = (unsigned)time(NULL) ^ (unsigned)getpid();
  srand(seed);
  print_message("test_death: child %s, directory %s, seed %u\n", childPath, dir, seed);
  return 0;
}

static int teardown(void **state)
{
  char command[PATH_MAX + 16];
  (void)state;
  snprintf(command, sizeof command, "rm -rf '%s'", dir);
  return system(command) == 0 ? 0 : -1;
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(death_1_1_fatal_mapped),
    cmocka_unit_test(death_1_2_fatal_written),
    cmocka_unit_test(death_2_1_exit_thread),
    cmocka_unit_test(death_2_2_return_main),
    cmocka_unit_test(death_2_3_thread_exit),
    cmocka_unit_test(death_3_1_chain),
    cmocka_unit_test(death_3_2_after),
    cmocka_unit_test(death_3_3_signals_off),
    cmocka_unit_test(death_3_4_core),
    cmocka_unit_test(death_4_1_kill_mapped),
    cmocka_unit_test(death_4_2_kill_written),
    cmocka_unit_test(death_4_3_stall_kill),
    cmocka_unit_test(death_5_1_eventcnv_end),
    cmocka_unit_test(death_5_2_traceback_times),
    cmocka_unit_test(death_6_1_recover_then_fault),
    cmocka_unit_test(death_6_2_recover_exit),
    cmocka_unit_test(death_6_3_unfixable),
    cmocka_unit_test(death_6_4_fallback),
    cmocka_unit_test(death_6_5_handler_abort),
    cmocka_unit_test(death_7_1_drops_kill),
    cmocka_unit_test(death_7_2_drops_exit),
    cmocka_unit_test(death_7_3_drops_segv),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
