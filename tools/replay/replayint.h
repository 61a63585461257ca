/* <tools/replay/replayint.h> -- replay's rooms, as one another sees them
 *
 * .design: design/heap.txt .replay
 *
 * replay.c holds the options, main and the parent, which runs one child
 * per allocator; replaylog.c reads the log; replayengine.c is a child's
 * reading thread, which turns events into operations; replaymem.c holds
 * memory outside the heap under test, the slots and the pointer map;
 * replayexec.c the replay threads that make the calls; replayreport.c
 * the table and the chart.
 */

#ifndef replayint_h
#define replayint_h

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define ALLOC_LIMIT 8           /* allocators in one run */
#define SAMPLE_LIMIT 2048       /* points per allocator on the plot */
#define RING_SIZE 4096          /* ops queued per replay thread, a power of two */
#define WORKER_LIMIT 1024       /* replay threads at once; past it recorded
                                   threads share them (.replay.threads.many) */

/* Operations and anomalies */

typedef enum OpKind {
  OpMalloc, OpCalloc, OpRealloc, OpFree, OpMemalign, OpAlignedAlloc, OpPosixMemalign,
  OpPoolCreate, OpPoolAlloc, OpPoolFree, OpPoolDestroy, OP_LIMIT
} OpKind;

extern const char *const ReplayOpName[OP_LIMIT];

typedef enum AnomalyKind {
  AnomalyUnknownFree, AnomalyDoubleFree, AnomalyDuplicate, AnomalyFreeNull,
  AnomalyReplayFailed, ANOMALY_LIMIT
} AnomalyKind;

extern const char *const ReplayAnomalyName[ANOMALY_LIMIT];

/* Options */

typedef struct ReplayOptionsStruct {
  const char *log;
  const char *alloc[ALLOC_LIMIT];
  size_t allocCount;
  const char *svg;
  const char *pool;             /* a pool .so, or NULL for the example */
  int serial, strict, progress, quiet;
  const char *one;              /* child: the allocator to replay */
  int fd;                       /* child: where to send the figures */
  int report;                   /* child: report anomalies one by one */
  uint64_t touchMax;            /* bytes of live blocks touched at most: .replay.touch */
} ReplayOptionsStruct;

extern ReplayOptionsStruct ReplayOptions;

extern void ReplayFail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* Memory outside the heap under test (replaymem.c).  .replay.map */

extern void *ReplayAnonMap(size_t size);
extern void ReplayAnonUnmap(void *p);
extern void ReplayRssInit(void);
extern size_t ReplayRss(int fresh);

/* Slots: one per replayed block (replaymem.c).  .replay.threads */

#define PENDING ((uintptr_t)1)

typedef struct SlotStruct {
  _Atomic uintptr_t ptr;        /* the replayed block, PENDING or 0 if it failed */
  struct SlotStruct *next;      /* on a free list */
  uint64_t size;                /* requested */
  uint64_t touch;               /* bytes to touch: size, or 0 past ReplayOptions.touchMax */
} SlotStruct;

extern SlotStruct *ReplaySlotNew(uint64_t size);
extern void ReplaySlotRelease(SlotStruct *s);
extern void *ReplaySlotWait(SlotStruct *s);

/* The pointer map: recorded address -> slot (replaymem.c).  .replay.map */

#define FREED ((SlotStruct *)1)

typedef struct EntryStruct {
  uint64_t key;                 /* 0: empty */
  SlotStruct *slot;
} EntryStruct;

typedef struct MapStruct {
  EntryStruct *entries;
  size_t capacity, count;
} MapStruct;

extern void ReplayMapInit(MapStruct *map, size_t capacity);
extern EntryStruct *ReplayMapFind(MapStruct *map, uint64_t key);
extern EntryStruct *ReplayMapPut(MapStruct *map, uint64_t key);

/* Replay threads (replayexec.c).  .replay.threads */

typedef enum ExecKind {
  ExecMalloc, ExecCalloc, ExecRealloc, ExecFree, ExecMemalign, ExecAlignedAlloc,
  ExecPosixMemalign, ExecExit
} ExecKind;

typedef struct OpStruct {
  unsigned kind;                /* ExecKind */
  uint64_t size, align;         /* calloc: size is count * size */
  SlotStruct *slot;             /* the block made */
  SlotStruct *old;              /* the block freed or resized */
} OpStruct;

extern void ReplayExecInit(void);
/* ReplayExecSubmit -- queue an operation for the recorded thread's replay thread */
extern void ReplayExecSubmit(uint32_t thread, const OpStruct *op);
/* ReplayExecDrain -- wait until every replay thread has made the calls queued */
extern void ReplayExecDrain(void);
/* ReplayExecThreadExit -- the recorded thread exited: so does its replay thread */
extern void ReplayExecThreadExit(uint32_t thread);
/* ReplayExecThreadEvents -- the recorded thread has events in the log (the
 * index's count), before the first is read; ReplayExecEventRead -- one of
 * them was read and replayed: after its last, its replay thread ends */
extern void ReplayExecThreadEvents(uint32_t thread, size_t events);
extern void ReplayExecEventRead(uint32_t thread);
/* ReplayExecFinish -- end every replay thread; their calls, cycles and failures */
extern void ReplayExecFinish(uint64_t *callsReturn, uint64_t *cyclesReturn,
                             uint64_t *failedReturn, uint64_t *threadsReturn);

/* The figures a child sends back.  .replay.report */

typedef struct SampleStruct {
  uint64_t event;               /* events read so far */
  uint64_t live;                /* live requested bytes */
  uint64_t rss;                 /* RSS growth */
} SampleStruct;

typedef struct ResultStruct {
  char name[64];
  uint64_t ops[OP_LIMIT];
  uint64_t anomaly[ANOMALY_LIMIT];
  uint64_t calls;               /* calls made of the allocator under test */
  double seconds;               /* time inside them */
  double wall;                  /* the whole replay */
  uint64_t events;
  uint64_t threads;
  uint64_t peakLive, peakRss, finalRss;
  uint64_t untouched;           /* blocks not touched, past the cap: .replay.touch */
  uint32_t sampleCount;
  /* How the log ended: .replay.log */
  int unclean;                  /* no StreamEnd: the program died */
  int execEnd;                  /* no StreamEnd, but StreamExec (or Exec) last of its
                                   thread: the log ends at an exec (.sol.exec) */
  int execRunning;              /* and other threads were running then */
  uint64_t recovered;           /* events only LOG.live had */
  int live;                     /* LOG.live was read */
  char damage[256];             /* the log's first damage, or "" */
} ResultStruct;

/* The log (replaylog.c).  design/heap.txt .replay.log */

/* The events replay understands, found by name in the stream's own
 * registry (design/index.txt .req.self). */
typedef enum EvKind {
  EvNone, EvMalloc, EvCalloc, EvRealloc, EvFree, EvFreeSized, EvMemalign, EvAlignedAlloc,
  EvPosixMemalign, EvReallocMove, EvPoolCreate, EvPoolDestroy, EvPoolAlloc, EvPoolFree, EvThreadExit,
  EvExec, EV_LIMIT
} EvKind;

struct EventStreamStruct;
struct EventRecordStruct;
/* ReplayLogOpen -- the log, with LOG.live recovered into it, as a stream;
 * the events recovered, and whether LOG.live was read, returned */
extern struct EventStreamStruct *ReplayLogOpen(uint64_t *recoveredReturn, int *liveReturn);
extern void ReplayLogClose(struct EventStreamStruct *stream);
/* ReplayLogEvent -- the event a record is, and the values of its parameters
 * replay reads */
extern EvKind ReplayLogEvent(const struct EventRecordStruct *rec, uint64_t v[4]);

/* A child's replay (replayengine.c).  design/heap.txt .replay.child */
extern int ReplayChild(void);

/* The report (replayreport.c): the allocators' figures side by side. */
extern void ReplayReport(const ResultStruct *results);
extern void ReplayWriteSvg(const char *path, const ResultStruct *results, SampleStruct *const *samples);

#endif /* replayint_h */
