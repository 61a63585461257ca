/* <tools/common/input.c> -- eventcnv's input: a log read or mapped
 * whole, or scanned as it is read, and its live file recovered
 *
 * .design: design/tools.txt .eventcnv.reader .eventcnv.scan design/control.txt .sol.recover
 */

#include "input.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* readAll -- read fd to its end into malloc'd memory */
static int readAll(int fd, InputStruct *in)
{
  size_t capacity = 1 << 16;
  in->data = malloc(capacity);
  in->size = 0;
  in->mapped = 0;
  if (in->data == NULL)
    return ENOMEM;
  for (;;) {
    ssize_t n;
    if (in->size == capacity) {
      unsigned char *bigger = realloc(in->data, capacity * 2);
      if (bigger == NULL)
        return ENOMEM;
      in->data = bigger;
      capacity *= 2;
    }
    n = read(fd, in->data + in->size, capacity - in->size);
    if (n == 0)
      return 0;
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return errno;
    }
    in->size += (size_t)n;
    /* Not a stream (/dev/zero, say): read no further; the reader says
     * what it is not.  .eventcnv.reader */
    if (in->size >= EVENT_STREAM_MAGIC_LEN
        && memcmp(in->data, EVENT_STREAM_MAGIC, EVENT_STREAM_MAGIC_LEN) != 0)
      return 0;
  }
}

int InputRead(const char *path, InputStruct *in)
{
  int fd, err;
  if (path == NULL || strcmp(path, "-") == 0)
    return readAll(STDIN_FILENO, in);
  fd = open(path, O_RDONLY);
  if (fd < 0)
    return errno;
  err = InputReadFd(fd, in);
  close(fd);
  return err;
}

int InputReadFd(int fd, InputStruct *in)
{
  struct stat st;
  int regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (regular && st.st_size > 0) {
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      in->data = p;
      in->size = (size_t)st.st_size;
      in->mapped = 1;
      return 0;
    }
  }
  if (regular)
    (void)lseek(fd, 0, SEEK_SET);       /* the whole file, each time */
  return readAll(fd, in);
}

void InputFree(InputStruct *in)
{
  if (in->mapped)
    munmap(in->data, in->size);
  else
    free(in->data);
}

/* readSome -- an EventStreamReadFunction for a ScanInputStruct */
typedef struct ScanInputStruct {
  int fd;
  int err;                      /* errno of a failed read, or 0 */
  pthread_t walker;             /* the thread whose reads' errors count */
} ScanInputStruct;

static long readSome(void *closure, unsigned char *buf, size_t size)
{
  ScanInputStruct *input = closure;
  for (;;) {
    ssize_t n = read(input->fd, buf, size);
    if (n >= 0)
      return (long)n;
    if (errno != EINTR) {
      input->err = errno;
      return -1;
    }
  }
}

/* readAt -- an EventStreamReadAtFunction for a ScanInputStruct, on
 * several threads at once.  Only the walk's own failures are the
 * input's: a range's thread that fails stops there, and the walk reads
 * those bytes itself (.eventcnv.scan.split), so its error would say a
 * loss there is none of. */
static long readAt(void *closure, unsigned char *buf, size_t size, uint64_t offset)
{
  ScanInputStruct *input = closure;
  for (;;) {
    ssize_t n = pread(input->fd, buf, size, (off_t)offset);
    if (n >= 0)
      return (long)n;
    if (errno != EINTR) {
      if (pthread_equal(pthread_self(), input->walker))
        input->err = errno;
      return -1;
    }
  }
}

/* scanJobs -- the threads to scan a file of size bytes on: jobs (0: one
 * a processor), each with a range of at least INPUT_SCAN_RANGE_MIN.
 * design/tools.txt .eventcnv.scan.split */
#define INPUT_SCAN_RANGE_MIN ((uint64_t)4 << 20)
#define INPUT_SCAN_JOBS_MAX 64
static unsigned scanJobs(unsigned jobs, uint64_t size)
{
  uint64_t most = size / INPUT_SCAN_RANGE_MIN;
  if (jobs == 0) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    jobs = cpus < 1 ? 1 : cpus > INPUT_SCAN_JOBS_MAX ? INPUT_SCAN_JOBS_MAX : (unsigned)cpus;
  }
  jobs = jobs < INPUT_SCAN_JOBS_MAX ? jobs : INPUT_SCAN_JOBS_MAX;
  return most < jobs ? (most > 0 ? (unsigned)most : 1) : jobs;
}

EventStreamRes InputScan(const char *path, EventStreamStruct **streamReturn, char *msg,
                         size_t msgSize, const char *programName, unsigned jobs)
{
  EventStreamRes res;
  ScanInputStruct input;
  struct stat st;
  unsigned threads = 1;
  input.fd = STDIN_FILENO;
  input.err = 0;
  input.walker = pthread_self();
  if (path != NULL && strcmp(path, "-") != 0) {
    input.fd = open(path, O_RDONLY);
    if (input.fd < 0) {
      snprintf(msg, msgSize, "%s", strerror(errno));
      return EventStreamERROR;
    }
  }
  /* A regular file large enough is split; a pipe, stdin or a small
   * file is read on one thread, as is every file with --jobs 1. */
  if (input.fd != STDIN_FILENO && fstat(input.fd, &st) == 0 && S_ISREG(st.st_mode))
    threads = scanJobs(jobs, (uint64_t)st.st_size);
  if (threads > 1)
    res = EventStreamScanSplit(streamReturn, readAt, &input, (uint64_t)st.st_size, threads,
                               msg, msgSize);
  else
    res = EventStreamScan(streamReturn, readSome, &input, msg, msgSize);
  if (res != EventStreamOK && input.err != 0)   /* as InputRead says it */
    snprintf(msg, msgSize, "%s", strerror(input.err));
  else if (input.err != 0)
    fprintf(stderr, "%s: %s\n", programName, strerror(input.err));
  if (input.fd != STDIN_FILENO)
    close(input.fd);
  return res;
}

int InputLiveExists(const char *path)
{
  char livePath[4096];
  struct stat st;
  if (path == NULL || strcmp(path, "-") == 0)
    return 0;
  if (snprintf(livePath, sizeof livePath, "%s.live", path) >= (int)sizeof livePath)
    return 0;
  return stat(livePath, &st) == 0 || errno != ENOENT;
}

/* design/control.txt .sol.recover */
int InputRecoverLive(const char *path, InputStruct *in, InputRecoveredStruct *recovered,
                     const char *programName)
{
  char livePath[4096];
  InputStruct live;
  unsigned char *merged;
  size_t size;
  EventRecoverStruct result;
  struct stat st;
  char msg[256];
  int err;
  if (path == NULL || strcmp(path, "-") == 0)
    return 0;
  if (snprintf(livePath, sizeof livePath, "%s.live", path) >= (int)sizeof livePath)
    return 0;
  memset(&live, 0, sizeof live);
  /* A live file is a regular file the program made: anything else (a
   * directory, a FIFO, a device, a link to one) is not read, and the
   * log is read alone.  .sol.recover */
  if (stat(livePath, &st) != 0) {
    if (errno == ENOENT)
      return 0;
    err = errno;
  } else
    err = S_ISREG(st.st_mode) ? InputRead(livePath, &live) : EINVAL;
  if (err != 0) {
    fprintf(stderr, "%s: %s: %s; reading the log alone\n", programName, livePath,
            err == EINVAL ? "not a regular file, so not a live file" : strerror(err));
    return 0;
  }
  if (EventRecover(in->data, in->size, live.data, live.size, &merged, &size, &result,
                   msg, sizeof msg) != 0) {
    fprintf(stderr, "%s: %s: %s; reading the log alone\n", programName, livePath, msg);
    InputFree(&live);
    return 0;
  }
  InputFree(&live);
  InputFree(in);
  in->data = merged;
  in->size = size;
  in->mapped = 0;
  /* Said once, with the rest of how the stream ended: ReportWarnings. */
  recovered->done = 1;
  recovered->events = result.events;
  recovered->blocks = result.blocks;
  recovered->rejected = result.rejected;
  recovered->rejectedOffset = result.rejectedOffset;
  recovered->damaged = result.damaged;
  recovered->damagedOffset = result.damagedOffset;
  recovered->logFailed = result.logFailed;
  recovered->missing = result.missing;
  recovered->live = result;
  memcpy(recovered->path, livePath, sizeof recovered->path);
  return 0;
}

/* design/tools.txt .zstd.live */
void InputArchiveRecovered(const EventStreamInfoStruct *info, InputRecoveredStruct *recovered)
{
  if (recovered->done || !info->recoveredInto)
    return;
  recovered->done = 1;
  recovered->events = info->unindexedEvents;
  recovered->blocks = info->unindexedBlocks;
  snprintf(recovered->path, sizeof recovered->path, "its live file when it was archived");
}

/* taskStat -- a thread's state letter and its start (clock ticks since
 * boot) from /proc/PID/task/TID/stat, or /proc/PID/stat; 0 if read */
static int taskStat(const char *path, char *stateReturn, unsigned long long *startReturn)
{
  char buf[1024], *p;
  ssize_t n;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  n = read(fd, buf, sizeof buf - 1);
  (void)close(fd);
  if (n <= 0) {
    errno = n < 0 ? errno : EINVAL;
    return -1;
  }
  buf[n] = '\0';
  errno = EINVAL;               /* unless parsed */
  p = strrchr(buf, ')');        /* after the command's name, which may hold anything */
  if (p == NULL || sscanf(p + 1, " %c", stateReturn) != 1)
    return -1;
  /* Field 22, starttime: the 20th after the name */
  for (int field = 0; field < 19 && p != NULL; ++field)
    p = strchr(p + 1, ' ');
  if (p == NULL || sscanf(p, " %llu", startReturn) != 1)
    return -1;
  return 0;
}

/* design/tools.txt .eventcnv.follow.gone */
int InputProgramGone(uint32_t pid, uint64_t startMonotonicNs)
{
  char path[64];
  DIR *dir;
  struct dirent *entry;
  struct timespec boot, mono;
  unsigned long long start;
  long tick = sysconf(_SC_CLK_TCK);
  char state;
  int running = 0;
  if (pid == 0 || pid > (uint32_t)INT32_MAX)
    return 0;
  if (access("/proc/self/stat", R_OK) != 0)     /* no /proc: a signal 0 tells */
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
  snprintf(path, sizeof path, "/proc/%lu/stat", (unsigned long)pid);
  if (taskStat(path, &state, &start) != 0)
    return errno == ENOENT || errno == ESRCH;
  /* Started after the log did (the process's start is in CLOCK_BOOTTIME,
   * which runs ahead of CLOCK_MONOTONIC by the time suspended; a tick
   * for its rounding): another process, given the pid again. */
  if (tick > 0 && clock_gettime(CLOCK_BOOTTIME, &boot) == 0
      && clock_gettime(CLOCK_MONOTONIC, &mono) == 0) {
    int64_t suspended = ((int64_t)boot.tv_sec - mono.tv_sec) * 1000000000
                        + (boot.tv_nsec - mono.tv_nsec);
    double startNs = (double)start * 1e9 / (double)tick;
    if (startNs > (double)startMonotonicNs + (double)(suspended > 0 ? suspended : 0)
                  + 1e9 / (double)tick)
      return 1;
  }
  /* Running while any thread is neither a zombie nor dead: the first
   * thread may have ended (pthread_exit in main) with others running. */
  snprintf(path, sizeof path, "/proc/%lu/task", (unsigned long)pid);
  dir = opendir(path);
  if (dir == NULL)
    return errno == ENOENT;
  while (!running && (entry = readdir(dir)) != NULL) {
    char taskPath[64 + 256 + 8];
    unsigned long long taskStart;
    if (entry->d_name[0] == '.')
      continue;
    snprintf(taskPath, sizeof taskPath, "%s/%s/stat", path, entry->d_name);
    running = taskStat(taskPath, &state, &taskStart) == 0 && state != 'Z' && state != 'X';
  }
  (void)closedir(dir);
  return !running;
}

/* design/tools.txt .eventcnv.follow.gone */
int InputFileUnheld(int fd)
{
  struct stat file;
  DIR *proc;
  struct dirent *p;
  int held = 0;
  pid_t self = getpid();
  if (fstat(fd, &file) != 0 || (proc = opendir("/proc")) == NULL)
    return 0;
  while (!held && (p = readdir(proc)) != NULL) {
    char path[300];
    DIR *fds;
    struct dirent *f;
    if (p->d_name[0] < '1' || p->d_name[0] > '9' || atol(p->d_name) == (long)self)
      continue;
    snprintf(path, sizeof path, "/proc/%s/fd", p->d_name);
    fds = opendir(path);
    if (fds == NULL)
      continue;                 /* gone, or another user's: not looked at */
    while (!held && (f = readdir(fds)) != NULL) {
      char link[600];
      struct stat st;
      snprintf(link, sizeof link, "%s/%s", path, f->d_name);
      held = f->d_name[0] != '.' && stat(link, &st) == 0 && st.st_dev == file.st_dev
             && st.st_ino == file.st_ino;
    }
    (void)closedir(fds);
  }
  (void)closedir(proc);
  return !held;
}
