/* <tools/heap/heapstream.h> -- a sound log's events in time order, read
 * as they go (heapstream.c)
 *
 * .design: design/heap.txt .heap.bounded
 */

#ifndef heapstream_h
#define heapstream_h

#include "eventread.h"

typedef struct HeapStreamStruct HeapStreamStruct;

/* HeapStreamOpen -- the log at path, if it is whole and sound, to be
 * read in memory that does not grow with its events: 0 with
 * *streamReturn set; -1 if it must be read whole (a live file beside
 * it, damage, a hole, zstd blocks: the stream layer says what) */
extern int HeapStreamOpen(const char *path, HeapStreamStruct **streamReturn);

/* HeapStreamInfo -- the header's figures; the end (streamEnd,
 * streamExec), lastClock and clockHz are known once every event has
 * been read */
extern const EventStreamInfoStruct *HeapStreamInfo(const HeapStreamStruct *stream);

/* HeapStreamNext -- the next event in time order: 1 and *rec (its
 * strings good until the next call), 0 at the end, -1 if the file could
 * not be read */
extern int HeapStreamNext(HeapStreamStruct *stream, EventRecordStruct *rec);

extern void HeapStreamClose(HeapStreamStruct *stream);

#endif /* heapstream_h */
