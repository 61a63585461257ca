/* <tools/eventcnv/merge.c> -- several logs on one timeline
 *
 * .design: design/export.txt .export.merge
 */

#include "merge.h"

#include <stdlib.h>
#include <string.h>

#define NS_PER_SECOND 1000000000u

/* MergeClockNs -- as EventClockSplit (eventclock.c) computes ELAPSED */
int64_t MergeClockNs(const EventFormatContextStruct *fmt, EventClock clock)
{
  int negative = clock < fmt->startClock;
  uint64_t delta = negative ? fmt->startClock - clock : clock - fmt->startClock;
  uint64_t hz = fmt->clockHz, ns;
  if (hz == 0) {
    ns = delta;
  } else {
    uint64_t rest = delta % hz;
    uint64_t part = rest <= UINT64_MAX / NS_PER_SECOND
      ? rest * NS_PER_SECOND / hz
      : (uint64_t)((unsigned __int128)rest * NS_PER_SECOND / hz);
    ns = delta / hz > (uint64_t)INT64_MAX / NS_PER_SECOND ? (uint64_t)INT64_MAX
         : delta / hz * NS_PER_SECOND + part;
  }
  if (ns > (uint64_t)INT64_MAX)          /* .export.time */
    ns = (uint64_t)INT64_MAX;
  return negative ? -(int64_t)ns : (int64_t)ns;
}

/* advance -- read log i's next event */
static void advance(MergeStruct *merge, size_t i)
{
  merge->has[i] = EventStreamNext(merge->streams[i], &merge->next[i]) == EventStreamOK;
  if (merge->has[i] && merge->count > 1)   /* one log needs no wall time to merge by */
    merge->wallNs[i] = MergeAddNs(MergeWallNs(merge->fmt[i].startRealtime),
                                  MergeClockNs(&merge->fmt[i], merge->next[i].clock));
}

int MergeInit(MergeStruct *merge, EventStreamStruct **streams, size_t count)
{
  memset(merge, 0, sizeof *merge);
  merge->count = count;
  merge->streams = streams;
  merge->fmt = calloc(count + 1, sizeof *merge->fmt);
  merge->next = calloc(count + 1, sizeof *merge->next);
  merge->has = calloc(count + 1, sizeof *merge->has);
  merge->wallNs = calloc(count + 1, sizeof *merge->wallNs);
  if (merge->fmt == NULL || merge->next == NULL || merge->has == NULL || merge->wallNs == NULL) {
    MergeFinish(merge);
    return 1;
  }
  for (size_t i = 0; i < count; ++i) {
    EventStreamFormatContext(streams[i], &merge->fmt[i]);
    merge->has[i] = -1;         /* read at the first MergeNext */
    if (i == 0 || merge->fmt[i].startRealtime < merge->originNs)
      merge->originNs = merge->fmt[i].startRealtime;
  }
  return 0;
}

int MergeNext(MergeStruct *merge, size_t *sourceReturn, EventRecordStruct **recReturn)
{
  static const size_t none = (size_t)-1;
  size_t best = none;
  /* The one just returned is read on now, not when it was chosen: its
   * strings and labels stay valid until this call. */
  for (size_t i = 0; i < merge->count; ++i)
    if (merge->has[i] < 0)
      advance(merge, i);
  for (size_t i = 0; i < merge->count; ++i)
    if (merge->has[i] > 0 && (best == none || merge->wallNs[i] < merge->wallNs[best]))
      best = i;
  if (best == none)
    return 0;
  *sourceReturn = best;
  *recReturn = &merge->next[best];
  merge->has[best] = -1;        /* read on at the next call */
  return 1;
}

void MergeFinish(MergeStruct *merge)
{
  free(merge->fmt);
  free(merge->next);
  free(merge->has);
  free(merge->wallNs);
  memset(merge, 0, sizeof *merge);
}
