/* <tests/unit/test_plinth.c> -- tests of the POSIX plinth
 *
 * .design: design/plinth.txt .plinth
 *
 * Covers every function in plinth.h: memory, file and fd streams and
 * their errors (a bad fd, a broken pipe, a full device), the policy for
 * logs (no links followed, close-on-exec, a file that is not a log left
 * as it was, a FIFO without a reader not waited on for ever, a reader
 * that goes away an EPIPE and not a SIGPIPE), the clock
 * frequency and monotonicity, thread ids, names and exit callbacks, the
 * recursive lock (also across fork), and the process functions.
 * Run under build/, build/san (ASan+UBSan) and build/tsan.
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "plinth.h"
#include "plinthclock.h"
#include "plinthint.h"

static char tempDir[] = "/tmp/test_plinth.XXXXXX";

/* tempPath -- a path in the test's temporary directory */

static void tempPath(char *buf, size_t size, const char *name)
{
  int n = snprintf(buf, size, "%s/%s", tempDir, name);
  assert_true(n > 0 && (size_t)n < size);
}

/* readFile -- the whole of a file, in a malloc'd buffer */

static unsigned char *readFile(const char *path, size_t *sizeReturn)
{
  FILE *f = fopen(path, "rb");
  unsigned char *buf;
  long size;

  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  size = ftell(f);
  assert_true(size >= 0);
  rewind(f);
  buf = malloc((size_t)size + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
  fclose(f);
  *sizeReturn = (size_t)size;
  return buf;
}


/* stream-memory-1: a memory stream grows across many writes of varying
   size and returns exactly the bytes written. */

static void stream_memory_grows(void **state)
{
  enum { WRITES = 5000, CHUNK_MAX = 97 };
  unsigned char chunk[CHUNK_MAX];
  unsigned char *expect = malloc((size_t)WRITES * CHUNK_MAX);
  size_t expectSize = 0, size;
  const unsigned char *bytes;
  PlinthStream stream;
  (void)state;

  assert_non_null(expect);
  assert_int_equal(PlinthStreamOpenMemory(&stream), 0);
  assert_string_equal(PlinthStreamDescribe(stream), "memory");
  bytes = PlinthStreamMemory(stream, &size);
  assert_non_null(bytes);                 /* empty, but a memory stream */
  assert_int_equal(size, 0);

  for (unsigned i = 0; i < WRITES; ++i) {
    size_t n = i % CHUNK_MAX;             /* includes zero-length writes */
    for (size_t j = 0; j < n; ++j)
      chunk[j] = (unsigned char)(i * 31 + j);
    assert_int_equal(PlinthStreamWrite(stream, chunk, n), 0);
    memcpy(expect + expectSize, chunk, n);
    expectSize += n;
  }
  assert_int_equal(PlinthStreamFlush(stream), 0);
  bytes = PlinthStreamMemory(stream, &size);
  assert_int_equal(size, expectSize);
  assert_memory_equal(bytes, expect, expectSize);
  PlinthStreamClose(stream);
  free(expect);
}

/* stream-file-1: a file stream truncates an existing file, writes it,
   describes itself by its path and creates files with mode 0644. */

static void stream_file_truncates(void **state)
{
  static const char old[] = "old contents, longer than the new ones\n";
  static const char text[] = "hello, file";
  char path[256];
  unsigned char *bytes;
  size_t size;
  PlinthStream stream;
  struct stat st;
  mode_t mask;
  FILE *f;
  (void)state;

  tempPath(path, sizeof path, "truncate.log");
  f = fopen(path, "w");
  assert_non_null(f);
  fputs(old, f);
  fclose(f);

  assert_int_equal(PlinthStreamOpenFile(&stream, path), 0);
  assert_string_equal(PlinthStreamDescribe(stream), path);
  assert_null(PlinthStreamMemory(stream, &size));
  assert_int_equal(size, 0);
  assert_int_equal(PlinthStreamWrite(stream, text, 5), 0);
  assert_int_equal(PlinthStreamWrite(stream, text + 5, sizeof text - 1 - 5), 0);
  assert_int_equal(PlinthStreamFlush(stream), 0);
  bytes = readFile(path, &size);          /* visible before close */
  assert_int_equal(size, sizeof text - 1);
  assert_memory_equal(bytes, text, size);
  free(bytes);
  PlinthStreamClose(stream);

  /* A new file gets 0644, less the umask. */
  tempPath(path, sizeof path, "new.log");
  mask = umask(0);
  assert_int_equal(PlinthStreamOpenFile(&stream, path), 0);
  umask(mask);
  PlinthStreamClose(stream);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0644);
}

/* stream-file-2: opening a file in a missing directory fails with ENOENT
   and leaves the stream pointer alone. */

static void stream_file_missing_dir(void **state)
{
  char path[256];
  PlinthStream stream = NULL;
  (void)state;

  tempPath(path, sizeof path, "no/such/dir.log");
  assert_int_equal(PlinthStreamOpenFile(&stream, path), ENOENT);
  assert_null(stream);
  assert_true(strlen(PlinthStrError(ENOENT)) > 0);
}

/* streamFd -- the descriptor open on path, found in /proc/self/fd; -1 */

static int streamFd(const char *path)
{
  for (int fd = 0; fd < 1024; ++fd) {
    char link[64], target[512];
    ssize_t n;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, target, sizeof target - 1);
    if (n <= 0)
      continue;
    target[n] = '\0';
    if (strcmp(target, path) == 0)
      return fd;
  }
  return -1;
}

/* writeText -- make a file holding text */

static void writeText(const char *path, const char *text)
{
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* stream-file-3: the policy for logs (.plinth.stream.file).  A file stream
   is close-on-exec and not on descriptors 0-2; a symbolic link is never
   followed (ELOOP), its target left as it was; PlinthStreamOpenLog
   leaves a file that does not start with the magic as it was (EEXIST)
   and empties one that does, or an empty one. */

static void stream_file_policy(void **state)
{
  char path[256], target[256];
  unsigned char *bytes;
  size_t size;
  PlinthStream stream = NULL;
  int fd;
  (void)state;

  tempPath(path, sizeof path, "policy.log");
  assert_int_equal(PlinthStreamOpenLog(&stream, path, "MAGIC", 5), 0);
  fd = streamFd(path);
  assert_true(fd > 2);
  assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
  assert_int_equal(PlinthStreamWrite(stream, "MAGIC and more", 14), 0);
  PlinthStreamClose(stream);
  assert_int_equal(PlinthStreamOpenLog(&stream, path, "MAGIC", 5), 0);   /* a log: emptied */
  PlinthStreamClose(stream);
  bytes = readFile(path, &size);
  assert_int_equal(size, 0);
  free(bytes);

  writeText(path, "precious, not a log\n");
  stream = NULL;
  assert_int_equal(PlinthStreamOpenLog(&stream, path, "MAGIC", 5), EEXIST);
  assert_null(stream);
  bytes = readFile(path, &size);
  assert_int_equal(size, 20);
  assert_memory_equal(bytes, "precious, not a log\n", 20);
  free(bytes);
  writeText(path, "MAG");                                               /* shorter */
  assert_int_equal(PlinthStreamOpenLog(&stream, path, "MAGIC", 5), EEXIST);
  assert_int_equal(unlink(path), 0);

  tempPath(target, sizeof target, "victim");
  writeText(target, "secret\n");
  assert_int_equal(symlink(target, path), 0);
  assert_int_equal(PlinthStreamOpenLog(&stream, path, "MAGIC", 5), ELOOP);
  assert_int_equal(PlinthStreamOpenFile(&stream, path), ELOOP);
  assert_null(stream);
  bytes = readFile(target, &size);
  assert_int_equal(size, 7);
  assert_memory_equal(bytes, "secret\n", 7);
  free(bytes);
  assert_int_equal(unlink(path), 0);
  assert_int_equal(unlink(target), 0);

  assert_int_equal(PlinthStreamOpenFile(&stream, path), 0);
  fd = streamFd(path);
  assert_true(fd > 2);
  assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
  PlinthStreamClose(stream);
  assert_int_equal(unlink(path), 0);
}

/* stream-file-5: no place for a log is opened as one (.plinth.stream.file):
   a file of /proc (/proc/self/mem, which would be written) is ENOTSUP, a
   directory EISDIR, a block device ENODEV (where one can be made); a
   character device such as /dev/null is a stream, not mappable. */

static void stream_file_places(void **state)
{
  char path[256];
  PlinthStream stream = NULL;
  (void)state;

  assert_int_equal(PlinthStreamOpenFile(&stream, "/proc/self/mem"), ENOTSUP);
  assert_int_equal(PlinthStreamOpenLog(&stream, "/proc/self/mem", "MAGIC", 5), ENOTSUP);
  assert_int_equal(PlinthStreamOpenFile(&stream, "/proc/self/status"), ENOTSUP);
  assert_int_equal(PlinthStreamOpenFile(&stream, tempDir), EISDIR);
  tempPath(path, sizeof path, "block");
  if (mknod(path, S_IFBLK | 0600, makedev(7, 250)) == 0) {
    assert_int_equal(PlinthStreamOpenFile(&stream, path), ENODEV);
    assert_int_equal(unlink(path), 0);
  }
  assert_null(stream);
  assert_int_equal(PlinthStreamOpenLog(&stream, "/dev/null", "MAGIC", 5), 0);
  assert_false(PlinthStreamMappable(stream));
  assert_int_equal(PlinthStreamWrite(stream, "MAGIC", 5), 0);
  PlinthStreamClose(stream);
}

/* stream-file-6: PlinthLogKeep never moves a log onto what is not one:
   PATH.1 or PATH.1.live that is notes (EEXIST) or a directory (EISDIR)
   stops the rotation, naming it, and nothing moves; a log there is kept,
   and the next goes to PATH.2; a PATH.live that is notes is not moved;
   a log another open holds locked (a running process's) is not moved
   (EBUSY), and is not opened as a log either. */

static void log_keep_onto(void **state)
{
  char path[256], older[256], olderLive[256], live[256], blame[300];
  unsigned char *bytes;
  size_t size;
  (void)state;

  tempPath(path, sizeof path, "keep.log");
  tempPath(older, sizeof older, "keep.log.1");
  tempPath(olderLive, sizeof olderLive, "keep.log.1.live");
  tempPath(live, sizeof live, "keep.log.live");
  writeText(path, "MAGIC new");
  writeText(older, "my notes\n");
  assert_int_equal(PlinthLogKeep(path, "MAGIC", 5, blame, sizeof blame), EEXIST);
  assert_string_equal(blame, older);
  bytes = readFile(older, &size);
  assert_int_equal(size, 9);
  assert_memory_equal(bytes, "my notes\n", 9);
  free(bytes);
  assert_int_equal(access(path, F_OK), 0);
  assert_int_equal(unlink(older), 0);

  assert_int_equal(mkdir(older, 0700), 0);
  assert_int_equal(PlinthLogKeep(path, "MAGIC", 5, blame, sizeof blame), EISDIR);
  assert_string_equal(blame, older);
  assert_int_equal(rmdir(older), 0);

  writeText(older, "MAGIC old");
  writeText(olderLive, "my notes\n");
  assert_int_equal(PlinthLogKeep(path, "MAGIC", 5, blame, sizeof blame), EEXIST);
  assert_string_equal(blame, olderLive);
  bytes = readFile(older, &size);
  assert_memory_equal(bytes, "MAGIC old", 9);
  free(bytes);
  assert_int_equal(access(path, F_OK), 0);
  assert_int_equal(unlink(olderLive), 0);

  writeText(live, "my notes\n");
  assert_int_equal(PlinthLogKeep(path, "MAGIC", 5, blame, sizeof blame), 0);
  bytes = readFile(older, &size);
  assert_memory_equal(bytes, "MAGIC old", 9);
  free(bytes);
  {
    char second[256];
    tempPath(second, sizeof second, "keep.log.2");
    bytes = readFile(second, &size);
    assert_memory_equal(bytes, "MAGIC new", 9);
    free(bytes);
    assert_int_equal(unlink(second), 0);
  }
  assert_int_not_equal(access(path, F_OK), 0);
  assert_int_not_equal(access(olderLive, F_OK), 0);
  bytes = readFile(live, &size);
  assert_memory_equal(bytes, "my notes\n", 9);
  free(bytes);
  assert_int_equal(unlink(live), 0);
  assert_int_equal(unlink(older), 0);

  {
    PlinthStream stream = NULL;
    int holder;
    writeText(path, "MAGIC running");
    holder = open(path, O_RDONLY);
    assert_true(holder >= 0);
    assert_int_equal(flock(holder, LOCK_EX), 0);
    assert_int_equal(PlinthLogKeep(path, "MAGIC", 5, blame, sizeof blame), EBUSY);
    assert_int_equal(PlinthStreamOpenLog(&stream, path, "MAGIC", 5), EBUSY);
    assert_null(stream);
    bytes = readFile(path, &size);
    assert_int_equal(size, 13);
    free(bytes);
    assert_int_equal(close(holder), 0);
    assert_int_equal(unlink(path), 0);
  }
}

struct fifoReaderStruct {
  const char *path;
  size_t size;
};

/* fifoReader -- open a FIFO for reading after a moment and read it to
   its end */

static void *fifoReader(void *p)
{
  struct fifoReaderStruct *r = p;
  unsigned char buf[65536];
  ssize_t n;
  int fd;
  PlinthSleepNs(200000000);
  fd = open(r->path, O_RDONLY);
  if (fd < 0)
    return NULL;
  while ((n = read(fd, buf, sizeof buf)) > 0)
    r->size += (size_t)n;
  close(fd);
  return NULL;
}

/* stream-file-4: a FIFO that no process reads is waited on for about a
   second, then ENXIO, not a stream whose writes block for ever once the
   pipe is full; one whose reader comes within the second is written,
   well past a pipe's buffer. */

static void stream_file_fifo(void **state)
{
  enum { SIZE = 1 << 20 };
  char path[256];
  unsigned char *src = calloc(SIZE, 1);
  struct fifoReaderStruct r;
  PlinthStream stream = NULL;
  pthread_t reader;
  uint64_t start, took;
  (void)state;

  assert_non_null(src);
  tempPath(path, sizeof path, "fifo.log");
  assert_int_equal(mkfifo(path, 0600), 0);
  start = PlinthMonotonicNs();
  assert_int_equal(PlinthStreamOpenFile(&stream, path), ENXIO);
  took = PlinthMonotonicNs() - start;
  assert_null(stream);
  assert_true(took >= 900000000u && took < 5000000000u);
  assert_int_equal(PlinthStreamOpenLog(&stream, path, "MAGIC", 5), ENXIO);

  r.path = path;
  r.size = 0;
  assert_int_equal(pthread_create(&reader, NULL, fifoReader, &r), 0);
  assert_int_equal(PlinthStreamOpenLog(&stream, path, "MAGIC", 5), 0);
  assert_false(PlinthStreamMappable(stream));
  assert_int_equal(PlinthStreamWrite(stream, src, SIZE), 0);
  PlinthStreamClose(stream);
  assert_int_equal(pthread_join(reader, NULL), 0);
  assert_int_equal(r.size, SIZE);
  assert_int_equal(unlink(path), 0);
  free(src);
}

struct drainStruct {
  int fd;
  unsigned char *buf;
  size_t size;
};

/* drain -- read a pipe to end of file */

static void *drain(void *p)
{
  struct drainStruct *d = p;
  ssize_t n;

  while ((n = read(d->fd, d->buf + d->size, 65536)) > 0)
    d->size += (size_t)n;
  return NULL;
}

/* stream-fd-1: an fd stream writes a block much larger than a pipe's
   buffer whole, describes itself as "fd N", and closes its fd only if
   asked to. */

static void stream_fd_pipe(void **state)
{
  enum { SIZE = 1 << 20 };
  unsigned char *src = malloc(SIZE);
  struct drainStruct d;
  char describe[32];
  PlinthStream stream;
  pthread_t reader;
  int fds[2];
  (void)state;

  assert_non_null(src);
  for (size_t i = 0; i < SIZE; ++i)
    src[i] = (unsigned char)(i * 7 + (i >> 11));
  assert_int_equal(pipe(fds), 0);
  d.fd = fds[0];
  d.buf = malloc(SIZE + 65536);
  d.size = 0;
  assert_non_null(d.buf);
  assert_int_equal(pthread_create(&reader, NULL, drain, &d), 0);

  assert_int_equal(PlinthStreamOpenFd(&stream, fds[1], 0), 0);
  snprintf(describe, sizeof describe, "fd %d", fds[1]);
  assert_string_equal(PlinthStreamDescribe(stream), describe);
  assert_int_equal(PlinthStreamWrite(stream, src, SIZE), 0);
  PlinthStreamClose(stream);
  assert_int_not_equal(fcntl(fds[1], F_GETFD), -1);   /* still open */

  assert_int_equal(PlinthStreamOpenFd(&stream, fds[1], 1), 0);
  assert_int_equal(PlinthStreamWrite(stream, "!", 1), 0);
  PlinthStreamClose(stream);                           /* closes fds[1] */
  assert_int_equal(fcntl(fds[1], F_GETFD), -1);
  assert_int_equal(errno, EBADF);

  assert_int_equal(pthread_join(reader, NULL), 0);    /* saw end of file */
  assert_int_equal(d.size, SIZE + 1);
  assert_memory_equal(d.buf, src, SIZE);
  assert_int_equal(d.buf[SIZE], '!');
  close(fds[0]);
  free(d.buf);
  free(src);
}

/* stream-fd-2: writing to a closed fd, a pipe with no reader or a full
   device returns an errno code; a negative fd is refused. */

static void stream_fd_errors(void **state)
{
  PlinthStream stream = NULL;
  int fds[2], fd;
  (void)state;

  assert_int_equal(PlinthStreamOpenFd(&stream, -1, 0), EBADF);
  assert_null(stream);

  assert_int_equal(pipe(fds), 0);
  close(fds[0]);
  close(fds[1]);
  assert_int_equal(PlinthStreamOpenFd(&stream, fds[1], 0), 0);
  assert_int_equal(PlinthStreamWrite(stream, "x", 1), EBADF);
  PlinthStreamClose(stream);

  assert_int_equal(pipe(fds), 0);
  close(fds[0]);
  assert_int_equal(PlinthStreamOpenFd(&stream, fds[1], 1), 0);
  assert_int_equal(PlinthStreamWrite(stream, "x", 1), EPIPE);  /* SIGPIPE ignored in main */
  PlinthStreamClose(stream);

  fd = open("/dev/full", O_WRONLY);
  if (fd >= 0) {
    assert_int_equal(PlinthStreamOpenFd(&stream, fd, 1), 0);
    assert_int_equal(PlinthStreamWrite(stream, "x", 1), ENOSPC);
    PlinthStreamClose(stream);
  }
}


/* stream-fd-3: with SIGPIPE at its default action, writing to a pipe
   whose reader has gone fails with EPIPE and leaves no SIGPIPE pending:
   the program is not killed (a FIFO's reader that quits early).  In a
   child, since main ignores SIGPIPE. */

static void stream_fd_sigpipe(void **state)
{
  pid_t child;
  int status;
  (void)state;

  child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    PlinthStream stream;
    sigset_t pending;
    int fds[2];
    signal(SIGPIPE, SIG_DFL);
    if (pipe(fds) != 0 || close(fds[0]) != 0 || PlinthStreamOpenFd(&stream, fds[1], 1) != 0)
      _exit(3);
    if (PlinthStreamWrite(stream, "x", 1) != EPIPE)
      _exit(4);
    if (sigpending(&pending) != 0 || sigismember(&pending, SIGPIPE))
      _exit(5);
    PlinthStreamClose(stream);
    _exit(0);
  }
  assert_int_equal(waitpid(child, &status, 0), child);
  if (WIFSIGNALED(status))
    fail_msg("the child was killed by signal %d", WTERMSIG(status));
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}


/* clock-1: the first call to PlinthClockFrequency is quick (no sleep),
   plausible, agrees with CLOCK_MONOTONIC over 20 ms to 0.5%, and later
   calls return the same value.  Must run before any other clock test. */

static void clock_frequency(void **state)
{
  uint64_t ns0, ns1, c0, c1, hz, startNs;
  double measured;
  (void)state;

  startNs = PlinthMonotonicNs();
  hz = PlinthClockFrequency();
  ns1 = PlinthMonotonicNs();
  print_message("clock frequency %llu Hz, found in %llu us\n",
                (unsigned long long)hz, (unsigned long long)(ns1 - startNs) / 1000);
  assert_true(ns1 - startNs < 10000000);    /* well under 10 ms, even sanitised */
#if PLINTH_CLOCK_IS_CYCLES
  assert_true(hz >= 100000000u && hz <= 10000000000u);
#else
  assert_int_equal(hz, 1000000000u);
#endif
  assert_int_equal(PlinthClockFrequency(), hz);

  c0 = PlinthClockNow();
  ns0 = PlinthMonotonicNs();
  do
    ns1 = PlinthMonotonicNs();
  while (ns1 - ns0 < 20000000);
  c1 = PlinthClockNow();
  measured = (double)(c1 - c0) * 1e9 / (double)(ns1 - ns0);
  print_message("measured over 20 ms: %.0f Hz\n", measured);
  assert_true(measured > (double)hz * 0.995 && measured < (double)hz * 1.005);
}

/* clock-2: the cycle counter and CLOCK_MONOTONIC never go backwards in
   one thread; CLOCK_REALTIME is after 2020. */

static void clock_monotonic(void **state)
{
  uint64_t lastClock = PlinthClockNow(), lastNs = PlinthMonotonicNs();
  (void)state;

  for (int i = 0; i < 100000; ++i) {
    uint64_t now = PlinthClockNow(), ns = PlinthMonotonicNs();
    assert_true(now >= lastClock);
    assert_true(ns >= lastNs);
    lastClock = now;
    lastNs = ns;
  }
  assert_true(PlinthClockNow() > lastClock || PlinthMonotonicNs() > lastNs);
  assert_true(PlinthRealtimeNs() > UINT64_C(1577836800) * 1000000000u);
}


/* What threadExitFn saw; read after pthread_join. */
static unsigned threadExitCalls;
static void *threadExitArg;
static uint64_t threadExitOSId;

static void threadExitFn(void *arg)
{
  ++threadExitCalls;
  threadExitArg = arg;
  threadExitOSId = PlinthThreadOSId();
}

struct threadInfoStruct {
  void *arg;                    /* passed last to PlinthThreadOnExit */
  uint64_t osId;
  int useExit;                  /* leave by pthread_exit, not return */
  char name[32];
};

static void *threadExitBody(void *p)
{
  struct threadInfoStruct *info = p;
  int first;

  info->osId = PlinthThreadOSId();
  assert_int_equal(PlinthThreadOnExit(threadExitFn, &first), 0);
  assert_int_equal(PlinthThreadOnExit(threadExitFn, info->arg), 0);  /* most recent wins */
  if (info->useExit)
    pthread_exit(NULL);
  return NULL;
}

/* thread-1: PlinthThreadOnExit calls fn once, with the most recent arg
   (even NULL), in the exiting thread, whether it returns or calls
   pthread_exit; thread ids differ between threads, and the main thread's
   is the process id. */

static void thread_on_exit(void **state)
{
  static int argA;
  struct threadInfoStruct info;
  pthread_t thread;
  (void)state;

  assert_int_equal(PlinthThreadOSId(), (uint64_t)getpid());

  for (int variant = 0; variant < 3; ++variant) {
    info.arg = variant == 2 ? NULL : &argA;
    info.useExit = variant == 1;
    threadExitCalls = 0;
    threadExitArg = &info;
    assert_int_equal(pthread_create(&thread, NULL, threadExitBody, &info), 0);
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(threadExitCalls, 1);
    assert_ptr_equal(threadExitArg, info.arg);
    assert_int_equal(threadExitOSId, info.osId);
    assert_int_not_equal(info.osId, PlinthThreadOSId());
  }
}

static void *threadNameBody(void *p)
{
  struct threadInfoStruct *info = p;
  char small[5];

  pthread_setname_np(pthread_self(), "plinth-worker");
  assert_int_equal(PlinthThreadName(info->name, sizeof info->name), 0);
  assert_int_equal(PlinthThreadName(small, sizeof small), 0);
  assert_string_equal(small, "plin");                 /* truncated to fit */
  assert_int_equal(PlinthThreadName(small, 0), ERANGE);
  return NULL;
}


/* own_thread_mask -- a thread of telltale's own is born with the
 * program's signals blocked, before it runs a line, and its creator's
 * mask is as it was: design/plinth.txt .sol.signal.own */
static void *maskProbe(void *arg)
{
  sigset_t now;
  (void)pthread_sigmask(SIG_BLOCK, NULL, &now);
  *(int *)arg = sigismember(&now, SIGALRM) == 1 && sigismember(&now, SIGTERM) == 1
    && sigismember(&now, SIGSEGV) == 0;
  return NULL;
}

static void own_thread_mask(void **state)
{
  pthread_t thread;
  int blocked = -1;
  sigset_t mask;
  (void)state;
  assert_int_equal(PlinthOwnThreadCreate(&thread, NULL, maskProbe, &blocked), 0);
  assert_int_equal(pthread_join(thread, NULL), 0);
  assert_int_equal(blocked, 1);
  (void)pthread_sigmask(SIG_BLOCK, NULL, &mask);
  assert_int_equal(sigismember(&mask, SIGALRM), 0);
}

/* thread-2: PlinthThreadName returns the name pthread_setname_np set. */

static void thread_name(void **state)
{
  struct threadInfoStruct info;
  pthread_t thread;
  (void)state;

  assert_int_equal(pthread_create(&thread, NULL, threadNameBody, &info), 0);
  assert_int_equal(pthread_join(thread, NULL), 0);
  assert_string_equal(info.name, "plinth-worker");
}


enum { LOCK_THREADS = 4, LOCK_ROUNDS = 20000 };
static unsigned long lockCounter;       /* guarded by the plinth lock */

static void *lockBody(void *p)
{
  (void)p;
  for (int i = 0; i < LOCK_ROUNDS; ++i) {
    PlinthLockClaim();
    PlinthLockClaim();                  /* recursive */
    ++lockCounter;
    PlinthLockRelease();
    ++lockCounter;
    PlinthLockRelease();
  }
  return NULL;
}

/* lock-1: the lock is recursive, fully released after as many releases
   as claims, and excludes other threads. */

static void lock_recursive(void **state)
{
  pthread_t threads[LOCK_THREADS];
  (void)state;

  PlinthLockClaim();
  PlinthLockClaim();
  PlinthLockClaim();
  PlinthLockRelease();
  PlinthLockRelease();
  PlinthLockRelease();

  lockCounter = 0;
  for (int i = 0; i < LOCK_THREADS; ++i)
    assert_int_equal(pthread_create(&threads[i], NULL, lockBody, NULL), 0);
  for (int i = 0; i < LOCK_THREADS; ++i)
    assert_int_equal(pthread_join(threads[i], NULL), 0);
  assert_int_equal(lockCounter, 2ul * LOCK_THREADS * LOCK_ROUNDS);
}

static volatile sig_atomic_t forkChildRan;

static void forkChild(void)
{
  forkChildRan = 1;
}

static pthread_mutex_t holderMutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t holderCond = PTHREAD_COND_INITIALIZER;
static int holderClaimed;

/* lockHolder -- claim the plinth lock, say so, hold it a while */

static void *lockHolder(void *p)
{
  (void)p;
  PlinthLockClaim();
  pthread_mutex_lock(&holderMutex);
  holderClaimed = 1;
  pthread_cond_signal(&holderCond);
  pthread_mutex_unlock(&holderMutex);
  usleep(20000);
  PlinthLockRelease();
  return NULL;
}

/* forkAndClaim -- fork; the child claims the lock and reports its
   child handler; the parent returns the child's exit status */

static int forkAndClaim(void)
{
  int status;
  pid_t pid = fork();

  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(5);                           /* a deadlock kills the child */
    PlinthLockClaim();
    PlinthLockClaim();
    PlinthLockRelease();
    PlinthLockRelease();
    _exit(forkChildRan ? 0 : 3);
  }
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return status;
}

/* fork-1: PlinthAtFork's handler runs in the child, and the child can
   claim the lock even when another thread held it at the fork, or the
   forking thread did. */

static void fork_lock(void **state)
{
  pthread_t holder;
  int status;
  (void)state;

  assert_int_equal(PlinthAtFork(forkChild), 0);

  status = forkAndClaim();
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  PlinthLockClaim();
  status = forkAndClaim();
  PlinthLockRelease();
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  assert_int_equal(pthread_create(&holder, NULL, lockHolder, NULL), 0);
  pthread_mutex_lock(&holderMutex);
  while (!holderClaimed)
    pthread_cond_wait(&holderCond, &holderMutex);
  pthread_mutex_unlock(&holderMutex);
  status = forkAndClaim();              /* waits for the holder to release */
  assert_int_equal(pthread_join(holder, NULL), 0);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_int_equal(forkChildRan, 0);    /* not in the parent */
}


static int atExitFd = -1;

static void atExitFn(void)
{
  (void)write(atExitFd, "bye", 3);
}

/* process-1: process id, program name (truncated to fit), environment,
   allocation and strerror. */

static void process_basics(void **state)
{
  char name[64], small[4];
  void *p;
  (void)state;

  assert_int_equal(PlinthProcessId(), (uint64_t)getpid());
  assert_int_equal(PlinthProgramName(name, sizeof name), 0);
  assert_string_equal(name, "test_plinth");
  assert_int_equal(PlinthProgramName(small, sizeof small), 0);
  assert_string_equal(small, "tes");
  assert_int_equal(PlinthProgramName(small, 0), ERANGE);

  assert_int_equal(setenv("TEST_PLINTH_VAR", "value", 1), 0);
  assert_string_equal(PlinthGetEnv("TEST_PLINTH_VAR"), "value");
  assert_null(PlinthGetEnv("TEST_PLINTH_NO_SUCH_VAR"));

  p = PlinthAlloc(100);
  assert_non_null(p);
  memset(p, 0xAA, 100);
  PlinthFree(p);
  PlinthFree(NULL);

  assert_string_equal(PlinthStrError(EBADF), strerror(EBADF));
}

/* process-2: PlinthAtExit's function runs at exit(), and
   PlinthWriteError reaches fd 2 and preserves errno; both checked in a
   child whose stderr is a pipe. */

static void process_exit_and_error(void **state)
{
  char buf[64];
  size_t got = 0;
  ssize_t n;
  int fds[2], status;
  pid_t pid;
  (void)state;

  assert_int_equal(pipe(fds), 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    atExitFd = fds[1];
    if (dup2(fds[1], STDERR_FILENO) < 0 || PlinthAtExit(atExitFn) != 0)
      _exit(2);
    errno = ERANGE;
    PlinthWriteError("oops:", 5);
    PlinthWriteError(NULL, 0);
    exit(errno == ERANGE ? 0 : 3);      /* runs atExitFn */
  }
  close(fds[1]);
  while ((n = read(fds[0], buf + got, sizeof buf - 1 - got)) > 0)
    got += (size_t)n;
  buf[got] = '\0';
  close(fds[0]);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_string_equal(buf, "oops:bye");
}


/* removeTemp -- remove the temporary directory's files and itself */

static void removeTemp(void)
{
  static const char *const names[] = {"truncate.log", "new.log"};
  char path[256];

  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    tempPath(path, sizeof path, names[i]);
    (void)unlink(path);
  }
  (void)rmdir(tempDir);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(clock_frequency),  /* first: times the first call */
    cmocka_unit_test(clock_monotonic),
    cmocka_unit_test(stream_memory_grows),
    cmocka_unit_test(stream_file_truncates),
    cmocka_unit_test(stream_file_missing_dir),
    cmocka_unit_test(stream_file_policy),
    cmocka_unit_test(stream_file_fifo),
    cmocka_unit_test(stream_file_places),
    cmocka_unit_test(log_keep_onto),
    cmocka_unit_test(stream_fd_pipe),
    cmocka_unit_test(stream_fd_errors),
    cmocka_unit_test(stream_fd_sigpipe),
    cmocka_unit_test(thread_on_exit),
    cmocka_unit_test(thread_name),
    cmocka_unit_test(own_thread_mask),
    cmocka_unit_test(lock_recursive),
    cmocka_unit_test(fork_lock),
    cmocka_unit_test(process_basics),
    cmocka_unit_test(process_exit_and_error),
  };
  int failed;

  signal(SIGPIPE, SIG_IGN);             /* so a broken pipe is EPIPE */
  if (mkdtemp(tempDir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  failed = cmocka_run_group_tests(tests, NULL, NULL);
  removeTemp();
  return failed;
}
