/* <src/plinth/plinthctl.c> -- POSIX plinth: the control page, its directory and its futexes
 *
 * .design: design/tools.txt .ctl .ctl.security .ctl.stale
 *
 * Part of the plinth (plinth.c says what it is built with and returns),
 * and linked into telltale-ctl, which finds and checks control files as
 * the program makes them.
 */

#include "plinth.h"
#include "plinthint.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* PlinthCtlDir -- plinth.h.  A directory of the user's alone: made 0700
 * if absent, else used only if it is a directory (not a link), owned by
 * the user, that no one else may write.  .ctl.security */
int PlinthCtlDir(char *buf, size_t size, char *why, size_t whySize)
{
  const char *dir = getenv("TELLTALE_CTL_DIR"), *run = getenv("XDG_RUNTIME_DIR");
  struct stat st;
  int n;
  if (dir != NULL && dir[0] != '\0')
    n = snprintf(buf, size, "%s", dir);
  else if (run != NULL && run[0] == '/')
    n = snprintf(buf, size, "%s/telltale", run);
  else
    n = snprintf(buf, size, "/tmp/telltale-%lu", (unsigned long)geteuid());
  if (n < 0 || (size_t)n >= size) {
    (void)snprintf(why, whySize, "the control directory's name is too long");
    return ENAMETOOLONG;
  }
  if (lstat(buf, &st) != 0 && errno == ENOENT && mkdir(buf, 0700) != 0 && errno != EEXIST) {
    int e = errno;
    (void)snprintf(why, whySize, "cannot make %s: %s", buf, strerror(e));
    return e;
  }
  if (lstat(buf, &st) != 0) {
    int e = errno;
    (void)snprintf(why, whySize, "%s: %s", buf, strerror(e));
    return e;
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
    (void)snprintf(why, whySize, "%s is not a directory of this user's that only it may write",
                   buf);
    return EACCES;
  }
  return 0;
}

/* PlinthCtlFileCheck -- plinth.h.  EACCES unless fd is a regular file of
 * the caller's user that no one else may read or write. */
int PlinthCtlFileCheck(int fd)
{
  struct stat st;
  if (fstat(fd, &st) != 0)
    return errno;
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0)
    return EACCES;
  return 0;
}

/* PlinthCtlStale -- plinth.h.  A control file no process holds a flock
 * on is stale: its process is gone (a pid reused since says nothing:
 * the lock went with the process).  .ctl.stale */
int PlinthCtlStale(int fd)
{
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
    (void)flock(fd, LOCK_UN);
    return 1;
  }
  return 0;
}

/* staleRemove -- remove the stale control files in dir, and files being
 * made (.new) by processes that died first (at most 256 looked at).  No
 * malloc (getdents64, not opendir): on the control thread, a first
 * malloc makes a malloc arena, 64 MiB of address space a program under
 * RLIMIT_AS did not plan for (tests/test_control 5.1). */
static void staleRemove(const char *dir)
{
  char buf[4096];
  unsigned looked = 0;
  long n;
  int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d < 0)
    return;
  while (looked < 256 && (n = syscall(SYS_getdents64, d, buf, sizeof buf)) > 0)
    for (long at = 0; at < n && looked < 256; ) {
      /* struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name */
      unsigned short reclen;
      const char *name = buf + at + 19;
      size_t len = strlen(name);
      char path[4096];
      int fd;
      memcpy(&reclen, buf + at + 16, sizeof reclen);
      at += reclen;
      if (len <= 4 || (strcmp(name + len - 4, ".ctl") != 0 && strcmp(name + len - 4, ".new") != 0)
          || snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        continue;
      ++looked;
      fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0)
        continue;
      if (PlinthCtlFileCheck(fd) == 0 && PlinthCtlStale(fd))
        (void)unlink(path);
      (void)close(fd);
    }
  (void)close(d);
}

/* The program's own control file, while it has one. */
static int ctlFd = -1;
static void *ctlPage;
static size_t ctlSize;
static char ctlPath[4096];

/* PlinthCtlCreate -- plinth.h.  The file is made and locked under a
 * name of its own (PID.new), then renamed into place: a file named .ctl
 * is locked from its first moment, so a process cleaning stale files
 * never takes a new one for stale.  .ctl.stale */
int PlinthCtlCreate(const char *dir, size_t size, void **pageReturn, char *why, size_t whySize)
{
  char made[4096 + 16];
  int fd, res;
  void *page;
  if (snprintf(ctlPath, sizeof ctlPath, "%s/%lu.ctl", dir, (unsigned long)getpid())
      >= (int)sizeof ctlPath) {
    (void)snprintf(why, whySize, "the control file's name is too long");
    return ENAMETOOLONG;
  }
  staleRemove(dir);
  (void)snprintf(made, sizeof made, "%s/%lu.new", dir, (unsigned long)getpid());
  (void)unlink(made);           /* a process of this pid's died making it */
  fd = open(made, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    res = errno;
    (void)snprintf(why, whySize, "cannot make %s: %s", made, strerror(res));
    return res;
  }
  if (flock(fd, LOCK_SH | LOCK_NB) != 0 || ftruncate(fd, (off_t)size) != 0) {
    res = errno;
    goto failed;
  }
  page = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (page == MAP_FAILED) {
    res = errno;
    goto failed;
  }
  *pageReturn = page;
  ctlFd = fd;
  ctlPage = page;
  ctlSize = size;
  return 0;
failed:
  (void)snprintf(why, whySize, "cannot set up %s: %s", made, strerror(res));
  (void)unlink(made);
  (void)close(fd);
  return res;
}

/* PlinthCtlPublish -- plinth.h.  The page is ready: renamed into place,
 * over a stale file of the same pid's if there is one (no process holds
 * a file of this pid's but this one). */
int PlinthCtlPublish(void)
{
  char made[4096 + 16];
  size_t n = strlen(ctlPath);
  memcpy(made, ctlPath, n - 4);
  memcpy(made + n - 4, ".new", 5);
  if (rename(made, ctlPath) != 0) {
    int res = errno;
    (void)unlink(made);
    return res;
  }
  return 0;
}

/* PlinthCtlRemove -- plinth.h */
void PlinthCtlRemove(void)
{
  char made[4096 + 16];
  size_t n = strlen(ctlPath);
  if (ctlFd < 0)
    return;
  memcpy(made, ctlPath, n - 4);
  memcpy(made + n - 4, ".new", 5);
  (void)unlink(made);           /* not yet published */
  (void)unlink(ctlPath);
  (void)close(ctlFd);
  ctlFd = -1;
  /* The page stays mapped: the control thread may still read it. */
}

/* PlinthCtlForget -- plinth.h.  In a fork's child: the parent's file and
 * page are the parent's; closing the child's descriptor leaves the
 * parent's flock, which is the parent's open file's. */
void PlinthCtlForget(void)
{
  if (ctlFd < 0)
    return;
  (void)close(ctlFd);
  ctlFd = -1;
  (void)munmap(ctlPage, ctlSize);
  ctlPage = NULL;
}

/* PlinthCtlOpenFile -- plinth.h */
int PlinthCtlOpenFile(const char *path, int create, int *fdReturn)
{
  int fd = create ? open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)
                  : open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  int res;
  if (fd < 0)
    return errno;
  res = PlinthCtlFileCheck(fd);
  if (res != 0) {
    (void)close(fd);
    return res;
  }
  *fdReturn = fd;
  return 0;
}

/* PlinthFutexWait -- plinth.h.  Shared (not private) futexes: the word
 * is in a file mapped by two processes. */
int PlinthFutexWait(uint32_t *word, uint32_t value, uint64_t ns)
{
  struct timespec ts;
  ts.tv_sec = (time_t)(ns / 1000000000u);
  ts.tv_nsec = (long)(ns % 1000000000u);
  if (syscall(SYS_futex, word, FUTEX_WAIT, value, &ts, NULL, 0) != 0)
    return errno;
  return 0;
}

void PlinthFutexWake(uint32_t *word)
{
  (void)syscall(SYS_futex, word, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

/* PlinthCtlThreadStart -- plinth.h: a thread of telltale's own, as the
 * writer is (PlinthOwnThreadRun) */
static pthread_t ctlThread;

static void *ctlRun(void *arg)
{
  PlinthOwnThreadRun("telltale-ctl", (void (*)(void))(uintptr_t)arg);
  return NULL;
}

int PlinthCtlThreadStart(void (*run)(void))
{
  pthread_attr_t attr;
  int res = pthread_attr_init(&attr);
  if (res != 0)
    return res;
  /* It needs little stack: not the 8 MiB of address space a default
   * thread takes from a program that may count it (RLIMIT_AS). */
  (void)pthread_attr_setstacksize(&attr, (size_t)512 << 10);
  res = PlinthOwnThreadCreate(&ctlThread, &attr, ctlRun, (void *)(uintptr_t)run);
  (void)pthread_attr_destroy(&attr);
  return res;
}

void PlinthCtlThreadJoin(void)
{
  (void)pthread_join(ctlThread, NULL);
}

void PlinthCtlThreadDetach(void)
{
  (void)pthread_detach(ctlThread);
}
