/* <tools/eventcnv/span.h> -- pairing the begin and end events of spans
 *
 * .design: design/registry.txt .reg.span
 *
 * A registry declares spans (SPAN rows: a begin event, an end event and
 * the parameter whose value pairs them) and counters (COUNTER rows);
 * they reach the tools in the stream's registry (2.0.1 on,
 * .stream.header.span).  A SpanTracker is fed every event in time order
 * and says when a span opens and closes; eventcnv --spans, the Chrome
 * export and the SQLite export use it.  Memory is the open spans, plus
 * the durations when asked to keep them (--spans).
 */

#ifndef span_h
#define span_h

#include <stdint.h>
#include "eventread.h"

/* SpanStruct -- one span, opened or closed */
typedef struct SpanStruct {
  unsigned span;                /* index in the registry's spans */
  uint64_t key;                 /* the pairing parameter's value */
  int64_t beginNs, endNs;       /* ns since the stream's start; endNs -1 if unfinished */
  uint32_t beginThread, endThread;
  uint64_t beginSeq, endSeq;    /* the events' places in time order */
  unsigned lane;                /* 0, 1, ...: lowest lane free when it opened, so that
                                   the spans of a lane never overlap */
  char keyLetter;               /* the key parameter's letter (P, A, W, U) at its begin */
  int onThread;                 /* when closed or unfinished: 1 if it nests on its
                                   begin thread (.export.span.thread), 0 if it goes on
                                   an async track; 0 while open */
} SpanStruct;

/* SpanReportFunction -- a span opened (endNs is -1 and the span is not
 * finished yet), closed, or was still open at the end (unfinished: endNs
 * is -1) */
typedef enum SpanWhat { SpanOPENED, SpanCLOSED, SpanUNFINISHED } SpanWhat;
typedef void (*SpanReportFunction)(void *closure, SpanWhat what, const SpanStruct *span);

typedef struct SpanTrackerStruct SpanTrackerStruct;

/* SpanTrackerCreate -- a tracker for registry's spans, or NULL if out of
 * memory.  keep: keep every duration for SpanStats. */
extern SpanTrackerStruct *SpanTrackerCreate(const EventRegistryStruct *registry, int keep,
                                            SpanReportFunction report, void *closure);

/* SpanTrackerEvent -- feed one event, at ns since the stream's start,
 * with its place seq in time order.  Returns 0, or 1 if out of memory. */
extern int SpanTrackerEvent(SpanTrackerStruct *tracker, const EventRecordStruct *rec,
                            int64_t ns, uint64_t seq);

/* SpanTrackerFinish -- report the spans still open, as unfinished */
extern void SpanTrackerFinish(SpanTrackerStruct *tracker);

/* SpanStatsStruct -- one span's figures, durations in ns.  median and
 * p99 are nearest-rank: the ceil(n/2)-th and ceil(0.99 n)-th smallest. */
typedef struct SpanStatsStruct {
  uint64_t count;               /* closed */
  uint64_t unfinished;          /* opened and never closed */
  uint64_t unopened;            /* end events that closed no span */
  int64_t min, median, p99, max;  /* of the closed; 0 if none */
} SpanStatsStruct;

/* SpanStats -- the figures of span (after SpanTrackerFinish) */
extern void SpanStats(SpanTrackerStruct *tracker, unsigned span, SpanStatsStruct *statsReturn);

extern void SpanTrackerDestroy(SpanTrackerStruct *tracker);

/* SpanCounterOf -- the index of the first counter of registry after
 * index after (-1 to start) that events of code set, or -1 */
extern int SpanCounterOf(const EventRegistryStruct *registry, unsigned code, int after);

#endif /* span_h */
