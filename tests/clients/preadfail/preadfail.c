/* <tests/clients/preadfail/preadfail.c> -- a read that fails on a thread
 *
 * .design: design/tools.txt .eventcnv.scan.split
 *
 * LD_PRELOADed into eventcnv by tests/tools/scansplit.py: the first
 * pread (or pread64, its name with 64-bit offsets) made by a thread
 * other than the process's first fails with EIO, or with
 * PREADFAIL=first the third made by the first; every other call is
 * libc's.  A split scan's range thread that fails to read stops, and
 * the walk on the first thread reads those bytes itself: the output
 * must be the one-thread scan's, with no error said.  The walk's own
 * failure must be said.
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static ssize_t readOrFail(const char *name, int fd, void *buf, size_t size, off_t offset)
{
  static atomic_int failed, firsts;
  ssize_t (*real)(int, void *, size_t, off_t);
  const char *mode = getenv("PREADFAIL");
  int first = (pid_t)syscall(SYS_gettid) == getpid();
  if (mode != NULL && strcmp(mode, "first") == 0
      ? first && atomic_fetch_add(&firsts, 1) == 2 && atomic_exchange(&failed, 1) == 0
      : !first && atomic_exchange(&failed, 1) == 0) {
    errno = EIO;
    return -1;
  }
  *(void **)&real = dlsym(RTLD_NEXT, name);
  return real(fd, buf, size, offset);
}

ssize_t pread(int fd, void *buf, size_t size, off_t offset)
{
  return readOrFail("pread", fd, buf, size, offset);
}

ssize_t pread64(int fd, void *buf, size_t size, off_t offset);

ssize_t pread64(int fd, void *buf, size_t size, off_t offset)
{
  return readOrFail("pread64", fd, buf, size, offset);
}
