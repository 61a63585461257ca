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
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "eventapi.h"
#include "options.h"
#include "outpath.h"
#include "replayint.h"
#include "report.h"

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
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  (void)vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  Report("%s", text);
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
    Report("cannot run myself: %s", strerror(errno));
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
    Report("%s: the replay died of signal %d", ReplayOptions.alloc[i],
            WTERMSIG(status));
  return WIFEXITED(status) && WEXITSTATUS(status) != 0 ? WEXITSTATUS(status) : 1;
}

/* logSay -- how the log ended, on stderr; 1 if it was damaged */
static int logSay(const ResultStruct *r)
{
  if (r->execEnd && r->recovered > 0)
    Report("%s: the log ends where the program exec'd another: every event "
            "made before the exec call is in it, and the %" PRIu64 " events other threads made "
            "after it were recovered from %s.live", ReplayOptions.log, r->recovered, ReplayOptions.log);
  else if (r->execEnd && r->execRunning && !r->live)
    Report("%s: the log ends where the program exec'd another: every event "
            "made before the exec call is in it, but not those other threads made while the "
            "exec ended them (there is no live file)", ReplayOptions.log);
  else if (r->execEnd)
    Report("%s: the log ends where the program exec'd another: every event "
            "made before the exec call is in it", ReplayOptions.log);
  if (r->unclean) {
    char recovered[PATH_MAX + 100] = "";
    if (r->recovered > 0)
      (void)snprintf(recovered, sizeof recovered, "; %" PRIu64 " of its events were recovered "
                     "from %s.live", r->recovered, ReplayOptions.log);
    Report("%s: the stream did not end cleanly (no StreamEnd): the program died before it "
           "could end it%s", ReplayOptions.log,
           r->recovered > 0 ? recovered
           : !r->live ? ", and there is no live file to recover from: the events it still "
                        "held in its buffers are lost" : "");
  }
  if (r->untouched > 0)
    Report("%s: live bytes reached %" PRIu64 ", past the %" PRIu64 " MiB "
            "replay touches (--touch-max): %" PRIu64 " blocks made past it were not touched, so "
            "RSS growth leaves them out", ReplayOptions.log, r->peakLive, ReplayOptions.touchMax >> 20,
            r->untouched);
  if (r->damage[0] != '\0') {
    Report("%s: %s: replayed the %" PRIu64 " events before it", ReplayOptions.log,
            r->damage, r->events);
    return 1;
  }
  /* Events lost with no live file: exit 1, as eventcnv's (.replay.log) */
  return r->unclean && !r->live;
}

static const char usageText[] =
  "usage: telltale-replay [options] LOG\n"
  "Replays the allocations recorded in LOG (by libtelltale-malloc.so) against\n"
  "allocators and prints their figures side by side.\n";

/* ArgsStruct -- the command line, as the table reads it */
typedef struct ArgsStruct {
  OptionListStruct alloc;
  const char *svg, *touchMax, *pool, *one, *fd;
  int serial, strict, noProgress, quiet, progress, report;
} ArgsStruct;

#define AT(field) offsetof(ArgsStruct, field)

/* options -- replay's options, in the order --help gives them; the
 * hidden ones are how replay runs itself for each allocator (runChild) */
static const OptionStruct options[] = {
  /* name        alias arg          at              argName   help */
  {"--alloc",    "-a", OptionList,  AT(alloc),      "NAME",
   "glibc (the default), jemalloc, mimalloc, tcmalloc, or a\n"
   "path to an allocator .so; repeat, or separate with commas", NULL},
  {"--serial",   NULL, OptionFlag,  AT(serial),     NULL,
   "replay every thread's calls on one thread, in recorded order", NULL},
  {"--strict",   NULL, OptionFlag,  AT(strict),     NULL,
   "an unknown free, double free or duplicate live pointer\n"
   "is an error (exit status 1); free(NULL) is legal, counted", NULL},
  {"--svg",      NULL, OptionValue, AT(svg),        "FILE",
   "plot live bytes and RSS over the replay", NULL},
  {"--touch-max", NULL, OptionValue, AT(touchMax),  "MIB",
   "touch the pages of live blocks up to MIB in all (1024):\n"
   "past it, blocks are made but not touched, and said", NULL},
  {"--pool",     NULL, OptionValue, AT(pool),       "LIB.so",
   "replay pool events against LIB.so (tools/replay/replaypool.h);\n"
   "the default is the example allocator (examples/pool)", NULL},
  {"--no-progress", NULL, OptionFlag, AT(noProgress), NULL,
   "no progress bar (it is shown only on a terminal)", NULL},
  {"--quiet",    "-q", OptionFlag,  AT(quiet),      NULL,
   "do not list anomalies one by one", NULL},
  {"--help",     NULL, OptionHelp,  0,              NULL,
   "print this help and exit", NULL},
  {"--version",  NULL, OptionVersion, 0,            NULL,
   "print telltale's version and exit", NULL},
  {"--one",      NULL, OptionValue, AT(one),        NULL, NULL, NULL},
  {"--fd",       NULL, OptionValue, AT(fd),         NULL, NULL, NULL},
  {"--progress", NULL, OptionFlag,  AT(progress),   NULL, NULL, NULL},
  {"--report",   NULL, OptionFlag,  AT(report),     NULL, NULL, NULL},
};

#undef AT

static const char epilogue[] =
  "LOG.live, if there, adds what a program that died left only in it.  LOG\n"
  "may be an archive of a log (eventcnv --format telltale).\n"
  "Exit status: 0 if replayed; a log that did not end cleanly (the program\n"
  "died) or that ends at an exec is said on stderr.  1 if LOG is damaged (it\n"
  "is replayed up to the damage, which is named), on an error, or with\n"
  "--strict on an anomaly.  2 on bad usage.\n";

/* version -- --version.  design/build.txt .pack.version */
static void version(FILE *out)
{
  fprintf(out, "telltale-replay (telltale) %s\n", TELLTALE_VERSION_STRING);
}

static const OptionsSpecStruct spec = {
  "telltale-replay", usageText, options, sizeof options / sizeof options[0], epilogue, 20, 0,
  version
};

static void addAlloc(char *list)
{
  for (char *name = strtok(list, ","); name != NULL; name = strtok(NULL, ",")) {
    if (ReplayOptions.allocCount == ALLOC_LIMIT)
      ReportUsage("at most %d allocators", ALLOC_LIMIT);
    (void)allocatorLib(name);
    ReplayOptions.alloc[ReplayOptions.allocCount++] = name;
  }
}

/* parseArgs -- the command line into ReplayOptions; *noProgress for
 * --no-progress.  A usage error exits 2 (report.h). */
static void parseArgs(int argc, char **argv, int *noProgress)
{
  ArgsStruct args;
  const char **operands;
  size_t count;
  OptionsParse(&spec, argc, argv, &args, sizeof args, &operands, &count);
  if (count != 1)
    ReportUsage("%s", count == 0 ? "give a LOG" : "give one LOG");
  ReplayOptions.log = operands[0];
  for (size_t k = 0; k < args.alloc.count; ++k)
    addAlloc((char *)args.alloc.value[k]);   /* argv's own, which strtok may cut */
  if (args.touchMax != NULL) {
    if (!OptionsNumber(args.touchMax, 0, 999999999))
      ReportUsage("--touch-max wants MiB, a number from 0 to 999999999: %s", args.touchMax);
    ReplayOptions.touchMax = (uint64_t)strtoull(args.touchMax, NULL, 10) << 20;
  }
  if (args.fd != NULL && !OptionsNumber(args.fd, 0, INT_MAX))
    ReportUsage("--fd wants a descriptor: %s", args.fd);
  ReplayOptions.fd = args.fd != NULL ? atoi(args.fd) : ReplayOptions.fd;
  ReplayOptions.svg = args.svg;
  ReplayOptions.pool = args.pool;
  ReplayOptions.one = args.one;
  ReplayOptions.serial = args.serial;
  ReplayOptions.strict = args.strict;
  ReplayOptions.quiet = args.quiet;
  ReplayOptions.progress = args.progress;
  ReplayOptions.report = args.report;
  *noProgress = args.noProgress;
}

int main(int argc, char **argv)
{
  int noProgress = 0, status;
  const char *why;
  parseArgs(argc, argv, &noProgress);
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
    Report("%s: %s, which writing would replace",
            ReplayOptions.svg != NULL && OutPathRefused(ReplayOptions.svg) != NULL
              ? ReplayOptions.svg : "standard output", why);
    return 2;
  }
  if (ReplayOptions.svg != NULL) {
    int fd = OutPathOpen(ReportToolName(), ReplayOptions.svg, 1);
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
    Report("error writing the report: %s", strerror(errno));
    status = 1;
  }
  return status;
}
