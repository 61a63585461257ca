/* <src/plinth/plinth.c> -- POSIX plinth
 *
 * .design: design/telemetry.txt .plinth
 *
 * The implementation of plinth.h for Linux and other POSIX systems with
 * pthreads.  It is built with -D_GNU_SOURCE for pthread_getname_np,
 * program_invocation_short_name, syscall(SYS_gettid) and the static
 * recursive mutex initialiser.  It depends on libc and pthreads only.
 *
 * Functions that can fail return 0 or a positive errno code and never
 * print (plinth.h).  Checks on the interface (a NULL stream, say) are
 * assertions: they are the caller's mistakes, not run-time conditions.
 */

#include "plinth.h"
#include "plinthclock.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>


/* Output streams.  design/telemetry.txt .plinth.stream
 *
 * Two sorts: a file descriptor (which PlinthStreamOpenFile opens and
 * PlinthStreamOpenFd adopts) and a growable block of memory, for tests.
 * A stream is not locked: its one writer, or the runtime's lock, keeps
 * writes in order.
 */

enum {
  PlinthStreamSortFd,
  PlinthStreamSortMemory
};

#define PLINTH_MEMORY_INITIAL 256   /* first capacity of a memory stream */

typedef struct PlinthStreamStruct {
  int sort;                     /* PlinthStreamSortFd or ...Memory */
  int fd;                       /* fd streams: the descriptor */
  int closeOnDestroy;           /* fd streams: close fd in PlinthStreamClose */
  int regular;                  /* a regular file PlinthStreamOpenFile opened */
  int pipe;                     /* a FIFO, pipe or socket: EPIPE, not SIGPIPE */
  int mapped;                   /* PlinthStreamMap has been called */
  uint64_t mapEnd;              /* mapped streams: the end of the file */
  unsigned char *base;          /* memory streams: the bytes written */
  size_t size;                  /* memory streams: bytes used */
  size_t capacity;              /* memory streams: bytes allocated */
  uint64_t written;             /* bytes written, for faults */
  uint64_t faultAfter;          /* PlinthStreamFault: fail past this many bytes */
  int faultCode;                /* ... with this errno code (0: never) */
  int faultOnce;                /* ... only the write that reaches it */
  size_t faultShort;            /* ... and write() at most this much at once */
  char description[];           /* for PlinthStreamDescribe */
} PlinthStreamStruct;

/* streamCreate -- allocate a stream and its description */

static int streamCreate(PlinthStream *streamReturn, int sort, const char *description)
{
  size_t length = strlen(description);
  PlinthStream stream;

  if (length > SIZE_MAX - sizeof(PlinthStreamStruct) - 1)
    return ENAMETOOLONG;
  stream = malloc(sizeof(PlinthStreamStruct) + length + 1);
  if (stream == NULL)
    return ENOMEM;
  memset(stream, 0, sizeof *stream);
  stream->sort = sort;
  stream->fd = -1;
  stream->closeOnDestroy = 0;
  stream->base = NULL;
  stream->size = 0;
  stream->capacity = 0;
  memcpy(stream->description, description, length + 1);
  *streamReturn = stream;
  return 0;
}

/* PlinthStreamOpenFile -- create or truncate a file and stream to it */

/* PlinthCoreSharedFiles -- ask that a core dump of this process hold its
 * shared file mappings (bit 3 of /proc/self/coredump_filter), where the
 * live file's buffers are; the other bits are kept.  Returns 0, or an
 * errno code (the file is not there, or not writable): nothing else
 * changes.  .plinth.core */
int PlinthCoreSharedFiles(void)
{
  char buf[32];
  unsigned long filter;
  ssize_t n;
  int fd = open("/proc/self/coredump_filter", O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return errno;
  n = read(fd, buf, sizeof buf - 1);
  if (n <= 0) {
    int res = n < 0 ? errno : EIO;
    (void)close(fd);
    return res;
  }
  buf[n] = '\0';
  filter = strtoul(buf, NULL, 16);
  if ((filter & 0x8) == 0) {
    n = snprintf(buf, sizeof buf, "0x%lx", filter | 0x8);
    if (pwrite(fd, buf, (size_t)n, 0) != n) {
      int res = errno;
      (void)close(fd);
      return res;
    }
  }
  (void)close(fd);
  return 0;
}

/* PlinthLogKeep -- before a log is written anew at path: a telltale log
 * already there (its first bytes are magic) is kept as PATH.1, with its
 * live file PATH.live as PATH.1.live; a non-empty regular file that is
 * not one is not to be overwritten (EEXIST); anything else (no file, an
 * empty one, a FIFO, a device) may be opened.  .plinth.stream.file */
int PlinthLogKeep(const char *path, const char *magic, size_t magicSize)
{
  struct stat st;
  char head[16], older[4096 + 16], live[4096 + 16];
  int fd;
  ssize_t n;
  if (lstat(path, &st) != 0)
    return errno == ENOENT ? 0 : errno;
  if (S_ISLNK(st.st_mode))
    return ELOOP;
  if (!S_ISREG(st.st_mode) || st.st_size == 0)
    return 0;
  fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return errno;
  n = read(fd, head, magicSize < sizeof head ? magicSize : sizeof head);
  (void)close(fd);
  if (n != (ssize_t)magicSize || memcmp(head, magic, magicSize) != 0)
    return EEXIST;
  if ((size_t)snprintf(older, sizeof older, "%s.1", path) >= sizeof older)
    return ENAMETOOLONG;
  if (rename(path, older) != 0)
    return errno;
  (void)snprintf(live, sizeof live, "%s.live", path);
  (void)snprintf(older, sizeof older, "%s.1.live", path);
  if (rename(live, older) != 0 && errno == ENOENT)
    (void)unlink(older);       /* a stale PATH.1.live belongs to no PATH.1 now */
  return 0;
}

/* PLINTH_FIFO_WAIT_NS -- how long opening a FIFO waits for a reader */
#define PLINTH_FIFO_WAIT_NS ((uint64_t)1000000000)

/* fifoOpen -- open for writing the FIFO at path (st, from lstat),
 * waiting at most PLINTH_FIFO_WAIT_NS for a process to open it for
 * reading.  Never read-write: a FIFO opened so never blocks, but its
 * writes block for ever once the pipe is full and no one reads, and it
 * would wake a reader that is waiting, which then sees an end of file.
 * Returns the descriptor, or -1 with errno (ENXIO: no reader came). */
static int fifoOpen(const char *path, const struct stat *st)
{
  uint64_t waited = 0;
  struct stat now;
  int fd;
  for (;;) {
    fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0 || (errno != ENXIO && errno != EINTR) || waited >= PLINTH_FIFO_WAIT_NS)
      break;
    PlinthSleepNs(10000000);
    waited += 10000000;
  }
  if (fd < 0)
    return -1;
  /* The same FIFO, not another file put there meanwhile; and its writes
   * wait for the reader from now on, as a file's do for the disk. */
  if (fstat(fd, &now) != 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino ||
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    (void)close(fd);
    errno = EAGAIN;
    return -1;
  }
  return fd;
}

/* fileOpen -- the stream to a file at path, created if need be: never
 * through a symbolic link, close-on-exec, never on descriptors 0-2.  A
 * regular file is emptied, unless magic is given and the file holds
 * something that does not start with it (EEXIST: it is left as it was).
 * A FIFO needs a reader (fifoOpen).  Nothing blocks: O_NONBLOCK lasts
 * only until the file is known.  .plinth.stream.file */
static int fileOpen(PlinthStream *streamReturn, const char *path, const char *magic,
                    size_t magicSize)
{
  PlinthStream stream;
  struct stat st;
  int fd, res;

  assert(streamReturn != NULL);
  assert(path != NULL);

  /* Not through a planted link; not truncated before it is known to be
   * a log; RDWR: .sol.live */
  if (lstat(path, &st) == 0 && S_ISFIFO(st.st_mode)) {
    fd = fifoOpen(path, &st);
    if (fd < 0)
      return errno;
  } else {
    do
      fd = open(path, O_RDWR | O_CREAT | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW, 0644);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
      return errno;
    if (fstat(fd, &st) != 0 || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
      goto failErrno;
    if (S_ISFIFO(st.st_mode)) {       /* made a FIFO since lstat: not waited for */
      (void)close(fd);
      return EAGAIN;
    }
  }
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    if (magic != NULL) {
      char head[64];
      ssize_t n = magicSize <= sizeof head ? pread(fd, head, magicSize, 0) : -1;
      if (n != (ssize_t)magicSize || memcmp(head, magic, magicSize) != 0) {
        (void)close(fd);
        return EEXIST;
      }
    }
    if (ftruncate(fd, 0) != 0)
      goto failErrno;
  }
  /* never on descriptors 0-2, where the program's output (or a closed
   * stdout's successor) would land in it */
  if (fd <= 2) {
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    (void)close(fd);
    if (high < 0)
      return errno;
    fd = high;
  }

  res = streamCreate(&stream, PlinthStreamSortFd, path);
  if (res != 0)
    goto failCreate;
  stream->fd = fd;
  stream->closeOnDestroy = 1;
  stream->regular = S_ISREG(st.st_mode);
  stream->pipe = S_ISFIFO(st.st_mode);
  *streamReturn = stream;
  return 0;

failErrno:
  res = errno;
failCreate:
  (void)close(fd);
  return res;
}

int PlinthStreamOpenFile(PlinthStream *streamReturn, const char *path)
{
  return fileOpen(streamReturn, path, NULL, 0);
}

int PlinthStreamOpenLog(PlinthStream *streamReturn, const char *path, const char *magic,
                        size_t magicSize)
{
  assert(magic != NULL);
  return fileOpen(streamReturn, path, magic, magicSize);
}

/* PlinthStreamOpenFd -- stream to a descriptor the caller opened */

int PlinthStreamOpenFd(PlinthStream *streamReturn, int fd, int closeOnDestroy)
{
  char description[sizeof "fd " + 3 * sizeof(int)];
  PlinthStream stream;
  int res;

  assert(streamReturn != NULL);
  if (fd < 0)
    return EBADF;

  (void)snprintf(description, sizeof description, "fd %d", fd);
  res = streamCreate(&stream, PlinthStreamSortFd, description);
  if (res != 0)
    return res;
  stream->fd = fd;
  stream->closeOnDestroy = closeOnDestroy != 0;
  {
    struct stat st;
    stream->pipe = fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
  }
  *streamReturn = stream;
  return 0;
}

/* PlinthStreamOpenMemory -- stream to a growable block of memory */

int PlinthStreamOpenMemory(PlinthStream *streamReturn)
{
  PlinthStream stream;
  int res;

  assert(streamReturn != NULL);

  res = streamCreate(&stream, PlinthStreamSortMemory, "memory");
  if (res != 0)
    return res;
  /* Allocate now, so that PlinthStreamMemory is never NULL for a
     memory stream, even an empty one. */
  stream->base = malloc(PLINTH_MEMORY_INITIAL);
  if (stream->base == NULL) {
    free(stream);
    return ENOMEM;
  }
  stream->capacity = PLINTH_MEMORY_INITIAL;
  *streamReturn = stream;
  return 0;
}

/* memoryWrite -- append to a memory stream, doubling its capacity as needed */

static int memoryWrite(PlinthStream stream, const void *buf, size_t size)
{
  if (size > stream->capacity - stream->size) {
    size_t need, capacity;
    unsigned char *base;

    if (size > SIZE_MAX - stream->size)
      return ENOMEM;
    need = stream->size + size;
    capacity = stream->capacity;
    while (capacity < need)
      capacity = capacity > SIZE_MAX / 2 ? need : capacity * 2;
    base = realloc(stream->base, capacity);
    if (base == NULL)
      return ENOMEM;      /* the stream keeps its old bytes */
    stream->base = base;
    stream->capacity = capacity;
  }
  memcpy(stream->base + stream->size, buf, size);
  stream->size += size;
  return 0;
}

/* fdWrite -- write all bytes to a descriptor, retrying short writes and EINTR */

static int fdWrite(int fd, const unsigned char *p, size_t size, size_t most)
{
  while (size > 0) {
    size_t chunk = size > most ? most : size;
    ssize_t n = write(fd, p, chunk);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return errno;     /* EAGAIN too: a non-blocking fd is not waited on */
    }
    if (n == 0)
      return EIO;       /* write made no progress and gave no reason */
    p += n;
    size -= (size_t)n;
  }
  return 0;
}

/* pipeWrite -- fdWrite to a FIFO, pipe or socket whose reader may go
 * away: SIGPIPE is blocked meanwhile, and one it raised is taken back,
 * so that the write fails with EPIPE rather than killing the program.
 * Async-signal-safe.  design/telemetry.txt .plinth.stream.file */

static int pipeWrite(int fd, const unsigned char *p, size_t size, size_t most)
{
  sigset_t pipeSet, old, pending;
  int res, wasPending;
  sigemptyset(&pipeSet);
  sigaddset(&pipeSet, SIGPIPE);
  wasPending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipeSet, &old);
  res = fdWrite(fd, p, size, most);
  if (res == EPIPE && !wasPending) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipeSet, NULL, &zero) < 0 && errno == EINTR)
      ;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return res;
}

/* faultWrite -- PlinthStreamWrite with the faults PlinthStreamFault set */

static int faultWrite(PlinthStream stream, const void *buf, size_t size)
{
  size_t room = size;
  int res;
  if (stream->faultCode != 0)
    room = stream->written >= stream->faultAfter ? 0
         : stream->faultAfter - stream->written < size ? (size_t)(stream->faultAfter - stream->written)
         : size;
  if (room == 0) {
    res = stream->faultCode;
    if (stream->faultOnce)
      stream->faultCode = 0;
    return res;
  }
  if (stream->sort == PlinthStreamSortMemory)
    res = memoryWrite(stream, buf, room);
  else
    res = (stream->pipe ? pipeWrite : fdWrite)(stream->fd, buf, room,
                                               stream->faultShort != 0 ? stream->faultShort : SSIZE_MAX);
  if (res != 0)
    return res;
  stream->written += room;
  if (room == size)
    return 0;
  res = stream->faultCode;
  if (stream->faultOnce)
    stream->faultCode = 0;
  return res;
}

/* PlinthStreamWrite -- write all bytes, retrying short writes */

int PlinthStreamWrite(PlinthStream stream, const void *buf, size_t size)
{
  assert(stream != NULL);
  assert(buf != NULL || size == 0);

  if (size == 0)
    return 0;
  if (stream->faultCode != 0 || stream->faultShort != 0)
    return faultWrite(stream, buf, size);
  if (stream->sort == PlinthStreamSortMemory)
    return memoryWrite(stream, buf, size);
  if (stream->pipe)
    return pipeWrite(stream->fd, buf, size, SSIZE_MAX);
  return fdWrite(stream->fd, buf, size, SSIZE_MAX);
}

/* PlinthStreamFault -- for tests (plinth.h) */
void PlinthStreamFault(PlinthStream stream, uint64_t after, int code, int once,
                       size_t shortWrite)
{
  assert(stream != NULL);
  stream->written = 0;
  stream->faultAfter = after;
  stream->faultCode = code;
  stream->faultOnce = once != 0;
  stream->faultShort = shortWrite;
}

/* PlinthStreamWriteAt -- overwrite bytes already in a file stream, at
 * offset, without moving where the next write goes (pwrite).  For the
 * live file's header: it needs no new space, so it works on a full disk. */

int PlinthStreamWriteAt(PlinthStream stream, size_t offset, const void *buf, size_t size)
{
  ssize_t n;
  assert(stream != NULL);
  if (stream->sort == PlinthStreamSortMemory)
    return EINVAL;
  do
    n = pwrite(stream->fd, buf, size, (off_t)offset);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return errno;
  return (size_t)n == size ? 0 : EIO;
}

/* PlinthStreamFlush -- make written bytes visible to readers
 *
 * A no-op for both sorts.  PlinthStreamWrite buffers nothing: each write()
 * has already handed the bytes to the kernel, so another process reading
 * the file sees them, and they survive the program crashing
 * (design/telemetry.txt .req.examine).  They do not survive the machine
 * crashing: that would need fsync, which costs milliseconds and is not
 * wanted.
 */

int PlinthStreamFlush(PlinthStream stream)
{
  assert(stream != NULL);
  (void)stream;
  return 0;
}

/* PlinthPageSize -- the size of a page, for mapped streams */

size_t PlinthPageSize(void)
{
  static size_t pageSize;
  if (pageSize == 0) {
    long size = sysconf(_SC_PAGESIZE);
    pageSize = size > 0 ? (size_t)size : 4096;
  }
  return pageSize;
}

/* PlinthRemoveFile -- unlink */

int PlinthRemoveFile(const char *path)
{
  assert(path != NULL);
  return unlink(path) == 0 ? 0 : errno;
}

/* PlinthStreamMappable -- can PlinthStreamMap be used on this stream? */

int PlinthStreamMappable(PlinthStream stream)
{
  assert(stream != NULL);
  return stream->sort == PlinthStreamSortFd && stream->regular;
}

/* PlinthStreamMap -- extend the file by size bytes and map them shared.
 * design/telemetry.txt .sol.live */

int PlinthStreamMap(PlinthStream stream, size_t size, void **baseReturn)
{
  void *base;
  int res;

  assert(stream != NULL);
  assert(baseReturn != NULL);
  if (!PlinthStreamMappable(stream))
    return ENOTSUP;
  if (size == 0 || size % PlinthPageSize() != 0)
    return EINVAL;
  if (!stream->mapped) {
    off_t end = lseek(stream->fd, 0, SEEK_END);
    if (end < 0)
      return errno;
    if ((uint64_t)end % PlinthPageSize() != 0)
      return EINVAL;
    stream->mapEnd = (uint64_t)end;
    stream->mapped = 1;
  }
  /* Allocate the blocks now: a store to a mapped hole on a full disk
   * would be SIGBUS.  fallocate where the file system has it. */
  res = fallocate(stream->fd, 0, (off_t)stream->mapEnd, (off_t)size) == 0 ? 0 : errno;
  if (res == EOPNOTSUPP || res == ENOSYS)
    res = ftruncate(stream->fd, (off_t)(stream->mapEnd + size)) == 0 ? 0 : errno;
  if (res != 0)
    return res;
  base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, stream->fd, (off_t)stream->mapEnd);
  if (base == MAP_FAILED)
    return errno;
  stream->mapEnd += size;
  *baseReturn = base;
  return 0;
}

/* PlinthStreamUnmap -- unmap a region; the kernel writes it back */

void PlinthStreamUnmap(PlinthStream stream, void *base, size_t size)
{
  (void)stream;                 /* may be NULL once the stream is closed */
  if (base != NULL)
    (void)munmap(base, size);
}

/* PlinthStreamClose -- close the descriptor if owned, and free the stream */

void PlinthStreamClose(PlinthStream stream)
{
  assert(stream != NULL);
  if (stream->sort == PlinthStreamSortFd && stream->closeOnDestroy)
    (void)close(stream->fd);    /* not retried on EINTR: Linux has closed it */
  free(stream->base);
  free(stream);
}

/* PlinthStreamMemory -- the bytes of a memory stream */

const unsigned char *PlinthStreamMemory(PlinthStream stream, size_t *sizeReturn)
{
  assert(stream != NULL);
  assert(sizeReturn != NULL);
  if (stream->sort != PlinthStreamSortMemory) {
    *sizeReturn = 0;
    return NULL;
  }
  *sizeReturn = stream->size;
  return stream->base;
}

/* PlinthStreamDescribe -- the path, "fd N" or "memory" */

const char *PlinthStreamDescribe(PlinthStream stream)
{
  assert(stream != NULL);
  return stream->description;
}


/* Clocks.  design/telemetry.txt .sol.clock
 *
 * PlinthClockFrequency must be cheap, because the runtime calls it when
 * it starts: no sleeping.  It takes the first of:
 *   1. the TSC frequency that some Linux kernels publish in
 *      /sys/devices/system/cpu/cpu0/tsc_freq_khz;
 *   2. a calibration: count cycles while CLOCK_MONOTONIC advances
 *      PLINTH_CALIBRATE_NS (about 0.2 ms of spinning).
 * The estimate is good to a few parts in 10^4; the tools refine it from
 * ClockSync events.  It is found once, under pthread_once.
 */

#define PLINTH_CALIBRATE_NS     200000u   /* spin this long to calibrate */
#define PLINTH_CALIBRATE_TRIES  5         /* readings per sample; keep the tightest */
#define PLINTH_TSC_FREQ_PATH    "/sys/devices/system/cpu/cpu0/tsc_freq_khz"

static pthread_once_t clockOnce = PTHREAD_ONCE_INIT;
static uint64_t clockFrequency;           /* Hz; 0 if unknown; set under clockOnce */

/* PlinthMonotonicNs -- CLOCK_MONOTONIC in nanoseconds */

uint64_t PlinthMonotonicNs(void)
{
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
    return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* PlinthRealtimeNs -- CLOCK_REALTIME in nanoseconds since the epoch */

uint64_t PlinthRealtimeNs(void)
{
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
    return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if PLINTH_CLOCK_IS_CYCLES

/* clockFrequencyPublished -- the kernel's TSC frequency in Hz, or 0 */

static uint64_t clockFrequencyPublished(void)
{
  char text[32];
  uint64_t khz = 0;
  ssize_t n;
  int fd;

  fd = open(PLINTH_TSC_FREQ_PATH, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  do
    n = read(fd, text, sizeof text - 1);
  while (n < 0 && errno == EINTR);
  (void)close(fd);
  if (n <= 0)
    return 0;
  text[n] = '\0';
  for (const char *p = text; *p >= '0' && *p <= '9'; ++p) {
    if (khz > UINT64_MAX / 10000)
      return 0;
    khz = khz * 10 + (uint64_t)(*p - '0');
  }
  return khz * 1000;
}

/* clockSample -- read the cycle counter and CLOCK_MONOTONIC together
 *
 * Brackets clock_gettime between two cycle counts, takes their midpoint,
 * and keeps the tightest of a few tries, so that an interrupt during one
 * reading does not skew the calibration.
 */

static void clockSample(uint64_t *cyclesReturn, uint64_t *nsReturn)
{
  uint64_t best = UINT64_MAX;

  for (int i = 0; i < PLINTH_CALIBRATE_TRIES; ++i) {
    uint64_t before = PlinthClockNow();
    uint64_t ns = PlinthMonotonicNs();
    uint64_t after = PlinthClockNow();
    if (after >= before && after - before < best) {
      best = after - before;
      *cyclesReturn = before + best / 2;
      *nsReturn = ns;
    }
  }
  if (best == UINT64_MAX) {         /* the counter never went forward */
    *cyclesReturn = PlinthClockNow();
    *nsReturn = PlinthMonotonicNs();
  }
}

/* clockFrequencyCalibrate -- cycles per second over a short spin, or 0 */

static uint64_t clockFrequencyCalibrate(void)
{
  uint64_t cycles0, ns0, cycles1, ns1;

  clockSample(&cycles0, &ns0);
  if (ns0 == 0)
    return 0;                       /* no CLOCK_MONOTONIC */
  while (PlinthMonotonicNs() - ns0 < PLINTH_CALIBRATE_NS)
    continue;
  clockSample(&cycles1, &ns1);
  if (cycles1 <= cycles0 || ns1 <= ns0)
    return 0;
  /* In double: (cycles1 - cycles0) * 1e9 overflows 64 bits if the
     thread was descheduled for seconds. */
  return (uint64_t)((double)(cycles1 - cycles0) * 1e9 / (double)(ns1 - ns0) + 0.5);
}

#endif /* PLINTH_CLOCK_IS_CYCLES */

/* clockFrequencyInit -- find the frequency, once */

static void clockFrequencyInit(void)
{
#if PLINTH_CLOCK_IS_CYCLES
  uint64_t hz = clockFrequencyPublished();
  if (hz == 0)
    hz = clockFrequencyCalibrate();
  clockFrequency = hz;
#else
  clockFrequency = 1000000000u;     /* PlinthClockNow is PlinthMonotonicNs */
#endif
}

/* PlinthClockFrequency -- the rate of PlinthClockNow in Hz, 0 if unknown */

uint64_t PlinthClockFrequency(void)
{
  if (pthread_once(&clockOnce, clockFrequencyInit) != 0)
    return 0;
  return clockFrequency;
}


/* Threads.  design/telemetry.txt .plinth.thread
 *
 * PlinthThreadOnExit uses one pthread key, whose destructor runs when a
 * thread exits through pthread_exit or by returning from its start
 * routine.  It does not run for the main thread when the process exits:
 * the runtime uses PlinthAtExit for that.  The key's value points to the
 * thread's own record of fn and arg, so it is never NULL (a NULL value
 * would skip the destructor) even when arg is.
 */

typedef struct ThreadExitStruct {
  void (*fn)(void *);
  void *arg;
} ThreadExitStruct;

static pthread_once_t threadExitOnce = PTHREAD_ONCE_INIT;
static pthread_key_t threadExitKey;
static int threadExitKeyError;            /* set under threadExitOnce */
static _Thread_local ThreadExitStruct threadExit;

/* threadExitDestructor -- call the thread's fn(arg) as it exits */

static void threadExitDestructor(void *value)
{
  ThreadExitStruct *te = value;
  void (*fn)(void *) = te->fn;

  /* Clear first: if fn registers again, the key's value is set again and
     pthreads calls this destructor again, up to
     PTHREAD_DESTRUCTOR_ITERATIONS times. */
  te->fn = NULL;
  if (fn != NULL)
    fn(te->arg);
}

/* threadExitKeyCreate -- create the key, once */

static void threadExitKeyCreate(void)
{
  threadExitKeyError = pthread_key_create(&threadExitKey, threadExitDestructor);
}

/* PlinthThreadOnExit -- call fn(arg) when the calling thread exits */

int PlinthThreadOnExit(void (*fn)(void *), void *arg)
{
  int res;

  assert(fn != NULL);
  res = pthread_once(&threadExitOnce, threadExitKeyCreate);
  if (res != 0)
    return res;
  if (threadExitKeyError != 0)
    return threadExitKeyError;
  threadExit.fn = fn;
  threadExit.arg = arg;
  return pthread_setspecific(threadExitKey, &threadExit);
}

/* PlinthThreadOSId -- the kernel's thread id (gettid) */

uint64_t PlinthThreadOSId(void)
{
  return (uint64_t)syscall(SYS_gettid);
}

/* copyTruncated -- copy a string into a buffer, truncating to fit */

static void copyTruncated(char *buf, size_t size, const char *s)
{
  size_t length = strlen(s);
  if (length >= size)
    length = size - 1;
  memcpy(buf, s, length);
  buf[length] = '\0';
}

/* PlinthThreadName -- the calling thread's name, truncated to fit buf
 *
 * Linux names are at most 15 characters; a thread that was never named
 * has the name of the thread that created it, ultimately the program's.
 */

int PlinthThreadName(char *buf, size_t size)
{
  char name[64];
  int res;

  assert(buf != NULL);
  if (size == 0)
    return ERANGE;
  res = pthread_getname_np(pthread_self(), name, sizeof name);
  if (res != 0) {
    buf[0] = '\0';
    return res;
  }
  copyTruncated(buf, size, name);
  return 0;
}


/* The lock.  design/telemetry.txt .plinth
 *
 * One recursive mutex.  PlinthAtFork makes it safe across fork(): the
 * forking thread claims it before the fork, so no other thread is inside
 * the runtime's slow path when the child's copy is made, and the child
 * reinitialises its copy (it cannot unlock it: glibc records the owner
 * by thread id, which differs in the child).
 */

static pthread_mutex_t plinthLock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

/* PlinthLockClaim -- claim the process-wide recursive lock */

/* Once the program has a handler of its own (wrapActive), the lock's
 * holder blocks signals, so that a handler on the same thread cannot
 * enter the runtime's slow path while the holder is half way through
 * it (the lock is recursive: it would not stop it).  Faults stay
 * unblocked: one raised here would be killed outright while blocked.
 * design/telemetry.txt .sol.signal.level */
static _Atomic int wrapActive;
static _Thread_local unsigned lockDepth;
static _Thread_local int lockBlocked;
static _Thread_local sigset_t lockSavedMask;

/* allButFaults -- every signal but the synchronous faults, which a
 * thread must never block: one raised while blocked kills outright */
static void allButFaults(sigset_t *set)
{
  sigfillset(set);
  sigdelset(set, SIGSEGV);
  sigdelset(set, SIGBUS);
  sigdelset(set, SIGILL);
  sigdelset(set, SIGFPE);
  sigdelset(set, SIGTRAP);
}

static void lockBlockSignals(void)
{
  sigset_t all;
  allButFaults(&all);
  lockBlocked = pthread_sigmask(SIG_BLOCK, &all, &lockSavedMask) == 0;
}

static void lockClaimed(void)
{
  if (lockDepth++ == 0) {
    lockBlocked = 0;
    if (atomic_load_explicit(&wrapActive, memory_order_relaxed))
      lockBlockSignals();
  }
}

void PlinthLockClaim(void)
{
  int res = pthread_mutex_lock(&plinthLock);
  assert(res == 0);
  (void)res;
  lockClaimed();
}

/* PlinthLockRelease -- release the process-wide recursive lock */

void PlinthLockRelease(void)
{
  int res, restore = 0;
  sigset_t mask;
  assert(lockDepth > 0);
  if (--lockDepth == 0 && lockBlocked) {
    restore = 1;
    mask = lockSavedMask;
  }
  res = pthread_mutex_unlock(&plinthLock);
  assert(res == 0);   /* EPERM: released by a thread that did not claim it */
  (void)res;
  if (restore)
    (void)pthread_sigmask(SIG_SETMASK, &mask, NULL);
}

/* The writer's queue lock and its condition.  design/telemetry.txt .sol.writer */
static pthread_mutex_t queueLock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queueCond = PTHREAD_COND_INITIALIZER;

/* lockForkChild -- give the child fresh, unowned locks */

static void lockForkChild(void)
{
  queueLock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
  queueCond = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
  plinthLock = (pthread_mutex_t)PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
  /* fork() ran with the lock held (the atfork prepare handler), and
   * perhaps with signals blocked by it */
  if (lockDepth > 0 && lockBlocked)
    (void)pthread_sigmask(SIG_SETMASK, &lockSavedMask, NULL);
  lockDepth = 0;
  lockBlocked = 0;
}


/* Memory */

/* PlinthAlloc -- malloc */

void *PlinthAlloc(size_t size)
{
  return malloc(size);
}

/* PlinthFree -- free */

void PlinthFree(void *p)
{
  free(p);
}

/* PlinthPagesAlloc -- zeroed pages straight from the kernel: mmap, which
 * a signal handler may call, as it may not malloc */

void *PlinthPagesAlloc(size_t size)
{
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* PlinthPagesFree -- give back what PlinthPagesAlloc gave */

void PlinthPagesFree(void *p, size_t size)
{
  if (p != NULL)
    (void)munmap(p, size);
}


/* Process.  design/telemetry.txt .plinth.process */

/* PlinthGetEnv -- an environment variable, or NULL */

const char *PlinthGetEnv(const char *name)
{
  assert(name != NULL);
  return getenv(name);
}

/* PlinthProcessId -- getpid */

uint64_t PlinthProcessId(void)
{
  return (uint64_t)getpid();
}

/* PlinthProgramName -- the program's short name, truncated to fit buf
 *
 * program_invocation_short_name is argv[0] after its last '/'.  If
 * that is empty, the kernel's name for the process, /proc/self/comm.
 */

int PlinthProgramName(char *buf, size_t size)
{
  const char *name = program_invocation_short_name;
  char comm[64];

  assert(buf != NULL);
  if (size == 0)
    return ERANGE;
  if (name == NULL || name[0] == '\0') {
    ssize_t n;
    int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      int res = errno;
      buf[0] = '\0';
      return res;
    }
    do
      n = read(fd, comm, sizeof comm - 1);
    while (n < 0 && errno == EINTR);
    (void)close(fd);
    if (n < 0)
      n = 0;
    if (n > 0 && comm[n - 1] == '\n')
      --n;
    comm[n] = '\0';
    name = comm;
  }
  copyTruncated(buf, size, name);
  return 0;
}

/* PlinthAtExit -- call fn at normal process exit (atexit) */

int PlinthAtExit(void (*fn)(void))
{
  assert(fn != NULL);
  return atexit(fn) == 0 ? 0 : ENOMEM;
}

static pthread_once_t forkOnce = PTHREAD_ONCE_INIT;
static int forkLockError;                 /* set under forkOnce */

/* forkLockRegister -- make the lock safe across fork, once
 *
 * Registered before any caller's handler, so that the lock's prepare
 * handler runs last before fork and its child handler runs first after.
 */

static void forkLockRegister(void)
{
  forkLockError = pthread_atfork(PlinthLockClaim, PlinthLockRelease, lockForkChild);
}

/* PlinthAtFork -- call child() in the child after fork() */

int PlinthAtFork(void (*child)(void))
{
  int res;

  assert(child != NULL);
  res = pthread_once(&forkOnce, forkLockRegister);
  if (res != 0)
    return res;
  if (forkLockError != 0)
    return forkLockError;
  return pthread_atfork(NULL, NULL, child);
}

/* Fatal signals.  design/telemetry.txt .sol.signal */

/* realSigaction -- the C library's sigaction, past the program's one below */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PLINTH_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) && !defined(PLINTH_TSAN)
#define PLINTH_TSAN 1
#endif
#ifdef PLINTH_TSAN
/* ThreadSanitizer's own sigaction, which makes handlers run where its
 * books are safe; the C library's would bypass it. */
extern int __interceptor_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
#define realSigaction __interceptor_sigaction
#elif defined(__GLIBC__)
extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);
#define realSigaction __sigaction
#else
#define realSigaction sigaction
#endif

static const int fatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
static const char *const fatalNames[] = {"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT"};
#define FATAL_COUNT (sizeof fatalSignals / sizeof fatalSignals[0])
static struct sigaction fatalOld[FATAL_COUNT];  /* what the signal is passed on to */
static volatile sig_atomic_t fatalInstalled[FATAL_COUNT];
static PlinthFatalHandler fatalHandler;
static volatile sig_atomic_t fatalEntered;

/* Handlers the program installs.  design/telemetry.txt .sol.signal.level
 *
 * Every handler the program installs with sigaction or signal is
 * wrapped in a trampoline that tells the runtime a handler is running
 * on this thread (enterHook before, leaveHook after), so that its events
 * go into buffers of their own rather than into the middle of an event
 * the handler interrupted.  The trampoline is installed with every
 * signal blocked, so that the hooks run undisturbed; it sets the mask
 * the program asked for around the program's handler. */
static PlinthSignalEnterFn enterHook;
static PlinthSignalLeaveFn leaveHook;

void PlinthSignalHooks(PlinthSignalEnterFn enter, PlinthSignalLeaveFn leave)
{
  enterHook = enter;
  leaveHook = leave;
}

/* callHandler -- call a program's handler as the kernel would have */
static void callHandler(const struct sigaction *action, int sig, siginfo_t *info, void *context)
{
  if ((action->sa_flags & SA_SIGINFO) != 0) {
    if (action->sa_sigaction != NULL)
      action->sa_sigaction(sig, info, context);
  } else if (action->sa_handler != SIG_DFL && action->sa_handler != SIG_IGN)
    action->sa_handler(sig);
}

/* chainCall -- call a program's handler from one of telltale's, with
 * every signal blocked on entry: enterHook, the mask the program asked
 * for (the interrupted mask, sa_mask, and sig unless SA_NODEFER), the
 * handler, every signal blocked again, leaveHook.  Signals stay blocked
 * until sigreturn puts back the interrupted mask.  A handler that
 * leaves by longjmp skips leaveHook (.sol.signal.level, Limits).
 * design/telemetry.txt .sol.signal.level */
static void chainCall(const struct sigaction *action, int sig, siginfo_t *info, void *context)
{
  ucontext_t *uc = context;
  sigset_t mask, all;
  int saved = errno, token = 0;
  if (enterHook != NULL)
    token = enterHook();
  mask = uc->uc_sigmask;
  for (int s = 1; s < NSIG; ++s)
    if (sigismember(&action->sa_mask, s) == 1)
      sigaddset(&mask, s);
  if ((action->sa_flags & SA_NODEFER) == 0)
    sigaddset(&mask, sig);
  errno = saved;
  (void)pthread_sigmask(SIG_SETMASK, &mask, NULL);
  callHandler(action, sig, info, context);
  saved = errno;
  sigfillset(&all);
  (void)pthread_sigmask(SIG_BLOCK, &all, NULL);
  if (leaveHook != NULL)
    leaveHook(token);
  errno = saved;
}

/* isHandler -- the action calls a function (neither SIG_DFL nor SIG_IGN) */
static int isHandler(const struct sigaction *action)
{
  /* sa_handler and sa_sigaction share their storage */
  return action->sa_handler != SIG_DFL && action->sa_handler != SIG_IGN;
}

/* The fault a program's handler last returned from on this thread, to
 * tell a fault it fixed from one that comes straight back.
 * design/telemetry.txt .sol.signal.recover */
#define FAULT_REPEAT_LIMIT 8                    /* returns from one fault in a row */
#define FAULT_REPEAT_NS ((uint64_t)10000000)    /* back within 10 ms of the return */
typedef struct FaultStruct {
  int sig, code;
  void *addr;
  uintptr_t pc;
  uint64_t returned;            /* PlinthMonotonicNs when the handler returned */
  uint64_t first;               /* PlinthClockNow when it first came */
  unsigned repeats;             /* returns in a row from this fault */
} FaultStruct;
static _Thread_local FaultStruct lastFault;

/* faultFirst -- the clock when the fault being handled on this thread
 * first came: a handler the program runs first may take its time, but
 * the traceback shows nothing after the fault.  .sol.traceback */
static _Thread_local uint64_t faultFirst;

uint64_t PlinthFaultClock(void)
{
  return faultFirst;
}

/* faultPc -- the faulting instruction's address, or 0 if unknown here */
static uintptr_t faultPc(void *context)
{
  const ucontext_t *uc = context;
#if defined(__x86_64__) && defined(REG_RIP)
  return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
  return (uintptr_t)uc->uc_mcontext.pc;
#else
  (void)uc;
  return 0;
#endif
}

/* faultRepeats -- the program's handler returned from this very fault
 * (thread, signal, code, address, instruction) FAULT_REPEAT_LIMIT times
 * in a row, each time back within FAULT_REPEAT_NS: it cannot fix it.
 * A handler may fix a fault in steps (a read barrier, then a write
 * barrier on the same page), so one repeat is not enough.  Updates
 * *fault for faultReturned. */
static int faultRepeats(FaultStruct *fault, int sig, const siginfo_t *info, void *context)
{
  fault->sig = sig;
  fault->code = info->si_code;
  fault->addr = info->si_addr;
  fault->pc = faultPc(context);
  fault->repeats = 0;
  if (lastFault.sig == sig && lastFault.code == fault->code && lastFault.addr == fault->addr &&
      lastFault.pc == fault->pc && PlinthMonotonicNs() - lastFault.returned < FAULT_REPEAT_NS)
    fault->repeats = lastFault.repeats;
  return fault->repeats >= FAULT_REPEAT_LIMIT;
}

/* fatalDie -- telltale's dump once, then the signal passed on to what
 * action says (the default, ignored, or a handler) */
static void fatalDie(size_t i, const struct sigaction *action, int sig, siginfo_t *info,
                     void *context)
{
  if (!fatalEntered) {
    fatalEntered = 1;           /* a fault in the dump goes straight on */
    if (fatalHandler != NULL)
      fatalHandler(sig, fatalNames[i]);
  }
  (void)realSigaction(sig, action, NULL);
  fatalInstalled[i] = 0;
  if (!isHandler(action))
    (void)raise(sig);           /* blocked until we return, then default */
  else {
    sigset_t all;
    sigfillset(&all);
    (void)pthread_sigmask(SIG_BLOCK, &all, NULL);
    chainCall(action, sig, info, context);
  }
}

/* fatalSignal -- the handler.  design/telemetry.txt .sol.signal
 *
 * Where the program has a handler for the signal, it runs first and
 * may recover (.sol.signal.recover); telltale dumps only when the fault
 * comes back to a default disposition, or comes back unfixed.  SIGABRT
 * dumps first, as glibc's abort() puts the default back behind the
 * wrapper when a handler returns. */
static void fatalSignal(int sig, siginfo_t *info, void *context)
{
  size_t i;
  int saved = errno;
  struct sigaction action;
  FaultStruct fault = {0};
  static const struct sigaction dfl;  /* SIG_DFL, no flags */
  uint64_t now = PlinthClockNow();
  for (i = 0; i < FATAL_COUNT && fatalSignals[i] != sig; ++i)
    ;
  if (i == FATAL_COUNT)
    return;
  /* The same fault as the one a handler last returned from keeps the
   * clock of its first coming. */
  faultFirst = info->si_code > 0 && lastFault.sig == sig && lastFault.addr == info->si_addr
               && lastFault.pc == faultPc(context)
               && PlinthMonotonicNs() - lastFault.returned < FAULT_REPEAT_NS
               ? lastFault.first : now;
  action = fatalOld[i];
  if (!isHandler(&action) || sig == SIGABRT) {
    if (action.sa_handler == SIG_IGN && info->si_code <= 0)
      ;                         /* sent by kill or raise, and ignored */
    else
      fatalDie(i, &action, sig, info, context);
  } else if (info->si_code > 0 && faultRepeats(&fault, sig, info, context)) {
    /* The handler cannot fix it: it would loop for ever.  Die as
     * without a handler, with the traceback and a core dump. */
    fatalDie(i, &dfl, sig, info, context);
  } else {
    sigset_t all;
    if ((action.sa_flags & SA_RESETHAND) != 0) {
      /* The kernel would have put SIG_DFL back; so does the program's view. */
      memset(&fatalOld[i], 0, sizeof fatalOld[i]);
      fatalOld[i].sa_handler = SIG_DFL;
    }
    sigfillset(&all);
    (void)pthread_sigmask(SIG_BLOCK, &all, NULL);
    errno = saved;
    chainCall(&action, sig, info, context);
    saved = errno;
    if (info->si_code > 0) {
      /* Returned: fixed, or the fault comes straight back to faultRepeats,
       * or to the default the handler put back (fatalDie above). */
      fault.returned = PlinthMonotonicNs();
      fault.first = faultFirst;
      ++fault.repeats;
      lastFault = fault;
    }
  }
  errno = saved;
}

/* PlinthFatalSignalsInstall -- call handler on a fatal signal, then chain */

int PlinthFatalSignalsInstall(PlinthFatalHandler handler)
{
  struct sigaction action;
  assert(handler != NULL);
  memset(&action, 0, sizeof action);
  action.sa_sigaction = fatalSignal;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  fatalHandler = handler;
  fatalEntered = 0;
  for (size_t i = 0; i < FATAL_COUNT; ++i)
    if (realSigaction(fatalSignals[i], &action, &fatalOld[i]) != 0)
      return errno;
    else
      fatalInstalled[i] = 1;
  return 0;
}

/* PlinthFatalSignalsRemove -- put back the dispositions found at install */

void PlinthFatalSignalsRemove(void)
{
  if (fatalHandler == NULL)
    return;
  for (size_t i = 0; i < FATAL_COUNT; ++i) {
    struct sigaction current;
    /* Only if ours is still there: a handler installed later stays. */
    if (realSigaction(fatalSignals[i], NULL, &current) == 0 &&
        (current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == fatalSignal)
      (void)realSigaction(fatalSignals[i], &fatalOld[i], NULL);
    fatalInstalled[i] = 0;
  }
  fatalHandler = NULL;
}

#ifdef __GLIBC__

static struct sigaction userAction[NSIG];   /* the program's, for wrapped signals */

static void trampoline(int sig, siginfo_t *info, void *context)
{
  struct sigaction action = userAction[sig];  /* the program may change it meanwhile */
  if ((action.sa_flags & SA_RESETHAND) != 0) {
    /* The kernel has put SIG_DFL back; so does the program's view. */
    memset(&userAction[sig], 0, sizeof userAction[sig]);
    userAction[sig].sa_handler = SIG_DFL;
  }
  chainCall(&action, sig, info, context);
}

/* sigaction -- the program's sigaction, so that a handler it installs for
 * a fatal signal while telltale's is installed is chained to rather than
 * put in its place: telltale's stays, and the program's becomes the one
 * the signal is passed on to.  The program sees what it would have seen:
 * old is the handler that would have been there.  Other signals, and all
 * signals once telltale's handlers are removed, go straight through.
 * design/telemetry.txt .sol.signal.after */
/* passThrough -- TELLTALE_SIGNALS=none: the program's handlers are not
 * wrapped or chained; sigaction and signal are the C library's.  Read at
 * the first call, which may come before main.  .sol.signal.none */
static int passThrough(void)
{
  static _Atomic int state;     /* 0: not read yet; 1: wrap; 2: pass through */
  int s = atomic_load_explicit(&state, memory_order_relaxed);
  if (s == 0) {
    const char *value = getenv("TELLTALE_SIGNALS");
    s = value != NULL && strcmp(value, "none") == 0 ? 2 : 1;
    atomic_store_explicit(&state, s, memory_order_relaxed);
  }
  return s == 2;
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
  size_t i;
  struct sigaction kernelOld, previous, wrapped;
  sigset_t all, mask;
  int res;
  if (passThrough())
    return realSigaction(sig, act, old);
  for (i = 0; i < FATAL_COUNT && fatalSignals[i] != sig; ++i)
    ;
  if (i < FATAL_COUNT && fatalInstalled[i]) {
    if (old != NULL)
      *old = fatalOld[i];
    if (act != NULL)
      fatalOld[i] = *act;
    return 0;
  }
  if (sig <= 0 || sig >= NSIG || sig == SIGKILL || sig == SIGSTOP)
    return realSigaction(sig, act, old);
  /* A handler is wrapped (.sol.signal.level); SIG_DFL and SIG_IGN are
   * not.  Signals are blocked while the kernel's action and userAction
   * change together, so that the trampoline sees them agree. */
  sigfillset(&all);
  (void)pthread_sigmask(SIG_BLOCK, &all, &mask);
  previous = userAction[sig];
  if (act != NULL && (act->sa_flags & SA_SIGINFO) == 0 &&
      (act->sa_handler == SIG_DFL || act->sa_handler == SIG_IGN))
    res = realSigaction(sig, act, &kernelOld);
  else if (act != NULL) {
    wrapped = *act;
    wrapped.sa_sigaction = trampoline;
    wrapped.sa_flags |= SA_SIGINFO;
    sigfillset(&wrapped.sa_mask);
    userAction[sig] = *act;
    atomic_store(&wrapActive, 1);
    res = realSigaction(sig, &wrapped, &kernelOld);
    if (res != 0)
      userAction[sig] = previous;
  } else
    res = realSigaction(sig, NULL, &kernelOld);
  (void)pthread_sigmask(SIG_SETMASK, &mask, NULL);
  if (res == 0 && old != NULL) {
    /* What the program installed, if the trampoline stands for it */
    int ours = (kernelOld.sa_flags & SA_SIGINFO) != 0 && kernelOld.sa_sigaction == trampoline;
    *old = ours ? previous : kernelOld;
  }
  return res;
}

/* signal -- the same for signal(): glibc's own signal() does not call
 * sigaction through the symbol, so it is here too, with its BSD meaning */
void (*signal(int sig, void (*handler)(int)))(int)
{
  struct sigaction action, old;
  memset(&action, 0, sizeof action);
  action.sa_handler = handler;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(sig, &action, &old) != 0)
    return SIG_ERR;
  return (old.sa_flags & SA_SIGINFO) != 0 ? (void (*)(int))(void *)old.sa_sigaction : old.sa_handler;
}

#endif

#define ALT_STACK_SIZE ((size_t)64 * 1024)

/* PlinthAltStackCreate -- an alternate signal stack for the calling
 * thread, so that the fatal-signal handler runs after a stack overflow */

void *PlinthAltStackCreate(void)
{
  stack_t ss, old;
  void *base;
  if (sigaltstack(NULL, &old) == 0 && (old.ss_flags & SS_DISABLE) == 0)
    return NULL;                /* the program gave the thread one */
  base = mmap(NULL, ALT_STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    return NULL;
  ss.ss_sp = base;
  ss.ss_size = ALT_STACK_SIZE;
  ss.ss_flags = 0;
  if (sigaltstack(&ss, NULL) != 0) {
    (void)munmap(base, ALT_STACK_SIZE);
    return NULL;
  }
  return base;
}

/* PlinthAltStackDestroy -- stop using and free the calling thread's stack */

void PlinthAltStackDestroy(void *stack)
{
  stack_t ss;
  if (stack == NULL)
    return;
  memset(&ss, 0, sizeof ss);
  ss.ss_flags = SS_DISABLE;
  (void)sigaltstack(&ss, NULL);
  (void)munmap(stack, ALT_STACK_SIZE);
}

/* PlinthAbort -- abort() */

void PlinthAbort(void)
{
  abort();
}

/* The writer's thread and queue lock.  design/telemetry.txt .sol.writer */

static void *writerRun(void *arg)
{
  void (*run)(void) = (void (*)(void))(uintptr_t)arg;
  sigset_t all;
  /* Signals are the program's threads' business, not the writer's. */
  allButFaults(&all);
  (void)pthread_sigmask(SIG_SETMASK, &all, NULL);
#ifdef __GLIBC__
  (void)pthread_setname_np(pthread_self(), "telltale-write");
#endif
  run();
  return NULL;
}

/* PlinthWriterStart -- a detached thread running run() */

int PlinthWriterStart(void (*run)(void))
{
  pthread_t thread;
  pthread_attr_t attr;
  int res = pthread_attr_init(&attr);
  if (res != 0)
    return res;
  (void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  res = pthread_create(&thread, &attr, writerRun, (void *)(uintptr_t)run);
  (void)pthread_attr_destroy(&attr);
  return res;
}

void PlinthQueueClaim(void)
{
  (void)pthread_mutex_lock(&queueLock);
}

void PlinthQueueRelease(void)
{
  (void)pthread_mutex_unlock(&queueLock);
}

void PlinthQueueWait(void)
{
  (void)pthread_cond_wait(&queueCond, &queueLock);
}

void PlinthQueueWake(void)
{
  (void)pthread_cond_broadcast(&queueCond);
}

/* PlinthLockTry -- claim the lock unless another thread holds it */

int PlinthLockTry(void)
{
  if (pthread_mutex_trylock(&plinthLock) != 0)
    return 0;
  lockClaimed();
  return 1;
}

/* PlinthWriteError -- write to standard error; async-signal-safe
 *
 * Only write(), retried on EINTR and short writes.  Any other failure is
 * ignored: there is nowhere left to report it.  errno is preserved, so
 * a signal handler may call this.
 */

void PlinthWriteError(const char *buf, size_t size)
{
  int saved = errno;

  assert(buf != NULL || size == 0);
  (void)fdWrite(STDERR_FILENO, (const unsigned char *)buf, size, SSIZE_MAX);
  errno = saved;
}

/* PlinthWriteFd -- write to a descriptor, as PlinthWriteError */

void PlinthWriteFd(int fd, const char *buf, size_t size)
{
  int saved = errno;

  assert(buf != NULL || size == 0);
  (void)fdWrite(fd, (const unsigned char *)buf, size, SSIZE_MAX);
  errno = saved;
}

/* PlinthSleepNs -- nanosleep, which is async-signal-safe */

void PlinthSleepNs(uint64_t ns)
{
  struct timespec ts;
  int saved = errno;

  ts.tv_sec = (time_t)(ns / 1000000000u);
  ts.tv_nsec = (long)(ns % 1000000000u);
  (void)nanosleep(&ts, NULL);
  errno = saved;
}

/* PlinthStrError -- strerror */

const char *PlinthStrError(int code)
{
  return strerror(code);
}
