/* <tools/replay/replayengine.c> -- replay's reading thread, in a child
 *
 * .design: design/heap.txt .replay
 *
 * A child replays the log against one allocator: its reading thread
 * turns each event into an operation for the replay threads
 * (replayexec.c), keeps the pointer map from recorded addresses to
 * replayed blocks, waits out clocks out of causal order (.replay.skew),
 * replays pools against a pool implementation (.replay.pool), counts
 * the anomalies, samples live bytes and RSS, and sends its figures to
 * the parent (.replay.child).
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eventread.h"
#include "plinth.h"
#include "plinthclock.h"
#include "replayint.h"
#include "report.h"
#include "replaypool.h"
#include "skew.h"

#define PEAK_EVERY 512          /* events between RSS readings, a power of two */
#define REPORT_LIMIT 5          /* anomalies of each kind reported one by one */
#define REPORT_LIMIT_NULL 1     /* free(NULL): legal, and common */

/* The figures a child sends back.  design/heap.txt .replay.report */

static ResultStruct result;
static SampleStruct *sample;
static uint64_t sampleEvery = 4096, sampleNext;


/* The reading thread ------------------------------------------------ */

static uint64_t live, baseline;

static void anomaly(AnomalyKind kind, const EventRecordStruct *rec, uint64_t address)
{
  ++result.anomaly[kind];
  uint64_t limit = kind == AnomalyFreeNull ? REPORT_LIMIT_NULL : REPORT_LIMIT;
  /* free(NULL) is legal C, and glibc does it at every thread's exit:
     counted, never an error (.replay.anomaly) */
  int strict = ReplayOptions.strict && kind != AnomalyFreeNull;
  if (strict || (ReplayOptions.report && result.anomaly[kind] <= limit)) {
    const char *name = rec->desc != NULL ? rec->desc->name : "?";
    Report("%s: offset %zu: %s: %s of 0x%" PRIx64 "", ReplayOptions.log, rec->offset,
            name,
            kind == AnomalyUnknownFree ? "unknown free" :
            kind == AnomalyDoubleFree ? "double free" :
            kind == AnomalyDuplicate ? "duplicate live pointer" :
            kind == AnomalyFreeNull ? "free(NULL)" : "replay failed", address);
    if (ReplayOptions.report && result.anomaly[kind] == limit && !strict)
      Report("(further %s are counted, not listed)", ReplayAnomalyName[kind]);
  }
  if (strict)
    ReplayFail("%s: --strict: stopping at offset %zu", ReplayOptions.log, rec->offset);
}

static MapStruct blocks;

/* made -- a block came into being at address: map it to slot */
static void made(const EventRecordStruct *rec, uint64_t address, SlotStruct *slot)
{
  EntryStruct *e = ReplayMapPut(&blocks, address);
  if (e->slot != NULL && e->slot != FREED) {
    OpStruct op = {ExecFree, 0, 0, NULL, e->slot};
    anomaly(AnomalyDuplicate, rec, address);
    live -= e->slot->size;
    ReplayExecSubmit(rec->thread, &op);   /* the program lost it somehow; so do we */
  }
  e->slot = slot;
  live += slot->size;
  if (live > result.peakLive)
    result.peakLive = live;
  /* design/heap.txt .replay.touch: a block is touched only while
   * live bytes, it included, are within the cap; then the touched
   * blocks live at any time sum to at most the cap. */
  slot->touch = live <= ReplayOptions.touchMax ? slot->size : 0;
  result.untouched += slot->touch == 0 && slot->size > 0;
}

/* unmade -- the block at address goes: its slot, or NULL if not live */
static SlotStruct *unmade(const EventRecordStruct *rec, uint64_t address)
{
  EntryStruct *e = ReplayMapFind(&blocks, address);
  SlotStruct *slot;
  if (e->key == 0) {
    anomaly(AnomalyUnknownFree, rec, address);
    return NULL;
  }
  if (e->slot == FREED) {
    anomaly(AnomalyDoubleFree, rec, address);
    return NULL;
  }
  slot = e->slot;
  e->slot = FREED;
  live -= slot->size;
  return slot;
}

/* Reallocs in transit, by thread serial: see EvReallocMove */
typedef struct MovingStruct {
  uint64_t old;
  SlotStruct *slot;
  int valid;
} MovingStruct;

#define MOVING_LIMIT ((size_t)1 << 20)
static MovingStruct *moving;

static MovingStruct *movingFor(uint32_t thread)
{
  if (moving == NULL)
    moving = ReplayAnonMap(MOVING_LIMIT * sizeof *moving);
  return &moving[thread % MOVING_LIMIT];
}

/* Clocks out of causal order: an event that would be an anomaly waits
 * for the other thread's event that explains it (skew.h).
 * design/heap.txt .replay.skew */

static SkewStruct skew;

static int liveAt(uint64_t address)
{
  EntryStruct *e = ReplayMapFind(&blocks, address);
  return e->key != 0 && e->slot != NULL && e->slot != FREED;
}

static int skewLive(void *closure, uint64_t address)
{
  (void)closure;
  return liveAt(address);
}

/* allocationNow -- an allocation replayed */
static void allocationNow(const EventRecordStruct *rec, ExecKind kind, uint64_t size,
                          uint64_t align, uint64_t address)
{
  OpStruct op = {kind, size, align, NULL, NULL};
  op.slot = ReplaySlotNew(size);
  made(rec, address, op.slot);
  ReplayExecSubmit(rec->thread, &op);
}

/* freeNow -- a free replayed; 0 if its block was not live */
static int freeNow(const EventRecordStruct *rec, uint64_t address)
{
  SlotStruct *old = unmade(rec, address);
  if (old != NULL) {
    OpStruct op = {ExecFree, 0, 0, NULL, old};
    ReplayExecSubmit(rec->thread, &op);
  }
  return old != NULL;
}

/* skewApply -- a SkewApplyFunction; data: kind, size, alignment */
static int skewApply(void *closure, const SkewEventStruct *e)
{
  (void)closure;
  if (e->free)
    return freeNow(&e->rec, e->address);
  allocationNow(&e->rec, (ExecKind)e->data[0], e->data[1], e->data[2], e->address);
  return 1;
}

/* allocation -- an event that made a block */
static void allocation(const EventRecordStruct *rec, ExecKind kind, uint64_t size,
                       uint64_t align, uint64_t address)
{
  if (address != 0)             /* else it failed when recorded: nothing to replay */
    SkewEvent(&skew, rec, 0, address, kind, size, align);
}

/* Pools.  design/heap.txt .replay.pool */

static ReplayPoolInterfaceStruct pool;
static MapStruct pools, objects;       /* recorded pool -> handle; object -> block */
static uint64_t poolCycles, poolCalls;

typedef struct PoolHandleStruct {
  void *handle;
  int dead;
} PoolHandleStruct;

#define HANDLE_CHUNK ((size_t)256)
static PoolHandleStruct *handleChunk;
static size_t handleUsed = HANDLE_CHUNK;

/* POOL_TIMED -- a call of the pool implementation, its cycles counted */
#define POOL_TIMED(call) \
  do { \
    uint64_t _t0 = PlinthClockNow(); \
    call; \
    poolCycles += PlinthClockNow() - _t0, ++poolCalls; \
  } while (0)

/* poolLive -- the live pool the event names, or NULL (an anomaly of kind) */
static PoolHandleStruct *poolLive(const EventRecordStruct *rec, uint64_t address, int destroying)
{
  EntryStruct *e = ReplayMapFind(&pools, address);
  if (e->key == 0 || e->slot == FREED) {
    anomaly(e->key == 0 || !destroying ? AnomalyUnknownFree : AnomalyDoubleFree, rec, address);
    return NULL;
  }
  return (PoolHandleStruct *)e->slot;
}

/* v: pool, size */
static void poolCreate(const EventRecordStruct *rec, const uint64_t *v)
{
  PoolHandleStruct *ph;
  if (handleUsed == HANDLE_CHUNK) {
    handleChunk = ReplayAnonMap(HANDLE_CHUNK * sizeof *handleChunk);
    handleUsed = 0;
  }
  ph = &handleChunk[handleUsed++];
  POOL_TIMED(ph->handle = pool.create((size_t)v[1], rec->desc->name));
  if (ph->handle == NULL)
    anomaly(AnomalyReplayFailed, rec, v[0]);
  ReplayMapPut(&pools, v[0])->slot = (SlotStruct *)ph;
}

/* v: pool */
static void poolDestroy(const EventRecordStruct *rec, const uint64_t *v)
{
  PoolHandleStruct *ph = poolLive(rec, v[0], 1);
  if (ph == NULL)
    return;
  if (ph->handle != NULL)
    POOL_TIMED(pool.destroy(ph->handle));
  ph->dead = 1;
  ReplayMapFind(&pools, v[0])->slot = FREED;
}

/* v: pool, addr, size */
static void poolAlloc(const EventRecordStruct *rec, const uint64_t *v)
{
  PoolHandleStruct *ph = poolLive(rec, v[0], 0);
  SlotStruct *slot;
  EntryStruct *e;
  void *p = NULL;
  if (ph == NULL)
    return;
  if (ph->handle != NULL)
    POOL_TIMED(p = pool.alloc(ph->handle, (size_t)v[2]));
  if (p == NULL)
    anomaly(AnomalyReplayFailed, rec, v[1]);
  slot = ReplaySlotNew(v[2]);
  atomic_store(&slot->ptr, (uintptr_t)p);
  slot->next = (SlotStruct *)ph;        /* the pool it came from */
  e = ReplayMapPut(&objects, v[1]);
  if (e->slot != NULL && e->slot != FREED)
    anomaly(AnomalyDuplicate, rec, v[1]);
  e->slot = slot;
  live += v[2];
  if (live > result.peakLive)
    result.peakLive = live;
}

/* v: pool, addr, size */
static void poolFree(const EventRecordStruct *rec, const uint64_t *v)
{
  EntryStruct *e = ReplayMapFind(&objects, v[1]);
  SlotStruct *slot;
  PoolHandleStruct *ph;
  void *p;
  if (e->key == 0 || e->slot == FREED) {
    anomaly(e->key == 0 ? AnomalyUnknownFree : AnomalyDoubleFree, rec, v[1]);
    return;
  }
  slot = e->slot;
  e->slot = FREED;
  ph = (PoolHandleStruct *)slot->next;
  live -= slot->size;
  p = (void *)atomic_load(&slot->ptr);
  if (p != NULL && !ph->dead)
    POOL_TIMED(pool.free(ph->handle, p, (size_t)v[2]));
  ReplaySlotRelease(slot);
}

/* freeEvent -- Free or FreeSized; v: pointer */
static void freeEvent(const EventRecordStruct *rec, const uint64_t *v)
{
  ++result.ops[OpFree];
  if (v[0] == 0)
    anomaly(AnomalyFreeNull, rec, 0);
  else
    SkewEvent(&skew, rec, 1, v[0], ExecFree, 0, 0);
}

/* reallocMoveEvent -- the first half of a realloc that moved its block:
 * the old address is free for others from here; the block is in transit
 * until the Realloc event of the same thread.  v: old.
 * design/recorder.txt .malloc.order */
static void reallocMoveEvent(const EventRecordStruct *rec, const uint64_t *v)
{
  MovingStruct *m = movingFor(rec->thread);
  m->old = v[0];
  m->valid = 1;
  m->slot = v[0] == 0 ? NULL : unmade(rec, v[0]);
}

/* reallocEvent -- v: old, result, size */
static void reallocEvent(const EventRecordStruct *rec, const uint64_t *v)
{
  OpStruct op = {ExecRealloc, v[2], 0, NULL, NULL};
  MovingStruct *m = movingFor(rec->thread);
  ++result.ops[OpRealloc];
  if (m->valid && m->old == v[0] && v[0] != 0) {
    m->valid = 0;
    op.old = m->slot;
  } else if (v[0] != 0) {
    if (v[1] == 0 && v[2] != 0)
      return;                   /* it failed: the old block stays */
    op.old = unmade(rec, v[0]);
  }
  if (v[1] == 0) {              /* realloc(p, 0) freed p */
    if (op.old != NULL) {
      op.kind = ExecFree;
      ReplayExecSubmit(rec->thread, &op);
    }
    return;
  }
  if (op.old == NULL)
    op.kind = ExecMalloc;       /* realloc(NULL, n), or of a block we never saw */
  op.slot = ReplaySlotNew(v[2]);
  made(rec, v[1], op.slot);
  ReplayExecSubmit(rec->thread, &op);
}

/* An Exec event that is the last of its thread: the log ends at an exec
 * (src/malloc/eventdef.h), not a death.  design/heap.txt .replay.log */
static int execLast;
static uint32_t execThread;

/* replayEvent -- dispatch one recorded event */
static void replayEvent(const EventRecordStruct *rec)
{
  uint64_t v[4];
  EvKind ev = ReplayLogEvent(rec, v);
  if (execLast && rec->thread == execThread && ev != EvNone)
    execLast = 0;               /* the exec failed: the thread went on */
  switch (ev) {
  case EvNone:
  case EV_LIMIT:
    return;
  case EvMalloc:
    ++result.ops[OpMalloc];
    allocation(rec, ExecMalloc, v[0], 0, v[1]);
    break;
  case EvCalloc:
    ++result.ops[OpCalloc];
    allocation(rec, ExecCalloc, v[0] * v[1], 0, v[2]);
    break;
  case EvMemalign:
    ++result.ops[OpMemalign];
    allocation(rec, ExecMemalign, v[1], v[0], v[2]);
    break;
  case EvAlignedAlloc:
    ++result.ops[OpAlignedAlloc];
    allocation(rec, ExecAlignedAlloc, v[1], v[0], v[2]);
    break;
  case EvPosixMemalign:
    ++result.ops[OpPosixMemalign];
    allocation(rec, ExecPosixMemalign, v[1], v[0], v[2]);
    break;
  case EvFree:
  case EvFreeSized:
    freeEvent(rec, v);
    break;
  case EvReallocMove:
    reallocMoveEvent(rec, v);
    break;
  case EvRealloc:
    reallocEvent(rec, v);
    break;
  case EvThreadExit:
    if (!ReplayOptions.serial)
      ReplayExecThreadExit((uint32_t)v[0]);
    break;
  case EvExec:
    execLast = 1;
    execThread = rec->thread;
    break;
  case EvPoolCreate:
    ++result.ops[OpPoolCreate];
    poolCreate(rec, v);
    break;
  case EvPoolDestroy:
    ++result.ops[OpPoolDestroy];
    poolDestroy(rec, v);
    break;
  case EvPoolAlloc:
    ++result.ops[OpPoolAlloc];
    poolAlloc(rec, v);
    break;
  case EvPoolFree:
    ++result.ops[OpPoolFree];
    poolFree(rec, v);
    break;
  }
}

/* takeSample -- live bytes and RSS now; decimate when the table is full */
static void takeSample(void)
{
  uint64_t rss = ReplayRss(1), growth = rss > baseline ? rss - baseline : 0;
  if (growth > result.peakRss)
    result.peakRss = growth;
  if (result.sampleCount == SAMPLE_LIMIT) {
    for (uint32_t i = 0; i < SAMPLE_LIMIT / 2; ++i)
      sample[i] = sample[2 * i + 1];
    result.sampleCount = SAMPLE_LIMIT / 2;
    sampleEvery *= 2;
  }
  sample[result.sampleCount].event = result.events;
  sample[result.sampleCount].live = live;
  sample[result.sampleCount].rss = growth;
  ++result.sampleCount;
}

static void progress(uint64_t done, uint64_t total, int last)
{
  static int shown = -1;
  int pct = total == 0 ? 100 : (int)(done * 100 / total), bar = pct / 4;
  if (pct == shown && !last)
    return;
  shown = pct;
  fprintf(stderr, "\r%-10.10s [%.*s%*s] %3d%%", result.name, bar,
          "#########################", 25 - bar, "", pct);
  if (last)
    fputs("\r\033[K", stderr);
}

static double nowSeconds(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* loadPool -- the pool implementation: --pool LIB.so or the example */
static void loadPool(void)
{
  void *h;
  if (ReplayOptions.pool == NULL) {
    pool = ReplayPoolExample;
    return;
  }
  h = dlopen(ReplayOptions.pool, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL)
    ReplayFail("--pool %s: %s", ReplayOptions.pool, dlerror());
  *(void **)&pool.create = dlsym(h, "ReplayPoolCreate");
  *(void **)&pool.alloc = dlsym(h, "ReplayPoolAlloc");
  *(void **)&pool.free = dlsym(h, "ReplayPoolFree");
  *(void **)&pool.destroy = dlsym(h, "ReplayPoolDestroy");
  if (pool.create == NULL || pool.alloc == NULL || pool.free == NULL || pool.destroy == NULL)
    ReplayFail("--pool %s: it must define ReplayPoolCreate, ReplayPoolAlloc, ReplayPoolFree "
               "and ReplayPoolDestroy (tools/replay/replaypool.h)", ReplayOptions.pool);
}

/* readPeak -- RSS now and then, and whenever the live bytes have grown
 * by a 256th since the last reading, once the replay threads have
 * caught up: so the peak RSS is read within 0.4% of the live peak,
 * however short the log.  .replay.report */
static void readPeak(void)
{
  static uint64_t peakReadAt;
  uint64_t rss;
  if ((result.events & (PEAK_EVERY - 1)) != 0 && live < peakReadAt)
    return;
  if (live >= peakReadAt) {
    ReplayExecDrain();
    peakReadAt = live + live / 256 + 1;
  }
  rss = ReplayRss(0);
  if (rss > baseline && rss - baseline > result.peakRss)
    result.peakRss = rss - baseline;
}

/* replayAll -- every event of the stream, then how the log ended */
static void replayAll(EventStreamStruct *stream, uint64_t total)
{
  EventStreamRes res;
  EventRecordStruct rec;
  const EventStreamInfoStruct *info;
  int streamEnd;
  SkewInit(&skew, EventStreamInfo(stream)->clockHz, skewLive, skewApply, NULL,
           ReplayAnonMap(SKEW_PENDING_LIMIT * sizeof(SkewEventStruct)));
  for (size_t i = 0; i < EventStreamThreadCount(stream); ++i) {   /* .replay.threads.many */
    uint32_t thread;
    size_t events;
    EventStreamThread(stream, i, &thread, &events);
    ReplayExecThreadEvents(thread, events);
  }
  while ((res = EventStreamNext(stream, &rec)) == EventStreamOK) {
    if (skew.count > 0)
      SkewExpire(&skew, rec.clock, 0);
    replayEvent(&rec);
    ReplayExecEventRead(rec.thread);
    ++result.events;
    readPeak();
    if (result.events >= sampleNext) {
      sampleNext += sampleEvery;
      takeSample();
      if (ReplayOptions.progress)
        progress(result.events, total, 0);
    }
  }
  SkewExpire(&skew, 0, 1);
  /* A damaged log is replayed as far as it is sound, and said so. */
  if (res == EventStreamERROR || EventStreamProblemCount(stream) > 0) {
    size_t n = EventStreamProblemCount(stream);
    snprintf(result.damage, sizeof result.damage, "%s",
             n > 0 ? EventStreamProblem(stream, 0) : "cannot read the stream");
  }
  info = EventStreamInfo(stream);
  streamEnd = info->streamEnd;
  /* StreamExec says it from 3.0.2 on; Exec last of its thread before */
  result.execEnd = !streamEnd && (info->streamExec || execLast);
  result.unclean = !streamEnd && !result.execEnd;
  result.execRunning = info->threadStarts > info->threadExits + 1;
}

/* releaseAll -- what the program never freed is freed now, untimed,
 * after the figures, so that a leak checker sees replay itself as clean;
 * so are reallocs in transit where a damaged log stops, and live pools */
static void releaseAll(void)
{
  for (size_t i = 0; i < blocks.capacity; ++i) {
    SlotStruct *slot = blocks.entries[i].slot;
    if (blocks.entries[i].key != 0 && slot != NULL && slot != FREED)
      free((void *)atomic_load(&slot->ptr));
  }
  for (size_t i = 0; moving != NULL && i < MOVING_LIMIT; ++i)
    if (moving[i].valid && moving[i].slot != NULL)
      free((void *)atomic_load(&moving[i].slot->ptr));
  for (size_t i = 0; i < pools.capacity; ++i) {
    PoolHandleStruct *ph = (PoolHandleStruct *)pools.entries[i].slot;
    if (pools.entries[i].key != 0 && ph != NULL && ph != (PoolHandleStruct *)FREED &&
        ph->handle != NULL && !ph->dead)
      pool.destroy(ph->handle);
  }
}

/* ReplayChild -- replay the log against one allocator, the one in
 * LD_PRELOAD, and send the figures to the parent.
 * design/heap.txt .replay.child */
int ReplayChild(void)
{
  EventStreamStruct *stream;
  uint64_t total, hz, calls, cycles, failed;
  double start;
  snprintf(result.name, sizeof result.name, "%s", ReplayOptions.one);
  ReplayExecInit();
  ReplayRssInit();
  stream = ReplayLogOpen(&result.recovered, &result.live);
  total = EventStreamInfo(stream)->eventCount + EventStreamInfo(stream)->unknownCount;
  loadPool();
  ReplayMapInit(&blocks, (size_t)1 << 16);
  ReplayMapInit(&pools, 64);
  ReplayMapInit(&objects, 1024);
  sample = ReplayAnonMap(SAMPLE_LIMIT * sizeof *sample);
  baseline = ReplayRss(1);
  sampleNext = 0;
  start = nowSeconds();
  replayAll(stream, total);
  ReplayExecFinish(&calls, &cycles, &failed, &result.threads);
  result.wall = nowSeconds() - start;
  takeSample();
  result.finalRss = sample[result.sampleCount - 1].rss;
  if (ReplayOptions.progress)
    progress(total, total, 1);
  hz = PlinthClockFrequency();
  result.calls = calls + poolCalls;
  result.anomaly[AnomalyReplayFailed] += failed;
  cycles += poolCycles;
  result.seconds = hz != 0 ? (double)cycles / (double)hz : (double)cycles / 1e9;
  releaseAll();
  ReplayLogClose(stream);
  if (ReplayOptions.strict && result.anomaly[AnomalyReplayFailed] > 0)
    ReplayFail("%s: --strict: %" PRIu64 " calls failed in replay", ReplayOptions.one,
               result.anomaly[AnomalyReplayFailed]);
  if (write(ReplayOptions.fd, &result, sizeof result) != (ssize_t)sizeof result ||
      write(ReplayOptions.fd, sample, result.sampleCount * sizeof *sample)
        != (ssize_t)(result.sampleCount * sizeof *sample))
    ReplayFail("cannot send the results");
  return 0;
}
