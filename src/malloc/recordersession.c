/* <src/malloc/recordersession.c> -- libtelltale-malloc.so: the session
 *
 * .design: design/recorder.txt .malloc
 *
 * Part of the recorder (recorder.c says how it is loaded and re-entered):
 * its log claimed and opened, its start, a forked child's log, and the
 * ends of a process image.
 *
 * Unloading (design/recorder.txt .stacks.unmap): dlclose is interposed,
 * so that the mappings it removes are recorded and stacks recorded after
 * it never take the ids of stacks of a library it unloaded.
 *
 * Ends (design/recorder.txt .malloc.ends): _exit and _Exit end the
 * session first, and the exec family ends the log at the exec
 * (EventExecBefore, .sol.exec), so that a shell's forked children and a
 * program that execs another lose nothing; the next image keeps the
 * previous image's log as LOG.execN, and its live file as LOG.execN.live.
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <sched.h>
#include <dirent.h>
#include <sys/syscall.h>
#include <sys/resource.h>

/* The emitters' slow path is recorder.c's, as there.  .malloc.reentry */
#define EventReserveIn recorderReserveIn
#include "event.h"
#undef EventReserveIn
#include "eventint.h"           /* eventAtExit */
#include "plinth.h"
#include "stacks.h"
#include "zstdblock.h"
#include "recorderint.h"

/* Start -------------------------------------------------------------- */

static _Atomic int started;     /* recorderStart has run, or is running */

/* previousImage -- is the log on fd one that this process wrote in the
 * image that exec'd this one?  (The stream header's pid is ours: exec
 * keeps the pid.)  design/stream.txt .stream.header */
static int previousImage(int fd)
{
  unsigned char h[64];
  uint32_t pid;
  if (pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h, "TELLTALE", 8) != 0)
    return 0;
  pid = (uint32_t)h[56] | (uint32_t)h[57] << 8 | (uint32_t)h[58] << 16 | (uint32_t)h[59] << 24;
  return pid == (uint32_t)getpid();
}

/* keepPrevious -- move a previous image's log at path aside, as
 * PATH.execN, the first N free, and its live file with it, as
 * PATH.execN.live: what other threads emitted after the exec sent
 * every buffer is there (.sol.exec); 0 if done */
static int keepPrevious(const char *path)
{
  char aside[4096 + 32], live[4096 + 64], liveAside[4096 + 64];
  for (unsigned n = 1; n < 1000; ++n) {
    (void)snprintf(aside, sizeof aside, "%s.exec%u", path, n);
    if (access(aside, F_OK) != 0) {
      (void)snprintf(live, sizeof live, "%s.live", path);
      (void)snprintf(liveAside, sizeof liveAside, "%s.live", aside);
      if (rename(path, aside) != 0)
        return -1;
      (void)rename(live, liveAside);
      (void)snprintf(live, sizeof live, "%s.live.done", path);
      (void)unlink(live);       /* a lone thread's: nothing in it (.malloc.exec.live) */
      return 0;
    }
  }
  return -1;
}

/* claimLog -- open and lock path for this process: the descriptor, or
 * -1 if another process holds it, or -2 if it cannot be opened.  The
 * lock lives as long as the process image: the descriptor is
 * close-on-exec, so a program that execs another hands the log on, and
 * one that runs meanwhile (a child of a shell) writes PATH.PID instead.
 * The log of the image that exec'd this one is kept as PATH.execN.
 * design/recorder.txt .malloc.file */
static int claimLog(const char *path)
{
  unsigned char magic[EVENT_STREAM_MAGIC_LEN];
  struct stat st;
  /* Never through a link, never on descriptors 0-2, never a file of
   * /proc, and a file that is not a telltale log is never truncated: the
   * runtime's default stream then says why.  design/plinth.txt .plinth.stream.file */
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd < 0)
    return -2;
  if (fd <= 2) {
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    (void)close(fd);
    if (high < 0)
      return -2;
    fd = high;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || PlinthFdRefused(fd) != 0 ||
      (st.st_size > 0 && (pread(fd, magic, sizeof magic, 0) != (ssize_t)sizeof magic ||
                          memcmp(magic, EVENT_STREAM_MAGIC, sizeof magic) != 0))) {
    (void)close(fd);
    return -2;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    (void)close(fd);
    return -1;
  }
  if (previousImage(fd) && keepPrevious(path) == 0) {
    (void)close(fd);
    return claimLog(path);
  }
  if (ftruncate(fd, 0) != 0) {
    (void)close(fd);
    return -2;
  }
  return fd;
}

/* RECORDER_BUFFER -- the buffer size unless TELLTALE_BUFFER says: 1 MiB
 * a thread and kind, resident only as far as it fills.  Sixteen times
 * fewer writes than the runtime's 64 KiB, which on a malloc-heavy
 * program is a measurable part of the cost.  design/recorder.txt .malloc.perf */
#define RECORDER_BUFFER ((size_t)1 << 20)

/* unset -- is the variable name unset or empty?  The runtime takes an
 * empty value as its default, so the recorder takes it as its own. */
static int unset(const char *name)
{
  const char *value = getenv(name);
  return value == NULL || value[0] == '\0';
}

/* cpusAvailable -- the processors this process may run on (1 if unknown) */
static int cpusAvailable(void)
{
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return 1;
  return CPU_COUNT(&set);
}

/* basePath -- the log named by TELLTALE_FILE (or the default);
 * logPath -- the log this process writes: basePath or basePath.PID */
static char basePath[4096], logPath[4096 + 24];

/* openLog -- open path as this process's log and add it as a stream */
static void openLog(const char *path)
{
  PlinthStream stream;
  const char *map = getenv("TELLTALE_MAP");
  int fd = claimLog(path);
  if (fd == -1) {               /* another process has it: BASE.PID */
    (void)snprintf(logPath, sizeof logPath, "%s.%ld", basePath, (long)getpid());
    path = logPath;
    fd = claimLog(path);
  }
  if (fd < 0)
    return;                     /* the runtime's default stream reports it */
  if (map == NULL || (strcmp(map, "off") != 0 && strcmp(map, "0") != 0)) {   /* .malloc.file */
    if (PlinthStreamOpenFile(&stream, path) == 0)
      (void)EventStreamAddBinary(stream);
  } else if (PlinthStreamOpenFd(&stream, fd, 1) == 0)
    (void)EventStreamAddBinary(stream);
}

/* recordPid -- the process the session is this one's: not so in the
 * child of vfork (or a raw clone), which shares this memory and must
 * not touch the session (.malloc.ends) */
static pid_t recordPid;
static EventClock forkClock;

/* afterFork -- in a child that did not exec: after the runtime has
 * dropped the parent's streams (.sol.fork), write LOG.PID.  Registered
 * after EventInit, so that it runs after the runtime's own handler. */
static void afterFork(void)
{
  recorderInside = 1;
  recordPid = getpid();
  if (basePath[0] != '\0') {
    (void)snprintf(logPath, sizeof logPath, "%s.%ld", basePath, (long)getpid());
    openLog(logPath);
  }
  EVENT_UW(Forked, (EventU)getppid(), forkClock);      /* .heap.tree */
  StacksAfterFork();
  recorderInside = 0;
}

/* beforeFork -- the parent's clock just before a fork: the child's
 * Forked says it, so the tools take the parent's blocks live then as
 * the child's inheritance.  design/heap.txt .heap.tree */
static void beforeFork(void)
{
  forkClock = PlinthClockNow();
}

/* recorderStart -- before the runtime's own constructor: find the real
 * functions, choose the log and start telemetry.
 *
 * The log has a live file (.sol.live), as every telltale log, unless
 * TELLTALE_MAP=off: then it is written through the claimed descriptor.
 * design/recorder.txt .malloc.file */
static void atExit(void);

__attribute__((constructor(101))) void recorderStart(void)
{
  const char *file;
  int expected = 0, was = recorderInside;
  if (!atomic_compare_exchange_strong(&started, &expected, 1))
    return;
  recorderInside = 1;
  recordPid = getpid();
  (void)recorderReady();
  file = getenv("TELLTALE_FILE");
  if (file == NULL || file[0] == '\0')
    (void)snprintf(basePath, sizeof basePath, "telltale-malloc.%ld.log", (long)getpid());
  else if (strcmp(file, "none") != 0)
    (void)snprintf(basePath, sizeof basePath, "%s", file);
  if (basePath[0] != '\0') {
    (void)snprintf(logPath, sizeof logPath, "%s", basePath);
    openLog(logPath);
  }
  {
    const char *compact = getenv("TELLTALE_COMPACT");
    if (compact == NULL || strcmp(compact, "0") != 0)
      ZstdBlocksStart();        /* .malloc.zstd: before the headers */
  }
  (void)EventInit();
  PlinthSignalHooks(recorderSignalEnter, recorderSignalLeave, eventSignalJump);  /* .malloc.signal */
  if (unset("TELLTALE_BUFFER"))
    (void)EventBufferSizeSet(RECORDER_BUFFER);
  if (unset("TELLTALE_COMPACT"))
    (void)EventCompact(1);      /* .malloc.compact */
  if (unset("TELLTALE_WRITER") && cpusAvailable() > 1)
    (void)EventWriterAsync(1, 0);       /* .malloc.writer */
  StacksStart();
  (void)pthread_atfork(beforeFork, NULL, afterFork);
  (void)atexit(atExit);         /* after EventInit's: runs before it */
  atomic_store(&recorderMode, stacksDepth == 0 ? RECORD_PLAIN : RECORD_STACKS);
  recorderInside = was;
}


#define REAL(name, type) ((type)dlsym(RTLD_NEXT, name))

/* Unloading ---------------------------------------------------------
 * dlclose may unmap a library, and another may be loaded at its
 * addresses: the mappings are read again after it, and its stacks'
 * ids are not reused (design/recorder.txt .stacks.unmap).  dlopen is
 * not interposed: glibc finds a name's RUNPATH by its caller's address,
 * which a wrapper would make this library's; a library it loads is
 * seen when a stack first holds one of its addresses. */

int dlclose(void *handle)
{
  int (*realDlclose)(void *) = REAL("dlclose", int (*)(void *));
  int res, record;
  uint64_t before;
  if (realDlclose == NULL)
    return -1;
  before = StacksCloseBegin();
  res = realDlclose(handle);    /* its destructors' allocations are recorded */
  record = !recorderInside && atomic_load(&started) && recordPid == getpid();
  if (record)
    recorderInside = 1;
  StacksCloseEnd(record, before);
  if (record)
    recorderInside = 0;
  return res;
}


/* Ends.  design/recorder.txt .malloc.ends
 *
 * _exit ends the process without atexit: the session is ended first
 * (EventFinish), as exit would.  An exec replaces the image: every
 * thread's buffers are sent first (EventFlushAll), and the session stays
 * open in case the exec fails.  Neither is done in the child of vfork,
 * which shares the parent's memory: there the calls pass straight on. */

static int ours(void)
{
  return atomic_load(&started) && recordPid == getpid() && !recorderInside;
}

/* peakRss -- PeakRss, the process's peak resident set: at its exit or
 * exec, for telltale-heap's summary.  Inside.  design/heap.txt .heap.rss */
static void peakRss(void)
{
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) == 0)
    EVENT_W(PeakRss, (EventW)ru.ru_maxrss);
}

/* atExit -- exit()'s: PeakRss, before the runtime's own handler ends
 * the session (registered after it, so run before it) */
static void atExit(void)
{
  if (ours()) {
    recorderInside = 1;
    peakRss();
    recorderInside = 0;
  }
}

/* beforeExit -- the session's end as exit() makes it (eventAtExit, not
 * EventFinish): threads still running keep the live file, where their
 * events until the process is gone are found */
static void beforeExit(void)
{
  if (ours()) {
    recorderInside = INSIDE_ENDING;     /* and stays so: the process is ending */
    peakRss();
    eventAtExit();
  }
}

/* loneThread -- whether the calling thread is the program's only one:
 * every other of /proc/self/task is telltale's own (telltale-write,
 * telltale-ctl).  Read with getdents64 into the stack: nothing allocated. */
static int loneThread(void)
{
  char buf[4096];
  long self = syscall(SYS_gettid), n;
  int lone = 1, fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  while (lone && (n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
    for (long at = 0; lone && at < n; ) {
      struct dirent64 *d = (struct dirent64 *)(void *)(buf + at);
      char comm[64], path[320];
      int c;
      ssize_t got = 0;
      at += d->d_reclen;
      if (d->d_name[0] == '.' || atol(d->d_name) == self)
        continue;
      (void)snprintf(path, sizeof path, "/proc/self/task/%s/comm", d->d_name);
      if ((c = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
        got = read(c, comm, sizeof comm - 1);
        (void)close(c);
      }
      lone = got > 9 && strncmp(comm, "telltale-", 9) == 0;
    }
  (void)close(fd);
  return lone;
}

/* liveAtExec -- rename the live file at an exec (from LOG.live to
 * LOG.live.done) or back (after it failed), when there is one */
static int liveMoved;

static void liveAtExec(int back)
{
  char live[sizeof logPath + 8], done[sizeof logPath + 16];
  (void)snprintf(live, sizeof live, "%s.live", logPath);
  (void)snprintf(done, sizeof done, "%s.live.done", logPath);
  liveMoved = back ? 0 : rename(live, done) == 0;
  if (back)
    (void)rename(done, live);
}

/* beforeExec -- Exec(path), then every buffer sent and StreamExec
 * (EventExecBefore): the log the exec leaves ends there, whole.  If
 * this thread is the program's only one, nothing else can be emitted
 * after that, so the live file holds nothing the log does not: it is
 * renamed LOG.live.done, which the next image removes rather than
 * keep it as LOG.execN.live.  design/plinth.txt .sol.exec design/recorder.txt .malloc.exec.live */
static int beforeExec(const char *path)
{
  int before = 0;
  if (ours()) {
    recorderInside = 1;
    peakRss();
    EVENT_S(Exec, path);
    before = EventExecBefore();
    if (logPath[0] != '\0' && loneThread())
      liveAtExec(0);
    recorderInside = 0;
  }
  return before;
}

/* afterExec -- an exec failed and returned: the session goes on, as it
 * was (EventExecFailed), with its live file */
static int afterExec(int before, int res)
{
  if (before != 0) {
    int saved = errno;
    recorderInside = 1;
    if (liveMoved)
      liveAtExec(1);
    EventExecFailed(before, saved);
    recorderInside = 0;
    errno = saved;
  }
  return res;
}

void _exit(int status)
{
  beforeExit();
  REAL("_exit", void (*)(int))(status);
  __builtin_unreachable();
}

void _Exit(int status)
{
  beforeExit();
  REAL("_Exit", void (*)(int))(status);
  __builtin_unreachable();
}

int execve(const char *path, char *const argv[], char *const envp[])
{
  int before = beforeExec(path);
  return afterExec(before, REAL("execve", int (*)(const char *, char *const[], char *const[]))(path, argv, envp));
}

int execv(const char *path, char *const argv[])
{
  int before = beforeExec(path);
  return afterExec(before, REAL("execv", int (*)(const char *, char *const[]))(path, argv));
}

int execvp(const char *file, char *const argv[])
{
  int before = beforeExec(file);
  return afterExec(before, REAL("execvp", int (*)(const char *, char *const[]))(file, argv));
}

int execvpe(const char *file, char *const argv[], char *const envp[])
{
  int before = beforeExec(file);
  return afterExec(before, REAL("execvpe", int (*)(const char *, char *const[], char *const[]))(file, argv, envp));
}

int fexecve(int fd, char *const argv[], char *const envp[])
{
  char name[32];
  (void)snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
  int before = beforeExec(name);
  return afterExec(before, REAL("fexecve", int (*)(int, char *const[], char *const[]))(fd, argv, envp));
}

/* The execl family: the arguments into an array, then the v form. */
#define EXEC_ARGS_LIMIT 4096

static int execArgs(const char *arg, va_list ap, char **argv, char ***envpReturn)
{
  int n = 0;
  argv[n++] = (char *)arg;
  while (arg != NULL) {
    if (n == EXEC_ARGS_LIMIT) {
      errno = E2BIG;
      return -1;
    }
    arg = va_arg(ap, const char *);
    argv[n++] = (char *)arg;
  }
  if (envpReturn != NULL)
    *envpReturn = va_arg(ap, char **);
  return 0;
}

/* EXEC_LIST -- in an execl-family wrapper: argv (and, with envp, the
 * environment after the NULL) from the arguments after arg */
#define EXEC_LIST(envp) \
  char *argv[EXEC_ARGS_LIMIT + 1]; \
  va_list ap; \
  int res; \
  va_start(ap, arg); \
  res = execArgs(arg, ap, argv, (envp)); \
  va_end(ap); \
  if (res != 0) \
    return res

int execl(const char *path, const char *arg, ...)
{
  EXEC_LIST(NULL);
  return execv(path, argv);
}

int execlp(const char *file, const char *arg, ...)
{
  EXEC_LIST(NULL);
  return execvp(file, argv);
}

int execle(const char *path, const char *arg, ...)
{
  char **envp;
  EXEC_LIST(&envp);
  return execve(path, argv, envp);
}
