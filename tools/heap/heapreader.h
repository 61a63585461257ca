/* <tools/heap/heapreader.h> -- the heap tool's reader, as its rooms see it
 *
 * .design: design/heap.txt .heap
 *
 * heapread.c reads a log: it finds the events in the stream's registry,
 * takes them from the stream layer or HeapStream, and says how the log
 * ended; heaplive.c keeps what they say: the live blocks, each stack's
 * figures, the chart's samples and series, and the snapshots;
 * heapstacks.c the stacks' frames and the mappings.
 */

#ifndef heapreader_h
#define heapreader_h

#include <stddef.h>
#include <stdint.h>

#include "eventread.h"
#include "heapint.h"
#include "skew.h"

/* The events read, found by name in the stream's own registry
 * (design/index.txt .req.self), with the parameters each needs,
 * in the order heaplive.c reads them (heapread.c has the table). */
typedef enum HeapEv {
  EvNone, EvMalloc, EvCalloc, EvRealloc, EvFree, EvMemalign, EvReallocMove, EvExec,
  EvStackFrames, EvMapExec, EvMapUnmap, EvForked, EvPeakRss, EV_LIMIT
} HeapEv;

typedef struct CodeStruct {
  unsigned char ev;             /* HeapEv */
  unsigned char param[5];       /* value index of each parameter */
  unsigned char stacked;        /* it has a stack parameter */
  unsigned char lookFrom, looks; /* param[lookFrom ..] are the addresses it
                                   looks up: looks of them (HeapReaderPrefetch) */
  unsigned char string;         /* it has a string, which lasts only until
                                   the next record is read (readAhead) */
} CodeStruct;

/* Live blocks, by address: linear probing, deletion by backward shift */
typedef struct BlockStruct {
  uint64_t address;             /* 0: empty */
  uint64_t size;
  uint32_t stack;               /* INHERITED: its parent's (.heap.tree) */
} BlockStruct;

#define INHERITED UINT32_MAX

/* A thread's state: a realloc in transit (ReallocMove,
 * design/recorder.txt .malloc.order) */
typedef struct ThreadStruct {
  uint64_t movingOld;
  int moving;
} ThreadStruct;

typedef struct ReaderStruct {
  HeapLogStruct *log;
  CodeStruct codes[EVENT_CODE_LIMIT];
  BlockStruct *blocks;
  size_t capacity, count;
  uint64_t probeAddress;        /* the latest liveAt's address and slot, */
  size_t probeSlot;             /* until the table changes (probeValid 0) */
  int probeValid;
  ThreadStruct *threads;
  size_t threadLimit;
  uint64_t live, peakEpoch;
  uint64_t lastSize;            /* the latest allocation's size and stack, */
  uint32_t lastStack;           /* if no free came since: .heap.temporary */
  int lastValid;
  SkewStruct skew;
  SkewEventStruct held[SKEW_PENDING_LIMIT];
  EventClock startClock;
  uint64_t clockHz;
  uint64_t sliceClock;          /* the chart's time slice, in clock ticks */
  uint64_t sliceFrom;           /* where the slice of the last sample() begins */
  EventClock peakClock;         /* when the peak was */
  int execLast;                 /* the log ends at an exec */
  uint32_t execThread;
  size_t stacksCapacity;
  const HeapReadOptionsStruct *opt;
  size_t snapNext;              /* the next snapshot to take */
  uint64_t *seriesLive;         /* each series' bytes live now, then (count + 1 on)
                                   its allocations in this slice, then all's */
  size_t seriesNext;            /* the next row's slice */
  uint32_t *addressSlots;       /* the log's addresses by hash: index + 1, 0 empty */
  size_t addressSlotCount, addressCapacity;
  uint32_t *nodeSlots;          /* the log's nodes by parent and address: node + 1 */
  size_t nodeSlotCount, nodeCapacity;
  uint32_t (*path)[2];          /* the stack placed last, from its outermost frame:
                                   address index and node + 1 (stackPlace) */
  size_t pathDepth, pathCapacity;
} ReaderStruct;

/* heaplive.c */
/* HeapReaderRealloc -- realloc, or exit out of memory */
extern void *HeapReaderRealloc(void *p, size_t size);
extern void HeapReaderInit(ReaderStruct *r, HeapLogStruct *log, const EventStreamInfoStruct *info,
                           const HeapReadOptionsStruct *opt);
extern void HeapReaderEvent(ReaderStruct *r, const EventRecordStruct *rec);
/* HeapReaderPrefetch -- ask for the live-block table's slots that rec
 * will look up, some events before HeapReaderEvent takes it: the table
 * is larger than the caches, and a look a miss.  .heap.bounded.time */
extern void HeapReaderPrefetch(const ReaderStruct *r, const EventRecordStruct *rec);
extern void HeapReaderSnap(ReaderStruct *r, EventClock clock, int end);
extern void HeapReaderSeriesRow(ReaderStruct *r, EventClock clock, int end);
/* HeapReaderNs -- a clock reading, in ns from the log's start */
extern uint64_t HeapReaderNs(const ReaderStruct *r, EventClock clock);
extern void HeapReaderFinish(ReaderStruct *r, const EventStreamInfoStruct *info);

/* heapstacks.c */
/* HeapReaderStack -- the log's stack of id, made if new (0: unknown) */
extern HeapStackStruct *HeapReaderStack(ReaderStruct *r, uint64_t id);
extern void HeapReaderStackFrames(ReaderStruct *r, const EventRecordStruct *rec, const CodeStruct *c);
/* HeapReaderStacksEnd -- the stacks still being defined take their
 * place in the tree as they are, and the tree's index goes */
extern void HeapReaderStacksEnd(ReaderStruct *r);
extern int HeapReaderMapsEnd(HeapLogStruct *log, uint64_t start, uint64_t end);
extern void HeapReaderMapExec(ReaderStruct *r, const EventRecordStruct *rec, const CodeStruct *c);

#endif /* heapreader_h */
