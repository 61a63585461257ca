/* <src/plinth/plinthopen.c> -- POSIX plinth: opening files and logs
 *
 * .design: design/plinth.txt .plinth.stream
 *
 * Part of the plinth (plinth.c says what it is built with and returns):
 * where a log may be put, an old log kept aside, a FIFO waited for, and
 * the streams to files that PlinthStreamOpenFile and PlinthStreamOpenLog
 * open; plinthio.c writes them.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include "plinthint.h"


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

/* PLINTH_PROC_MAGIC -- statfs's f_type of /proc (PROC_SUPER_MAGIC) */
#define PLINTH_PROC_MAGIC 0x9fa0

/* placeRefused -- is the file st describes (fs: its file system, or
 * NULL) no place for a log?  0, or EISDIR (a directory), ENODEV (a block
 * device) or ENOTSUP (a file of /proc, such as /proc/self/mem, or of a
 * file system one, or of a kind that is none of a regular file, FIFO,
 * socket or character device).  .plinth.stream.file */
static int placeRefused(const struct stat *st, const struct statfs *fs)
{
  struct stat proc;
  if (S_ISDIR(st->st_mode))
    return EISDIR;
  if (S_ISBLK(st->st_mode))
    return ENODEV;
  if (!S_ISREG(st->st_mode) && !S_ISFIFO(st->st_mode) && !S_ISSOCK(st->st_mode) &&
      !S_ISCHR(st->st_mode))
    return ENOTSUP;
  if ((fs != NULL && fs->f_type == PLINTH_PROC_MAGIC) ||
      (stat("/proc/self", &proc) == 0 && proc.st_dev == st->st_dev))
    return ENOTSUP;
  return 0;
}

/* PlinthFdRefused -- placeRefused for the file open on fd */
int PlinthFdRefused(int fd)
{
  struct stat st;
  struct statfs fs;
  if (fstat(fd, &st) != 0)
    return errno;
  return placeRefused(&st, fstatfs(fd, &fs) == 0 ? &fs : NULL);
}

/* logOrAbsent -- may a log be put at path by rename, or moved from it
 * as a log?  0: nothing is there (*there 0), or an empty regular file or
 * a telltale log (*there 1).  Otherwise the reason: EEXIST (a file that
 * is not a log, or a FIFO, socket or device), EISDIR, ELOOP (a link),
 * or the errno code of looking. */
static int logOrAbsent(const char *path, const char *magic, size_t magicSize, int *there)
{
  struct stat st;
  char head[64];
  ssize_t n;
  int fd;
  *there = 0;
  if (lstat(path, &st) != 0)
    return errno == ENOENT ? 0 : errno;
  if (S_ISLNK(st.st_mode))
    return ELOOP;
  if (S_ISDIR(st.st_mode))
    return EISDIR;
  if (!S_ISREG(st.st_mode))
    return EEXIST;
  *there = 1;
  if (st.st_size == 0)
    return 0;
  fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return errno;
  n = magicSize <= sizeof head ? read(fd, head, magicSize) : -1;
  (void)close(fd);
  if (n != (ssize_t)magicSize || memcmp(head, magic, magicSize) != 0)
    return EEXIST;
  return 0;
}

/* PlinthLogKeep -- before a log is written anew at path: a telltale log
 * already there (its first bytes are magic) is kept as PATH.N, the
 * first N from 1 with neither PATH.N nor PATH.N.live there, with its
 * live file PATH.live as PATH.N.live; a log a running process is
 * writing (it holds its lock) is not moved (EBUSY); a non-empty regular
 * file that is not a log is not to be overwritten (EEXIST); anything
 * else (no file, an empty one, a FIFO, a character device) may be
 * opened; a place that is no place for a log is refused (placeRefused).
 * Nothing is moved onto a file that is not a log: when a PATH.N or
 * PATH.N.live on the way is one, or a directory or link, nothing is
 * moved, the reason is returned, and the file at fault is put in blame
 * (of blameSize bytes).  A PATH.live that is not a log is not moved.
 * .plinth.stream.file, .plinth.stream.lock */
#define KEEP_LIMIT 100000       /* PATH.N tried */

int PlinthLogKeep(const char *path, const char *magic, size_t magicSize, char *blame,
                  size_t blameSize)
{
  struct stat st;
  struct statfs fs;
  char older[4096 + 32], live[4096 + 16], olderLive[4096 + 32];
  const char *fault = older;
  int res, there, liveThere, lockFd;
  unsigned long n;
  if (blameSize > 0)
    (void)snprintf(blame, blameSize, "%s", path);
  if (lstat(path, &st) != 0)
    return errno == ENOENT ? 0 : errno;
  if (S_ISLNK(st.st_mode))
    return ELOOP;
  res = placeRefused(&st, statfs(path, &fs) == 0 ? &fs : NULL);
  if (res != 0)
    return res;
  if (!S_ISREG(st.st_mode) || st.st_size == 0)
    return 0;
  res = logOrAbsent(path, magic, magicSize, &there);
  if (res != 0)
    return res;
  if (strlen(path) > 4096)
    return ENAMETOOLONG;
  /* Held until the log is moved: a process starting now finds it
   * locked, and another name. */
  lockFd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (lockFd < 0)
    return errno;
  if (flock(lockFd, LOCK_EX | LOCK_NB) != 0) {
    res = errno == EWOULDBLOCK ? EBUSY : errno;
    (void)close(lockFd);
    return res;
  }
  (void)snprintf(live, sizeof live, "%s.live", path);
  /* every name checked before anything moves: never half a rotation.
   * A PATH.live that is not a log stays where it is (and the live file
   * is then not written: PlinthStreamOpenLog says EEXIST). */
  for (n = 1; n <= KEEP_LIMIT; ++n) {
    int olderThere, olderLiveThere;
    (void)snprintf(older, sizeof older, "%s.%lu", path, n);
    (void)snprintf(olderLive, sizeof olderLive, "%s.%lu.live", path, n);
    fault = older;
    res = logOrAbsent(older, magic, magicSize, &olderThere);
    if (res == 0 && (res = logOrAbsent(olderLive, magic, magicSize, &olderLiveThere)) != 0)
      fault = olderLive;
    if (res != 0 || (!olderThere && !olderLiveThere))
      break;
  }
  if (res == 0 && n > KEEP_LIMIT)
    res = EEXIST;
  if (res == 0 && rename(path, older) != 0)
    res = errno;
  (void)close(lockFd);
  if (res != 0) {
    if (blameSize > 0)
      (void)snprintf(blame, blameSize, "%s", fault);
    return res;
  }
  if (logOrAbsent(live, magic, magicSize, &liveThere) != 0)
    liveThere = 0;
  if (liveThere)
    (void)rename(live, olderLive);
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
 * through a symbolic link, close-on-exec, never on descriptors 0-2, never
 * on a directory, block device or file of /proc (placeRefused).  A
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
  if (lstat(path, &st) == 0 && !S_ISLNK(st.st_mode) && (res = placeRefused(&st, NULL)) != 0)
    return res;                 /* not even opened: a device may act on it */
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
  res = PlinthFdRefused(fd);
  if (res != 0) {
    (void)close(fd);
    return res;
  }
  /* A log is locked while written, so that no other process moves,
   * replaces or empties it: a process that finds it locked writes its
   * own elsewhere.  .plinth.stream.lock */
  if (magic != NULL && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) != 0) {
    res = errno == EWOULDBLOCK ? EBUSY : errno;
    (void)close(fd);
    return res;
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

  res = PlinthStreamCreate(&stream, PlinthStreamSortFd, path);
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

/* PlinthStreamOpenFile -- create or truncate a file and stream to it */

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
