/* <src/plinth/plinthio.c> -- POSIX plinth: output streams and mapped files
 *
 * .design: design/plinth.txt .plinth.stream
 *
 * Part of the plinth (plinth.c says what it is built with and returns).
 */

/* Offsets of 64 bits on 32-bit platforms too, before any header: a log
 * goes past 2 GiB.  design/plinth.txt .plinth.large */
#define _FILE_OFFSET_BITS 64

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
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include "plinthint.h"


/* Output streams.  design/plinth.txt .plinth.stream
 *
 * Two sorts: a file descriptor (which PlinthStreamOpenFile opens and
 * PlinthStreamOpenFd adopts) and a growable block of memory, for tests.
 * A stream is not locked: its one writer, or the runtime's lock, keeps
 * writes in order.
 */

#define PLINTH_MEMORY_INITIAL 256   /* first capacity of a memory stream */

/* PlinthStreamCreate -- plinthint.h */

int PlinthStreamCreate(PlinthStream *streamReturn, int sort, const char *description)
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
  res = PlinthStreamCreate(&stream, PlinthStreamSortFd, description);
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

  res = PlinthStreamCreate(&stream, PlinthStreamSortMemory, "memory");
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

/* pipeWrite -- PlinthFdWrite to a FIFO, pipe or socket whose reader may go
 * away: SIGPIPE is blocked meanwhile, and one it raised is taken back,
 * so that the write fails with EPIPE rather than killing the program.
 * Async-signal-safe.  design/plinth.txt .plinth.stream.file */

static int pipeWrite(int fd, const unsigned char *p, size_t size, size_t most)
{
  sigset_t pipeSet, old, pending;
  int res, wasPending;
  sigemptyset(&pipeSet);
  sigaddset(&pipeSet, SIGPIPE);
  wasPending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipeSet, &old);
  res = PlinthFdWrite(fd, p, size, most);
  if (res == EPIPE && !wasPending) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipeSet, NULL, &zero) < 0 && errno == EINTR)
      ;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return res;
}

/* reserve -- the next size bytes of a regular file stream; EFBIG past
 * what a word counts (4 GiB on a 32-bit platform) */

static int reserve(PlinthStream stream, size_t size, uint64_t *offsetReturn)
{
  uintptr_t at = atomic_load(&stream->end);
  do
    if (at + (uintptr_t)size < at)
      return EFBIG;             /* and the count stays: no later write wraps */
  while (!atomic_compare_exchange_weak(&stream->end, &at, at + (uintptr_t)size));
  *offsetReturn = at;
  return 0;
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
  else if (stream->regular) {     /* at its reserved place, as PlinthStreamWrite */
    uint64_t at;
    size_t most = stream->faultShort != 0 ? stream->faultShort : room;
    res = reserve(stream, room, &at);
    for (size_t done = 0, n; res == 0 && done < room; done += n) {
      n = room - done < most ? room - done : most;
      res = PlinthStreamWriteAt(stream, at + done, (const unsigned char *)buf + done, n);
    }
  } else
    res = (stream->pipe ? pipeWrite : PlinthFdWrite)(stream->fd, buf, room,
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
  if (stream->regular) {
    uint64_t at;
    int res = reserve(stream, size, &at);
    return res != 0 ? res : PlinthStreamWriteAt(stream, at, buf, size);
  }
  return PlinthFdWrite(stream->fd, buf, size, SSIZE_MAX);
}

/* PlinthStreamReserve -- the next size bytes of a file PlinthStreamOpenFile
 * opened, for PlinthStreamWriteAt: a thread may then write them without
 * holding a lock, and what it reserved before another lands before it
 * however their writes race.  ENOTSUP for other streams (and one with
 * faults set), which the caller writes in order; EFBIG past what a word
 * counts (reserve).  Every write to such a file goes to a reserved place
 * (PlinthStreamWrite too), as the file's own offset would not know of
 * the others.  design/control.txt .sol.writer.at */

int PlinthStreamReserve(PlinthStream stream, size_t size, uint64_t *offsetReturn)
{
  assert(stream != NULL);
  assert(offsetReturn != NULL);
  if (stream->sort != PlinthStreamSortFd || !stream->regular || stream->faultCode != 0
      || stream->faultShort != 0)
    return ENOTSUP;
  return reserve(stream, size, offsetReturn);
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

/* PlinthStreamWriteAt -- write bytes to a file stream at offset (pwrite),
 * retrying short writes and EINTR: a place PlinthStreamReserve gave, or
 * bytes already there (the live file's header: that needs no new space,
 * so it works on a full disk).  Async-signal-safe. */

int PlinthStreamWriteAt(PlinthStream stream, uint64_t offset, const void *buf, size_t size)
{
  const unsigned char *p = buf;
  assert(stream != NULL);
  if (stream->sort == PlinthStreamSortMemory)
    return EINVAL;
  while (size > 0) {
    ssize_t n = pwrite(stream->fd, p, size, (off_t)offset);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return errno;
    }
    if (n == 0)
      return EIO;
    p += n;
    offset += (uint64_t)n;
    size -= (size_t)n;
  }
  return 0;
}

/* PlinthStreamWriteTwoAt -- PlinthStreamWriteAt of a then b, as one
 * write where it can be (pwritev), so that a write cut short by death
 * stops at a page boundary of the file.  Async-signal-safe. */

int PlinthStreamWriteTwoAt(PlinthStream stream, uint64_t offset, const void *a, size_t aSize,
                           const void *b, size_t bSize)
{
  struct iovec v[2];
  ssize_t n;
  assert(stream != NULL);
  if (stream->sort == PlinthStreamSortMemory)
    return EINVAL;
  v[0].iov_base = (void *)(uintptr_t)a;
  v[0].iov_len = aSize;
  v[1].iov_base = (void *)(uintptr_t)b;
  v[1].iov_len = bSize;
  do
    n = pwritev(stream->fd, v, 2, (off_t)offset);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return errno;
  if ((size_t)n >= aSize)
    return PlinthStreamWriteAt(stream, offset + (size_t)n,
                               (const unsigned char *)b + ((size_t)n - aSize),
                               bSize - ((size_t)n - aSize));
  return PlinthStreamWriteTwoAt(stream, offset + (size_t)n, (const unsigned char *)a + n,
                                aSize - (size_t)n, b, bSize);
}

/* PlinthStreamFlush -- make written bytes visible to readers
 *
 * A no-op for both sorts.  PlinthStreamWrite buffers nothing: each write()
 * has already handed the bytes to the kernel, so another process reading
 * the file sees them, and they survive the program crashing
 * (design/index.txt .req.examine).  They do not survive the machine
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
 * design/control.txt .sol.live */

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

/* PlinthStreamMapAt -- map size bytes the file already has, from
 * offset, shared: at address at if it is not NULL, replacing what was
 * mapped there at once (no moment leaves the address unmapped), else
 * where the kernel chooses.  design/control.txt .sol.dropped */

int PlinthStreamMapAt(PlinthStream stream, uint64_t offset, size_t size, void *at,
                      void **baseReturn)
{
  void *base;
  assert(stream != NULL);
  assert(baseReturn != NULL);
  if (!PlinthStreamMappable(stream))
    return ENOTSUP;
  if (size == 0 || size % PlinthPageSize() != 0 || offset % PlinthPageSize() != 0)
    return EINVAL;
  base = mmap(at, size, PROT_READ | PROT_WRITE, MAP_SHARED | (at != NULL ? MAP_FIXED : 0),
              stream->fd, (off_t)offset);
  if (base == MAP_FAILED)
    return errno;
  *baseReturn = base;
  return 0;
}

/* PlinthMemoryCover -- put zeroed private memory in place of the
 * mapping at base, at once: a store racing with it lands harmlessly,
 * where unmapping would fault.  .sol.dropped */

void PlinthMemoryCover(void *base, size_t size)
{
  if (base != NULL)
    (void)mmap(base, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
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

