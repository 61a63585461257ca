/* <src/plinth/plinth.c> -- POSIX plinth
 *
 * .design: design/plinth.txt .plinth
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
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <semaphore.h>
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
#include "plinthint.h"

/* Clocks.  design/runtime.txt .sol.clock
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
  /* the published rate is the counter's, the calibrated one already
     in PlinthClockNow's shifted ticks (plinthclock.h) */
  uint64_t hz = clockFrequencyPublished() >> PLINTH_CLOCK_SHIFT;
  if (hz == 0)
    hz = clockFrequencyCalibrate();
  clockFrequency = hz;
#else
  /* PlinthClockNow is PlinthMonotonicNs, shifted */
  clockFrequency = 1000000000u >> PLINTH_CLOCK_SHIFT;
#endif
}

/* PlinthClockFrequency -- the rate of PlinthClockNow in Hz, 0 if unknown */

uint64_t PlinthClockFrequency(void)
{
  if (pthread_once(&clockOnce, clockFrequencyInit) != 0)
    return 0;
  return clockFrequency;
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


/* Process.  design/plinth.txt .plinth.process */

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

/* PlinthCopyTruncated -- plinthint.h */

void PlinthCopyTruncated(char *buf, size_t size, const char *s)
{
  size_t length = strlen(s);
  if (length >= size)
    length = size - 1;
  memcpy(buf, s, length);
  buf[length] = '\0';
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
  PlinthCopyTruncated(buf, size, name);
  return 0;
}

/* PlinthAtExit -- call fn at normal process exit (atexit), and, for a
 * library, when it is unloaded.  .sol.unload
 *
 * What tells the two apart: a semaphore in a page that is never
 * unmapped, posted by an exit handler that belongs to no library (so
 * that dlclose does not run it), which exit runs before any library's
 * destructor. */
extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);
static sem_t *exitSeen;

int PlinthAtExit(void (*fn)(void))
{
  assert(fn != NULL);
  if (exitSeen == NULL) {
    sem_t *sem = PlinthPagesAlloc(sizeof *sem);
    if (sem != NULL && sem_init(sem, 0, 0) == 0 &&
        __cxa_atexit((void (*)(void *))(void (*)(void))sem_post, sem, NULL) == 0)
      exitSeen = sem;
  }
  return atexit(fn) == 0 ? 0 : ENOMEM;
}

/* PlinthObjectName -- the file of the object (program or library)
 * that holds address, or "" */
void PlinthObjectName(const void *address, char *buf, size_t size)
{
  Dl_info info;
  if (size == 0)
    return;
  buf[0] = '\0';
  if (dladdr(address, &info) != 0 && info.dli_fname != NULL)
    PlinthCopyTruncated(buf, size, info.dli_fname);
}

/* PlinthExitMark -- the exit handler that tells exit from unloading,
 * made again now, after the program has started: one made by a shared
 * library's constructor at start-up runs after the dynamic linker's,
 * which runs libraries' destructors, and so cannot tell them apart
 * there; one made later, by a library that dlopen loads, runs before. */
void PlinthExitMark(void)
{
  static _Atomic int marked;
  if (exitSeen != NULL && !atomic_exchange(&marked, 1))
    (void)__cxa_atexit((void (*)(void *))(void (*)(void))sem_post, exitSeen, NULL);
}

/* PlinthExiting -- is the process exiting (rather than this library
 * being unloaded)?  1 when it cannot be told. */
int PlinthExiting(void)
{
  int value = 0;
  return exitSeen == NULL || sem_getvalue(exitSeen, &value) != 0 || value > 0;
}

/* PlinthLoadedByDlopen -- was the caller's library loaded by dlopen
 * (rather than with the program), judged from its constructor: the
 * library comes after libc among the loaded objects, and dlopen is on
 * the stack.  Only then may it be unloaded.  .sol.unload */
int PlinthLoadedByDlopen(void)
{
  return PlinthLoadedByDlopenAt((const void *)PlinthLoadedByDlopen);
}

/* PlinthLoadedByDlopenAt -- the same for the object that holds address,
 * from that object's constructor (a registry's eventgen.c, .reg.many) */
int PlinthLoadedByDlopenAt(const void *address)
{
#ifdef __GLIBC__
  Dl_info info;
  struct link_map *map = NULL, *m;
  void *frames[64];
  int n, afterLibc = 0;
  if (dladdr1(address, &info, (void **)&map, RTLD_DL_LINKMAP) == 0 ||
      map == NULL)
    return 0;
  for (m = map->l_prev; m != NULL && !afterLibc; m = m->l_prev)
    afterLibc = m->l_name != NULL && strstr(m->l_name, "/libc.so") != NULL;
  if (!afterLibc)
    return 0;                   /* (the usual case: no unwinding needed) */
  n = backtrace(frames, 64);
  for (int i = 0; i < n; ++i)
    if (dladdr(frames[i], &info) != 0 && info.dli_sname != NULL &&
        (strcmp(info.dli_sname, "dlopen") == 0 || strcmp(info.dli_sname, "dlmopen") == 0))
      return 1;
#endif
  return 0;
}


/* PlinthFdWrite -- plinthint.h */

int PlinthFdWrite(int fd, const unsigned char *p, size_t size, size_t most)
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
  (void)PlinthFdWrite(STDERR_FILENO, (const unsigned char *)buf, size, SSIZE_MAX);
  errno = saved;
}

/* PlinthWriteFd -- write to a descriptor, as PlinthWriteError */

void PlinthWriteFd(int fd, const char *buf, size_t size)
{
  int saved = errno;

  assert(buf != NULL || size == 0);
  (void)PlinthFdWrite(fd, (const unsigned char *)buf, size, SSIZE_MAX);
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
