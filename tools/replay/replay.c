/* <tools/replay/replay.c> -- replay recorded allocations against allocators
 *
 * .design: design/heap.txt .replay
 *
 * replay reads a stream written by libtelltale-malloc.so (or by any
 * program that emits the events of src/malloc/eventdef.h, or the pool
 * events of examples/pool) and makes the same calls again, in the same
 * order, against one or more allocators, then prints their figures side
 * by side.
 *
 * Each allocator is replayed in a child process of its own: replay
 * runs itself again with --one NAME, with the allocator in LD_PRELOAD,
 * so that one allocator's memory never counts against another's, and
 * the child sends its figures back through a pipe (.replay.child).
 *
 * The pointer map, the work queues and the samples live in memory
 * mapped with mmap, outside the heap under test, and their resident
 * pages are subtracted from the RSS figures (.replay.map).
 *
 * This file holds the options, main and the parent; a child's replay is
 * replayengine.c's, which reads the log through replaylog.c.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "eventapi.h"
#include "outpath.h"
#include "replayint.h"

/* Operations and anomalies ------------------------------------------- */

const char *const ReplayOpName[OP_LIMIT] = {
  "malloc", "calloc", "realloc", "free", "memalign", "aligned_alloc", "posix_memalign",
  "pool create", "pool alloc", "pool free", "pool destroy"
};

const char *const ReplayAnomalyName[ANOMALY_LIMIT] = {
  "unknown frees", "double frees", "duplicate live", "free(NULL)", "replay failures"
};

/* Options ------------------------------------------------------------ */

ReplayOptionsStruct ReplayOptions = { .fd = -1, .touchMax = (uint64_t)1 << 30 };

void ReplayFail(const char *fmt, ...)
{
  va_list ap;
  fputs("replay: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}


/* allocatorLib -- the shared object for an allocator's name, NULL for glibc */
static const char *allocatorLib(const char *name)
{
  if (strcmp(name, "glibc") == 0)
    return NULL;
  if (strcmp(name, "jemalloc") == 0)
    return "libjemalloc.so.2";
  if (strcmp(name, "mimalloc") == 0)
    return "libmimalloc.so.2";
  if (strcmp(name, "tcmalloc") == 0)
    return "libtcmalloc_minimal.so.4";
  if (strchr(name, '/') != NULL)
    return name;
  ReplayFail("unknown allocator '%s': use glibc, jemalloc, mimalloc, tcmalloc or a path to a .so", name);
}

static const char *allocatorPackage(const char *name)
{
  return strcmp(name, "jemalloc") == 0 ? " (Debian package libjemalloc2)"
    : strcmp(name, "mimalloc") == 0 ? " (Debian package libmimalloc2.0)"
    : strcmp(name, "tcmalloc") == 0 ? " (Debian package libtcmalloc-minimal4)" : "";
}

/* checkAllocator -- the library must be the allocator: the malloc the
 * replay calls is defined in it, not in the C library behind it */
static void checkAllocator(const char *lib)
{
  void *handle = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  struct link_map *map = NULL;
  Dl_info info = {0};
  char mine[PATH_MAX], theirs[PATH_MAX];
  if (handle == NULL)
    ReplayFail("%s: %s is not loaded: is it installed%s?", ReplayOptions.one, lib,
               allocatorPackage(ReplayOptions.one));
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == NULL
      || dladdr(dlsym(RTLD_DEFAULT, "malloc"), &info) == 0 || info.dli_fname == NULL
      || realpath(map->l_name, mine) == NULL || realpath(info.dli_fname, theirs) == NULL
      || strcmp(mine, theirs) != 0)
    ReplayFail("%s: %s does not define malloc (the replay's is %s's): not an allocator",
               ReplayOptions.one, lib, info.dli_fname != NULL ? info.dli_fname : "another library");
}

/* The parent: one child per allocator, then the report. */

static ResultStruct results[ALLOC_LIMIT];
static SampleStruct *samples[ALLOC_LIMIT];

static int readAll(int fd, void *buf, size_t size)
{
  unsigned char *p = buf;
  while (size > 0) {
    ssize_t n = read(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return -1;
    p += n;
    size -= (size_t)n;
  }
  return 0;
}

/* runChild -- replay against allocator i in a child; 0 or an exit status */
static int runChild(size_t i, char **argv0)
{
  int fds[2], status;
  pid_t pid;
  char fdText[16], touchText[24];
  const char *lib = allocatorLib(ReplayOptions.alloc[i]);
  if (pipe(fds) != 0)
    ReplayFail("pipe: %s", strerror(errno));
  pid = fork();
  if (pid < 0)
    ReplayFail("fork: %s", strerror(errno));
  if (pid == 0) {
    const char *args[24];
    size_t n = 0;
    close(fds[0]);
    snprintf(fdText, sizeof fdText, "%d", fds[1]);
    args[n++] = argv0[0];
    args[n++] = "--one";
    args[n++] = ReplayOptions.alloc[i];
    args[n++] = "--fd";
    args[n++] = fdText;
    if (ReplayOptions.serial) args[n++] = "--serial";
    if (ReplayOptions.strict) args[n++] = "--strict";
    if (ReplayOptions.progress) args[n++] = "--progress";
    if (i == 0 && !ReplayOptions.quiet) args[n++] = "--report";
    snprintf(touchText, sizeof touchText, "%llu", (unsigned long long)(ReplayOptions.touchMax >> 20));
    args[n++] = "--touch-max";
    args[n++] = touchText;
    if (ReplayOptions.pool != NULL) {
      args[n++] = "--pool";
      args[n++] = ReplayOptions.pool;
    }
    args[n++] = "--";
    args[n++] = ReplayOptions.log;
    args[n] = NULL;
    if (lib != NULL)
      setenv("LD_PRELOAD", lib, 1);
    else
      unsetenv("LD_PRELOAD");
    execv("/proc/self/exe", (char **)args);
    fprintf(stderr, "replay: cannot run myself: %s\n", strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  if (readAll(fds[0], &results[i], sizeof results[i]) == 0) {
    samples[i] = ReplayAnonMap((results[i].sampleCount + 1) * sizeof(SampleStruct));
    if (readAll(fds[0], samples[i], results[i].sampleCount * sizeof(SampleStruct)) != 0)
      results[i].sampleCount = 0;
  } else
    results[i].name[0] = '\0';
  close(fds[0]);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && results[i].name[0] != '\0')
    return 0;
  if (WIFSIGNALED(status))
    fprintf(stderr, "replay: %s: the replay died of signal %d\n", ReplayOptions.alloc[i],
            WTERMSIG(status));
  return WIFEXITED(status) && WEXITSTATUS(status) != 0 ? WEXITSTATUS(status) : 1;
}

/* logSay -- how the log ended, on stderr; 1 if it was damaged */
static int logSay(const ResultStruct *r)
{
  if (r->execEnd && r->recovered > 0)
    fprintf(stderr, "replay: %s: the log ends where the program exec'd another: every event "
            "made before the exec call is in it, and the %" PRIu64 " events other threads made "
            "after it were recovered from %s.live\n", ReplayOptions.log, r->recovered, ReplayOptions.log);
  else if (r->execEnd && r->execRunning && !r->live)
    fprintf(stderr, "replay: %s: the log ends where the program exec'd another: every event "
            "made before the exec call is in it, but not those other threads made while the "
            "exec ended them (there is no live file)\n", ReplayOptions.log);
  else if (r->execEnd)
    fprintf(stderr, "replay: %s: the log ends where the program exec'd another: every event "
            "made before the exec call is in it\n", ReplayOptions.log);
  if (r->unclean)
    fprintf(stderr, "replay: %s: the stream did not end cleanly (no StreamEnd): the program died "
            "before it could end it%s", ReplayOptions.log,
            r->recovered > 0 ? "; "
            : !r->live ? ", and there is no live file to recover from: the events it still "
                         "held in its buffers are lost\n" : "\n");
  if (r->unclean && r->recovered > 0)
    fprintf(stderr, "%" PRIu64 " of its events were recovered from %s.live\n", r->recovered,
            ReplayOptions.log);
  if (r->untouched > 0)
    fprintf(stderr, "replay: %s: live bytes reached %" PRIu64 ", past the %" PRIu64 " MiB "
            "replay touches (--touch-max): %" PRIu64 " blocks made past it were not touched, so "
            "RSS growth leaves them out\n", ReplayOptions.log, r->peakLive, ReplayOptions.touchMax >> 20,
            r->untouched);
  if (r->damage[0] != '\0') {
    fprintf(stderr, "replay: %s: %s: replayed the %" PRIu64 " events before it\n", ReplayOptions.log,
            r->damage, r->events);
    return 1;
  }
  /* Events lost with no live file: exit 1, as eventcnv's (.replay.log) */
  return r->unclean && !r->live;
}

static void usage(FILE *f)
{
  fputs("usage: telltale-replay [options] LOG\n"
        "Replays the allocations recorded in LOG (by libtelltale-malloc.so) against\n"
        "allocators and prints their figures side by side.\n"
        "  -a, --alloc NAME  glibc (the default), jemalloc, mimalloc, tcmalloc, or a\n"
        "                    path to an allocator .so; repeat, or separate with commas\n"
        "  --serial          replay every thread's calls on one thread, in recorded order\n"
        "  --strict          an unknown free, double free or duplicate live pointer\n"
        "                    is an error (exit status 1); free(NULL) is legal, counted\n"
        "  --svg FILE        plot live bytes and RSS over the replay\n"
        "  --touch-max MIB   touch the pages of live blocks up to MIB in all (1024):\n"
        "                    past it, blocks are made but not touched, and said\n"
        "  --pool LIB.so     replay pool events against LIB.so (tools/replay/replaypool.h);\n"
        "                    the default is the example allocator (examples/pool)\n"
        "  --no-progress     no progress bar (it is shown only on a terminal)\n"
        "  -q, --quiet       do not list anomalies one by one\n"
        "  -h, --help\n"
        "  --version\n"
        "LOG.live, if there, adds what a program that died left only in it.  LOG\n"
        "may be an archive of a log (eventcnv --format telltale).\n"
        "Exit status: 0 if replayed; a log that did not end cleanly (the program\n"
        "died) or that ends at an exec is said on stderr.  1 if LOG is damaged (it\n"
        "is replayed up to the damage, which is named), on an error, or with\n"
        "--strict on an anomaly.  2 on bad usage.\n", f);
}

static void addAlloc(char *list)
{
  for (char *name = strtok(list, ","); name != NULL; name = strtok(NULL, ",")) {
    if (ReplayOptions.allocCount == ALLOC_LIMIT)
      ReplayFail("at most %d allocators", ALLOC_LIMIT);
    (void)allocatorLib(name);
    ReplayOptions.alloc[ReplayOptions.allocCount++] = name;
  }
}

/* parseArgs -- the options into opt; -1 to go on, or an exit status */
static int parseArgs(int argc, char **argv, int *noProgress)
{
  int i, positional = 0;
  const char *log = NULL;
  for (i = 1; i < argc; ++i) {
    const char *a = argv[i];
#define NEED() \
  do { \
    if (i + 1 >= argc) { \
      fprintf(stderr, "replay: %s needs a value\n", a); \
      return 2; \
    } \
  } while (0)
    if (positional || a[0] != '-' || a[1] == '\0') {
      if (log != NULL) {
        usage(stderr);
        return 2;
      }
      log = a;
    } else if (strcmp(a, "--") == 0)
      positional = 1;
    else if (strcmp(a, "-a") == 0 || strcmp(a, "--alloc") == 0) {
      NEED();
      addAlloc(argv[++i]);
    } else if (strcmp(a, "--svg") == 0) {
      NEED();
      ReplayOptions.svg = argv[++i];
    } else if (strcmp(a, "--touch-max") == 0) {
      char *end;
      unsigned long long mib;
      NEED();
      errno = 0;
      mib = strtoull(argv[++i], &end, 10);
      if (errno != 0 || *end != '\0' || end == argv[i] || argv[i][0] == '-' || mib > (1ull << 40)) {
        usage(stderr);
        return 2;
      }
      ReplayOptions.touchMax = (uint64_t)mib << 20;
    } else if (strcmp(a, "--pool") == 0) {
      NEED();
      ReplayOptions.pool = argv[++i];
    } else if (strcmp(a, "--one") == 0) {
      NEED();
      ReplayOptions.one = argv[++i];
    } else if (strcmp(a, "--fd") == 0) {
      NEED();
      ReplayOptions.fd = atoi(argv[++i]);
    } else if (strcmp(a, "--serial") == 0)
      ReplayOptions.serial = 1;
    else if (strcmp(a, "--strict") == 0)
      ReplayOptions.strict = 1;
    else if (strcmp(a, "--progress") == 0)
      ReplayOptions.progress = 1;
    else if (strcmp(a, "--no-progress") == 0)
      *noProgress = 1;
    else if (strcmp(a, "--report") == 0)
      ReplayOptions.report = 1;
    else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0)
      ReplayOptions.quiet = 1;
    else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--version") == 0) {
      printf("telltale-replay (telltale) %s\n", TELLTALE_VERSION_STRING);
      return 0;
    } else {
      usage(stderr);
      fprintf(stderr, "replay: unknown option %s\n", a);
      return 2;
    }
#undef NEED
  }
  if (log == NULL) {
    usage(stderr);
    return 2;
  }
  ReplayOptions.log = log;
  return -1;
}

int main(int argc, char **argv)
{
  int noProgress = 0, status = parseArgs(argc, argv, &noProgress);
  const char *why;
  if (status >= 0)
    return status;
  if (ReplayOptions.one != NULL) {
    const char *lib;
    if (ReplayOptions.fd < 0)
      ReplayFail("--one needs --fd");
    if ((lib = allocatorLib(ReplayOptions.one)) != NULL)
      checkAllocator(lib);
    return ReplayChild();
  }
  if (ReplayOptions.allocCount == 0)
    ReplayOptions.alloc[ReplayOptions.allocCount++] = "glibc";
  if (access(ReplayOptions.log, R_OK) != 0)
    ReplayFail("%s: %s", ReplayOptions.log, strerror(errno));
  /* Neither the chart nor standard output is the log or its live file
   * (design/tools.txt .tools.output), and the chart's file can be
   * written: said now, not after the replay. */
  OutPathInputs(&ReplayOptions.log, 1);
  if ((why = OutPathRefused(ReplayOptions.svg)) != NULL || (why = OutPathRefused(NULL)) != NULL) {
    fprintf(stderr, "replay: %s: %s, which writing would replace\n",
            ReplayOptions.svg != NULL && OutPathRefused(ReplayOptions.svg) != NULL
              ? ReplayOptions.svg : "standard output", why);
    return 2;
  }
  if (ReplayOptions.svg != NULL) {
    int fd = OutPathOpen("replay", ReplayOptions.svg, 1);
    if (fd < 0 || close(fd) != 0)
      return 1;
  }
  ReplayOptions.progress = !noProgress && isatty(2);
  for (size_t a = 0; a < ReplayOptions.allocCount; ++a)
    if ((status = runChild(a, argv)) != 0)
      ReplayFail("%s: the replay failed", ReplayOptions.alloc[a]);
  ReplayReport(results);
  if (ReplayOptions.svg != NULL)
    ReplayWriteSvg(ReplayOptions.svg, results, samples);
  status = logSay(&results[0]);
  /* A report that did not reach its reader is a failure (.tools.output) */
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "replay: error writing the report: %s\n", strerror(errno));
    status = 1;
  }
  return status;
}
