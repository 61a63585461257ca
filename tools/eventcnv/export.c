/* <tools/eventcnv/export.c> -- what eventcnv's writers share, and the loop
 *
 * .design: design/export.txt .export
 *
 * ExportRun opens the output, reads the stream's events in time order
 * (EventStreamNext), keeps what telltale's own events say about
 * threads, and hands each event that passes the filter to the writer.
 * Nothing is kept per event: memory stays flat however long the log
 * (design/export.txt .export.stream).
 */

#define _POSIX_C_SOURCE 200809L   /* clock_gettime */

#include "export.h"
#include "merge.h"
#include "outpath.h"
#include "textsafe.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#define OUT_BUFFER_SIZE ((size_t)1 << 20)
#define NS_PER_SECOND 1000000000u


/* The output buffer */

void ExportOutFlush(ExportOutStruct *out)
{
  size_t done = 0;
  if (out->fd < 0)
    return;
  while (done < out->used && out->err == 0) {
    ssize_t n = write(out->fd, out->buf + done, out->used - done);
    if (n < 0) {
      if (errno != EINTR)
        out->err = errno;
      continue;
    }
    done += (size_t)n;
  }
  out->used = 0;
}

/* ExportOutGrow -- room for need more bytes: flush a file's buffer, or
 * grow a memory one */
void ExportOutGrow(ExportOutStruct *out, size_t need)
{
  if (out->fd >= 0) {
    ExportOutFlush(out);
    if (out->size - out->used >= need)
      return;
  }
  size_t size = out->size > 0 ? out->size : 256;
  while (size - out->used < need)
    size *= 2;
  char *bigger = realloc(out->buf, size);
  if (bigger == NULL) {
    if (out->err == 0)
      out->err = ENOMEM;
    return;
  }
  out->buf = bigger;
  out->size = size;
}

/* decimalDigits -- how many digits v has in decimal */
static unsigned decimalDigits(uint64_t v)
{
  static const uint64_t tens[] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull,
    1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
    100000000000000ull, 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
    1000000000000000000ull, 10000000000000000000ull,
  };
  unsigned n = (unsigned)(64 - __builtin_clzll(v | 1)) * 1233 >> 12;   /* log10 of 2^bits */
  return n + (v >= tens[n]) + (n == 0 && v == 0);
}

/* digitsTo -- v's last n digits, two at a time from the end, at p */
static void digitsTo(char *p, uint64_t v, unsigned n)
{
  char *q = p + n;
  for (; n >= 2 && v > UINT32_MAX; n -= 2) {
    unsigned pair = (unsigned)(v % 100) * 2;
    v /= 100;
    q -= 2;
    memcpy(q, &EventDecimalPairs[pair], 2);
  }
  for (uint32_t w = (uint32_t)v; n >= 2; n -= 2) {   /* cheaper in 32 bits */
    unsigned pair = w % 100 * 2;
    w /= 100;
    q -= 2;
    memcpy(q, &EventDecimalPairs[pair], 2);
    v = w;
  }
  if (n == 1)
    *--q = (char)('0' + v % 10);
}

char *ExportUnsignedTo(char *p, uint64_t v)
{
  unsigned n = decimalDigits(v);
  digitsTo(p, v, n);
  return p + n;
}

char *ExportZeroPaddedTo(char *p, uint64_t v, unsigned n)
{
  digitsTo(p, v, n);
  return p + n;
}

void ExportPutUnsigned(ExportOutStruct *out, uint64_t v)
{
  char *p = ExportReserve(out, 20);
  if (p != NULL)
    out->used = (size_t)(ExportUnsignedTo(p, v) - out->buf);
}

void ExportPutSigned(ExportOutStruct *out, int64_t v)
{
  if (v < 0) {
    ExportPutChar(out, '-');
    ExportPutUnsigned(out, (uint64_t)0 - (uint64_t)v);
  } else {
    ExportPutUnsigned(out, (uint64_t)v);
  }
}

char *ExportHexTo(char *p, uint64_t v)
{
  unsigned n = v != 0 ? (unsigned)(67 - __builtin_clzll(v)) / 4 : 1;   /* digits */
  char *end = p + 2 + n, *q = end;
  p[0] = '0';
  p[1] = 'x';
  for (; n >= 2; n -= 2, v >>= 8) {   /* two digits a step, from the end */
    q -= 2;
    memcpy(q, &EventHexPairs[2 * (v & 0xFF)], 2);
  }
  if (n == 1)
    *--q = EventHexPairs[2 * (v & 0xF) + 1];
  return end;
}

void ExportPutHex(ExportOutStruct *out, uint64_t v)
{
  char *p = ExportReserve(out, 18);
  if (p != NULL)
    out->used = (size_t)(ExportHexTo(p, v) - out->buf);
}

void ExportPutDouble(ExportOutStruct *out, double d)
{
  char buf[40];
  size_t n = EventFormatDouble(buf, sizeof buf, d);
  ExportPut(out, buf, n < sizeof buf ? n : sizeof buf - 1);
}

char *ExportJsonStringTo(char *o, const char *s, size_t len)
{
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  *o++ = '"';
  while (i < len) {
    unsigned c = p[i];
    size_t n;
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      *o++ = (char)c;
      ++i;
      continue;
    }
    if (c >= 0x80 && !TextUnsafe(p + i, len - i, &n)) {
      memcpy(o, p + i, n);
      o += n;
      i += n;
      continue;
    }
    if (c == 0xC2 && n == 1 && TextUtf8Length(p + i, len - i) == 2) {
      /* a C1 control, U+0080 to U+009F: escaped, as a terminal would
       * act on it (.export.text) */
      memcpy(o, "\\u00", 4);
      o[4] = "0123456789abcdef"[p[i + 1] >> 4];
      o[5] = "0123456789abcdef"[p[i + 1] & 0xF];
      o += 6;
      i += 2;
      continue;
    }
    *o++ = '\\';
    switch (c) {
    case '"': *o++ = '"'; break;
    case '\\': *o++ = '\\'; break;
    case '\n': *o++ = 'n'; break;
    case '\t': *o++ = 't'; break;
    case '\r': *o++ = 'r'; break;
    default:
      if (c < 0x20 || c == 0x7F) {
        memcpy(o, "u00", 3);
        o[3] = "0123456789abcdef"[c >> 4];
        o[4] = "0123456789abcdef"[c & 0xF];
      } else {
        memcpy(o, "ufffd", 5);   /* a byte of invalid UTF-8 */
      }
      o += 5;
    }
    ++i;
  }
  *o++ = '"';
  return o;
}

void ExportPutJsonString(ExportOutStruct *out, const char *s, size_t len)
{
  char *p = ExportReserve(out, EXPORT_JSON_STRING_MAX(len));
  if (p != NULL)
    out->used = (size_t)(ExportJsonStringTo(p, s, len) - out->buf);
}


/* Threads, times, fields */

static size_t slot(uint32_t serial, size_t limit)
{
  return (size_t)(serial * 2654435761u) & (limit - 1);
}

const ExportThreadStruct *ExportThreadFind(const ExportStruct *ex, uint32_t serial)
{
  if (ex->threadLimit == 0)
    return NULL;
  for (size_t i = slot(serial, ex->threadLimit);; i = (i + 1) & (ex->threadLimit - 1)) {
    const ExportThreadStruct *thread = &ex->threads[i];
    if (!thread->used)
      return NULL;
    if (thread->serial == serial)
      return thread;
  }
}

ExportThreadStruct *ExportThread(ExportStruct *ex, uint32_t serial)
{
  ExportThreadStruct *thread = (ExportThreadStruct *)ExportThreadFind(ex, serial);
  if (thread != NULL)
    return thread;
  if (2 * (ex->threadCount + 1) > ex->threadLimit) {   /* at most half full */
    size_t limit = ex->threadLimit > 0 ? ex->threadLimit * 2 : 64;
    ExportThreadStruct *old = ex->threads, *table = calloc(limit, sizeof *table);
    if (table == NULL)
      return NULL;
    for (size_t i = 0; i < ex->threadLimit; ++i)
      if (old[i].used) {
        size_t j = slot(old[i].serial, limit);
        while (table[j].used)
          j = (j + 1) & (limit - 1);
        table[j] = old[i];
      }
    free(old);
    ex->threads = table;
    ex->threadLimit = limit;
  }
  size_t i = slot(serial, ex->threadLimit);
  while (ex->threads[i].used)
    i = (i + 1) & (ex->threadLimit - 1);
  thread = &ex->threads[i];
  thread->used = 1;
  thread->serial = serial;
  ++ex->threadCount;
  return thread;
}

/* ExportClockNs -- ns from the stream's start to clock */
int64_t ExportClockNs(const EventFormatContextStruct *fmt, EventClock clock)
{
  return MergeClockNs(fmt, clock);
}

int64_t ExportElapsedNs(const ExportStruct *ex, EventClock clock)
{
  return MergeAddNs(ExportClockNs(&ex->fmt, clock), ex->offsetNs);
}

void ExportPutJsonFields(ExportOutStruct *out, const ExportStruct *ex, const EventRecordStruct *rec)
{
  ExportPutChar(out, '{');
  ExportPutJsonMembers(out, ex, rec);
  ExportPutChar(out, '}');
}

size_t ExportJsonMembersMax(const ExportStruct *ex, const EventRecordStruct *rec)
{
  const EventDescStruct *desc = rec->desc;
  const ExportNamesStruct *names = &ex->names[desc - ex->registry->events];
  size_t max = EXPORT_JSON_STRING_MAX(rec->stringLength);
  for (unsigned i = 0; i < desc->paramCount; ++i)
    max += 1 + names->keyLengths[i] + EXPORT_JSON_VALUE_MAX;
  return max;
}

char *ExportJsonMembersTo(char *o, const ExportStruct *ex, const EventRecordStruct *rec)
{
  const EventDescStruct *desc = rec->desc;
  const ExportNamesStruct *names = &ex->names[desc - ex->registry->events];
  for (unsigned i = 0; i < desc->paramCount; ++i) {
    const EventValueUnion *v = &rec->values[i];
    if (i > 0)
      *o++ = ',';
    o = ExportCopy(o, names->keys[i], names->keyLengths[i]);
    switch (desc->format[i]) {
    case 'P': case 'A':
      *o++ = '"';
      o = ExportHexTo(o, v->u);
      *o++ = '"';
      break;
    case 'W':   /* a string above 2^53, where a double (what most JSON
                   readers make of a number) would round it.
                   design/export.txt .export.json */
      if (v->u > ((uint64_t)1 << 53)) {
        *o++ = '"';
        o = ExportUnsignedTo(o, v->u);
        *o++ = '"';
      } else {
        o = ExportUnsignedTo(o, v->u);
      }
      break;
    case 'U':
      o = ExportUnsignedTo(o, v->u);
      break;
    case 'D':
      if (isfinite(v->d)) {   /* with a point, so that -0.0 stays itself */
        size_t n = EventFormatDouble(o, 40, v->d);
        if (memchr(o, '.', n) == NULL && memchr(o, 'e', n) == NULL)
          o[n++] = '.', o[n++] = '0';
        o += n;
      } else {          /* JSON has no NaN or infinity: "nan", "inf", "-inf" */
        *o++ = '"';
        o += EventFormatDouble(o, 40, v->d);
        *o++ = '"';
      }
      break;
    case 'S':
      o = ExportJsonStringTo(o, v->s, rec->stringLength);
      break;
    default:
      memcpy(o, "null", 4);
      o += 4;
    }
  }
  return o;
}

void ExportPutJsonMembers(ExportOutStruct *out, const ExportStruct *ex, const EventRecordStruct *rec)
{
  char *p = ExportReserve(out, ExportJsonMembersMax(ex, rec));
  if (p != NULL)
    out->used = (size_t)(ExportJsonMembersTo(p, ex, rec) - out->buf);
}

int ExportPutJsonLabels(ExportOutStruct *out, const char *prefix, const ExportStruct *ex,
                        const EventRecordStruct *rec)
{
  const EventDescStruct *desc = rec->desc;
  int any = 0;
  if (ex->fmt.label == NULL)
    return 0;
  for (unsigned i = 0; i < desc->paramCount; ++i) {
    const char *label;
    if (!EventTypeOf(desc->format[i])->hex)
      continue;
    label = ex->fmt.label(ex->fmt.labelClosure, rec->values[i].u);
    if (label == NULL)
      continue;
    if (any) {
      ExportPutChar(out, ',');
    } else {
      ExportPutString(out, prefix);
      ExportPutChar(out, '{');
    }
    ExportPutJsonString(out, desc->paramNames[i], strlen(desc->paramNames[i]));
    ExportPutChar(out, ':');
    ExportPutJsonString(out, label, strlen(label));
    any = 1;
  }
  if (any)
    ExportPutChar(out, '}');
  return any;
}


/* Progress.  design/tools.txt .export.progress */

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* programStart -- when eventcnv started: a conversion has taken a
 * second from there, its reading and indexing of the logs included */
static double programStart;

__attribute__((constructor)) static void programStarts(void)
{
  programStart = now();
}

/* outputOnStdout -- the conversion writes stdout (ProgressOutput) */
static int outputOnStdout;

void ProgressOutput(int onStdout)
{
  outputOnStdout = onStdout;
}

/* quietFor -- the output is on a terminal or a pipe (a pager, most
 * likely, drawing on the same terminal as stderr): lines drawn over
 * it would spoil it */
static int quietFor(void)
{
  struct stat st;
  return outputOnStdout
    && (isatty(STDOUT_FILENO) || (fstat(STDOUT_FILENO, &st) == 0 && S_ISFIFO(st.st_mode)));
}

void ProgressStart(ProgressStruct *progress, uint64_t total)
{
  memset(progress, 0, sizeof *progress);
  progress->on = isatty(STDERR_FILENO) && !quietFor();
  progress->total = total;
  progress->next = 1u << 16;
  progress->start = progress->on ? programStart : 0;
}

void ProgressShow(ProgressStruct *progress, uint64_t done)
{
  double elapsed = now() - progress->start;
  progress->next = done + (1u << 16);
  if (elapsed < 1.0)
    return;
  fprintf(stderr, "\reventcnv: %3u%%, %llu of %llu events, %.0f s",
          progress->total > 0 ? (unsigned)(done * 100 / progress->total) : 0,
          (unsigned long long)done, (unsigned long long)progress->total, elapsed);
  progress->shown = 1;
}

/* The loop's progress, kept until the writer's end: a writer whose end
 * takes a while after the last event is read (SQLite's inserting
 * thread, its index and commit) says so too (ProgressWaiting), at most
 * five times a second, however often it is called. */
static ProgressStruct loopProgress;
static double waitingShown;

void ProgressWaiting(void)
{
  double t;
  if (!loopProgress.on)
    return;
  t = now();
  if (t - waitingShown < 0.2)
    return;
  waitingShown = t;
  ProgressShow(&loopProgress, loopProgress.total);
}

void ProgressEnd(ProgressStruct *progress)
{
  if (progress->shown)
    fputs("\r\033[K", stderr);        /* the line cleared: what follows is said alone */
  progress->shown = 0;
}


/* The loop */

static const ExportWriterStruct *const writers[] = {
  &ExportJsonl, &ExportCsv, &ExportChrome, &ExportSqlite, &ExportCtf, &ExportHtml,
  &ExportClickhouse, &ExportClickhouseDdl, &ExportClickhouseNative,
};

static const ExportWriterStruct *findWriter(const char *name)
{
  for (size_t i = 0; i < sizeof writers / sizeof writers[0]; ++i)
    if (strcmp(writers[i]->name, name) == 0)
      return writers[i];
  return NULL;
}

int ExportFormatKnown(const char *name)
{
  return findWriter(name) != NULL;
}

int ExportNeedsFile(const char *name)
{
  const ExportWriterStruct *writer = findWriter(name);
  return writer != NULL && writer->needsFile;
}

int ExportOneLog(const char *name)
{
  const ExportWriterStruct *writer = findWriter(name);
  return writer != NULL && writer->oneLog;
}

/* ownEvent -- telltale's own event of this name in the registry, or NULL */
static const EventDescStruct *ownEvent(const EventRegistryStruct *registry, const char *name)
{
  for (unsigned i = 0; i < registry->eventCount; ++i)
    if (registry->events[i].code < EVENT_CODE_RESERVED_LIMIT
        && strcmp(registry->events[i].name, name) == 0)
      return &registry->events[i];
  return NULL;
}

/* jsonDup -- s as a JSON string, then tail, in malloc'd memory */
static char *jsonDup(const char *s, const char *tail, size_t *lengthReturn)
{
  ExportOutStruct mem;
  memset(&mem, 0, sizeof mem);
  mem.fd = -1;
  ExportPutJsonString(&mem, s, strlen(s));
  ExportPutString(&mem, tail);
  ExportPutChar(&mem, '\0');
  if (mem.err != 0) {
    free(mem.buf);
    return NULL;
  }
  *lengthReturn = mem.used - 1;
  return mem.buf;
}

/* makeNames -- every event's and kind's names as JSON, once */
static int makeNames(ExportSourceStruct *ex)
{
  const EventRegistryStruct *registry = ex->registry;
  ex->names = calloc(registry->eventCount + 1, sizeof *ex->names);
  if (ex->names == NULL)
    return 1;
  for (unsigned i = 0; i < registry->eventCount; ++i) {
    const EventDescStruct *desc = &registry->events[i];
    ExportNamesStruct *names = &ex->names[i];
    names->event = jsonDup(desc->name, "", &names->eventLength);
    if (names->event == NULL)
      return 1;
    for (unsigned p = 0; p < desc->paramCount && p < EVENT_PARAM_MAX; ++p) {
      names->keys[p] = jsonDup(desc->paramNames[p], ":", &names->keyLengths[p]);
      if (names->keys[p] == NULL)
        return 1;
    }
  }
  for (unsigned k = 0; k < EVENT_STREAM_KIND_LIMIT; ++k) {
    ex->kindNames[k] = jsonDup(k < registry->kindCount ? registry->kinds[k].name : "?", "",
                               &ex->kindNameLengths[k]);
    if (ex->kindNames[k] == NULL)
      return 1;
  }
  return 0;
}

static void freeNames(ExportSourceStruct *ex)
{
  if (ex->names != NULL)
    for (unsigned i = 0; i < ex->registry->eventCount; ++i) {
      free(ex->names[i].event);
      for (unsigned p = 0; p < EVENT_PARAM_MAX; ++p)
        free(ex->names[i].keys[p]);
    }
  free(ex->names);
  for (unsigned k = 0; k < EVENT_STREAM_KIND_LIMIT; ++k)
    free(ex->kindNames[k]);
}

/* track -- what telltale's own events say about threads, kept whether
 * or not the event passes the filter */
static int track(ExportStruct *ex, const EventRecordStruct *rec)
{
  ExportThreadStruct *thread;
  if (rec->desc == ex->threadStart) {
    thread = ExportThread(ex, (uint32_t)rec->values[0].u);
    if (thread == NULL)
      return 1;
    thread->started = 1;
    thread->osid = rec->values[1].u;
  } else if (rec->desc == ex->threadName) {
    thread = ExportThread(ex, (uint32_t)rec->values[0].u);
    if (thread == NULL)
      return 1;
    thread->name = rec->values[1].s;
    thread->nameLength = rec->stringLength;
  }
  return 0;
}

/* load, save -- a log's part of ex, in and out */
static void load(ExportStruct *ex, const ExportSourceStruct *src)
{
  ex->stream = src->stream;
  ex->info = src->info;
  ex->registry = src->registry;
  ex->fmt = src->fmt;
  ex->threads = src->threads;
  ex->threadLimit = src->threadLimit;
  ex->threadCount = src->threadCount;
  ex->threadStart = src->threadStart;
  ex->threadName = src->threadName;
  ex->intern = src->intern;
  ex->label = src->label;
  ex->names = src->names;
  memcpy(ex->kindNames, src->kindNames, sizeof ex->kindNames);
  memcpy(ex->kindNameLengths, src->kindNameLengths, sizeof ex->kindNameLengths);
  ex->offsetNs = src->offsetNs;
}

static void save(const ExportStruct *ex, ExportSourceStruct *src)
{
  src->threads = ex->threads;           /* ExportThread may have grown it */
  src->threadLimit = ex->threadLimit;
  src->threadCount = ex->threadCount;
}

int ExportUse(ExportStruct *ex, size_t i)
{
  if (i == ex->source)
    return 0;
  save(ex, &ex->sources[ex->source]);
  ex->source = i;
  load(ex, &ex->sources[i]);
  return ex->state != NULL && ex->writer->source != NULL ? ex->writer->source(ex) : 0;
}

/* sourcesLoad -- each log's part: its registry's names, its own events */
static int sourcesLoad(ExportStruct *ex, EventStreamStruct **streams, size_t count)
{
  ex->sources = calloc(count, sizeof *ex->sources);
  if (ex->sources == NULL)
    return 1;
  ex->sourceCount = count;
  for (size_t i = 0; i < count; ++i) {
    ExportSourceStruct *src = &ex->sources[i];
    src->stream = streams[i];
    src->info = EventStreamInfo(streams[i]);
    src->registry = src->info->registry;
    EventStreamFormatContext(streams[i], &src->fmt);
    src->threadStart = ownEvent(src->registry, "ThreadStart");
    src->threadName = ownEvent(src->registry, "ThreadName");
    src->intern = ownEvent(src->registry, "Intern");
    src->label = ownEvent(src->registry, "Label");
    if (i == 0 || src->info->startRealtime < ex->originNs)
      ex->originNs = src->info->startRealtime;
    if (makeNames(src) != 0)
      return 1;
  }
  for (size_t i = 0; i < count; ++i)
    ex->sources[i].offsetNs = MergeWallNs(ex->sources[i].info->startRealtime - ex->originNs);
  load(ex, &ex->sources[0]);
  return 0;
}

/* openOut -- the output of a writer that streams: stdout or the file */
static int openOut(ExportStruct *ex)
{
  ex->out.fd = STDOUT_FILENO;
  if (ex->outPath != NULL) {
    ex->out.fd = OutPathOpen("eventcnv", ex->outPath, 0);   /* .tools.output */
    if (ex->out.fd < 0)
      return 1;
  }
  ex->out.buf = malloc(OUT_BUFFER_SIZE);
  ex->out.size = ex->out.buf != NULL ? OUT_BUFFER_SIZE : 0;
  return 0;
}

/* mergeLoop -- every event of the logs, merged, through the writer; with a
 * window, only those at its offsets, numbered on from its rows */
static int mergeLoop(ExportStruct *ex, ExportFilterFunction filter, void *closure,
                     ExportWindowStruct *window)
{
  const ExportWriterStruct *writer = ex->writer;
  MergeStruct merge;
  EventRecordStruct *rec;
  size_t source;
  uint64_t seq = 0, read = 0, total = 0;
  int status = 0;
  ProgressStruct *progress = &loopProgress;
  EventStreamStruct **streams = malloc(ex->sourceCount * sizeof *streams);
  if (streams == NULL)
    return 1;
  for (size_t i = 0; i < ex->sourceCount; ++i) {
    streams[i] = ex->sources[i].stream;
    total += ex->sources[i].info->eventCount;
  }
  if (MergeInit(&merge, streams, ex->sourceCount) != 0) {
    free(streams);
    return 1;
  }
  ProgressStart(progress, total);
  while (status == 0 && MergeNext(&merge, &source, &rec)) {
    ProgressTick(progress, ++read);
    if (rec->desc == NULL)
      continue;
    if (ExportUse(ex, source) != 0 || track(ex, rec) != 0) {
      status = 1;
      break;
    }
    if (writer->every != NULL && writer->every(ex, rec, seq) != 0) {
      status = 1;
      break;
    }
    if (window != NULL && (rec->offset < window->from || rec->offset >= window->to))
      continue;       /* shipped before, or in a block not yet whole: tracked alone */
    if (window != NULL && rec->code == EVENT_CODE_STREAM_END)
      window->streamEnd = 1;
    if (filter(closure, source, rec->kind, rec->code)
        && writer->event(ex, rec, window != NULL ? window->rows++ : seq) != 0) {
      status = 1;
      break;
    }
    ++seq;
    if (ex->out.err != 0)
      break;
  }
  MergeFinish(&merge);
  free(streams);
  return status;
}

/* passesAll -- whether filter passes every event the log may hold:
 * each of its registry's events in each of its kinds */
static int passesAll(const ExportStruct *ex, ExportFilterFunction filter, void *closure)
{
  const EventRegistryStruct *registry = ex->registry;
  for (unsigned kind = 0; kind < registry->kindCount; ++kind)
    for (unsigned i = 0; i < registry->eventCount; ++i)
      if (!filter(closure, ex->source, kind, registry->events[i].code))
        return 0;
  return 1;
}

int ExportRun(EventStreamStruct **streams, size_t count, const char *name, const char *outPath,
              ExportFilterFunction filter, void *closure)
{
  return ExportRunWindow(streams, count, name, outPath, filter, closure, NULL);
}

int ExportRunWindow(EventStreamStruct **streams, size_t count, const char *name,
                    const char *outPath, ExportFilterFunction filter, void *closure,
                    ExportWindowStruct *window)
{
  const ExportWriterStruct *writer = findWriter(name);
  ExportStruct ex;
  int status = 0, begun = 0;

  if (writer == NULL)
    return 1;
  memset(&ex, 0, sizeof ex);
  ex.writer = writer;
  ex.outPath = outPath != NULL && strcmp(outPath, "-") == 0 ? NULL : outPath;
  ex.out.fd = -1;
  if (!writer->needsFile && openOut(&ex) != 0)
    return 1;

  /* Once begun, a writer's end is called however begin and the loop
   * end: it frees its state. */
  if (sourcesLoad(&ex, streams, count) != 0) {
    fprintf(stderr, "eventcnv: out of memory\n");
    status = 1;
  } else {
    begun = 1;
    if (writer->begin(&ex) != 0)   /* it said why */
      status = 1;
  }
  if (status == 0) {
    int whole = -1;
    if (writer == &ExportCtf && count == 1 && window == NULL && passesAll(&ex, filter, closure))
      whole = ExportCtfBlocks(&ex);
    if (whole > 0 || (whole < 0 && mergeLoop(&ex, filter, closure, window) != 0))
      status = 1;
  }
  if (begun && writer->end(&ex) != 0)
    status = 1;
  ProgressEnd(&loopProgress);       /* the loop's, after the writer's end */
  ExportOutFlush(&ex.out);
  if (ex.out.err != 0) {
    fprintf(stderr, "eventcnv: error writing %s: %s\n", ex.outPath != NULL ? ex.outPath : "output",
            strerror(ex.out.err));
    status = 1;
  }
  if (ex.outPath != NULL && ex.out.fd >= 0 && close(ex.out.fd) != 0 && status == 0) {
    fprintf(stderr, "eventcnv: error writing %s: %s\n", ex.outPath, strerror(errno));
    status = 1;
  }
  free(ex.out.buf);
  if (ex.sources != NULL) {
    save(&ex, &ex.sources[ex.source]);
    for (size_t i = 0; i < ex.sourceCount; ++i) {
      free(ex.sources[i].threads);
      freeNames(&ex.sources[i]);
    }
  }
  free(ex.sources);
  return status;
}
