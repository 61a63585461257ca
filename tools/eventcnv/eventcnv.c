/* <tools/eventcnv/eventcnv.c> -- print a telltale stream as text
 *
 * .design: design/tools.txt .eventcnv design/stream.txt .stream
 *
 * eventcnv reads a whole stream into memory (mmap for a file, read for
 * a pipe), decodes it with the shared decoder (eventread.h,
 * design/index.txt .req.share) and prints its events in time order,
 * one line each, on stdout.  --count and --summary print what the
 * reader's index counted, with no merge (design/tools.txt
 * .eventcnv.scan).  Warnings and errors go to stderr.
 *
 * Exit status: design/tools.txt .eventcnv.exit; 2 a usage error.
 */

#include "archive.h"
#include "eventread.h"
#include "export.h"
#include "input.h"
#include "merge.h"
#include "outpath.h"
#include "textsafe.h"
#include "span.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_BAD_STREAM 1
#define EXIT_USAGE      2

static const char *programName = "eventcnv";

static const char usageText[] =
  "Usage: eventcnv [OPTION]... [FILE]...\n"
  "Print the events of a telltale telemetry stream in time order, one per line.\n"
  "FILE is a stream written by telltale; with no FILE, or when FILE is -, read\n"
  "standard input.  Several FILEs (the logs of a program and its children, say)\n"
  "are merged on one timeline by wall time, each line naming its process after\n"
  "the time as PROGRAM[PID]; --header, --list, --count, --summary and --spans\n"
  "print each FILE in turn.\n"
  "\n"
  "Options:\n"
  "  --header          print the stream's header: version, program, pid, start\n"
  "                    time, clock rate, byte order, pointer and word sizes,\n"
  "                    and how the stream ended: clean, at an exec, or recovered\n"
  "                    after a crash\n"
  "  --list            print the registry the stream carries: kinds, and for each\n"
  "                    event its code, kind, format, doc and parameters\n"
  "  --count           print how many events there are of each name, not the events\n"
  "  --summary         print what the stream holds, not the events: how many events\n"
  "                    and blocks, the first and last event's times, how many\n"
  "                    events were dropped, and how many events each thread, each\n"
  "                    kind and each event name has\n"
  "  --spans           print, for each span the registry declares (a begin and\n"
  "                    an end event paired by a parameter), how many closed, how\n"
  "                    many were left open, and the min, median, p99 and max\n"
  "                    durations in seconds, not the events\n"
  "  --follow          print the events as the program writes them, as tail -f\n"
  "                    does, each buffer as it reaches the file, until the\n"
  "                    stream's end (StreamEnd, or an exec's StreamExec) or the\n"
  "                    program is gone, then the rest as without --follow (a\n"
  "                    dead program's live file), with its messages and exit\n"
  "                    status; one FILE, as text or ClickHouse's rows\n"
  "  --insert COMMAND  with --follow and ClickHouse's rows: each batch of rows\n"
  "                    (a second's) goes to a new run of COMMAND\n"
  "                    (sh -c) on its standard input, e.g. clickhouse-client\n"
  "                    --query \"INSERT INTO telltale.event FORMAT\n"
  "                    TabSeparated\", so that they are in the table as the\n"
  "                    program runs\n"
  "  --kind K[,K...]   only events of these kinds (names as --list shows them)\n"
  "  --event E[,E...]  only events with these names\n"
  "  --resync          at a corrupt block, report it and go on at the next block\n"
  "                    (the default is to stop there)\n"
  "  --format FMT      write the events as FMT: text (the default, the lines\n"
  "                    below), jsonl (a JSON object per line), csv, chrome\n"
  "                    (Chrome trace-event JSON, for Perfetto UI), sqlite\n"
  "                    (a database file: needs -o), ctf (a CTF 1.8 trace\n"
  "                    directory for babeltrace2: needs -o, new or empty),\n"
  "                    html (a timeline to open in a browser, offline),\n"
  "                    clickhouse (TabSeparated rows for clickhouse-client's\n"
  "                    INSERT INTO telltale.event; the host is TELLTALE_HOST\n"
  "                    or this machine's name), clickhouse-native (the same\n"
  "                    rows in ClickHouse's Native format, for INSERT ...\n"
  "                    FORMAT Native), clickhouse-ddl (that table) or\n"
  "                    telltale (an archive: the stream again, its live file\n"
  "                    recovered into it and its raw blocks made compact,\n"
  "                    in stream format 4, which the tools read as they read\n"
  "                    the log and a program never writes: needs -o)\n"
  "  --zstd[=LEVEL]    with --format telltale: each block's data compressed\n"
  "                    with zstd at LEVEL (1 to 22, default 3) where that is\n"
  "                    shorter\n"
  "  -o, --output OUT  write to the file OUT (replaced), not standard output;\n"
  "                    never a FILE given or its live file\n"
  "  --jobs N          format text on N threads (default: one a processor);\n"
  "                    the output is the same\n"
  "  --help            print this help and exit\n"
  "  --version         print telltale's version and the stream format it writes\n"
  "\n"
  "A conversion that takes more than a second says how far it is on stderr\n"
  "when stderr is a terminal.\n"
  "\n"
  "--header and --list print instead of the events; --kind and --event apply\n"
  "to the events (in every format), to --count and to --summary's kinds and\n"
  "names, and both must match.\n"
  "\n"
  "Each event is printed as\n"
  "  ELAPSED WALLCLOCK THREAD KIND EVENT name=value...\n"
  "where ELAPSED is seconds since the stream started, WALLCLOCK is the UTC time\n"
  "of day, and THREAD is T and the thread's serial number, e.g.\n"
  "    0.000001505 22:13:20.123458294 T1  Pool     PoolCreate    pool=0x7f0000001000 ...\n"
  "P and A values are hex, an A value followed by [label] if it was labelled;\n"
  "W and U are decimal, D like %.17g, S quoted with C escapes.\n"
  "\n"
  "Exit status: 0 the stream is sound and complete, or a crashed program's log\n"
  "made whole from its live file (said on stderr); 1 it is damaged (each fault\n"
  "named with its byte offset, after every sound event) or incomplete, or a file\n"
  "cannot be read or written; 2 a usage error.\n"
  "\n"
  "Examples:\n"
  "  eventcnv telltale.log                  every event, in time order\n"
  "  eventcnv --kind Pool,Object telltale.log | less\n"
  "  eventcnv --event Label,Intern - < telltale.log\n"
  "  eventcnv --header --list telltale.log  what the stream is and what it holds\n"
  "  eventcnv --count telltale.log          how many of each event\n"
  "  eventcnv --summary telltale.log        what is in it, at a glance\n"
  "  eventcnv --spans telltale.log          how long the spans took\n"
  "  eventcnv --format jsonl telltale.log | jq .fields\n"
  "  eventcnv --format sqlite -o telltale.db telltale.log\n"
  "  eventcnv --format chrome -o trace.json telltale.log   open in ui.perfetto.dev\n"
  "  eventcnv --format html -o timeline.html a.log b.log   one timeline, in a browser\n"
  "  eventcnv --format telltale --zstd -o archive.tt telltale.log   for keeping\n";


/* OptionsStruct -- what the command line asked for */

typedef struct OptionsStruct {
  int header, list, count, summary, spans, resync, follow;
  const char *kinds;            /* --kind argument, or NULL */
  const char *events;           /* --event argument, or NULL */
  const char *format;           /* --format argument, or NULL: text */
  const char *output;           /* -o argument, or NULL: stdout */
  const char *insert;           /* --insert argument, or NULL */
  const char **paths;           /* the FILEs; "-" for stdin */
  size_t pathCount;
  const char *jobs;             /* --jobs argument, or NULL: one a processor */
  const char *zstd;             /* --zstd's LEVEL, "" for none given, or NULL: no --zstd */
} OptionsStruct;

static void UsageError(const char *message, const char *arg)
{
  fprintf(stderr, "%s: %s%s\n", programName, message, arg != NULL ? arg : "");
  fprintf(stderr, "Try '%s --help' for more information.\n", programName);
  exit(EXIT_USAGE);
}

/* The options: a flag sets an int; the others take a value, as
 * "--kind K" or "--kind=K" */
typedef struct OptionStruct {
  const char *name;
  size_t at;                    /* offset of its field in OptionsStruct */
} OptionStruct;

static const OptionStruct flagOptions[] = {
  {"--header", offsetof(OptionsStruct, header)}, {"--list", offsetof(OptionsStruct, list)},
  {"--count", offsetof(OptionsStruct, count)}, {"--summary", offsetof(OptionsStruct, summary)},
  {"--follow", offsetof(OptionsStruct, follow)}, {"--spans", offsetof(OptionsStruct, spans)},
  {"--resync", offsetof(OptionsStruct, resync)},
};

static const OptionStruct valueOptions[] = {
  {"--kind", offsetof(OptionsStruct, kinds)}, {"--event", offsetof(OptionsStruct, events)},
  {"--format", offsetof(OptionsStruct, format)}, {"--output", offsetof(OptionsStruct, output)},
  {"-o", offsetof(OptionsStruct, output)}, {"--jobs", offsetof(OptionsStruct, jobs)},
  {"--insert", offsetof(OptionsStruct, insert)},
};

/* OptionValue -- where arg's value goes if arg is a value option, else NULL */
static const char **OptionValue(OptionsStruct *opt, const char *arg)
{
  for (size_t i = 0; i < sizeof valueOptions / sizeof valueOptions[0]; ++i) {
    size_t n = strlen(valueOptions[i].name);
    if (strncmp(arg, valueOptions[i].name, n) == 0 && (arg[n] == '\0' || arg[n] == '='))
      return (const char **)(void *)((char *)opt + valueOptions[i].at);
  }
  return NULL;
}

/* OptionFlag -- set arg's flag; 1 if arg is a flag option */
static int OptionFlag(OptionsStruct *opt, const char *arg)
{
  for (size_t i = 0; i < sizeof flagOptions / sizeof flagOptions[0]; ++i)
    if (strcmp(arg, flagOptions[i].name) == 0) {
      *(int *)(void *)((char *)opt + flagOptions[i].at) = 1;
      return 1;
    }
  return 0;
}

/* IsArchive -- 1 if the stream is rewritten (--format telltale).
 * design/tools.txt .zstd.writer */
static int IsArchive(const OptionsStruct *opt)
{
  return opt->format != NULL && strcmp(opt->format, "telltale") == 0;
}

/* IsRows -- 1 if the format is ClickHouse's rows, which --follow ships
 * (design/export.txt .export.clickhouse.follow) */
static int IsRows(const OptionsStruct *opt)
{
  return opt->format != NULL && (strcmp(opt->format, "clickhouse") == 0
                                 || strcmp(opt->format, "clickhouse-native") == 0);
}

/* ArgsCheck -- the combinations of options that cannot be */
static void ArgsCheck(OptionsStruct *opt)
{
  const char *why;
  if (opt->pathCount == 0)
    opt->paths[opt->pathCount++] = "-";
  for (size_t p = 0, stdins = 0; p < opt->pathCount; ++p)
    if (strcmp(opt->paths[p], "-") == 0 && ++stdins > 1)
      UsageError("standard input (-) can be read once", NULL);
  if (opt->format != NULL && opt->pathCount > 1 && ExportOneLog(opt->format))
    UsageError("this --format takes one FILE: ", opt->format);
  if (opt->jobs != NULL && (strspn(opt->jobs, "0123456789") != strlen(opt->jobs)
                            || atoi(opt->jobs) < 1 || strlen(opt->jobs) > 3))
    UsageError("--jobs wants a number from 1 to 999: ", opt->jobs);
  if (opt->format != NULL && strcmp(opt->format, "text") != 0 && !IsArchive(opt)
      && !ExportFormatKnown(opt->format))
    UsageError("unknown --format (text, jsonl, csv, chrome, sqlite, ctf, html, clickhouse, clickhouse-native, clickhouse-ddl or telltale): ",
               opt->format);
  if (opt->zstd != NULL && !IsArchive(opt))
    UsageError("--zstd compresses the blocks of --format telltale, and nothing else", NULL);
  if (opt->zstd != NULL && opt->zstd[0] != '\0'
      && (strspn(opt->zstd, "0123456789") != strlen(opt->zstd) || strlen(opt->zstd) > 2
          || atoi(opt->zstd) < 1 || atoi(opt->zstd) > 22))
    UsageError("--zstd wants a level from 1 to 22: ", opt->zstd);
  if (IsArchive(opt) && opt->pathCount > 1)
    UsageError("--format telltale rewrites one FILE, not several (a level goes as --zstd=LEVEL): ",
               opt->paths[1]);
  if (IsArchive(opt) && (opt->kinds != NULL || opt->events != NULL))
    UsageError("--format telltale rewrites one FILE whole: not with --kind or --event", NULL);
  if (opt->format != NULL && (ExportNeedsFile(opt->format) || IsArchive(opt))
      && (opt->output == NULL || strcmp(opt->output, "-") == 0))
    UsageError("this --format writes a file: give it with -o FILE: ", opt->format);
  if (opt->format != NULL && strcmp(opt->format, "text") != 0
      && (opt->header || opt->list || opt->count || opt->summary || opt->spans))
    UsageError("--format writes the events: not with --header, --list, --count, --summary "
               "or --spans", NULL);
  if (opt->follow && (opt->pathCount != 1 || strcmp(opt->paths[0], "-") == 0
                      || (opt->format != NULL && strcmp(opt->format, "text") != 0
                          && !IsRows(opt))
                      || opt->header || opt->list || opt->count || opt->summary || opt->spans))
    UsageError("--follow prints the events of one FILE (not -) as text or clickhouse rows, "
               "and nothing else", NULL);
  if (opt->insert != NULL && (!opt->follow || !IsRows(opt) || opt->output != NULL))
    UsageError("--insert ships --follow --format clickhouse's rows, not with -o", NULL);
  if (opt->spans && (opt->count || opt->summary))
    UsageError("--spans prints instead of the events: not with --count or --summary", NULL);
  /* design/tools.txt .tools.output */
  OutPathInputs(opt->paths, opt->pathCount);
  if ((why = OutPathRefused(opt->output)) != NULL) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s: %s, which writing would replace",
             opt->output != NULL && strcmp(opt->output, "-") != 0 ? opt->output
             : "standard output", why);
    UsageError(msg, NULL);
  }
}

/* ParseArgs -- options before or after the FILEs; "--" ends them */
static void ParseArgs(int argc, char **argv, OptionsStruct *opt)
{
  int i, endOfOptions = 0;
  memset(opt, 0, sizeof *opt);
  opt->paths = calloc((size_t)argc + 1, sizeof *opt->paths);
  if (opt->paths == NULL)
    UsageError("out of memory", NULL);
  for (i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    const char **valueReturn = NULL;
    if (endOfOptions || arg[0] != '-' || arg[1] == '\0') {
      opt->paths[opt->pathCount++] = arg;
    } else if (strcmp(arg, "--") == 0) {
      endOfOptions = 1;
    } else if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      fputs(usageText, stdout);
      exit(EXIT_SUCCESS);
    } else if (strcmp(arg, "--version") == 0) {
      /* design/build.txt .pack.version */
      printf("eventcnv (telltale) %s\nstream format %u.%u.%u\n", TELLTALE_VERSION_STRING,
             EVENT_VERSION_MAJOR, EVENT_VERSION_MEDIAN, EVENT_VERSION_MINOR);
      exit(EXIT_SUCCESS);
    } else if (strcmp(arg, "--zstd") == 0 || strncmp(arg, "--zstd=", 7) == 0) {
      opt->zstd = arg[6] == '=' ? arg + 7 : "";
      if (arg[6] == '=' && arg[7] == '\0')
        UsageError("empty argument to ", arg);
    } else if (!OptionFlag(opt, arg) && (valueReturn = OptionValue(opt, arg)) == NULL) {
      UsageError("unknown option: ", arg);
    }
    if (valueReturn != NULL) {
      const char *eq = strchr(arg, '=');
      if (eq != NULL) {
        *valueReturn = eq + 1;
      } else {
        if (i + 1 >= argc)
          UsageError("missing argument to ", arg);
        *valueReturn = argv[++i];
      }
      if (**valueReturn == '\0')
        UsageError("empty argument to ", arg);
    }
  }
  ArgsCheck(opt);
}

/* IsExport -- 1 if the events go to a writer of export.c */
static int IsExport(const OptionsStruct *opt)
{
  return opt->format != NULL && strcmp(opt->format, "text") != 0;
}


/* What RecoverLive found, for --header and the end-of-stream sentence:
 * of the log at hand (each log keeps its own in its LogStruct) */
static InputRecoveredStruct recovered;


/* Filters.  --kind and --event name kinds and events of the stream's
 * registry; a name it does not have is a usage error that lists the
 * names it has. */

typedef struct FilterStruct {
  int byKind, byEvent;
  unsigned char kinds[EVENT_STREAM_KIND_LIMIT];  /* 1 for a kind that --kind named */
  const EventRegistryStruct *registry;
  unsigned char *events;        /* 1 for an event that --event named, by index */
} FilterStruct;

static void ListValid(const char *what, const EventRegistryStruct *registry, int kinds)
{
  unsigned i;
  fprintf(stderr, "%s: valid %s names are:", programName, what);
  if (kinds) {
    for (i = 0; i < registry->kindCount; ++i)
      fprintf(stderr, " %s", registry->kinds[i].name);
  } else {
    for (i = 0; i < registry->eventCount; ++i)
      fprintf(stderr, " %s", registry->events[i].name);
  }
  fputc('\n', stderr);
}

/* ForEachName -- call match on each name of a comma-separated list;
 * returns the first name it does not match, in buf, or NULL */
static const char *ForEachName(const char *list, char *buf, size_t size,
                               int (*match)(const EventRegistryStruct *, const char *, FilterStruct *),
                               const EventRegistryStruct *registry, FilterStruct *filter)
{
  const char *p = list;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
    if (len >= size)
      len = size - 1;
    memcpy(buf, p, len);
    buf[len] = '\0';
    if (!match(registry, buf, filter))
      return buf;
    if (comma == NULL)
      return NULL;
    p = comma + 1;
  }
}

static int MatchKind(const EventRegistryStruct *registry, const char *name, FilterStruct *filter)
{
  unsigned i;
  int found = 0;
  /* "Pool" is every registry's kind Pool; "alloc:Pool" names one */
  for (i = 0; i < registry->kindCount; ++i) {
    const char *colon = strchr(registry->kinds[i].name, ':');
    if (colon != NULL && strchr(name, ':') == NULL && strcmp(colon + 1, name) == 0)
      found = filter->kinds[i] = 1;
  }
  for (i = 0; i < registry->kindCount; ++i)
    if (strcmp(registry->kinds[i].name, name) == 0) {
      filter->kinds[i] = 1;
      return 1;
    }
  return found;
}

static int MatchEvent(const EventRegistryStruct *registry, const char *name, FilterStruct *filter)
{
  unsigned i;
  int found = 0;
  for (i = 0; i < registry->eventCount; ++i)
    if (strcmp(registry->events[i].name, name) == 0) {
      filter->events[i] = 1;
      found = 1;
    }
  return found;
}

/* FilterEvents -- a filter's table of events, n bytes, zeroed; kept
 * until exit, as filters are made for each log and each follow */
static unsigned char **filterTables;
static size_t filterTableCount;

static void FilterTablesFree(void)
{
  for (size_t i = 0; i < filterTableCount; ++i)
    free(filterTables[i]);
  free(filterTables);
}

static unsigned char *FilterEvents(size_t n)
{
  unsigned char **more = realloc(filterTables, (filterTableCount + 1) * sizeof *more);
  if (more == NULL)
    return NULL;
  if (filterTableCount == 0)
    atexit(FilterTablesFree);
  filterTables = more;
  return filterTables[filterTableCount++] = calloc(n, 1);
}

static void FilterInit(FilterStruct *filter, const OptionsStruct *opt, const EventRegistryStruct *registry)
{
  char name[256];
  const char *bad;
  memset(filter, 0, sizeof *filter);
  filter->registry = registry;
  if (opt->events != NULL) {
    filter->events = FilterEvents(registry->eventCount + 1);
    if (filter->events == NULL) {
      fprintf(stderr, "%s: out of memory\n", programName);
      exit(EXIT_FAILURE);
    }
  }
  if (opt->kinds != NULL) {
    filter->byKind = 1;
    bad = ForEachName(opt->kinds, name, sizeof name, MatchKind, registry, filter);
    if (bad != NULL) {
      fprintf(stderr, "%s: --kind: the stream has no kind named '%s'\n", programName, bad);
      ListValid("kind", registry, 1);
      exit(EXIT_USAGE);
    }
  }
  if (opt->events != NULL) {
    filter->byEvent = 1;
    bad = ForEachName(opt->events, name, sizeof name, MatchEvent, registry, filter);
    if (bad != NULL) {
      fprintf(stderr, "%s: --event: the stream has no event named '%s'\n", programName, bad);
      ListValid("event", registry, 0);
      exit(EXIT_USAGE);
    }
  }
}

static int FilterPasses(const FilterStruct *filter, unsigned kind, unsigned code)
{
  const EventDescStruct *desc;
  if (filter->byKind && (kind >= EVENT_STREAM_KIND_LIMIT || !filter->kinds[kind]))
    return 0;
  if (filter->byEvent && ((desc = EventRegistryLookup(filter->registry, code)) == NULL
                          || !filter->events[desc - filter->registry->events]))
    return 0;
  return 1;
}


/* FilteredCount -- how many events of desc's code pass the filter, in
 * blocks of every kind, as the reader's index counted them.
 * design/tools.txt .eventcnv.scan */
static size_t FilteredCount(const EventStreamStruct *stream, const FilterStruct *filter,
                            const EventDescStruct *desc)
{
  const EventRegistryStruct *registry = EventStreamInfo(stream)->registry;
  size_t n = 0;
  for (unsigned kind = 0; kind < registry->kindCount; ++kind)
    if (FilterPasses(filter, kind, desc->code))
      n += EventStreamCount(stream, kind, desc->code);
  return n;
}


/* PrintCount -- --count: how many events of each name */
static void PrintCount(const EventStreamStruct *stream, const FilterStruct *filter)
{
  const EventRegistryStruct *registry = EventStreamInfo(stream)->registry;
  for (unsigned i = 0; i < registry->eventCount; ++i) {
    size_t n = FilteredCount(stream, filter, &registry->events[i]);
    if (n > 0)
      printf("%10lu %s\n", (unsigned long)n, registry->events[i].name);
  }
}

/* Dropped -- the events of a kind that the program dropped: those its
 * EventsDropped report, and those its live file counts beyond them,
 * which it died before reporting.  design/control.txt .sol.dropped */
static uint64_t Dropped(const EventStreamInfoStruct *info, unsigned kind)
{
  return info->dropped[kind] + EventDropsUnreported(&recovered.live, info, kind);
}

/* PrintSummary -- --summary: what the stream holds, from the index.
 * design/tools.txt .eventcnv.scan */
static void PrintSummary(EventStreamStruct *stream, const FilterStruct *filter)
{
  const EventStreamInfoStruct *info = EventStreamInfo(stream);
  const EventRegistryStruct *registry = info->registry;
  EventFormatContextStruct ctx;
  char times[128];
  uint64_t dropped = 0;
  size_t i;

  EventStreamFormatContext(stream, &ctx);
  printf("events      %lu in %lu block%s\n", (unsigned long)info->eventCount,
         (unsigned long)info->blockCount, info->blockCount == 1 ? "" : "s");
  printf("unknown     %lu\n", (unsigned long)info->unknownCount);
  if (info->eventCount > 0) {
    (void)EventFormatTimes(times, sizeof times, info->firstClock, &ctx);
    printf("first       %s\n", times);
    (void)EventFormatTimes(times, sizeof times, info->lastClock, &ctx);
    printf("last        %s\n", times);
  }
  for (i = 0; i < EVENT_STREAM_KIND_LIMIT; ++i)
    dropped += Dropped(info, (unsigned)i);
  printf("dropped     %llu\n", (unsigned long long)dropped);
  for (i = 0; i < EVENT_STREAM_KIND_LIMIT; ++i)
    if (Dropped(info, (unsigned)i) != 0)
      printf("%10llu %s\n", (unsigned long long)Dropped(info, (unsigned)i),
             i < registry->kindCount ? registry->kinds[i].name : "?");

  printf("\nthreads     %lu\n", (unsigned long)EventStreamThreadCount(stream));
  for (i = 0; i < EventStreamThreadCount(stream); ++i) {
    uint32_t thread;
    size_t events;
    EventStreamThread(stream, i, &thread, &events);
    printf("%10lu T%lu\n", (unsigned long)events, (unsigned long)thread);
  }

  printf("\nkinds\n");
  for (unsigned kind = 0; kind < registry->kindCount; ++kind) {
    size_t n = 0;
    for (unsigned e = 0; e < registry->eventCount; ++e)
      if (FilterPasses(filter, kind, registry->events[e].code))
        n += EventStreamCount(stream, kind, registry->events[e].code);
    if (n > 0)
      printf("%10lu %s\n", (unsigned long)n, registry->kinds[kind].name);
  }

  printf("\nevents\n");
  PrintCount(stream, filter);
}


/* Recovered -- what a stream that did not end cleanly still holds:
 * "N events in M blocks", and how many came from the live file.  The
 * program died before it could write StreamEnd (an assertion, a fatal
 * signal, SIGKILL, the OOM killer, a power cut); this is what was
 * recovered.  design/plinth.txt .sol.death.limits design/control.txt .sol.recover */
static void Recovered(char *buf, size_t size, const EventStreamInfoStruct *info)
{
  int n = snprintf(buf, size, "%lu event%s in %lu block%s",
                   (unsigned long)info->eventCount, info->eventCount == 1 ? "" : "s",
                   (unsigned long)info->blockCount, info->blockCount == 1 ? "" : "s");
  if (n > 0 && (size_t)n < size && recovered.done)
    snprintf(buf + n, size - (size_t)n, ", %lu of them from %s (a live file's events carry no check)",
             (unsigned long)recovered.events, recovered.path);
}

/* Ended -- the stream ended as the program meant: StreamEnd, or
 * StreamExec before an exec (.sol.exec) */
static int Ended(const EventStreamInfoStruct *info)
{
  return info->streamEnd || info->streamExec || info->streamSnapshot;
}

/* Running -- threads still running when the stream ended: every thread
 * started and not exited, but the one that ended it.  design/runtime.txt
 * .sol.finish */
static size_t Running(const EventStreamInfoStruct *info)
{
  size_t ended;
  if (info->streamSnapshot)
    return 0;                   /* its threads ran on: not a loss (.ctl.snapshot) */
  ended = info->threadExits + (Ended(info) ? 1 : 0);
  return info->threadStarts > ended ? info->threadStarts - ended : 0;
}

/* Lossless -- 1 if the log holds everything the program emitted, as far
 * as can be known: it ended with StreamEnd (or at an exec), and threads still running
 * then had a live file to keep what they emitted afterwards */
static int Lossless(const EventStreamInfoStruct *info)
{
  return Ended(info) && (Running(info) == 0 || recovered.done);
}

/* LogInUse -- does a running process hold the log's lock, writing it?
 * (.plinth.stream.lock) */
static int LogInUse(const char *path)
{
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), busy = 0;
  struct stat st;
  if (fd < 0)
    return 0;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_SH | LOCK_NB) != 0
      && errno == EWOULDBLOCK)
    busy = 1;
  (void)close(fd);
  return busy;
}

/* Ending -- how the stream ended, after "end  " in --header */
static void Ending(char *buf, size_t size, const EventStreamInfoStruct *info)
{
  char counts[4096 + 200];
  size_t running = Running(info);
  if (info->stopped) {
    snprintf(buf, size, "not known: reading stopped at damage");
  } else if (!Ended(info) && recovered.done && recovered.logFailed) {
    Recovered(counts, sizeof counts, info);
    snprintf(buf, size, "no StreamEnd: the log's writes failed, so whether the program ended "
             "or died is not known (%s)", counts);
  } else if (!Ended(info) && recovered.done) {
    Recovered(counts, sizeof counts, info);
    snprintf(buf, size, "no StreamEnd: recovered after a crash (%s)", counts);
  } else if (!Ended(info)) {
    Recovered(counts, sizeof counts, info);
    snprintf(buf, size, "no StreamEnd and no live file: incomplete (%s); what the program "
             "held in its buffers when it stopped is not in the log", counts);
  } else if (info->streamSnapshot)
    snprintf(buf, size, "a snapshot (StreamSnapshot): what the program held in its buffers "
             "when it was taken, while it ran on");
  else if (running == 0)
    snprintf(buf, size, "%s", info->streamEnd ? "clean" : "at an exec: the program sent every "
             "event, then exec'd another (StreamExec)");
  else if (recovered.done)
    snprintf(buf, size, "%s; %lu thread%s still running %s, and the %lu events the log "
             "lacked (what %s emitted after it, or any block cut from the log) were recovered "
             "from %s", info->streamEnd ? "clean" : "at an exec",
             (unsigned long)running, running == 1 ? " was" : "s were",
             info->streamEnd ? "at the end" : "then", (unsigned long)recovered.events,
             running == 1 ? "it" : "they", recovered.path);
  else
    snprintf(buf, size, "%s, but %lu thread%s still running and there is no live file: what "
             "%s emitted after %s, short of a full buffer, is not in the log",
             info->streamEnd ? "StreamEnd" : "StreamExec (an exec)", (unsigned long)running,
             running == 1 ? " was" : "s were", running == 1 ? "it" : "they",
             info->streamEnd ? "the end" : "it");
}

/* PrintHeader -- --header.  design/stream.txt .stream.header */

static void PrintHeader(const EventStreamInfoStruct *info, size_t problems)
{
  time_t seconds = (time_t)(info->startRealtime / 1000000000u);
  struct tm tm;
  char date[64] = "?";
  if (gmtime_r(&seconds, &tm) != NULL)
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);

  printf("version       %u.%u.%u\n", info->major, info->median, info->minor);
  /* A log's strings are printed escaped: design/export.txt .export.text */
  printf("program       ");
  TextPut(stdout, info->program);
  printf("\n");
  printf("pid           %lu\n", (unsigned long)info->pid);
  printf("start         %s.%09luZ\n", date, (unsigned long)(info->startRealtime % 1000000000u));
  printf("start clock   %llu\n", (unsigned long long)info->startClock);
  printf("monotonic     %llu ns\n", (unsigned long long)info->startMonotonic);
  if (info->clockHz == 0)
    printf("clock         unknown rate: clock values are taken as ns\n");
  else if (info->clockHz == info->headerHz)
    printf("clock         %llu Hz\n", (unsigned long long)info->clockHz);
  else
    printf("clock         %llu Hz from ClockSync events (the header says %llu Hz)\n",
           (unsigned long long)info->clockHz, (unsigned long long)info->headerHz);
  printf("byte order    %s-endian\n", info->layout.bigEndian ? "big" : "little");
  printf("pointer size  %u bytes\n", info->layout.pointerSize);
  printf("word size     %u bytes\n", info->layout.wordSize);
  printf("header        %lu bytes\n", (unsigned long)info->headerLength);
  printf("registry      \"");
  TextPut(stdout, info->registry->name);
  printf("\": %u kinds, %u events\n", info->registry->kindCount, info->registry->eventCount);
  if (info->major >= 2)
    printf("session       0x%08lx\n", (unsigned long)info->session);
  /* design/stream.txt .stream.check; a block recovered from a live
   * file has no index and no check (.sol.recover) */
  if (problems == 0 && info->major >= 2 && info->unindexedBlocks > 0)
    printf("blocks        %lu: %lu checked and sound, %lu recovered from a live file (no check)\n",
           (unsigned long)info->blockCount,
           (unsigned long)(info->blockCount - info->unindexedBlocks),
           (unsigned long)info->unindexedBlocks);
  else if (problems == 0)
    printf("blocks        %lu, %s\n", (unsigned long)info->blockCount,
           info->major >= 2 ? "every one checked and sound" : "sound (1.0: not checked)");
  else
    printf("blocks        %lu sound; damaged: %lu bad, %lu missing, %lu twice, %lu out of "
           "order, %lu bytes skipped (see the messages)\n", (unsigned long)info->blockCount,
           (unsigned long)info->badBlocks, (unsigned long)info->missingBlocks,
           (unsigned long)info->duplicateBlocks, (unsigned long)info->misorderedBlocks,
           (unsigned long)info->skippedBytes);
  if (info->compactBlocks > 0)  /* design/runtime.txt .compact */
    printf("compact       %lu of the blocks read, %.2f bytes per event in the file\n",
           (unsigned long)info->compactBlocks,
           info->eventCount > 0 ? (double)info->streamSize / (double)info->eventCount : 0.0);
  if (info->zstdBlocks > 0)  /* design/tools.txt .zstd */
    printf("zstd          %lu of the blocks read\n", (unsigned long)info->zstdBlocks);
  {
    char ending[8192];
    Ending(ending, sizeof ending, info);
    printf("end           %s\n", ending);
  }
}


/* PrintList -- --list: the registry the stream carries.  design/registry.txt .reg */

/* ParamName -- the name of parameter i of the event of code */
static const char *ParamName(const EventRegistryStruct *registry, unsigned code, unsigned i)
{
  const EventDescStruct *desc = EventRegistryLookup(registry, code);
  return desc != NULL && i < desc->paramCount ? desc->paramNames[i] : "?";
}

static const char *EventName(const EventRegistryStruct *registry, unsigned code)
{
  const EventDescStruct *desc = EventRegistryLookup(registry, code);
  return desc != NULL ? desc->name : "?";
}

/* PrintListSpans -- the spans and counters (2.0.1 on).  design/registry.txt .reg.span */
static void PrintListSpans(const EventRegistryStruct *registry)
{
  for (unsigned i = 0; i < registry->spanCount; ++i) {
    const EventSpanDescStruct *span = &registry->spans[i];
    printf("\nspan %s: from %s to %s, paired by %s", span->name,
           EventName(registry, span->begin), EventName(registry, span->end),
           ParamName(registry, span->begin, span->beginKey));
    if (strcmp(ParamName(registry, span->begin, span->beginKey),
               ParamName(registry, span->end, span->endKey)) != 0)
      printf(" and %s", ParamName(registry, span->end, span->endKey));
    printf("\n");
  }
  for (unsigned i = 0; i < registry->counterCount; ++i) {
    const EventCounterDescStruct *counter = &registry->counters[i];
    printf("\ncounter %s: %s of %s", counter->name, ParamName(registry, counter->code, counter->value),
           EventName(registry, counter->code));
    if (counter->key != EVENT_COUNTER_NO_KEY)
      printf(", one per %s", ParamName(registry, counter->code, counter->key));
    printf("\n");
  }
}

static void PrintList(const EventRegistryStruct *registry)
{
  unsigned i, p;
  printf("registry \"");
  TextPut(stdout, registry->name);   /* .export.text */
  printf("\": %u kinds, %u events\n", registry->kindCount, registry->eventCount);
  printf("\n");
  for (i = 0; i < registry->kindCount; ++i) {
    printf("kind %u %s: ", i, registry->kinds[i].name);
    TextPut(stdout, registry->kinds[i].doc);
    printf("\n");
  }
  for (i = 0; i < registry->eventCount; ++i) {
    const EventDescStruct *desc = &registry->events[i];
    printf("\nevent 0x%04x %s: kind %s, %s, format %s\n", desc->code, desc->name,
           desc->kind < registry->kindCount ? registry->kinds[desc->kind].name : "?",
           desc->retired ? "retired" : desc->always ? "always" : "checking only",
           desc->format[0] != '\0' ? desc->format : "0");
    printf("  ");
    TextPut(stdout, desc->doc);
    printf("\n");
    for (p = 0; p < desc->paramCount; ++p) {
      printf("  %c %s: ", desc->format[p], desc->paramNames[p]);
      TextPut(stdout, desc->paramDocs[p]);
      printf("\n");
    }
  }
  PrintListSpans(registry);
}


/* Problems and warnings */

static int ReportProblems(const EventStreamStruct *stream, const char *name)
{
  size_t i, n = EventStreamProblemCount(stream);
  for (i = 0; i < n; ++i)
    fprintf(stderr, "%s: %s: %s\n", programName, name, EventStreamProblem(stream, i));
  return n > 0;
}

static void ReportWarnings(const EventStreamInfoStruct *info, const char *name)
{
  if (info->unknownCount > 0)
    fprintf(stderr, "%s: %s: warning: skipped %lu event%s with codes not in the stream's registry\n",
            programName, name, (unsigned long)info->unknownCount, info->unknownCount == 1 ? "" : "s");
  if (info->skippedBytes > 0)
    fprintf(stderr, "%s: %s: warning: skipped %lu corrupt bytes\n", programName, name,
            (unsigned long)info->skippedBytes);
  if (info->clockBacks > 0)   /* design/stream.txt .stream.order.back */
    fprintf(stderr, "%s: %s: warning: %lu event%s stamped before the event before %s of the "
            "same thread, kind and signal level (the first at offset %llu, thread %lu): %s "
            "given that event's time, as a thread's time never goes back\n", programName, name,
            (unsigned long)info->clockBacks, info->clockBacks == 1 ? " was" : "s were",
            info->clockBacks == 1 ? "it" : "them", (unsigned long long)info->clockBackOffset,
            (unsigned long)info->clockBackThread, info->clockBacks == 1 ? "it is" : "each is");
  /* A clean end says nothing: stderr stays empty for a sound stream. */
  if (Ended(info) && !Lossless(info)) {
    char ending[8192];
    Ending(ending, sizeof ending, info);
    fprintf(stderr, "%s: %s: the stream ended with %s\n", programName, name, ending);
  }
  if (info->holes > info->holesLost) {
    size_t n = info->holes - info->holesLost;
    fprintf(stderr, "%s: %s: zeros where a block should be (%lu such block%s, the first hole at "
            "offset %llu): the program died before writing %s whole; %s events are among those "
            "recovered from %s\n", programName, name, (unsigned long)n, n == 1 ? "" : "s",
            (unsigned long long)info->holeOffset, n == 1 ? "it" : "them", n == 1 ? "its" : "their",
            recovered.path);
  }
  if (recovered.rejected > 0)
    fprintf(stderr, "%s: %s: %lu block%s of %s (the first at offset %lu) did not continue the "
            "log's blocks of the same number, so one of the files is damaged: their events were "
            "not recovered\n", programName, name, (unsigned long)recovered.rejected,
            recovered.rejected == 1 ? "" : "s", recovered.path,
            (unsigned long)recovered.rejectedOffset);
  if (recovered.damaged > 0)
    fprintf(stderr, "%s: %s: %lu region%s of %s (the first at offset %lu) %s a damaged header: "
            "%s events were not recovered\n", programName, name, (unsigned long)recovered.damaged,
            recovered.damaged == 1 ? "" : "s", recovered.path, (unsigned long)recovered.damagedOffset,
            recovered.damaged == 1 ? "has" : "have", recovered.damaged == 1 ? "its" : "their");
  if (recovered.missing > 0)
    fprintf(stderr, "%s: %s: %s holds %lu region%s fewer than the program made (cut short or "
            "zeroed): the events in %s were not recovered\n", programName, name, recovered.path,
            (unsigned long)recovered.missing, recovered.missing == 1 ? "" : "s",
            recovered.missing == 1 ? "it" : "them");
  if (recovered.logFailed)
    fprintf(stderr, "%s: %s: the program could not write all of its log (%s says a write "
            "failed, a full disk perhaps): the events it sent after that are lost, but for "
            "those recovered from the live file (the program counts them, and says how many on "
            "its stderr if it ends)\n", programName, name, recovered.path);
  if (info->stopped) {
    fprintf(stderr, "%s: %s: reading stopped at the damage said above, so whether the stream "
            "ended cleanly after it is not known (--resync reads on past damage)\n",
            programName, name);
  } else if (!Ended(info) && recovered.done && recovered.logFailed) {
    /* The end, if there was one, went with the failed writes: a full
     * disk is not a death.  design/control.txt .sol.writer.fail */
    char counts[4096 + 200];
    Recovered(counts, sizeof counts, info);
    fprintf(stderr, "%s: %s: the stream has no StreamEnd event, as the program's writes to its "
            "log failed (said above): whether it then ended or died is not known; the log holds "
            "%s\n", programName, name, counts);
  } else if (!Ended(info) && recovered.done && LogInUse(name)) {
    char counts[4096 + 200];
    Recovered(counts, sizeof counts, info);
    fprintf(stderr, "%s: %s: the stream has no StreamEnd yet: a running process holds its lock "
            "and is writing it; what the log did not yet hold was read from its live file: %s\n",
            programName, name, counts);
  } else if (!Ended(info) && recovered.done) {
    char counts[4096 + 200];
    Recovered(counts, sizeof counts, info);
    fprintf(stderr, "%s: %s: the stream did not end cleanly (no StreamEnd event): the program "
            "died before it could end it, and the log was recovered after the crash: %s\n",
            programName, name, counts);
  } else if (!Ended(info) && info->recoveredUnchecked) {   /* .stream.header.check */
    char counts[4096 + 200];
    Recovered(counts, sizeof counts, info);
    fprintf(stderr, "%s: %s: the stream did not end cleanly (no StreamEnd event); offset %u: "
            "its flags say its log's live file was recovered into it when it was archived, but "
            "an archive older than %u.0.%u has no check of its flags, so whether it holds every "
            "event cannot be known (%s); archiving the log again checks them\n", programName,
            name, EVENT_STREAM_FLAGS_AT, EVENT_VERSION_ZSTD_MAJOR, EVENT_VERSION_FLAGS_CHECKED,
            counts);
  } else if (!Ended(info)) {
    char counts[4096 + 200];
    Recovered(counts, sizeof counts, info);
    fprintf(stderr, "%s: %s: the stream did not end cleanly (no StreamEnd event) and there is "
            "no live file to recover from: it is incomplete (%s; it ends at offset %llu); the "
            "events the program held in its buffers when it stopped are lost, or it is still "
            "running without one\n", programName, name, counts,
            (unsigned long long)info->streamSize);
  }
}

/* Complete -- 1 if the stream holds, as far as can be known, everything
 * the program emitted: exit 0 says so.  design/tools.txt .eventcnv.exit */
static int Complete(const EventStreamInfoStruct *info)
{
  if (recovered.rejected > 0 || recovered.damaged > 0 || recovered.logFailed
      || recovered.missing > 0)
    return 0;
  return Ended(info) ? Lossless(info) : recovered.done;
}


/* ReportDropped -- events the program dropped (EventsDropped: kind,
 * count; the reader sums them) are said on stderr at the end, per kind,
 * so that no loss goes unnoticed.  design/control.txt .sol.dropped */
static void ReportDropped(const EventStreamInfoStruct *info, const char *name)
{
  for (unsigned kind = 0; kind < EVENT_STREAM_KIND_LIMIT; ++kind) {
    uint64_t unreported = EventDropsUnreported(&recovered.live, info, kind);
    const char *kindName = kind < info->registry->kindCount ? info->registry->kinds[kind].name
                           : "?";
    if (unreported != 0)
      fprintf(stderr, "%s: %s: the program dropped %llu events of kind %s (%llu by EventsDropped,"
              " %llu counted only in %s: it died before reporting them)\n",
              programName, name, (unsigned long long)Dropped(info, kind), kindName,
              (unsigned long long)info->dropped[kind], (unsigned long long)unreported,
              recovered.path);
    else if (info->dropped[kind] != 0)
      fprintf(stderr, "%s: %s: the program dropped %llu events of kind %s (EventsDropped)\n",
              programName, name, (unsigned long long)info->dropped[kind], kindName);
  }
}

/* PutSeconds -- ns as seconds with 9 decimals, into buf */
static void PutSeconds(char *buf, size_t size, int64_t ns)
{
  uint64_t u = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
  snprintf(buf, size, "%s%llu.%09llu", ns < 0 ? "-" : "", (unsigned long long)(u / 1000000000u),
           (unsigned long long)(u % 1000000000u));
}

/* PrintSpans -- --spans: each span's count, unfinished, and durations.
 * Every event takes part, whatever --kind and --event say: a filter
 * would leave spans unpaired.  Returns 0, or 1 if out of memory.
 * design/export.txt .export.span.stats */
static int PrintSpans(EventStreamStruct *stream)
{
  const EventRegistryStruct *registry = EventStreamInfo(stream)->registry;
  EventFormatContextStruct ctx;
  EventRecordStruct rec;
  SpanTrackerStruct *tracker;
  uint64_t seq = 0;
  int width = 4;
  if (registry->spanCount == 0) {
    printf("no spans: the stream's registry declares none\n");
    return 0;
  }
  tracker = SpanTrackerCreate(registry, 1, NULL, NULL);
  if (tracker == NULL)
    return 1;
  EventStreamFormatContext(stream, &ctx);
  while (EventStreamNext(stream, &rec) == EventStreamOK)
    if (SpanTrackerEvent(tracker, &rec, ExportClockNs(&ctx, rec.clock), seq++) != 0) {
      SpanTrackerDestroy(tracker);
      return 1;
    }
  SpanTrackerFinish(tracker);
  for (unsigned i = 0; i < registry->spanCount; ++i)
    if ((int)strlen(registry->spans[i].name) > width)
      width = (int)strlen(registry->spans[i].name);
  printf("%-*s %10s %10s %15s %15s %15s %15s\n", width, "span", "count", "unfinished",
         "min (s)", "median (s)", "p99 (s)", "max (s)");
  for (unsigned i = 0; i < registry->spanCount; ++i) {
    SpanStatsStruct stats;
    char d[4][32];
    SpanStats(tracker, i, &stats);
    PutSeconds(d[0], sizeof d[0], stats.min);
    PutSeconds(d[1], sizeof d[1], stats.median);
    PutSeconds(d[2], sizeof d[2], stats.p99);
    PutSeconds(d[3], sizeof d[3], stats.max);
    if (stats.count == 0)
      for (unsigned j = 0; j < 4; ++j)
        strcpy(d[j], "-");
    printf("%-*s %10llu %10llu %15s %15s %15s %15s\n", width, registry->spans[i].name,
           (unsigned long long)stats.count, (unsigned long long)stats.unfinished, d[0], d[1], d[2], d[3]);
  }
  for (unsigned i = 0; i < registry->spanCount; ++i) {
    SpanStatsStruct stats;
    SpanStats(tracker, i, &stats);
    if (stats.unopened > 0)
      printf("%s: %llu %s event%s closed no open span\n", registry->spans[i].name,
             (unsigned long long)stats.unopened, EventName(registry, registry->spans[i].end),
             stats.unopened == 1 ? "" : "s");
  }
  SpanTrackerDestroy(tracker);
  return 0;
}

/* LogStruct -- one FILE being read */
typedef struct LogStruct {
  const char *path, *name;      /* as given; as said in messages */
  InputStruct in;
  EventStreamStruct *stream;
  InputRecoveredStruct recovered;    /* what InputRecoverLive found */
  FilterStruct filter;          /* --kind and --event in its registry */
} LogStruct;

/* Open -- the stream at path, read once in order for --count and
 * --summary, else held whole (with its live file's events, after a
 * death); NULL after saying why */
static EventStreamStruct *Open(const OptionsStruct *opt, const char *path, const char *name,
                               InputStruct *in)
{
  EventStreamStruct *stream;
  EventStreamRes res;
  char msg[512];
  int err;

  memset(in, 0, sizeof *in);
  memset(&recovered, 0, sizeof recovered);
  if ((opt->count || opt->summary) && !opt->resync && !InputLiveExists(path)) {
    /* No events to print: read the stream once, in order, not mapped.
     * design/tools.txt .eventcnv.scan */
    res = InputScan(path, &stream, msg, sizeof msg, programName);
  } else {
    err = InputRead(path, in);
    if (err != 0) {
      fprintf(stderr, "%s: %s: %s\n", programName, name, strerror(err));
      return NULL;
    }
    if (InputRecoverLive(path, in, &recovered, programName) != 0) {
      InputFree(in);
      memset(in, 0, sizeof *in);
      return NULL;
    }
    res = EventStreamOpen(&stream, in->data, in->size, opt->resync ? EVENT_STREAM_RESYNC : 0,
                          msg, sizeof msg);
  }
  if (res != EventStreamOK) {
    fprintf(stderr, "%s: %s: %s\n", programName, name, msg);
    InputFree(in);
    memset(in, 0, sizeof *in);
    return NULL;
  }
  return stream;
}

/* PrintEach -- --header, --list, --count, --summary and --spans of one
 * log; returns EXIT_SUCCESS, or EXIT_BAD_STREAM having said why */
static int PrintEach(const OptionsStruct *opt, LogStruct *log)
{
  const EventStreamInfoStruct *info = EventStreamInfo(log->stream);
  recovered = log->recovered;
  if (opt->header)
    PrintHeader(info, EventStreamProblemCount(log->stream));
  if (opt->list) {
    if (opt->header)
      printf("\n");
    PrintList(info->registry);
  }
  if (opt->count || opt->summary || opt->spans) {   /* design/tools.txt .eventcnv.scan */
    if (opt->header || opt->list)
      printf("\n");
    if (opt->spans && PrintSpans(log->stream) != 0) {
      fprintf(stderr, "%s: out of memory\n", programName);
      return EXIT_BAD_STREAM;
    } else if (opt->summary) {
      PrintSummary(log->stream, &log->filter);
    } else if (opt->count) {
      PrintCount(log->stream, &log->filter);
    }
  }
  return EXIT_SUCCESS;
}

/* PrintMerged -- the events of several logs on one timeline: each line
 * as PrintEvents's, its ELAPSED since the earliest log's start and
 * PROGRAM[PID] after WALLCLOCK.  Returns 0, or 1 if out of memory.
 * design/export.txt .export.merge */
static int PrintMerged(EventStreamStruct **streams, size_t count, const LogStruct *logs)
{
  MergeStruct merge;
  EventRecordStruct *rec;
  size_t source, size = 4096;
  char (*process)[80] = calloc(count, sizeof *process);
  char *line = malloc(size), times[64], elapsed[40];
  int width = 0;
  ProgressStruct progress;
  uint64_t read = 0, total = 0;
  if (process == NULL || line == NULL || MergeInit(&merge, streams, count) != 0) {
    free(process);
    free(line);
    return 1;
  }
  for (size_t i = 0; i < count; ++i) {
    const EventStreamInfoStruct *info = EventStreamInfo(streams[i]);
    total += info->eventCount;
    char program[61];
    int n = snprintf(process[i], sizeof process[i], "%s[%lu]",
                     TextTo(program, sizeof program, info->program), (unsigned long)info->pid);
    if (n > width)
      width = n < (int)sizeof process[i] ? n : (int)sizeof process[i] - 1;
  }
  ProgressStart(&progress, total);
  while (MergeNext(&merge, &source, &rec)) {
    const EventFormatContextStruct *ctx = &merge.fmt[source];
    size_t len, timesLen;
    ProgressTick(&progress, ++read);
    if (!FilterPasses(&logs[source].filter, rec->kind, rec->code))
      continue;
    len = EventFormat(line, size, rec, ctx);
    if (len >= size) {
      char *bigger = realloc(line, len + 1);
      if (bigger == NULL)
        break;
      line = bigger;
      size = len + 1;
      (void)EventFormat(line, size, rec, ctx);
    }
    /* ELAPSED WALLCLOCK of this log: WALLCLOCK kept, ELAPSED since the origin */
    timesLen = EventFormatTimes(times, sizeof times, rec->clock, ctx);
    if (timesLen >= sizeof times || timesLen > len || strrchr(times, ' ') == NULL)
      timesLen = 0;
    PutSeconds(elapsed, sizeof elapsed, MergeAddNs(MergeWallNs(ctx->startRealtime - merge.originNs),
                                                   MergeClockNs(ctx, rec->clock)));
    printf("%15s%s %-*s%s\n", elapsed, timesLen > 0 ? strrchr(times, ' ') : "", width,
           process[source], line + timesLen);
  }
  ProgressEnd(&progress);
  MergeFinish(&merge);
  free(process);
  free(line);
  return 0;
}

/* LogsFilter -- FilterPasses of each log's filter, an ExportFilterFunction */
static int LogsFilter(void *closure, size_t source, unsigned kind, unsigned code)
{
  const LogStruct *logs = closure;
  return FilterPasses(&logs[source].filter, kind, code);
}

/* ArchiveSay -- what an archive holds that its log's messages do not
 * say: blocks past damage, a program that may still be writing, and
 * drops that only the live file counts, which it lacks
 * (design/tools.txt .zstd.say) */
static void ArchiveSay(const EventStreamInfoStruct *info, const InputRecoveredStruct *rec,
                       const char *name, const char *output)
{
  uint64_t unreported = 0;
  for (unsigned kind = 0; kind < EVENT_STREAM_KIND_LIMIT; ++kind)
    unreported += EventDropsUnreported(&rec->live, info, kind);
  if (unreported != 0)
    fprintf(stderr, "%s: %s: the archive %s does not count the %llu dropped events that only "
            "%s counts (the program died before reporting them)\n", programName, name, output,
            (unsigned long long)unreported, rec->path);
  if (info->stopped)
    fprintf(stderr, "%s: %s: the archive %s holds every block of the log, the damaged ones "
            "as they are: --resync reads on past them\n", programName, name, output);
  if (!Ended(info) && info->pid != 0 && (kill((pid_t)info->pid, 0) == 0 || errno == EPERM))
    fprintf(stderr, "%s: %s: the log has no StreamEnd and a process %lu is running: if it is "
            "the program, it is still writing, and the archive %s holds only what it had "
            "written\n", programName, name, (unsigned long)info->pid, output);
}

/* Print -- what opt asks for; returns EXIT_SUCCESS, or EXIT_BAD_STREAM
 * having said why */
static int Print(const OptionsStruct *opt, LogStruct *logs, size_t count)
{
  int status = EXIT_SUCCESS;
  /* Headings and merged lines as for the FILEs given, however many of
   * them could be read, so that the output's form does not change. */
  int several = opt->pathCount > 1;
  if (opt->header || opt->list || opt->count || opt->summary || opt->spans) {
    for (size_t i = 0; i < count && status == EXIT_SUCCESS; ++i) {
      if (several)
        printf("%s==> %s <==\n", i > 0 ? "\n" : "", logs[i].name);
      status = PrintEach(opt, &logs[i]);
    }
    return status;
  }
  EventStreamStruct **streams = malloc(count * sizeof *streams);
  if (streams == NULL) {
    fprintf(stderr, "%s: out of memory\n", programName);
    return EXIT_BAD_STREAM;
  }
  for (size_t i = 0; i < count; ++i)
    streams[i] = logs[i].stream;
  if (IsArchive(opt)) {
    /* design/tools.txt .zstd.writer */
    const EventStreamInfoStruct *info = EventStreamInfo(streams[0]);
    if (ArchiveWrite(logs[0].in.data, logs[0].in.size, info,
                     logs[0].recovered.done, opt->output,
                     opt->zstd == NULL ? ARCHIVE_NO_ZSTD
                     : opt->zstd[0] != '\0' ? atoi(opt->zstd) : 3, logs[0].name,
                     programName) != 0)
      status = EXIT_BAD_STREAM;
    else
      ArchiveSay(info, &logs[0].recovered, logs[0].name, opt->output);
  } else if (IsExport(opt)) {
    /* design/export.txt .export */
    if (ExportRun(streams, count, opt->format, opt->output, LogsFilter, logs) != 0)
      status = EXIT_BAD_STREAM;
  } else if ((!several   /* design/tools.txt .eventcnv.text */
              ? ExportText(streams[0], stdout, opt->jobs != NULL ? (unsigned)atoi(opt->jobs) : 0,
                           LogsFilter, logs)
              : PrintMerged(streams, count, logs)) != 0) {
    fprintf(stderr, "%s: out of memory\n", programName);
    status = EXIT_BAD_STREAM;
  }
  free(streams);
  return status;
}

/* Finish -- say what went wrong with a log, and what was lost; returns
 * the exit status.  design/tools.txt .eventcnv.exit */
static int Finish(const OptionsStruct *opt, LogStruct *log, int status)
{
  const EventStreamInfoStruct *info = EventStreamInfo(log->stream);
  recovered = log->recovered;
  if (EventStreamProblemCount(log->stream) > 0 && ReportProblems(log->stream, log->name))
    status = EXIT_BAD_STREAM;
  ReportWarnings(info, log->name);
  if (!Complete(info))
    status = EXIT_BAD_STREAM;
  if (opt->count || opt->summary || opt->spans || (!opt->header && !opt->list))
    ReportDropped(info, log->name);
  return status;
}

/* WholeBlocks -- the end of the last whole block in the first size
 * bytes of a stream: what a writer has written whole so far.  A block
 * after done whose check fails is not yet: its header goes before its
 * data, which its thread writes after the lock (.sol.writer.at). */
static size_t WholeBlocks(const unsigned char *p, size_t size, const EventStreamInfoStruct *info,
                          size_t done)
{
  size_t pos = info->headerLength;
  while (pos <= size && size - pos >= info->blockHeaderLength) {
    EventBlockHeaderStruct h;
    EventBlockDecode(&h, p + pos, info->major, info->layout.bigEndian);
    if (memcmp(h.magic, EVENT_BLOCK_MAGIC, 4) != 0 || h.length < info->blockHeaderLength
        || h.length > size - pos)
      break;
    if (pos >= done && info->major >= 2 && (h.flags & EVENT_BLOCK_CHECKED) != 0
        && EventBlockCheck(p + pos, h.length) != h.check)
      break;
    pos += h.length;
  }
  return pos;
}

/* FollowStruct -- what --follow knows of the log it follows */
typedef struct FollowStruct {
  int fd;                       /* the file opened */
  const char *path;             /* as given */
  FilterStruct filter;
  size_t done;                  /* printed up to here */
  int ended;                    /* 1 StreamEnd, 2 the stream ends at an exec */
  uint32_t pid;                 /* the header's, once read; 0 before */
  uint64_t startMonotonic;      /* the header's CLOCK_MONOTONIC start, ns */
  size_t damageAt;              /* a block all there whose check fails, */
  uint32_t damageCheck;         /* what its bytes give, */
  unsigned damageLooks;         /* and in how many looks in a row */
  EventClock startClock;        /* the header's */
  size_t rates;                 /* the clock rates times were printed at, */
  struct {
    uint64_t hz;
    EventClock latest;          /* and the latest clock printed at each */
  } rate[16];
  ExportWindowStruct window;    /* --format clickhouse: what a look ships */
  int exportFailed;             /* a write of the rows failed: said */
  FILE *insert;                 /* --insert: the batch's run of COMMAND, */
  int stdoutSaved;              /* standard output while it runs, */
  double insertSince;           /* when it began, */
  uint64_t insertRows;          /* the rows before it */
  uint64_t rowsLost;            /* rows of batches COMMAND failed */
} FollowStruct;

/* FOLLOW_DAMAGE_LOOKS -- looks (200 ms apart) that a block whose check
 * fails must stay as it is before --follow takes it for damage rather
 * than a write under way.  design/tools.txt .eventcnv.follow.damage */
#define FOLLOW_DAMAGE_LOOKS 5

/* FollowDamage -- note the block at whole, the first not whole, if it
 * is all in the file and fails its check: how many looks in a row it
 * has been so, its bytes the same */
static void FollowDamage(FollowStruct *f, const unsigned char *p, size_t size,
                         const EventStreamInfoStruct *info, size_t whole)
{
  EventBlockHeaderStruct h;
  uint32_t check;
  if (info->major < 2 || whole > size || size - whole < info->blockHeaderLength) {
    f->damageLooks = 0;
    return;
  }
  EventBlockDecode(&h, p + whole, info->major, info->layout.bigEndian);
  if (memcmp(h.magic, EVENT_BLOCK_MAGIC, 4) != 0 || h.length < info->blockHeaderLength
      || h.length > size - whole || (h.flags & EVENT_BLOCK_CHECKED) == 0) {
    f->damageLooks = 0;
    return;
  }
  /* A block whose place is taken and whose data are not written yet
   * (zeros from their start or a page boundary: .sol.writer.at) is a
   * write under way however long its thread takes, not damage. */
  if (EventBlockHole(p + whole, h.length, info->blockHeaderLength, whole)) {
    f->damageLooks = 0;
    return;
  }
  check = EventBlockCheck(p + whole, h.length);
  if (f->damageLooks > 0 && f->damageAt == whole && f->damageCheck == check)
    ++f->damageLooks;
  else {
    f->damageAt = whole;
    f->damageCheck = check;
    f->damageLooks = 1;
  }
}

static int followErrno;         /* the first failed write of --follow's output */

/* FollowRate -- note that a time was printed for clock at rate hz: the
 * latest clock printed at each rate, for FollowRateSay */
static void FollowRate(FollowStruct *f, uint64_t hz, EventClock clock)
{
  size_t i;
  for (i = 0; i < f->rates && f->rate[i].hz != hz; ++i)
    ;
  if (i == f->rates) {
    if (f->rates == sizeof f->rate / sizeof f->rate[0])
      i = f->rates - 1;         /* the last stands for the rest: said as "at least" */
    else
      ++f->rates;
    f->rate[i].hz = hz;
    f->rate[i].latest = 0;
  }
  if (clock > f->rate[i].latest)
    f->rate[i].latest = clock;
}

/* FOLLOW_BATCH_SECONDS -- how long --insert's batch of rows gathers
 * before its COMMAND is ended, so that its rows are in the table:
 * ClickHouse makes a part of each INSERT, and wants few a second.
 * design/export.txt .export.clickhouse.follow */
#define FOLLOW_BATCH_SECONDS 1.0

static double followNow(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* FollowInsertEnd -- end --insert's batch: COMMAND's input closed and
 * its exit awaited; one that fails loses its batch's rows, which are
 * counted and said, and --follow goes on with the next batch */
static void FollowInsertEnd(FollowStruct *f, const char *command)
{
  int status;
  if (f->insert == NULL)
    return;
  fflush(stdout);
  (void)dup2(f->stdoutSaved, STDOUT_FILENO);
  (void)close(f->stdoutSaved);
  status = pclose(f->insert);
  f->insert = NULL;
  if (status != 0) {
    uint64_t rows = f->window.rows - f->insertRows;
    f->rowsLost += rows;
    fprintf(stderr, "%s: %s: --insert's %s %s %d: %llu rows not shipped\n", programName, f->path,
            command, status > 0 && WIFEXITED(status) ? "exited" : "failed, status",
            status > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : status, (unsigned long long)rows);
  }
}

/* FollowInsertBegin -- a batch for --insert: COMMAND run, standard
 * output its input until FollowInsertEnd; 0, or 1 said */
static int FollowInsertBegin(FollowStruct *f, const char *command)
{
  if (f->insert != NULL)
    return 0;
  fflush(stdout);
  f->insert = popen(command, "w");
  if (f->insert == NULL || (f->stdoutSaved = dup(STDOUT_FILENO)) < 0
      || dup2(fileno(f->insert), STDOUT_FILENO) < 0) {
    fprintf(stderr, "%s: --insert %s: %s\n", programName, command, strerror(errno));
    if (f->insert != NULL)
      (void)pclose(f->insert);
    f->insert = NULL;
    return 1;
  }
  f->insertSince = followNow();
  f->insertRows = f->window.rows;
  return 0;
}

/* followFilter -- f's filter, an ExportFilterFunction */
static int followFilter(void *closure, size_t source, unsigned kind, unsigned code)
{
  (void)source;
  return FilterPasses(&((FollowStruct *)closure)->filter, kind, code);
}

/* FollowExport -- FollowPrint's events as the format's rows (clickhouse):
 * a window of the stream, so the threads' ids and names and the labels
 * of what came before are known.  design/export.txt
 * .export.clickhouse.follow */
static void FollowExport(const OptionsStruct *opt, FollowStruct *f, EventStreamStruct *stream,
                         size_t from, size_t to, int *endedReturn)
{
  uint64_t rows = f->window.rows;
  EventFormatContextStruct ctx;
  f->window.from = from;
  f->window.to = to;
  f->window.streamEnd = 0;
  if (opt->insert != NULL && FollowInsertBegin(f, opt->insert) != 0) {
    f->exportFailed = 1;
    return;
  }
  if (ExportRunWindow(&stream, 1, opt->format, NULL, followFilter, f, &f->window) != 0)
    f->exportFailed = 1;        /* said */
  if (f->window.streamEnd)
    *endedReturn = 1;
  /* Times as the text's (.eventcnv.follow.time), the stream's latest
   * clock standing for the window's. */
  EventStreamFormatContext(stream, &ctx);
  if (f->window.rows > rows)
    FollowRate(f, ctx.clockHz, EventStreamInfo(stream)->lastClock);
  if (f->insert != NULL && followNow() - f->insertSince >= FOLLOW_BATCH_SECONDS)
    FollowInsertEnd(f, opt->insert);
}

/* FollowPrint -- the events of stream from offset from, up to (not
 * at) to, that pass f's filter, in time order, each time reckoned at the
 * clock rate the stream gives now; *endedReturn 1 at StreamEnd; as rows
 * with --format (FollowExport) */
static void FollowPrint(const OptionsStruct *opt, FollowStruct *f, EventStreamStruct *stream,
                        size_t from, size_t to, int *endedReturn)
{
  EventFormatContextStruct ctx;
  EventRecordStruct rec;
  char line[8192];
  if (opt->format != NULL && strcmp(opt->format, "text") != 0) {
    FollowExport(opt, f, stream, from, to, endedReturn);
    return;
  }
  EventStreamFormatContext(stream, &ctx);
  while (EventStreamNext(stream, &rec) == EventStreamOK) {
    if (rec.offset < from || rec.offset >= to)
      continue;         /* printed before, or in a block not yet whole */
    if (rec.code == EVENT_CODE_STREAM_END)
      *endedReturn = 1;
    if (FilterPasses(&f->filter, rec.kind, rec.code)) {
      (void)EventFormat(line, sizeof line, &rec, &ctx);
      printf("%s\n", line);
      FollowRate(f, ctx.clockHz, rec.clock);
    }
  }
  if (fflush(stdout) != 0 && followErrno == 0)
    followErrno = errno;        /* said at the end: .tools.output */
}


/* FollowOnce -- the events of the whole blocks that follow f->done in
 * the stream as it is now, in time order; moves f->done on, and sets
 * f->ended to 1 at StreamEnd, 2 if the stream now ends at an exec
 * (.sol.exec).  Returns 0, or 1 if the file is not a stream, having
 * said so. */
static int FollowOnce(const OptionsStruct *opt, FollowStruct *f)
{
  InputStruct in;
  EventStreamStruct *stream;
  const EventStreamInfoStruct *info;
  char msg[512];
  size_t whole;
  int err;
  memset(&in, 0, sizeof in);
  err = InputReadFd(f->fd, &in);
  if (err != 0) {
    fprintf(stderr, "%s: %s: %s\n", programName, f->path, strerror(err));
    return 1;
  }
  if (EventStreamOpen(&stream, in.data, in.size, 0, msg, sizeof msg) != EventStreamOK) {
    /* A header not written whole yet is waited for; a file that is not a stream is said. */
    int waiting = in.size < EVENT_STREAM_FIXED_LEN
      || (memcmp(in.data, EVENT_STREAM_MAGIC, EVENT_STREAM_MAGIC_LEN) == 0
          && EventLoad(in.data + 20, 4, 0) > in.size);
    InputFree(&in);
    if (!waiting)
      fprintf(stderr, "%s: %s: %s\n", programName, f->path, msg);
    return !waiting;
  }
  info = EventStreamInfo(stream);
  f->pid = info->pid;
  f->startMonotonic = info->startMonotonic;
  if (f->done == 0)
    FilterInit(&f->filter, opt, info->registry);
  whole = WholeBlocks(in.data, in.size, info, f->done);
  FollowDamage(f, in.data, in.size, info, whole);
  if (info->streamExec)
    f->ended = 2;
  f->startClock = info->startClock;
  FollowPrint(opt, f, stream, f->done, whole, &f->ended);
  EventStreamClose(stream);
  InputFree(&in);
  if (whole > f->done)
    f->done = whole;
  return 0;
}

/* FollowLiveName -- the log's name now, for its live file (NAME.live):
 * an exec'd image moves the log and its live file aside (.malloc.file);
 * NULL if the file has no name */
static const char *FollowLiveName(const FollowStruct *f, char *buf, size_t size)
{
  struct stat opened, named;
  char link[64];
  ssize_t n;
  if (fstat(f->fd, &opened) != 0)
    return NULL;
  if (stat(f->path, &named) == 0 && named.st_dev == opened.st_dev && named.st_ino == opened.st_ino)
    return f->path;
  snprintf(link, sizeof link, "/proc/self/fd/%d", f->fd);
  n = readlink(link, buf, size - 1);
  if (n <= 0 || opened.st_nlink == 0)
    return NULL;
  buf[n] = '\0';
  return buf;
}

/* followNs -- clock's ns after the start at rate hz (0: the clock counts ns) */
static double followNs(const FollowStruct *f, EventClock clock, uint64_t hz)
{
  double ticks = clock > f->startClock ? (double)(clock - f->startClock) : 0.0;
  return hz == 0 ? ticks : ticks * 1e9 / (double)hz;
}

/* FollowRateSay -- say how far the times printed are from a later
 * read's, which reckons every time at the rate the whole log gives
 * (hz): a ClockSync that reached the file after a time was printed (a
 * flush, the end, a death) may have changed it.  A time once printed
 * cannot change, and one that differs is not passed over in silence.
 * design/tools.txt .eventcnv.follow.time */
static void FollowRateSay(const FollowStruct *f, uint64_t hz)
{
  double worst = 0.0;
  for (size_t i = 0; i < f->rates; ++i) {
    double d = followNs(f, f->rate[i].latest, f->rate[i].hz) - followNs(f, f->rate[i].latest, hz);
    if (f->rate[i].hz != hz && fabs(d) > fabs(worst))
      worst = d;
  }
  /* Rounded up: two times each rounded down to a ns differ by at most that. */
  unsigned long long up = (unsigned long long)fabs(worst);
  if ((double)up < fabs(worst))
    ++up;
  if (worst != 0.0)
    fprintf(stderr, "%s: %s: times printed before a later ClockSync reached the file were "
            "reckoned at the clock rate known then; a read of the log now puts them up to "
            "%llu ns %s%s\n", programName, f->path, up, worst > 0 ? "earlier" : "later",
            f->rates == sizeof f->rate / sizeof f->rate[0] ? " (at least)" : "");
}

/* FollowEnd -- the end of --follow: the file as eventcnv reads it
 * without --follow, its live file recovered, and the events not printed
 * yet (at or after f->done: what the program wrote at its end, a last
 * block cut short, what only the live file holds) in time order; then
 * what eventcnv says of that log, and its exit status */
static int FollowEnd(const OptionsStruct *opt, FollowStruct *f)
{
  LogStruct log;
  char msg[512], name[4096];
  int err, ended = 0, status;
  memset(&log, 0, sizeof log);
  log.path = log.name = f->path;
  err = InputReadFd(f->fd, &log.in);
  if (err != 0) {
    fprintf(stderr, "%s: %s: %s\n", programName, f->path, strerror(err));
    return EXIT_BAD_STREAM;
  }
  memset(&recovered, 0, sizeof recovered);
  (void)InputRecoverLive(FollowLiveName(f, name, sizeof name), &log.in, &recovered, programName);
  if (EventStreamOpen(&log.stream, log.in.data, log.in.size, opt->resync ? EVENT_STREAM_RESYNC : 0,
                      msg, sizeof msg) != EventStreamOK) {
    fprintf(stderr, "%s: %s: %s\n", programName, f->path, msg);
    InputFree(&log.in);
    return EXIT_BAD_STREAM;
  }
  InputArchiveRecovered(EventStreamInfo(log.stream), &recovered);
  log.recovered = recovered;
  if (f->done == 0)
    FilterInit(&f->filter, opt, EventStreamInfo(log.stream)->registry);
  FollowPrint(opt, f, log.stream, f->done, (size_t)-1, &ended);
  FollowInsertEnd(f, opt->insert);
  status = Finish(opt, &log, EXIT_SUCCESS);
  if (f->exportFailed || f->rowsLost > 0)
    status = EXIT_BAD_STREAM;
  if (f->rowsLost > 0)
    fprintf(stderr, "%s: %s: %llu rows were not shipped, as said\n", programName, f->path,
            (unsigned long long)f->rowsLost);
  FollowRateSay(f, EventStreamInfo(log.stream)->clockHz);
  EventStreamClose(log.stream);
  InputFree(&log.in);
  return status;
}

/* FollowGone -- the program is gone, so nothing more will be written:
 * no thread of the header's pid runs, and no process has the file open
 * (one that writes a copy of a log, or a program in another pid
 * namespace, keeps --follow going).  With no header yet, a second after
 * the first look, no process has the file open.  design/tools.txt
 * .eventcnv.follow.gone */
static int FollowGone(const FollowStruct *f, unsigned looks)
{
  if (f->pid != 0)
    return InputProgramGone(f->pid, f->startMonotonic) && InputFileUnheld(f->fd);
  return looks >= 5 && InputFileUnheld(f->fd);
}

/* Follow -- --follow: the events as the program writes them, buffer by
 * buffer, until StreamEnd, or a StreamExec that a look later still ends
 * the stream (a failed exec writes its own at once), or the program is
 * gone; then what eventcnv shows and says of the log without --follow.
 * Each look reads the file afresh; what it printed is known by offset.
 * The file is opened once and read through its descriptor: the image an
 * exec starts moves the log aside (LOG.execN) and writes a new one at
 * its path, which a look by name would take for the same stream.
 * design/tools.txt .eventcnv.follow */
static int Follow(const OptionsStruct *opt)
{
  FollowStruct *f = calloc(1, sizeof *f);
  int exec = 0, status = EXIT_BAD_STREAM;
  if (f == NULL) {
    fprintf(stderr, "%s: out of memory\n", programName);
    return EXIT_BAD_STREAM;
  }
  f->path = opt->paths[0];
  if (opt->insert != NULL)
    signal(SIGPIPE, SIG_IGN);   /* a COMMAND that fails is said, not our death */
  f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
  if (f->fd < 0) {
    fprintf(stderr, "%s: %s: %s\n", programName, f->path, strerror(errno));
    free(f);
    return EXIT_BAD_STREAM;
  }
  for (unsigned looks = 0; ; ++looks) {
    struct timespec pause = {0, 200000000};
    size_t was = f->done;
    /* Asked before the look, so that the look sees all a program that
     * is gone wrote. */
    int gone = FollowGone(f, looks);
    f->ended = 0;
    if (FollowOnce(opt, f) != 0)
      break;
    /* A block that fails its check look after look is damage: said,
     * and the end, as eventcnv without --follow (.eventcnv.follow.damage) */
    if (f->ended == 1 || (f->ended == 2 && exec && f->done == was) || gone
        || f->damageLooks >= FOLLOW_DAMAGE_LOOKS) {
      status = FollowEnd(opt, f);   /* exec'd: nothing came after its StreamExec */
      break;
    }
    exec = f->ended == 2;
    nanosleep(&pause, NULL);
  }
  FollowInsertEnd(f, opt->insert);
  (void)close(f->fd);
  free(f);
  return status;
}

/* OpenAll -- every FILE that can be read, in the order given, at the
 * front of logs; returns how many.  One that cannot is said and left
 * out, so the others are still printed (design/tools.txt
 * .eventcnv.exit). */
static size_t OpenAll(const OptionsStruct *opt, LogStruct *logs)
{
  size_t sound = 0;
  for (size_t i = 0; i < opt->pathCount; ++i) {
    LogStruct *log = &logs[sound];
    log->path = opt->paths[i];
    log->name = strcmp(log->path, "-") == 0 ? "<stdin>" : log->path;
    log->stream = Open(opt, log->path, log->name, &log->in);
    if (log->stream == NULL)
      continue;
    InputArchiveRecovered(EventStreamInfo(log->stream), &recovered);
    log->recovered = recovered;
    FilterInit(&log->filter, opt, EventStreamInfo(log->stream)->registry);
    ++sound;
  }
  return sound;
}

/* OutputText -- -o for text: standard output goes to path; 0, or 1
 * after saying why not.  design/tools.txt .tools.output */
static int OutputText(const char *path)
{
  int fd;
  fflush(stdout);
  fd = OutPathOpen(programName, path, 0);
  if (fd < 0)
    return 1;
  if (dup2(fd, STDOUT_FILENO) < 0) {
    fprintf(stderr, "%s: cannot write %s: %s\n", programName, path, strerror(errno));
    (void)close(fd);
    return 1;
  }
  (void)close(fd);
  return 0;
}

int main(int argc, char **argv)
{
  OptionsStruct opt;
  LogStruct *logs;
  size_t sound;
  int status = EXIT_SUCCESS;

  ParseArgs(argc, argv, &opt);
  if (opt.follow) {
    if (opt.output != NULL && strcmp(opt.output, "-") != 0 && OutputText(opt.output) != 0)
      return EXIT_BAD_STREAM;
    status = Follow(&opt);
    if (fflush(stdout) != 0 || ferror(stdout)) {   /* .tools.output */
      fprintf(stderr, "%s: error writing output: %s\n", programName,
              strerror(followErrno != 0 ? followErrno : errno));
      status = EXIT_BAD_STREAM;
    }
    free(opt.paths);
    return status;
  }
  logs = calloc(opt.pathCount, sizeof *logs);
  if (logs == NULL) {
    fprintf(stderr, "%s: out of memory\n", programName);
    return EXIT_BAD_STREAM;
  }
  sound = OpenAll(&opt, logs);
  if (sound == 0) {
    status = EXIT_BAD_STREAM;
  } else if (!IsExport(&opt) && opt.output != NULL && strcmp(opt.output, "-") != 0
             && OutputText(opt.output) != 0) {
    /* -o for text: stdout goes to the file, once the streams are open */
    status = EXIT_BAD_STREAM;
  } else {
    status = Print(&opt, logs, sound);
    if (fflush(stdout) != 0 || ferror(stdout)) {
      fprintf(stderr, "%s: error writing output: %s\n", programName, strerror(errno));
      status = EXIT_BAD_STREAM;
    }
    for (size_t i = 0; i < sound; ++i)
      status = Finish(&opt, &logs[i], status);
    if (sound < opt.pathCount)  /* each said as it was opened */
      status = EXIT_BAD_STREAM;
  }
  for (size_t i = 0; i < sound; ++i) {
    EventStreamClose(logs[i].stream);
    InputFree(&logs[i].in);
  }
  free(logs);
  free(opt.paths);
  return status;
}
