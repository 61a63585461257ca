/* <tools/eventcnv/export.h> -- eventcnv's writers for other formats
 *
 * .design: design/telemetry.txt .export
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

/* ExportFilterFunction -- 1 if an event of this kind and code is to be
 * written: eventcnv's --kind and --event */
typedef int (*ExportFilterFunction)(void *closure, unsigned kind, unsigned code);

/* ExportFormatKnown -- 1 if name is a format ExportRun writes (not text) */
extern int ExportFormatKnown(const char *name);

/* ExportNeedsFile -- 1 if the format cannot go to stdout (sqlite) */
extern int ExportNeedsFile(const char *name);

/* ExportRun -- write the events of stream that pass filter in format
 * name to outPath (NULL or "-": stdout).  Returns 0, or 1 after saying
 * on stderr why the output could not be written. */
extern int ExportRun(EventStreamStruct *stream, const char *name, const char *outPath,
                     ExportFilterFunction filter, void *closure);

/* ExportText -- eventcnv's text lines (EventFormat) of the events of
 * stream that pass filter, to out, formatted on jobs threads (0: one a
 * processor) and written in time order.  Returns 0, or 1 if out of
 * memory.  exporttext.c; design/telemetry.txt .eventcnv.text */
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

/* ExportStruct -- one export in progress */
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
  char *kindNames[EVENT_KIND_LIMIT];  /* each kind's name, quoted */
  size_t kindNameLengths[EVENT_KIND_LIMIT];
  void *state;                  /* the writer's own */
} ExportStruct;

/* ExportThread -- the thread of serial (created empty), or NULL if out
 * of memory; valid until the next call.  ExportThreadFind -- the thread
 * of serial, or NULL if the stream has not mentioned it. */
extern ExportThreadStruct *ExportThread(ExportStruct *ex, uint32_t serial);
extern const ExportThreadStruct *ExportThreadFind(const ExportStruct *ex, uint32_t serial);

/* ExportElapsedNs -- ns from the stream's start to clock (negative
 * before it), as eventcnv's ELAPSED column: design/telemetry.txt .sol.clock */
extern int64_t ExportElapsedNs(const ExportStruct *ex, EventClock clock);

/* ExportPutJsonFields -- rec's fields as a JSON object by parameter
 * name.  ExportPutJsonLabels -- if some P or A value of rec is
 * labelled, prefix and an object of the labels by parameter name;
 * returns 1 if it wrote them.  design/telemetry.txt .export.json */
extern void ExportPutJsonFields(ExportOutStruct *out, const ExportStruct *ex,
                                const EventRecordStruct *rec);
/* ExportPutJsonMembers -- the same without the braces */
extern void ExportPutJsonMembers(ExportOutStruct *out, const ExportStruct *ex,
                                 const EventRecordStruct *rec);
extern int ExportPutJsonLabels(ExportOutStruct *out, const char *prefix, const ExportStruct *ex,
                               const EventRecordStruct *rec);

/* ExportWriterStruct -- one format */
typedef struct ExportWriterStruct {
  const char *name;
  int needsFile;                /* writes a file itself (outPath), not ex->out */
  int (*begin)(ExportStruct *ex);
  int (*event)(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq);
  int (*every)(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq);
                                /* may be NULL: called for every event before
                                   the filter, for what the format keeps whole */
  int (*end)(ExportStruct *ex); /* returns 0, or 1 having said why */
} ExportWriterStruct;

extern const ExportWriterStruct ExportJsonl, ExportCsv, ExportChrome, ExportSqlite, ExportCtf;

#endif /* export_h */
