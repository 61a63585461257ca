/* <tools/eventcnv/merge.h> -- several logs on one timeline
 *
 * .design: design/export.txt .export.merge
 *
 * eventcnv a.log b.log ... reads the logs of several processes (a
 * program and its forked children, the recorder's OUT.log.PID files) as
 * one: each log's events come in its own time order, and a Merge takes
 * the earliest by wall time, the log's start (CLOCK_REALTIME in its
 * header) plus its elapsed time at the clock rate its ClockSync events
 * give.  Each log is read ahead by one event, so labels are as they
 * were when the event was written.
 */

#ifndef merge_h
#define merge_h

#include <stddef.h>
#include <stdint.h>
#include "eventread.h"

typedef struct MergeStruct {
  size_t count;                 /* logs */
  EventStreamStruct **streams;
  EventFormatContextStruct *fmt;  /* each log's clock and labels */
  EventRecordStruct *next;      /* each log's next event */
  int *has;                     /* next holds one */
  int64_t *wallNs;              /* its time, ns since the epoch (when count > 1) */
  uint64_t originNs;            /* the earliest log's start, ns since the epoch */
} MergeStruct;

/* MergeInit -- a merge of count streams; 0, or 1 if out of memory */
extern int MergeInit(MergeStruct *merge, EventStreamStruct **streams, size_t count);

/* MergeNext -- the earliest next event: 1 with *sourceReturn (the log's
 * index) and *recReturn (valid until the next call), or 0 at the end */
extern int MergeNext(MergeStruct *merge, size_t *sourceReturn, EventRecordStruct **recReturn);

/* Times in ns saturate at the limits of int64_t rather than wrap or
 * overflow: a forged clock or header wall time near 2^63 shows at the
 * limit.  design/export.txt .export.time */
static inline int64_t MergeAddNs(int64_t a, int64_t b)
{
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return a > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

static inline int64_t MergeSubNs(int64_t a, int64_t b)
{
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r))
    return a >= 0 ? INT64_MAX : INT64_MIN;
  return r;
}

/* MergeWallNs -- a header's wall time (u64 ns since the epoch) as int64_t */
static inline int64_t MergeWallNs(uint64_t ns)
{
  return ns > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)ns;
}

/* MergeClockNs -- ns from the log's start to clock, at its rate */
extern int64_t MergeClockNs(const EventFormatContextStruct *fmt, EventClock clock);

extern void MergeFinish(MergeStruct *merge);

#endif /* merge_h */
