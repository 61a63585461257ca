/* <tools/eventcnv/export.h> -- eventcnv's writers for other formats
 *
 * .design: design/export.txt .export
 *
 * eventcnv --format FMT writes a stream's events in another format:
 * jsonl, csv and chrome stream to stdout or -o FILE; sqlite writes a
 * database file, ctf a trace directory.  export.c holds what every writer shares (the output
 * buffer, times, threads, JSON values) and the loop that feeds a
 * writer the events in time order; each format is one file.
 */

#ifndef export_h
#define export_h

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "eventread.h"
#include "merge.h"

/* ExportFilterFunction -- 1 if an event of this kind and code, in the
 * log of index source, is to be written: eventcnv's --kind and --event */
typedef int (*ExportFilterFunction)(void *closure, size_t source, unsigned kind, unsigned code);

/* ExportFormatKnown -- 1 if name is a format ExportRun writes (not text) */
extern int ExportFormatKnown(const char *name);

/* ExportNeedsFile -- 1 if the format cannot go to stdout (sqlite) */
extern int ExportNeedsFile(const char *name);

/* ExportOneLog -- 1 if the format takes one log only (ctf) */
extern int ExportOneLog(const char *name);

/* ExportRun -- write the events of the count streams that pass filter,
 * merged on one timeline (merge.h), in format name to outPath (NULL or
 * "-": stdout).  Returns 0, or 1 after saying on stderr why the output
 * could not be written. */
extern int ExportRun(EventStreamStruct **streams, size_t count, const char *name,
                     const char *outPath, ExportFilterFunction filter, void *closure);

/* ExportWindowStruct -- a part of one log for ExportRunWindow: the
 * events at offsets from .. to-1, each written with seq rows, rows
 * then counted on, so that --follow's looks number their rows in the
 * order shipped.  design/export.txt .export.clickhouse.follow */
typedef struct ExportWindowStruct {
  size_t from, to;
  uint64_t rows;
  int streamEnd;                /* set if a StreamEnd is in the window */
} ExportWindowStruct;

/* ExportRunWindow -- ExportRun, with window (may be NULL: every event) */
extern int ExportRunWindow(EventStreamStruct **streams, size_t count, const char *name,
                           const char *outPath, ExportFilterFunction filter, void *closure,
                           ExportWindowStruct *window);

/* ExportText -- eventcnv's text lines (EventFormat) of the events of
 * stream that pass filter, to out, formatted on jobs threads (0: one a
 * processor) and written in time order.  Returns 0, or 1 if out of
 * memory.  exporttext.c; design/tools.txt .eventcnv.text */
extern int ExportText(EventStreamStruct *stream, FILE *out, unsigned jobs,
                      ExportFilterFunction filter, void *closure);


/* What the writers share: export.c */

/* ExportOutStruct -- a buffered output: a file descriptor, or memory
 * that grows (fd -1) */
typedef struct ExportOutStruct {
  char *buf;
  size_t size, used;
  int fd;
  int err;                      /* errno of the first failed write, or 0 */
} ExportOutStruct;

extern void ExportOutFlush(ExportOutStruct *out);
extern void ExportOutGrow(ExportOutStruct *out, size_t need);

static inline void ExportPut(ExportOutStruct *out, const char *s, size_t n)
{
  if (out->size - out->used < n)
    ExportOutGrow(out, n);
  if (out->size - out->used < n)     /* no memory: err is set */
    return;
  memcpy(out->buf + out->used, s, n);
  out->used += n;
}

/* ExportReserve -- room for n bytes at out->buf + out->used, or NULL */
static inline char *ExportReserve(ExportOutStruct *out, size_t n)
{
  if (out->size - out->used < n)
    ExportOutGrow(out, n);
  return out->size - out->used < n ? NULL : out->buf + out->used;
}

/* ExportCopy -- n bytes from s to p, returning p + n: memcpy, but
 * without a call for the short strings of a line (names, members) */
static inline char *ExportCopy(char *p, const char *s, size_t n)
{
  if (n >= 8 && n <= 16) {      /* two copies that overlap */
    memcpy(p, s, 8);
    memcpy(p + n - 8, s + n - 8, 8);
  } else if (n >= 4 && n < 8) {
    memcpy(p, s, 4);
    memcpy(p + n - 4, s + n - 4, 4);
  } else if (n < 4) {
    for (size_t i = 0; i < n; ++i)
      p[i] = s[i];
  } else {
    memcpy(p, s, n);
  }
  return p + n;
}

static inline void ExportPutString(ExportOutStruct *out, const char *s)
{
  ExportPut(out, s, strlen(s));
}

static inline void ExportPutChar(ExportOutStruct *out, char c)
{
  if (out->used == out->size)
    ExportOutGrow(out, 1);
  if (out->used < out->size)
    out->buf[out->used++] = c;
}

/* ExportUnsignedTo, ExportHexTo, ExportJsonStringTo -- v in decimal,
 * v as 0x1f, s as ExportPutJsonString puts it, at p, which has room
 * (20, 18 and EXPORT_JSON_STRING_MAX(len) bytes); they return the end.
 * ExportZeroPaddedTo -- v's last n digits, zeros before them */
#define EXPORT_JSON_STRING_MAX(len) (6 * (len) + 2)
extern char *ExportUnsignedTo(char *p, uint64_t v);
extern char *ExportZeroPaddedTo(char *p, uint64_t v, unsigned n);
extern char *ExportHexTo(char *p, uint64_t v);
extern char *ExportJsonStringTo(char *p, const char *s, size_t len);

extern void ExportPutUnsigned(ExportOutStruct *out, uint64_t v);
extern void ExportPutSigned(ExportOutStruct *out, int64_t v);
extern void ExportPutHex(ExportOutStruct *out, uint64_t v);    /* 0x1f */
extern void ExportPutDouble(ExportOutStruct *out, double d);  /* %.17g, nan, inf */

/* ExportPutJsonString -- s (len bytes) as a JSON string, quoted:
 * control bytes escaped, each byte of invalid UTF-8 as U+FFFD */
extern void ExportPutJsonString(ExportOutStruct *out, const char *s, size_t len);

/* ExportThreadStruct -- what the stream said about a thread so far:
 * ThreadStart's OS id and ThreadName's name */
typedef struct ExportThreadStruct {
  uint32_t serial;
  int used;                     /* this slot of the table holds a thread */
  int started;                  /* osid is known */
  uint64_t osid;
  const char *name;             /* NULL until named; points into the stream */
  size_t nameLength;
  int announced;                /* a writer's own flag (chrome: metadata written) */
  void *writer;                 /* a writer's own data (ctf: the thread's stream) */
} ExportThreadStruct;

/* ExportNamesStruct -- an event's names as JSON, made once: its name
 * quoted, and each parameter's "name": */
typedef struct ExportNamesStruct {
  char *event;
  size_t eventLength;
  char *keys[EVENT_PARAM_MAX];
  size_t keyLengths[EVENT_PARAM_MAX];
} ExportNamesStruct;

typedef struct ExportWriterStruct ExportWriterStruct;

/* ExportSourceStruct -- one log's part of an export: what ExportStruct
 * holds for the log of the event at hand.  design/export.txt .export.merge */
typedef struct ExportSourceStruct {
  EventStreamStruct *stream;
  const EventStreamInfoStruct *info;
  const EventRegistryStruct *registry;
  EventFormatContextStruct fmt;
  ExportThreadStruct *threads;
  size_t threadLimit, threadCount;
  const EventDescStruct *threadStart, *threadName, *intern, *label;
  ExportNamesStruct *names;
  char *kindNames[EVENT_STREAM_KIND_LIMIT];
  size_t kindNameLengths[EVENT_STREAM_KIND_LIMIT];
  int64_t offsetNs;             /* its start, after the earliest log's */
} ExportSourceStruct;

/* ExportStruct -- one export in progress.  Its fields from stream to
 * kindNameLengths are those of the log whose event is at hand (source):
 * ExportRun swaps them when the log changes. */
typedef struct ExportStruct {
  EventStreamStruct *stream;
  const EventStreamInfoStruct *info;
  const EventRegistryStruct *registry;
  EventFormatContextStruct fmt; /* the clock and labels, as eventcnv's text */
  ExportOutStruct out;
  const char *outPath;          /* NULL: stdout */
  ExportThreadStruct *threads;  /* a hash table by serial, threadLimit slots:
                                   a damaged log's serial may be any number */
  size_t threadLimit, threadCount;
  const EventDescStruct *threadStart, *threadName, *intern, *label;
  ExportNamesStruct *names;     /* by index in the registry */
  char *kindNames[EVENT_STREAM_KIND_LIMIT];  /* each kind's name, quoted */
  size_t kindNameLengths[EVENT_STREAM_KIND_LIMIT];
  int64_t offsetNs;             /* this log's start after originNs */
  size_t source, sourceCount;   /* this log's index; how many logs */
  ExportSourceStruct *sources;
  const struct ExportWriterStruct *writer;
  uint64_t originNs;            /* the earliest log's start, ns since the epoch */
  void *state;                  /* the writer's own */
} ExportStruct;

/* ExportUse -- make log i the one at hand (the writer's source is
 * called if it changes); returns 0, or the source's result */
extern int ExportUse(ExportStruct *ex, size_t i);

/* ExportThread -- the thread of serial (created empty), or NULL if out
 * of memory; valid until the next call.  ExportThreadFind -- the thread
 * of serial, or NULL if the stream has not mentioned it. */
extern ExportThreadStruct *ExportThread(ExportStruct *ex, uint32_t serial);
extern const ExportThreadStruct *ExportThreadFind(const ExportStruct *ex, uint32_t serial);

/* ExportElapsedNs -- ns from the (earliest) stream's start to clock
 * (negative before it), as eventcnv's ELAPSED column: design/runtime.txt
 * .sol.clock; ExportTimeNs -- ns since the epoch */
extern int64_t ExportElapsedNs(const ExportStruct *ex, EventClock clock);
extern int64_t ExportClockNs(const EventFormatContextStruct *fmt, EventClock clock);
static inline int64_t ExportTimeNs(const ExportStruct *ex, EventClock clock)
{
  return MergeAddNs(MergeWallNs(ex->originNs), ExportElapsedNs(ex, clock));
}

/* ExportPutJsonFields -- rec's fields as a JSON object by parameter
 * name.  ExportPutJsonLabels -- if some P or A value of rec is
 * labelled, prefix and an object of the labels by parameter name;
 * returns 1 if it wrote them.  design/export.txt .export.json */
extern void ExportPutJsonFields(ExportOutStruct *out, const ExportStruct *ex,
                                const EventRecordStruct *rec);
/* ExportPutJsonMembers -- the same without the braces.
 * ExportJsonMembersTo -- the same at p, which has room for
 * ExportJsonMembersMax bytes; returns the end */
extern void ExportPutJsonMembers(ExportOutStruct *out, const ExportStruct *ex,
                                 const EventRecordStruct *rec);
#define EXPORT_JSON_VALUE_MAX 48    /* a value but S: "0x...", a double */
extern size_t ExportJsonMembersMax(const ExportStruct *ex, const EventRecordStruct *rec);
extern char *ExportJsonMembersTo(char *p, const ExportStruct *ex, const EventRecordStruct *rec);
extern int ExportPutJsonLabels(ExportOutStruct *out, const char *prefix, const ExportStruct *ex,
                               const EventRecordStruct *rec);

/* ExportWriterStruct -- one format */
struct ExportWriterStruct {
  const char *name;
  int needsFile;                /* writes a file itself (outPath), not ex->out */
  int (*begin)(ExportStruct *ex);
  int (*event)(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq);
  int (*every)(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq);
                                /* may be NULL: called for every event before
                                   the filter, for what the format keeps whole */
  int (*end)(ExportStruct *ex); /* returns 0, or 1 having said why */
  int (*source)(ExportStruct *ex);  /* may be NULL: the log at hand changed
                                   (ExportUse); begin is called with the first */
  int oneLog;                   /* takes one log only */
};

extern const ExportWriterStruct ExportJsonl, ExportCsv, ExportChrome, ExportSqlite, ExportCtf,
  ExportHtml, ExportClickhouse, ExportClickhouseDdl, ExportClickhouseNative;

/* ExportCtfBlocks -- ExportCtf's events of a single log with no filter,
 * block by block rather than each through event: returns -1 if it
 * cannot (having written nothing), 0, or 1 having said why.
 * design/export.txt .export.ctf.block */
extern int ExportCtfBlocks(ExportStruct *ex);

/* ProgressStruct -- progress of a long conversion, said on stderr when
 * it is a terminal and the work has taken a second: silent otherwise.
 * design/tools.txt .export.progress */
typedef struct ProgressStruct {
  int on;                       /* stderr is a terminal, the output not */
  int shown;                    /* a line is on it, to be cleared */
  uint64_t total, next;         /* events in all; when to look at the clock again */
  double start;
} ProgressStruct;

/* ProgressOutput -- whether the conversion's output is stdout, said
 * once before any ProgressStart */
extern void ProgressOutput(int onStdout);
extern void ProgressStart(ProgressStruct *progress, uint64_t total);
extern void ProgressShow(ProgressStruct *progress, uint64_t done);
extern void ProgressEnd(ProgressStruct *progress);
/* ProgressWaiting -- a writer's end is still at work on the loop's
 * events; cheap enough to call often */
extern void ProgressWaiting(void);

/* ProgressTick -- done events of total have been read */
static inline void ProgressTick(ProgressStruct *progress, uint64_t done)
{
  if (progress->on && done >= progress->next)
    ProgressShow(progress, done);
}

#endif /* export_h */
