/* <tools/heap/heapread.c> -- a recorder log read: every allocation
 * attributed to its call stack
 *
 * .design: design/heap.txt .heap .heap.temporary .heap.peak
 *
 * The events come in time order from the stream layer, or from
 * HeapStream for a sound log (.heap.bounded); they are found by name in
 * the stream's own registry.  What they say is kept by heaplive.c and
 * heapstacks.c (heapreader.h); this file reads them, says how the log
 * ended, and frees what was read.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "heapreader.h"
#include "heapstream.h"
#include "input.h"
#include "textsafe.h"

/* The events read, by name, with the parameters each needs, in the
 * order heaplive.c reads them (design/index.txt .req.self) */
typedef struct EvNameStruct {
  const char *name;
  HeapEv ev;
  const char *params[5];
} EvNameStruct;

static const EvNameStruct evNames[] = {
  /*  name               ev             parameters */
  {"Malloc",          EvMalloc,      {"size", "result"}},
  {"MallocAt",        EvMalloc,      {"size", "result", "stack"}},
  {"Calloc",          EvCalloc,      {"count", "size", "result"}},
  {"CallocAt",        EvCalloc,      {"count", "size", "result", "stack"}},
  {"Realloc",         EvRealloc,     {"old", "result", "size"}},
  {"ReallocAt",       EvRealloc,     {"old", "result", "size", "stack"}},
  {"Free",            EvFree,        {"pointer"}},
  {"FreeSized",       EvFree,        {"pointer"}},
  {"Memalign",        EvMemalign,    {"size", "result"}},
  {"MemalignAt",      EvMemalign,    {"size", "result", "stack"}},
  {"AlignedAlloc",    EvMemalign,    {"size", "result"}},
  {"AlignedAllocAt",  EvMemalign,    {"size", "result", "stack"}},
  {"PosixMemalign",   EvMemalign,    {"size", "result"}},
  {"PosixMemalignAt", EvMemalign,    {"size", "result", "stack"}},
  {"ReallocMove",     EvReallocMove, {"old"}},
  {"Exec",            EvExec,        {"path"}},
  {"StackFrames",     EvStackFrames, {"id", "depth", "index", "f0"}},
  {"MapExec",         EvMapExec,     {"start", "end", "offset", "path"}},
  {"MapUnmap",        EvMapUnmap,    {"start", "end"}},
  {"Forked",          EvForked,      {"parent", "clock"}},
  {"PeakRss",         EvPeakRss,     {"kib"}},
};

/* findEvents -- which codes of the stream's registry are read */
static void findEvents(ReaderStruct *r, const EventRegistryStruct *reg)
{
  for (unsigned i = 0; i < reg->eventCount; ++i) {
    const EventDescStruct *d = &reg->events[i];
    for (size_t e = 0; e < sizeof evNames / sizeof evNames[0]; ++e) {
      CodeStruct c = {(unsigned char)evNames[e].ev, {0}, 0, 0, 0, 0};
      int ok = d->code < EVENT_CODE_LIMIT && strcmp(d->name, evNames[e].name) == 0;
      for (unsigned p = 0; ok && p < 5 && evNames[e].params[p] != NULL; ++p) {
        unsigned j = 0;
        while (j < d->paramCount && strcmp(d->paramNames[j], evNames[e].params[p]) != 0)
          ++j;
        ok = j < d->paramCount;
        c.param[p] = (unsigned char)j;
        c.stacked |= strcmp(evNames[e].params[p], "stack") == 0;
      }
      c.lookFrom = (unsigned char)(c.ev == EvMalloc || c.ev == EvMemalign ? 1 : c.ev == EvCalloc ? 2 : 0);
      c.looks = (unsigned char)(c.ev == EvRealloc ? 2 : c.ev == EvFree || c.ev == EvReallocMove
                                || c.lookFrom != 0 ? 1 : 0);
      c.string = d->paramCount > 0 && d->format[d->paramCount - 1] == 'S';
      if (ok)
        r->codes[d->code] = c;
    }
  }
}

/* sayEnd -- how the log ended, on stderr: at damage, at an exec, or
 * at a death whose last buffers are lost without a live file; 1 if
 * events are lost so, as eventcnv's exit status says too
 * (design/heap.txt .heap.ends) */
static int sayEnd(const ReaderStruct *r, const EventStreamInfoStruct *info, const char *problem,
                  const InputRecoveredStruct *recovered, int bad)
{
  const char *path = r->log->path;
  const HeapLogStruct *log = r->log;
  unsigned long offset = 0;
  if (bad && problem != NULL)
    (void)sscanf(problem, "offset %lu", &offset);
  if (log->allocations + log->frees + log->failed == 0 && !bad
      && (info->streamEnd || info->streamExec || r->execLast || recovered->done))   /* else lost: said below */
    fprintf(stderr, "telltale-heap: %s: the log holds no allocation events: it was not written by "
            "libtelltale-malloc.so, or the program allocated nothing\n", path);
  if (info->streamEnd)
    return 0;
  if (bad)
    fprintf(stderr, "telltale-heap: %s: reading stopped at the damage at offset %lu, so how the log "
            "ended is not known: blocks live then are counted as leaked\n", path, offset);
  else if (info->streamExec || r->execLast)   /* StreamExec from 3.0.2 on (.sol.exec) */
    fprintf(stderr, "telltale-heap: %s: the log ends where the program exec'd another: blocks live "
            "then are counted as leaked\n", path);
  else if (recovered->done)
    fprintf(stderr, "telltale-heap: %s: the stream did not end cleanly (no StreamEnd): the program died "
            "before it could end it, so blocks live at the end are not all leaks; %lu events "
            "were recovered from %s\n", path, (unsigned long)recovered->events, recovered->path);
  else if (info->recoveredUnchecked)   /* design/stream.txt .stream.header.check */
    fprintf(stderr, "telltale-heap: %s: the stream did not end cleanly (no StreamEnd), so blocks live at "
            "the end are not all leaks; offset %u: its flags say its log's live file was "
            "recovered into it when it was archived, but an archive older than %u.0.%u has no "
            "check of its flags, so whether it holds every event cannot be known\n", path,
            EVENT_STREAM_FLAGS_AT, EVENT_VERSION_ZSTD_MAJOR, EVENT_VERSION_FLAGS_CHECKED);
  else
    fprintf(stderr, "telltale-heap: %s: the stream did not end cleanly (no StreamEnd): the program died "
            "before it could end it, so blocks live at the end are not all leaks, and the "
            "events it still held in its buffers (up to the buffer size a thread: 1 MiB unless "
            "TELLTALE_BUFFER said) are lost: %s.live, from which they are recovered, is not "
            "there (the recorder keeps it unless TELLTALE_MAP=off)\n", path, path);
  return !bad && !info->streamExec && !r->execLast && !recovered->done;
}

/* sayChanged -- a warning, once a file, for each mapped file changed
 * since the log began: its frames would be named from the new file */
static void sayChanged(const HeapLogStruct *log, uint64_t startRealtime)
{
  for (size_t i = 0; i < log->mapCount; ++i) {
    struct stat st;
    size_t j = 0;
    uint64_t mtime;
    while (j < i && strcmp(log->maps[j].path, log->maps[i].path) != 0)
      ++j;
    if (j < i || log->maps[i].path == NULL || stat(log->maps[i].path, &st) != 0)
      continue;                 /* said already, or not there: symbols.c names it unknown */
    mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
    if (startRealtime != 0 && mtime > startRealtime) {
      fprintf(stderr, "telltale-heap: %s: ", log->path);
      TextPut(stderr, log->maps[i].path);       /* the log's bytes: .export.text */
      fprintf(stderr, " was changed after the log began, so its frames may be named wrongly\n");
    }
  }
}

/* SourceStruct -- where the events come from: the stream layer, which
 * holds the whole log, or HeapStream, which reads a sound one as it
 * goes (.heap.bounded) */
typedef struct SourceStruct {
  EventStreamStruct *stream;
  HeapStreamStruct *hs;
} SourceStruct;

static const EventStreamInfoStruct *sourceInfo(const SourceStruct *src)
{
  return src->hs != NULL ? HeapStreamInfo(src->hs) : EventStreamInfo(src->stream);
}

/* sourceProblem -- the first problem found, or NULL */
static const char *sourceProblem(const SourceStruct *src)
{
  if (src->hs != NULL)
    return "the log could not be read further";
  return EventStreamProblemCount(src->stream) > 0 ? EventStreamProblem(src->stream, 0) : NULL;
}

/* readOne -- rec, in its turn */
static void readOne(ReaderStruct *r, const EventRecordStruct *rec)
{
  if (r->skew.count > 0)
    SkewExpire(&r->skew, rec->clock, 0);
  if (r->opt != NULL && r->snapNext < r->opt->snapCount)
    HeapReaderSnap(r, rec->clock, 0);
  if (r->seriesLive != NULL)
    HeapReaderSeriesRow(r, rec->clock, 0);
  HeapReaderEvent(r, rec);
}

/* readAhead -- the stream's events; once the live-block table is past
 * AHEAD_FROM bytes, each decoded READ_AHEAD events before its turn with
 * its table slots asked for (HeapReaderPrefetch).  A record's strings
 * last only until the next HeapStreamNext, so one with a string is
 * taken, with those before it, before the next.  design/heap.txt
 * .heap.bounded.time */
#define READ_AHEAD 16
#define AHEAD_FROM ((size_t)4 << 20)
static int readAhead(ReaderStruct *r, HeapStreamStruct *hs)
{
  EventRecordStruct ring[READ_AHEAD];
  size_t head = 0, count = 0;
  int got = 1, hold = 0;
  for (;;) {
    int ahead = r->capacity * sizeof *r->blocks >= AHEAD_FROM;
    while (got > 0 && !hold && count < (ahead ? READ_AHEAD : 1)) {
      EventRecordStruct *rec = &ring[(head + count) % READ_AHEAD];
      if ((got = HeapStreamNext(hs, rec)) <= 0)
        break;
      ++count;
      if (r->codes[rec->code].string)
        hold = 1;
      else if (ahead)
        HeapReaderPrefetch(r, rec);
    }
    if (count == 0)
      return got;
    readOne(r, &ring[head]);
    head = (head + 1) % READ_AHEAD;
    if (--count == 0)
      hold = 0;
  }
}

/* readAll -- every event; 1 if the stream is damaged (said) */
static int readAll(ReaderStruct *r, const SourceStruct *src)
{
  EventRecordStruct rec;
  EventStreamRes res;
  int got;
  if (src->hs != NULL) {
    got = readAhead(r, src->hs);
    SkewExpire(&r->skew, 0, 1);
    HeapReaderSnap(r, 0, 1);
    if (got < 0) {
      fprintf(stderr, "telltale-heap: %s: %s: the report is of the events before it\n", r->log->path,
              sourceProblem(src));
      return 1;
    }
    return 0;
  }
  while ((res = EventStreamNext(src->stream, &rec)) == EventStreamOK)
    readOne(r, &rec);
  SkewExpire(&r->skew, 0, 1);
  HeapReaderSnap(r, 0, 1);
  if (res == EventStreamERROR || EventStreamProblemCount(src->stream) > 0) {
    const char *problem = sourceProblem(src);
    fprintf(stderr, "telltale-heap: %s: %s: the report is of the events before it\n", r->log->path,
            problem != NULL ? problem : "cannot read the stream");
    return 1;
  }
  return 0;
}

/* readWith -- the log from src: read, finished, its end said */
static int readWith(HeapLogStruct *log, const SourceStruct *src,
                    const InputRecoveredStruct *recovered, const HeapReadOptionsStruct *opt)
{
  ReaderStruct *r = HeapReaderRealloc(NULL, sizeof *r);
  int bad;
  HeapReaderInit(r, log, sourceInfo(src), opt);
  findEvents(r, sourceInfo(src)->registry);
  if (opt != NULL && opt->series != NULL) {
    r->seriesLive = HeapReaderRealloc(NULL, 2 * (opt->series->count + 1) * sizeof *r->seriesLive);
    memset(r->seriesLive, 0, 2 * (opt->series->count + 1) * sizeof *r->seriesLive);
    opt->series->rowCount = 0;
  }
  bad = readAll(r, src);
  if (r->seriesLive != NULL) {
    HeapReaderSeriesRow(r, 0, 1);
    opt->series->sliceNs = HeapReaderNs(r, r->startClock + opt->series->sliceClock);
    free(r->seriesLive);
  }
  HeapReaderFinish(r, sourceInfo(src));
  HeapReaderStacksEnd(r);
  if (opt == NULL || !opt->quiet) {
    bad |= sayEnd(r, sourceInfo(src), bad ? sourceProblem(src) : NULL, recovered, bad);
    sayChanged(log, sourceInfo(src)->startRealtime);
  }
  free(r->blocks);
  free(r->threads);
  free(r->addressSlots);
  free(r);
  if (log->stackCount > 0)      /* no room to spare kept */
    log->stacks = HeapReaderRealloc(log->stacks, log->stackCount * sizeof *log->stacks);
  return bad;
}

int HeapRead(const char *path, HeapLogStruct *log, const HeapReadOptionsStruct *opt)
{
  InputStruct in;
  InputRecoveredStruct recovered;
  SourceStruct src = {NULL, NULL};
  char msg[512];
  int err, bad;
  memset(log, 0, sizeof *log);
  memset(&recovered, 0, sizeof recovered);
  log->path = path;
  if (HeapStreamOpen(path, &src.hs) == 0) {     /* .heap.bounded */
    bad = readWith(log, &src, &recovered, opt);
    HeapStreamClose(src.hs);
    return bad;
  }
  if ((err = InputRead(path, &in)) != 0) {
    fprintf(stderr, "telltale-heap: %s: %s\n", path, strerror(err));
    return 1;
  }
  InputRecoverLive(path, &in, &recovered, "heap");
  if (EventStreamOpen(&src.stream, in.data, in.size, 0, msg, sizeof msg) != EventStreamOK) {
    fprintf(stderr, "telltale-heap: %s: %s\n", path, msg);
    InputFree(&in);
    return 1;
  }
  InputArchiveRecovered(EventStreamInfo(src.stream), &recovered);
  bad = readWith(log, &src, &recovered, opt);
  EventStreamClose(src.stream);
  InputFree(&in);
  return bad;
}

int HeapPeek(const char *path, HeapLogStruct *log)
{
  InputStruct in;
  SourceStruct src = {NULL, NULL};
  EventRecordStruct rec;
  ReaderStruct *r;
  char msg[512];
  memset(log, 0, sizeof *log);
  memset(&in, 0, sizeof in);
  log->path = path;
  if (HeapStreamOpen(path, &src.hs) != 0) {
    if (InputRead(path, &in) != 0)
      return 1;
    if (EventStreamOpen(&src.stream, in.data, in.size, 0, msg, sizeof msg) != EventStreamOK) {
      InputFree(&in);
      return 1;
    }
  }
  r = HeapReaderRealloc(NULL, sizeof *r);
  memset(r, 0, sizeof *r);
  r->log = log;
  findEvents(r, sourceInfo(&src)->registry);
  log->pid = sourceInfo(&src)->pid;
  log->startClock = sourceInfo(&src)->startClock;
  /* Forked is the child's first event of its own, after the runtime's */
  for (unsigned n = 0; n < 64 && (src.hs != NULL ? HeapStreamNext(src.hs, &rec) > 0
                                  : EventStreamNext(src.stream, &rec) == EventStreamOK); ++n) {
    const CodeStruct *c = &r->codes[rec.code < EVENT_CODE_LIMIT ? rec.code : 0];
    if (c->ev == EvForked) {
      log->forked = 1;
      log->parentPid = (uint32_t)rec.values[c->param[0]].u;
      log->forkClock = rec.values[c->param[1]].u;
      break;
    }
    if (c->ev != EvNone && c->ev != EvMapExec && c->ev != EvStackFrames)
      break;
  }
  free(r);
  if (src.hs != NULL)
    HeapStreamClose(src.hs);
  else {
    EventStreamClose(src.stream);
    InputFree(&in);
  }
  return 0;
}

void HeapLogFree(HeapLogStruct *log)
{
  free(log->nodes);
  free(log->addresses);
  for (size_t i = 0; i < log->mapCount; ++i)
    free((char *)log->maps[i].path);
  free(log->stacks);
  free(log->maps);
  free(log->samples);
  free(log->program);
  memset(log, 0, sizeof *log);
}
