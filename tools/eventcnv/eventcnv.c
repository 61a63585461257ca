/* <tools/eventcnv/eventcnv.c> -- print a telltale stream as text
 *
 * .design: design/telemetry.txt .eventcnv .stream
 *
 * eventcnv reads a whole stream into memory (mmap for a file, read for
 * a pipe), decodes it with the shared decoder (eventread.h,
 * design/telemetry.txt .req.share) and prints its events in time order,
 * one line each, on stdout.  Warnings and errors go to stderr.
 *
 * Exit status: 0 success; 1 a bad stream (the message names the byte
 * offset) or a file that cannot be read; 2 a usage error.
 */

#include "eventread.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EXIT_BAD_STREAM 1
#define EXIT_USAGE      2

static const char *programName = "eventcnv";

static const char usageText[] =
  "Usage: eventcnv [OPTION]... [FILE]\n"
  "Print the events of a telltale telemetry stream in time order, one per line.\n"
  "FILE is a stream written by telltale; with no FILE, or when FILE is -, read\n"
  "standard input.\n"
  "\n"
  "Options:\n"
  "  --header          print the stream's header: version, program, pid, start\n"
  "                    time, clock rate, byte order, pointer and word sizes,\n"
  "                    and how the stream ended: clean, or recovered after a crash\n"
  "  --list            print the registry the stream carries: kinds, and for each\n"
  "                    event its code, kind, format, doc and parameters\n"
  "  --count           print how many events there are of each name, not the events\n"
  "  --kind K[,K...]   only events of these kinds (names as --list shows them)\n"
  "  --event E[,E...]  only events with these names\n"
  "  --resync          at a corrupt block, report it and go on at the next block\n"
  "                    (the default is to stop there)\n"
  "  --help            print this help and exit\n"
  "\n"
  "--header and --list print instead of the events; --kind and --event apply\n"
  "to the events and to --count, and both must match.\n"
  "\n"
  "Each event is printed as\n"
  "  ELAPSED WALLCLOCK THREAD KIND EVENT name=value...\n"
  "where ELAPSED is seconds since the stream started, WALLCLOCK is the UTC time\n"
  "of day, and THREAD is T and the thread's serial number, e.g.\n"
  "    0.000001505 22:13:20.123458294 T1  Pool     PoolCreate    pool=0x7f0000001000 ...\n"
  "P and A values are hex, an A value followed by [label] if it was labelled;\n"
  "W and U are decimal, D like %.17g, S quoted with C escapes.\n"
  "\n"
  "Exit status: 0 success; 1 a bad stream (the message names the byte offset)\n"
  "or an unreadable file; 2 a usage error.\n"
  "\n"
  "Examples:\n"
  "  eventcnv telemetry.tt                  every event, in time order\n"
  "  eventcnv --kind Pool,Object telemetry.tt | less\n"
  "  eventcnv --event Label,Intern - < telemetry.tt\n"
  "  eventcnv --header --list telemetry.tt  what the stream is and what it holds\n"
  "  eventcnv --count telemetry.tt          how many of each event\n";


/* OptionsStruct -- what the command line asked for */

typedef struct OptionsStruct {
  int header, list, count, resync;
  const char *kinds;            /* --kind argument, or NULL */
  const char *events;           /* --event argument, or NULL */
  const char *path;             /* NULL or "-" for stdin */
} OptionsStruct;

static void UsageError(const char *message, const char *arg)
{
  fprintf(stderr, "%s: %s%s\n", programName, message, arg != NULL ? arg : "");
  fprintf(stderr, "Try '%s --help' for more information.\n", programName);
  exit(EXIT_USAGE);
}

/* ParseArgs -- options before or after FILE; "--" ends them */
static void ParseArgs(int argc, char **argv, OptionsStruct *opt)
{
  int i, endOfOptions = 0;
  memset(opt, 0, sizeof *opt);
  for (i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    const char **valueReturn = NULL;
    if (!endOfOptions && strcmp(arg, "--") == 0) {
      endOfOptions = 1;
    } else if (!endOfOptions && strcmp(arg, "--help") == 0) {
      fputs(usageText, stdout);
      exit(EXIT_SUCCESS);
    } else if (!endOfOptions && strcmp(arg, "--header") == 0) {
      opt->header = 1;
    } else if (!endOfOptions && strcmp(arg, "--list") == 0) {
      opt->list = 1;
    } else if (!endOfOptions && strcmp(arg, "--count") == 0) {
      opt->count = 1;
    } else if (!endOfOptions && strcmp(arg, "--resync") == 0) {
      opt->resync = 1;
    } else if (!endOfOptions && strncmp(arg, "--kind", 6) == 0 && (arg[6] == '\0' || arg[6] == '=')) {
      valueReturn = &opt->kinds;
    } else if (!endOfOptions && strncmp(arg, "--event", 7) == 0 && (arg[7] == '\0' || arg[7] == '=')) {
      valueReturn = &opt->events;
    } else if (!endOfOptions && arg[0] == '-' && arg[1] != '\0') {
      UsageError("unknown option: ", arg);
    } else {
      if (opt->path != NULL)
        UsageError("more than one FILE: ", arg);
      opt->path = arg;
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
}


/* Reading the input */

typedef struct InputStruct {
  unsigned char *data;
  size_t size;
  int mapped;
} InputStruct;

/* ReadAll -- read fd to its end into malloc'd memory */
static int ReadAll(int fd, InputStruct *in)
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
  }
}

/* ReadInput -- map a regular file, read anything else */
static int ReadInput(const char *path, InputStruct *in)
{
  struct stat st;
  int fd, err;
  if (path == NULL || strcmp(path, "-") == 0)
    return ReadAll(STDIN_FILENO, in);
  fd = open(path, O_RDONLY);
  if (fd < 0)
    return errno;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      in->data = p;
      in->size = (size_t)st.st_size;
      in->mapped = 1;
      close(fd);
      return 0;
    }
  }
  err = ReadAll(fd, in);
  close(fd);
  return err;
}

static void InputFree(InputStruct *in)
{
  if (in->mapped)
    munmap(in->data, in->size);
  else
    free(in->data);
}

/* What RecoverLive found, for --header and the end-of-stream sentence */
static struct {
  int done;                     /* a live file was read and merged */
  size_t events, blocks;        /* what it added */
  char path[4096];              /* LOG.live */
} recovered;

/* RecoverLive -- if the program that wrote the log died, its live file
 * (LOG.live) is still there: add the events only it has to the input.
 * design/telemetry.txt .sol.recover */
static int RecoverLive(const char *path, const char *name, InputStruct *in)
{
  char livePath[4096];
  InputStruct live;
  unsigned char *merged;
  size_t size, events, blocks;
  char msg[256];
  int err;
  if (path == NULL || strcmp(path, "-") == 0)
    return 0;
  if (snprintf(livePath, sizeof livePath, "%s.live", path) >= (int)sizeof livePath)
    return 0;
  memset(&live, 0, sizeof live);
  err = ReadInput(livePath, &live);
  if (err == ENOENT)
    return 0;
  if (err != 0) {
    fprintf(stderr, "%s: %s: %s\n", programName, livePath, strerror(err));
    return 1;
  }
  if (EventRecover(in->data, in->size, live.data, live.size, &merged, &size, &events, &blocks,
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
  (void)name;
  recovered.done = 1;
  recovered.events = events;
  recovered.blocks = blocks;
  memcpy(recovered.path, livePath, sizeof recovered.path);
  return 0;
}


/* Filters.  --kind and --event name kinds and events of the stream's
 * registry; a name it does not have is a usage error that lists the
 * names it has. */

typedef struct FilterStruct {
  int byKind, byEvent;
  EventKindSet kinds;
  unsigned char codes[0x10000];   /* 1 for a code that --event named */
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
  for (i = 0; i < registry->kindCount; ++i)
    if (strcmp(registry->kinds[i].name, name) == 0) {
      filter->kinds |= EVENT_KIND_BIT(i);
      return 1;
    }
  return 0;
}

static int MatchEvent(const EventRegistryStruct *registry, const char *name, FilterStruct *filter)
{
  unsigned i;
  int found = 0;
  for (i = 0; i < registry->eventCount; ++i)
    if (strcmp(registry->events[i].name, name) == 0) {
      filter->codes[registry->events[i].code & 0xFFFF] = 1;
      found = 1;
    }
  return found;
}

static void FilterInit(FilterStruct *filter, const OptionsStruct *opt, const EventRegistryStruct *registry)
{
  char name[256];
  const char *bad;
  memset(filter, 0, sizeof *filter);
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

static int FilterPasses(const FilterStruct *filter, const EventRecordStruct *rec)
{
  if (filter->byKind && (rec->kind >= EVENT_KIND_LIMIT || !(filter->kinds & EVENT_KIND_BIT(rec->kind))))
    return 0;
  if (filter->byEvent && !filter->codes[rec->code & 0xFFFF])
    return 0;
  return 1;
}


/* Recovered -- what a stream that did not end cleanly still holds:
 * "N events in M blocks", and how many came from the live file.  The
 * program died before it could write StreamEnd (an assertion, a fatal
 * signal, SIGKILL, the OOM killer, a power cut); this is what was
 * recovered.  design/telemetry.txt .sol.death.limits .sol.recover */
static void Recovered(char *buf, size_t size, const EventStreamInfoStruct *info)
{
  int n = snprintf(buf, size, "%lu event%s in %lu block%s",
                   (unsigned long)info->eventCount, info->eventCount == 1 ? "" : "s",
                   (unsigned long)info->blockCount, info->blockCount == 1 ? "" : "s");
  if (n > 0 && (size_t)n < size && recovered.done)
    snprintf(buf + n, size - (size_t)n, ", %lu of them from %s",
             (unsigned long)recovered.events, recovered.path);
}

/* PrintHeader -- --header.  design/telemetry.txt .stream.header */

static void PrintHeader(const EventStreamInfoStruct *info)
{
  time_t seconds = (time_t)(info->startRealtime / 1000000000u);
  struct tm tm;
  char date[64] = "?";
  if (gmtime_r(&seconds, &tm) != NULL)
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);

  printf("version       %u.%u.%u\n", info->major, info->median, info->minor);
  printf("program       %s\n", info->program);
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
  printf("registry      \"%s\": %u kinds, %u events\n", info->registry->name,
         info->registry->kindCount, info->registry->eventCount);
  {
    char counts[4096 + 200];
    if (info->streamEnd)
      printf("end           clean\n");
    else {
      Recovered(counts, sizeof counts, info);
      printf("end           no StreamEnd: recovered after a crash (%s)\n", counts);
    }
  }
}


/* PrintList -- --list: the registry the stream carries.  design/telemetry.txt .reg */

static void PrintList(const EventRegistryStruct *registry)
{
  unsigned i, p;
  printf("registry \"%s\": %u kinds, %u events\n", registry->name, registry->kindCount,
         registry->eventCount);
  printf("\n");
  for (i = 0; i < registry->kindCount; ++i)
    printf("kind %u %s: %s\n", i, registry->kinds[i].name, registry->kinds[i].doc);
  for (i = 0; i < registry->eventCount; ++i) {
    const EventDescStruct *desc = &registry->events[i];
    printf("\nevent 0x%04x %s: kind %s, %s, format %s\n", desc->code, desc->name,
           desc->kind < registry->kindCount ? registry->kinds[desc->kind].name : "?",
           desc->retired ? "retired" : desc->always ? "always" : "checking only",
           desc->format[0] != '\0' ? desc->format : "0");
    printf("  %s\n", desc->doc);
    for (p = 0; p < desc->paramCount; ++p)
      printf("  %c %s: %s\n", desc->format[p], desc->paramNames[p], desc->paramDocs[p]);
  }
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
  /* A clean end says nothing: stderr stays empty for a sound stream. */
  if (!info->streamEnd) {
    char counts[4096 + 200];
    Recovered(counts, sizeof counts, info);
    fprintf(stderr, "%s: %s: the stream did not end cleanly (no StreamEnd event): the program "
            "died before it could end it, and the log was recovered after the crash: %s\n",
            programName, name, counts);
  }
}


/* NoteDropped, ReportDropped -- events the program dropped (EventsDropped:
 * kind, count) are said on stderr at the end, per kind, so that no loss
 * goes unnoticed.  design/telemetry.txt .sol.dropped */
#define EVENTS_DROPPED_CODE 0x0006
static void NoteDropped(const EventRecordStruct *rec, uint64_t *dropped)
{
  if (rec->code == EVENTS_DROPPED_CODE && rec->desc != NULL && rec->desc->paramCount == 2 &&
      rec->values[0].u < EVENT_KIND_LIMIT)
    dropped[rec->values[0].u] += rec->values[1].u;
}

static void ReportDropped(const EventRegistryStruct *registry, const char *name,
                          const uint64_t *dropped)
{
  for (unsigned kind = 0; kind < EVENT_KIND_LIMIT; ++kind)
    if (dropped[kind] != 0)
      fprintf(stderr, "%s: %s: the program dropped %llu events of kind %s (EventsDropped)\n",
              programName, name, (unsigned long long)dropped[kind],
              kind < registry->kindCount ? registry->kinds[kind].name : "?");
}

int main(int argc, char **argv)
{
  uint64_t dropped[EVENT_KIND_LIMIT] = {0};
  OptionsStruct opt;
  InputStruct in;
  EventStreamStruct *stream;
  EventStreamRes res;
  const EventStreamInfoStruct *info;
  FilterStruct *filter;
  EventFormatContextStruct ctx;
  EventRecordStruct rec;
  char msg[512];
  const char *name;
  int err, status = EXIT_SUCCESS;
  size_t lineSize = 1 << 16;
  char *line;

  ParseArgs(argc, argv, &opt);
  name = opt.path == NULL || strcmp(opt.path, "-") == 0 ? "<stdin>" : opt.path;

  err = ReadInput(opt.path, &in);
  if (err != 0) {
    fprintf(stderr, "%s: %s: %s\n", programName, name, strerror(err));
    return EXIT_BAD_STREAM;
  }
  if (RecoverLive(opt.path, name, &in) != 0) {
    InputFree(&in);
    return EXIT_BAD_STREAM;
  }

  res = EventStreamOpen(&stream, in.data, in.size, opt.resync ? EVENT_STREAM_RESYNC : 0,
                        msg, sizeof msg);
  if (res != EventStreamOK) {
    fprintf(stderr, "%s: %s: %s\n", programName, name, msg);
    InputFree(&in);
    return EXIT_BAD_STREAM;
  }
  info = EventStreamInfo(stream);

  filter = malloc(sizeof *filter);
  line = malloc(lineSize);
  if (filter == NULL || line == NULL) {
    fprintf(stderr, "%s: out of memory\n", programName);
    return EXIT_BAD_STREAM;
  }
  FilterInit(filter, &opt, info->registry);

  if (opt.header)
    PrintHeader(info);
  if (opt.list) {
    if (opt.header)
      printf("\n");
    PrintList(info->registry);
  }

  if (opt.count) {
    static size_t counts[0x10000];
    unsigned i;
    if (opt.header || opt.list)
      printf("\n");
    while ((res = EventStreamNext(stream, &rec)) == EventStreamOK) {
      NoteDropped(&rec, dropped);
      if (FilterPasses(filter, &rec))
        ++counts[rec.code & 0xFFFF];
    }
    for (i = 0; i < info->registry->eventCount; ++i) {
      const EventDescStruct *desc = &info->registry->events[i];
      if (counts[desc->code] > 0)
        printf("%10lu %s\n", (unsigned long)counts[desc->code], desc->name);
    }
  } else if (!opt.header && !opt.list) {
    EventStreamFormatContext(stream, &ctx);
    while ((res = EventStreamNext(stream, &rec)) == EventStreamOK) {
      size_t len;
      NoteDropped(&rec, dropped);
      if (!FilterPasses(filter, &rec))
        continue;
      len = EventFormat(line, lineSize, &rec, &ctx);
      if (len >= lineSize) {
        char *bigger = realloc(line, len + 1);
        if (bigger == NULL) {
          fprintf(stderr, "%s: out of memory\n", programName);
          return EXIT_BAD_STREAM;
        }
        line = bigger;
        lineSize = len + 1;
        (void)EventFormat(line, lineSize, &rec, &ctx);
      }
      line[len] = '\n';
      fwrite(line, 1, len + 1, stdout);
    }
  } else {
    res = EventStreamProblemCount(stream) > 0 ? EventStreamERROR : EventStreamEND;
  }

  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "%s: error writing output: %s\n", programName, strerror(errno));
    status = EXIT_BAD_STREAM;
  }
  if (res == EventStreamERROR && ReportProblems(stream, name))
    status = EXIT_BAD_STREAM;
  ReportWarnings(info, name);
  ReportDropped(info->registry, name, dropped);

  free(line);
  free(filter);
  EventStreamClose(stream);
  InputFree(&in);
  return status;
}
