/* <tools/eventcnv/cnvreport.c> -- eventcnv's reports instead of the events
 *
 * .design: design/tools.txt .eventcnv .eventcnv.scan
 *
 * --header (the stream's header and how it ended), --list (the registry
 * it carries), --count, --summary (from the reader's index) and --spans
 * (each span's durations), for one log at a time.
 */

#include "cnvint.h"
#include "export.h"
#include "report.h"
#include "span.h"
#include "textsafe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* filteredCount -- how many events of desc's code pass the filter, in
 * blocks of every kind, as the reader's index counted them.
 * design/tools.txt .eventcnv.scan */
static size_t filteredCount(const EventStreamStruct *stream, const CnvFilterStruct *filter,
                            const EventDescStruct *desc)
{
  const EventRegistryStruct *registry = EventStreamInfo(stream)->registry;
  size_t n = 0;
  for (unsigned kind = 0; kind < registry->kindCount; ++kind)
    if (CnvFilterPasses(filter, kind, desc->code))
      n += EventStreamCount(stream, kind, desc->code);
  return n;
}


/* printCount -- --count: how many events of each name */
static void printCount(const EventStreamStruct *stream, const CnvFilterStruct *filter)
{
  const EventRegistryStruct *registry = EventStreamInfo(stream)->registry;
  for (unsigned i = 0; i < registry->eventCount; ++i) {
    size_t n = filteredCount(stream, filter, &registry->events[i]);
    if (n > 0)
      printf("%10lu %s\n", (unsigned long)n, registry->events[i].name);
  }
}

/* printSummary -- --summary: what the stream holds, from the index.
 * design/tools.txt .eventcnv.scan */
static void printSummary(EventStreamStruct *stream, const CnvFilterStruct *filter,
                         const InputRecoveredStruct *recovered)
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
    dropped += CnvDropped(info, recovered, (unsigned)i);
  printf("dropped     %llu\n", (unsigned long long)dropped);
  for (i = 0; i < EVENT_STREAM_KIND_LIMIT; ++i)
    if (CnvDropped(info, recovered, (unsigned)i) != 0)
      printf("%10llu %s\n", (unsigned long long)CnvDropped(info, recovered, (unsigned)i),
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
      if (CnvFilterPasses(filter, kind, registry->events[e].code))
        n += EventStreamCount(stream, kind, registry->events[e].code);
    if (n > 0)
      printf("%10lu %s\n", (unsigned long)n, registry->kinds[kind].name);
  }

  printf("\nevents\n");
  printCount(stream, filter);
}


/* printHeader -- --header.  design/stream.txt .stream.header */

static void printHeader(const EventStreamInfoStruct *info, size_t problems,
                        const InputRecoveredStruct *recovered)
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
    printf("clock         %llu Hz from %s (the header says %llu Hz)\n",
           (unsigned long long)info->clockHz, info->clockRated ? "ClockRate" : "ClockSync events",
           (unsigned long long)info->headerHz);
  /* How far that rate's times stray from CLOCK_MONOTONIC by the last
   * pair: a time is an estimate, and says how good.  .sol.clock.rate */
  if (info->clockHz != 0 && info->rateSyncClock == 0)
    printf("clock drift   unknown: the rate is the header's estimate, with no ClockSync "
           "100 ms after the start\n");
  else if (info->clockHz != 0 && info->lastSyncClock == info->rateSyncClock)
    printf("clock drift   unknown: no ClockSync after the one that gives the rate\n");
  else if (info->clockHz != 0 && info->lastSyncClock > info->startClock
           && info->lastSyncMonotonic > info->startMonotonic) {
    double at = (double)(info->lastSyncClock - info->startClock) * 1e9 / (double)info->clockHz;
    double real = (double)(info->lastSyncMonotonic - info->startMonotonic);
    printf("clock drift   %+.0f ns at the last ClockSync, %.3f s after the start\n", at - real,
           real / 1e9);
  }
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
    CnvEnding(ending, sizeof ending, info, recovered);
    printf("end           %s\n", ending);
  }
}


/* printList -- --list: the registry the stream carries.  design/registry.txt .reg */

/* paramName -- the name of parameter i of the event of code */
static const char *paramName(const EventRegistryStruct *registry, unsigned code, unsigned i)
{
  const EventDescStruct *desc = EventRegistryLookup(registry, code);
  return desc != NULL && i < desc->paramCount ? desc->paramNames[i] : "?";
}

static const char *eventName(const EventRegistryStruct *registry, unsigned code)
{
  const EventDescStruct *desc = EventRegistryLookup(registry, code);
  return desc != NULL ? desc->name : "?";
}

/* printListSpans -- the spans and counters (2.0.1 on).  design/registry.txt .reg.span */
static void printListSpans(const EventRegistryStruct *registry)
{
  for (unsigned i = 0; i < registry->spanCount; ++i) {
    const EventSpanDescStruct *span = &registry->spans[i];
    printf("\nspan %s: from %s to %s, paired by %s", span->name,
           eventName(registry, span->begin), eventName(registry, span->end),
           paramName(registry, span->begin, span->beginKey));
    if (strcmp(paramName(registry, span->begin, span->beginKey),
               paramName(registry, span->end, span->endKey)) != 0)
      printf(" and %s", paramName(registry, span->end, span->endKey));
    printf("\n");
  }
  for (unsigned i = 0; i < registry->counterCount; ++i) {
    const EventCounterDescStruct *counter = &registry->counters[i];
    printf("\ncounter %s: %s of %s", counter->name, paramName(registry, counter->code, counter->value),
           eventName(registry, counter->code));
    if (counter->key != EVENT_COUNTER_NO_KEY)
      printf(", one per %s", paramName(registry, counter->code, counter->key));
    printf("\n");
  }
}

static void printList(const EventRegistryStruct *registry)
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
  printListSpans(registry);
}



/* CnvPutSeconds -- ns as seconds with 9 decimals, into buf */
void CnvPutSeconds(char *buf, size_t size, int64_t ns)
{
  uint64_t u = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
  snprintf(buf, size, "%s%llu.%09llu", ns < 0 ? "-" : "", (unsigned long long)(u / 1000000000u),
           (unsigned long long)(u % 1000000000u));
}

/* printSpans -- --spans: each span's count, unfinished, and durations.
 * Every event takes part, whatever --kind and --event say: a filter
 * would leave spans unpaired.  Returns 0, or 1 if out of memory.
 * design/export.txt .export.span.stats */
static int printSpans(EventStreamStruct *stream)
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
    CnvPutSeconds(d[0], sizeof d[0], stats.min);
    CnvPutSeconds(d[1], sizeof d[1], stats.median);
    CnvPutSeconds(d[2], sizeof d[2], stats.p99);
    CnvPutSeconds(d[3], sizeof d[3], stats.max);
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
             (unsigned long long)stats.unopened, eventName(registry, registry->spans[i].end),
             stats.unopened == 1 ? "" : "s");
  }
  SpanTrackerDestroy(tracker);
  return 0;
}

/* CnvPrintEach -- --header, --list, --count, --summary and --spans of one
 * log; returns EXIT_SUCCESS, or EXIT_BAD_STREAM having said why */
int CnvPrintEach(const CnvOptionsStruct *opt, CnvLogStruct *log)
{
  const EventStreamInfoStruct *info = EventStreamInfo(log->stream);
  if (opt->header)
    printHeader(info, EventStreamProblemCount(log->stream), &log->recovered);
  if (opt->list) {
    if (opt->header)
      printf("\n");
    printList(info->registry);
  }
  if (opt->count || opt->summary || opt->spans) {   /* design/tools.txt .eventcnv.scan */
    if (opt->header || opt->list)
      printf("\n");
    if (opt->spans && printSpans(log->stream) != 0) {
      Report("out of memory");
      return EXIT_BAD_STREAM;
    } else if (opt->summary) {
      printSummary(log->stream, &log->filter, &log->recovered);
    } else if (opt->count) {
      printCount(log->stream, &log->filter);
    }
  }
  return EXIT_SUCCESS;
}
