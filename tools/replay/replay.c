/* <tools/replay/replay.c> -- replay recorded allocations against allocators
 *
 * .design: design/telemetry.txt .replay
 *
 * replay reads a stream written by libtelltale-malloc.so (or by any
 * program that emits the events of src/malloc/eventdef.h, or the pool
 * events of examples/pool) and makes the same calls again, in the same
 * order, against one or more allocators, then prints their figures side
 * by side.
 *
 * Each allocator is replayed in a child process of its own: replay
 * runs itself again with --one NAME, with the allocator in LD_PRELOAD,
 * so that one allocator's memory never counts against another's, and
 * the child sends its figures back through a pipe (.replay.child).
 *
 * The pointer map, the work queues and the samples live in memory
 * mapped with mmap, outside the heap under test, and their resident
 * pages are subtracted from the RSS figures (.replay.map).
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "eventapi.h"
#include "eventread.h"
#include "outpath.h"
#include "plinth.h"
#include "plinthclock.h"
#include "replayint.h"
#include "replaypool.h"
#include "skew.h"

#define PEAK_EVERY 512          /* events between RSS readings, a power of two */
#define REPORT_LIMIT 5          /* anomalies of each kind reported one by one */
#define REPORT_LIMIT_NULL 1     /* free(NULL): legal, and common */

/* Operations and anomalies ------------------------------------------- */

const char *const opName[OP_LIMIT] = {
  "malloc", "calloc", "realloc", "free", "memalign", "aligned_alloc", "posix_memalign",
  "pool create", "pool alloc", "pool free", "pool destroy"
};

const char *const anomalyName[ANOMALY_LIMIT] = {
  "unknown frees", "double frees", "duplicate live", "free(NULL)", "replay failures"
};

/* The events replay understands, found by name in the stream's own
 * registry (design/telemetry.txt .req.self), and the parameters it
 * reads, by name. */
typedef enum EvKind {
  EvNone, EvMalloc, EvCalloc, EvRealloc, EvFree, EvFreeSized, EvMemalign, EvAlignedAlloc,
  EvPosixMemalign, EvReallocMove, EvPoolCreate, EvPoolDestroy, EvPoolAlloc, EvPoolFree, EvThreadExit,
  EvExec, EV_LIMIT
} EvKind;

typedef struct EvDescStruct {
  const char *name;
  const char *params[4];        /* the parameters read, in the order used below */
  const char *at;               /* its twin with a call stack (.stacks), read alike */
} EvDescStruct;

static const EvDescStruct evDesc[EV_LIMIT] = {
  [EvMalloc] = {"Malloc", {"size", "result"}, "MallocAt"},
  [EvCalloc] = {"Calloc", {"count", "size", "result"}, "CallocAt"},
  [EvRealloc] = {"Realloc", {"old", "result", "size"}, "ReallocAt"},
  [EvFree] = {"Free", {"pointer"}, NULL},
  [EvFreeSized] = {"FreeSized", {"pointer"}, NULL},
  [EvMemalign] = {"Memalign", {"alignment", "size", "result"}, "MemalignAt"},
  [EvAlignedAlloc] = {"AlignedAlloc", {"alignment", "size", "result"}, "AlignedAllocAt"},
  [EvPosixMemalign] = {"PosixMemalign", {"alignment", "size", "result"}, "PosixMemalignAt"},
  [EvReallocMove] = {"ReallocMove", {"old"}, NULL},
  [EvPoolCreate] = {"PoolCreate", {"pool", "size"}, NULL},
  [EvPoolDestroy] = {"PoolDestroy", {"pool"}, NULL},
  [EvPoolAlloc] = {"PoolAlloc", {"pool", "addr", "size"}, NULL},
  [EvPoolFree] = {"PoolFree", {"pool", "addr", "size"}, NULL},
  [EvThreadExit] = {"ThreadExit", {"thread"}, NULL},
  [EvExec] = {"Exec", {NULL}, NULL},
};

static unsigned char codeEv[65536];            /* stream code -> EvKind */
static unsigned char codeParam[65536][4];      /* stream code -> value index per parameter */


/* Options ------------------------------------------------------------ */

ReplayOptionsStruct opt = { .fd = -1, .touchMax = (uint64_t)1 << 30 };

void fail(const char *fmt, ...)
{
  va_list ap;
  fputs("replay: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}


/* The figures a child sends back.  design/telemetry.txt .replay.report */

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
  int strict = opt.strict && kind != AnomalyFreeNull;
  if (strict || (opt.report && result.anomaly[kind] <= limit)) {
    const char *name = rec->desc != NULL ? rec->desc->name : "?";
    fprintf(stderr, "replay: %s: offset %zu: %s: %s of 0x%" PRIx64 "\n", opt.log, rec->offset,
            name,
            kind == AnomalyUnknownFree ? "unknown free" :
            kind == AnomalyDoubleFree ? "double free" :
            kind == AnomalyDuplicate ? "duplicate live pointer" :
            kind == AnomalyFreeNull ? "free(NULL)" : "replay failed", address);
    if (opt.report && result.anomaly[kind] == limit && !strict)
      fprintf(stderr, "replay: (further %s are counted, not listed)\n", anomalyName[kind]);
  }
  if (strict)
    fail("%s: --strict: stopping at offset %zu", opt.log, rec->offset);
}

static MapStruct blocks;

/* made -- a block came into being at address: map it to slot */
static void made(const EventRecordStruct *rec, uint64_t address, SlotStruct *slot)
{
  EntryStruct *e = mapPut(&blocks, address);
  if (e->slot != NULL && e->slot != FREED) {
    OpStruct op = {ExecFree, 0, 0, NULL, e->slot};
    anomaly(AnomalyDuplicate, rec, address);
    live -= e->slot->size;
    submit(rec->thread, &op);   /* the program lost it somehow; so do we */
  }
  e->slot = slot;
  live += slot->size;
  if (live > result.peakLive)
    result.peakLive = live;
  /* design/telemetry.txt .replay.touch: a block is touched only while
   * live bytes, it included, are within the cap; then the touched
   * blocks live at any time sum to at most the cap. */
  slot->touch = live <= opt.touchMax ? slot->size : 0;
  result.untouched += slot->touch == 0 && slot->size > 0;
}

/* unmade -- the block at address goes: its slot, or NULL if not live */
static SlotStruct *unmade(const EventRecordStruct *rec, uint64_t address)
{
  EntryStruct *e = mapFind(&blocks, address);
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
    moving = mapAnon(MOVING_LIMIT * sizeof *moving);
  return &moving[thread % MOVING_LIMIT];
}

/* Clocks out of causal order: an event that would be an anomaly waits
 * for the other thread's event that explains it (skew.h).
 * design/telemetry.txt .replay.skew */

static SkewStruct skew;

static int liveAt(uint64_t address)
{
  EntryStruct *e = mapFind(&blocks, address);
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
  op.slot = slotNew(size);
  made(rec, address, op.slot);
  submit(rec->thread, &op);
}

/* freeNow -- a free replayed; 0 if its block was not live */
static int freeNow(const EventRecordStruct *rec, uint64_t address)
{
  SlotStruct *old = unmade(rec, address);
  if (old != NULL) {
    OpStruct op = {ExecFree, 0, 0, NULL, old};
    submit(rec->thread, &op);
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

/* Pools.  design/telemetry.txt .replay.pool */

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
  EntryStruct *e = mapFind(&pools, address);
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
    handleChunk = mapAnon(HANDLE_CHUNK * sizeof *handleChunk);
    handleUsed = 0;
  }
  ph = &handleChunk[handleUsed++];
  POOL_TIMED(ph->handle = pool.create((size_t)v[1], rec->desc->name));
  if (ph->handle == NULL)
    anomaly(AnomalyReplayFailed, rec, v[0]);
  mapPut(&pools, v[0])->slot = (SlotStruct *)ph;
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
  mapFind(&pools, v[0])->slot = FREED;
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
  slot = slotNew(v[2]);
  atomic_store(&slot->ptr, (uintptr_t)p);
  slot->next = (SlotStruct *)ph;        /* the pool it came from */
  e = mapPut(&objects, v[1]);
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
  EntryStruct *e = mapFind(&objects, v[1]);
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
  slotRelease(slot);
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
 * design/telemetry.txt .malloc.order */
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
      submit(rec->thread, &op);
    }
    return;
  }
  if (op.old == NULL)
    op.kind = ExecMalloc;       /* realloc(NULL, n), or of a block we never saw */
  op.slot = slotNew(v[2]);
  made(rec, v[1], op.slot);
  submit(rec->thread, &op);
}

/* An Exec event that is the last of its thread: the log ends at an exec
 * (src/malloc/eventdef.h), not a death.  design/telemetry.txt .replay.log */
static int execLast;
static uint32_t execThread;

/* replayEvent -- dispatch one recorded event */
static void replayEvent(const EventRecordStruct *rec)
{
  EvKind ev = (EvKind)codeEv[rec->code];
  uint64_t v[4];
  for (unsigned i = 0; i < 4; ++i)
    v[i] = rec->values[codeParam[rec->code][i]].u;
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
    if (!opt.serial)
      execThreadExit((uint32_t)v[0]);
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
  uint64_t rss = rssAnon(1), growth = rss > baseline ? rss - baseline : 0;
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

/* findEvents -- which codes in this stream replay understands */
static void findEvents(const EventRegistryStruct *reg)
{
  for (unsigned i = 0; i < reg->eventCount; ++i) {
    const EventDescStruct *d = &reg->events[i];
    for (unsigned ev = EvMalloc; ev < EV_LIMIT; ++ev) {
      unsigned ok = 1, idx[4] = {0, 0, 0, 0};
      if ((strcmp(d->name, evDesc[ev].name) != 0 &&
           (evDesc[ev].at == NULL || strcmp(d->name, evDesc[ev].at) != 0)) || d->code > 0xFFFF)
        continue;
      for (unsigned p = 0; p < 4 && evDesc[ev].params[p] != NULL; ++p) {
        unsigned j;
        for (j = 0; j < d->paramCount; ++j)
          if (strcmp(d->paramNames[j], evDesc[ev].params[p]) == 0)
            break;
        if (j == d->paramCount || EventTypeOf(d->format[j])->form != EventTypeUNSIGNED)
          ok = 0;
        idx[p] = j;
      }
      if (!ok) {
        if (opt.report)
          fprintf(stderr, "replay: %s: event %s has unexpected parameters: not replayed\n",
                  opt.log, d->name);
        continue;
      }
      codeEv[d->code] = (unsigned char)ev;
      for (unsigned p = 0; p < 4; ++p)
        codeParam[d->code][p] = (unsigned char)idx[p];
    }
  }
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
  if (opt.pool == NULL) {
    pool = ReplayPoolExample;
    return;
  }
  h = dlopen(opt.pool, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL)
    fail("--pool %s: %s", opt.pool, dlerror());
  *(void **)&pool.create = dlsym(h, "ReplayPoolCreate");
  *(void **)&pool.alloc = dlsym(h, "ReplayPoolAlloc");
  *(void **)&pool.free = dlsym(h, "ReplayPoolFree");
  *(void **)&pool.destroy = dlsym(h, "ReplayPoolDestroy");
  if (pool.create == NULL || pool.alloc == NULL || pool.free == NULL || pool.destroy == NULL)
    fail("--pool %s: it must define ReplayPoolCreate, ReplayPoolAlloc, ReplayPoolFree "
         "and ReplayPoolDestroy (tools/replay/replaypool.h)", opt.pool);
}

/* allocatorLib -- the shared object for an allocator's name, NULL for glibc */
static const char *allocatorLib(const char *name)
{
  if (strcmp(name, "glibc") == 0)
    return NULL;
  if (strcmp(name, "jemalloc") == 0)
    return "libjemalloc.so.2";
  if (strcmp(name, "mimalloc") == 0)
    return "libmimalloc.so.2";
  if (strcmp(name, "tcmalloc") == 0)
    return "libtcmalloc_minimal.so.4";
  if (strchr(name, '/') != NULL)
    return name;
  fail("unknown allocator '%s': use glibc, jemalloc, mimalloc, tcmalloc or a path to a .so", name);
}

static const char *allocatorPackage(const char *name)
{
  return strcmp(name, "jemalloc") == 0 ? " (Debian package libjemalloc2)"
    : strcmp(name, "mimalloc") == 0 ? " (Debian package libmimalloc2.0)"
    : strcmp(name, "tcmalloc") == 0 ? " (Debian package libtcmalloc-minimal4)" : "";
}

/* recoverLive -- a program that died leaves LOG.live beside its log:
 * add the events only it has, as eventcnv does.  design/telemetry.txt
 * .sol.recover, .replay.log  Returns 1 if *bufReturn is now malloc'd. */
static int recoverLive(unsigned char **bufReturn, size_t *sizeReturn)
{
  char livePath[4096], msg[256];
  struct stat st;
  unsigned char *liveBytes, *merged;
  size_t size;
  EventRecoverStruct recovery;
  int fd;
  if (snprintf(livePath, sizeof livePath, "%s.live", opt.log) >= (int)sizeof livePath)
    return 0;
  fd = open(livePath, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT)
      fail("%s: %s", livePath, strerror(errno));
    return 0;
  }
  if (fstat(fd, &st) != 0 || st.st_size == 0) {
    close(fd);
    return 0;
  }
  liveBytes = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (liveBytes == MAP_FAILED)
    fail("%s: %s", livePath, strerror(errno));
  if (EventRecover(*bufReturn, *sizeReturn, liveBytes, (size_t)st.st_size, &merged, &size,
                   &recovery, msg, sizeof msg) != 0) {
    if (opt.report)
      fprintf(stderr, "replay: %s: %s; replaying the log alone\n", livePath, msg);
    munmap(liveBytes, (size_t)st.st_size);
    return 0;
  }
  munmap(liveBytes, (size_t)st.st_size);
  munmap(*bufReturn, *sizeReturn);
  *bufReturn = merged;
  *sizeReturn = size;
  result.recovered = recovery.events;
  result.live = 1;
  if (recovery.damaged > 0 && opt.report)
    fprintf(stderr, "replay: %s: %lu regions have damaged headers (the first at offset %lu): "
            "not recovered\n", livePath, (unsigned long)recovery.damaged,
            (unsigned long)recovery.damagedOffset);
  if (recovery.logFailed && opt.report)
    fprintf(stderr, "replay: %s: the program could not write all of its log: events are lost\n",
            livePath);
  if (recovery.rejected > 0 && opt.report)
    fprintf(stderr, "replay: %s: %lu live blocks did not continue the log (the first at offset "
            "%lu): not recovered\n", livePath, (unsigned long)recovery.rejected,
            (unsigned long)recovery.rejectedOffset);
  return 1;
}

/* checkAllocator -- the library must be the allocator: the malloc the
 * replay calls is defined in it, not in the C library behind it */
static void checkAllocator(const char *lib)
{
  void *handle = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  struct link_map *map = NULL;
  Dl_info info = {0};
  char mine[PATH_MAX], theirs[PATH_MAX];
  if (handle == NULL)
    fail("%s: %s is not loaded: is it installed%s?", opt.one, lib, allocatorPackage(opt.one));
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == NULL
      || dladdr(dlsym(RTLD_DEFAULT, "malloc"), &info) == 0 || info.dli_fname == NULL
      || realpath(map->l_name, mine) == NULL || realpath(info.dli_fname, theirs) == NULL
      || strcmp(mine, theirs) != 0)
    fail("%s: %s does not define malloc (the replay's is %s's): not an allocator", opt.one,
         lib, info.dli_fname != NULL ? info.dli_fname : "another library");
}

/* The log as read: mapped, or recovered with LOG.live into a malloc'd copy */
static unsigned char *logBytes;
static size_t logSize;
static int logRecovered;

/* openStream -- map the log, recover LOG.live into it, open the stream */
static EventStreamStruct *openStream(void)
{
  struct stat st;
  EventStreamStruct *stream;
  char msg[512];
  int fd = open(opt.log, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail("%s: %s", opt.log, strerror(errno));
  if (fstat(fd, &st) != 0 || st.st_size == 0)
    fail("%s: empty or unreadable", opt.log);
  logBytes = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (logBytes == MAP_FAILED)
    fail("%s: %s", opt.log, strerror(errno));
  close(fd);
  (void)madvise(logBytes, (size_t)st.st_size, MADV_SEQUENTIAL);
  logSize = (size_t)st.st_size;
  logRecovered = recoverLive(&logBytes, &logSize);
  if (EventStreamOpen(&stream, logBytes, logSize, 0, msg, sizeof msg) != EventStreamOK)
    fail("%s: %s", opt.log, msg);
  return stream;
}

static void closeStream(EventStreamStruct *stream)
{
  EventStreamClose(stream);
  if (logRecovered)
    free(logBytes);             /* EventRecover's, not the mapped log */
  else
    munmap(logBytes, logSize);
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
    execDrain();
    peakReadAt = live + live / 256 + 1;
  }
  rss = rssAnon(0);
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
           mapAnon(SKEW_PENDING_LIMIT * sizeof(SkewEventStruct)));
  for (size_t i = 0; i < EventStreamThreadCount(stream); ++i) {   /* .replay.threads.many */
    uint32_t thread;
    size_t events;
    EventStreamThread(stream, i, &thread, &events);
    execThreadEvents(thread, events);
  }
  while ((res = EventStreamNext(stream, &rec)) == EventStreamOK) {
    if (skew.count > 0)
      SkewExpire(&skew, rec.clock, 0);
    replayEvent(&rec);
    execEventRead(rec.thread);
    ++result.events;
    readPeak();
    if (result.events >= sampleNext) {
      sampleNext += sampleEvery;
      takeSample();
      if (opt.progress)
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

/* child -- replay the log against one allocator, the one in LD_PRELOAD,
 * and send the figures to the parent.  design/telemetry.txt .replay.child */
static int child(void)
{
  const char *lib = allocatorLib(opt.one);
  EventStreamStruct *stream;
  uint64_t total, hz, calls, cycles, failed;
  double start;
  snprintf(result.name, sizeof result.name, "%s", opt.one);
  if (lib != NULL)
    checkAllocator(lib);
  execInit();
  rssInit();
  stream = openStream();
  findEvents(EventStreamInfo(stream)->registry);
  total = EventStreamInfo(stream)->eventCount + EventStreamInfo(stream)->unknownCount;
  loadPool();
  mapInit(&blocks, (size_t)1 << 16);
  mapInit(&pools, 64);
  mapInit(&objects, 1024);
  sample = mapAnon(SAMPLE_LIMIT * sizeof *sample);
  baseline = rssAnon(1);
  sampleNext = 0;
  start = nowSeconds();
  replayAll(stream, total);
  execFinish(&calls, &cycles, &failed, &result.threads);
  result.wall = nowSeconds() - start;
  takeSample();
  result.finalRss = sample[result.sampleCount - 1].rss;
  if (opt.progress)
    progress(total, total, 1);
  hz = PlinthClockFrequency();
  result.calls = calls + poolCalls;
  result.anomaly[AnomalyReplayFailed] += failed;
  cycles += poolCycles;
  result.seconds = hz != 0 ? (double)cycles / (double)hz : (double)cycles / 1e9;
  releaseAll();
  closeStream(stream);
  if (opt.strict && result.anomaly[AnomalyReplayFailed] > 0)
    fail("%s: --strict: %" PRIu64 " calls failed in replay", opt.one, result.anomaly[AnomalyReplayFailed]);
  if (write(opt.fd, &result, sizeof result) != (ssize_t)sizeof result ||
      write(opt.fd, sample, result.sampleCount * sizeof *sample)
        != (ssize_t)(result.sampleCount * sizeof *sample))
    fail("cannot send the results");
  return 0;
}


/* The parent: one child per allocator, then the report. */

static ResultStruct results[ALLOC_LIMIT];
static SampleStruct *samples[ALLOC_LIMIT];

static int readAll(int fd, void *buf, size_t size)
{
  unsigned char *p = buf;
  while (size > 0) {
    ssize_t n = read(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return -1;
    p += n;
    size -= (size_t)n;
  }
  return 0;
}

/* runChild -- replay against allocator i in a child; 0 or an exit status */
static int runChild(size_t i, char **argv0)
{
  int fds[2], status;
  pid_t pid;
  char fdText[16], touchText[24];
  const char *lib = allocatorLib(opt.alloc[i]);
  if (pipe(fds) != 0)
    fail("pipe: %s", strerror(errno));
  pid = fork();
  if (pid < 0)
    fail("fork: %s", strerror(errno));
  if (pid == 0) {
    const char *args[24];
    size_t n = 0;
    close(fds[0]);
    snprintf(fdText, sizeof fdText, "%d", fds[1]);
    args[n++] = argv0[0];
    args[n++] = "--one";
    args[n++] = opt.alloc[i];
    args[n++] = "--fd";
    args[n++] = fdText;
    if (opt.serial) args[n++] = "--serial";
    if (opt.strict) args[n++] = "--strict";
    if (opt.progress) args[n++] = "--progress";
    if (i == 0 && !opt.quiet) args[n++] = "--report";
    snprintf(touchText, sizeof touchText, "%llu", (unsigned long long)(opt.touchMax >> 20));
    args[n++] = "--touch-max";
    args[n++] = touchText;
    if (opt.pool != NULL) {
      args[n++] = "--pool";
      args[n++] = opt.pool;
    }
    args[n++] = "--";
    args[n++] = opt.log;
    args[n] = NULL;
    if (lib != NULL)
      setenv("LD_PRELOAD", lib, 1);
    else
      unsetenv("LD_PRELOAD");
    execv("/proc/self/exe", (char **)args);
    fprintf(stderr, "replay: cannot run myself: %s\n", strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  if (readAll(fds[0], &results[i], sizeof results[i]) == 0) {
    samples[i] = mapAnon((results[i].sampleCount + 1) * sizeof(SampleStruct));
    if (readAll(fds[0], samples[i], results[i].sampleCount * sizeof(SampleStruct)) != 0)
      results[i].sampleCount = 0;
  } else
    results[i].name[0] = '\0';
  close(fds[0]);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && results[i].name[0] != '\0')
    return 0;
  if (WIFSIGNALED(status))
    fprintf(stderr, "replay: %s: the replay died of signal %d\n", opt.alloc[i], WTERMSIG(status));
  return WIFEXITED(status) && WEXITSTATUS(status) != 0 ? WEXITSTATUS(status) : 1;
}

/* logSay -- how the log ended, on stderr; 1 if it was damaged */
static int logSay(const ResultStruct *r)
{
  if (r->execEnd && r->recovered > 0)
    fprintf(stderr, "replay: %s: the log ends where the program exec'd another: every event "
            "made before the exec call is in it, and the %" PRIu64 " events other threads made "
            "after it were recovered from %s.live\n", opt.log, r->recovered, opt.log);
  else if (r->execEnd && r->execRunning && !r->live)
    fprintf(stderr, "replay: %s: the log ends where the program exec'd another: every event "
            "made before the exec call is in it, but not those other threads made while the "
            "exec ended them (there is no live file)\n", opt.log);
  else if (r->execEnd)
    fprintf(stderr, "replay: %s: the log ends where the program exec'd another: every event "
            "made before the exec call is in it\n", opt.log);
  if (r->unclean)
    fprintf(stderr, "replay: %s: the stream did not end cleanly (no StreamEnd): the program died "
            "before it could end it%s", opt.log,
            r->recovered > 0 ? "; "
            : !r->live ? ", and there is no live file to recover from: the events it still "
                         "held in its buffers are lost\n" : "\n");
  if (r->unclean && r->recovered > 0)
    fprintf(stderr, "%" PRIu64 " of its events were recovered from %s.live\n", r->recovered,
            opt.log);
  if (r->untouched > 0)
    fprintf(stderr, "replay: %s: live bytes reached %" PRIu64 ", past the %" PRIu64 " MiB "
            "replay touches (--touch-max): %" PRIu64 " blocks made past it were not touched, so "
            "RSS growth leaves them out\n", opt.log, r->peakLive, opt.touchMax >> 20,
            r->untouched);
  if (r->damage[0] != '\0') {
    fprintf(stderr, "replay: %s: %s: replayed the %" PRIu64 " events before it\n", opt.log,
            r->damage, r->events);
    return 1;
  }
  /* Events lost with no live file: exit 1, as eventcnv's (.replay.log) */
  return r->unclean && !r->live;
}

static void usage(FILE *f)
{
  fputs("usage: telltale-replay [options] LOG\n"
        "Replays the allocations recorded in LOG (by libtelltale-malloc.so) against\n"
        "allocators and prints their figures side by side.\n"
        "  -a, --alloc NAME  glibc (the default), jemalloc, mimalloc, tcmalloc, or a\n"
        "                    path to an allocator .so; repeat, or separate with commas\n"
        "  --serial          replay every thread's calls on one thread, in recorded order\n"
        "  --strict          an unknown free, double free or duplicate live pointer\n"
        "                    is an error (exit status 1); free(NULL) is legal, counted\n"
        "  --svg FILE        plot live bytes and RSS over the replay\n"
        "  --touch-max MIB   touch the pages of live blocks up to MIB in all (1024):\n"
        "                    past it, blocks are made but not touched, and said\n"
        "  --pool LIB.so     replay pool events against LIB.so (tools/replay/replaypool.h);\n"
        "                    the default is the example allocator (examples/pool)\n"
        "  --no-progress     no progress bar (it is shown only on a terminal)\n"
        "  -q, --quiet       do not list anomalies one by one\n"
        "  -h, --help\n"
        "  --version\n"
        "LOG.live, if there, adds what a program that died left only in it.  LOG\n"
        "may be an archive of a log (eventcnv --format telltale).\n"
        "Exit status: 0 if replayed; a log that did not end cleanly (the program\n"
        "died) or that ends at an exec is said on stderr.  1 if LOG is damaged (it\n"
        "is replayed up to the damage, which is named), on an error, or with\n"
        "--strict on an anomaly.  2 on bad usage.\n", f);
}

static void addAlloc(char *list)
{
  for (char *name = strtok(list, ","); name != NULL; name = strtok(NULL, ",")) {
    if (opt.allocCount == ALLOC_LIMIT)
      fail("at most %d allocators", ALLOC_LIMIT);
    (void)allocatorLib(name);
    opt.alloc[opt.allocCount++] = name;
  }
}

/* parseArgs -- the options into opt; -1 to go on, or an exit status */
static int parseArgs(int argc, char **argv, int *noProgress)
{
  int i, positional = 0;
  const char *log = NULL;
  for (i = 1; i < argc; ++i) {
    const char *a = argv[i];
#define NEED() \
  do { \
    if (i + 1 >= argc) { \
      fprintf(stderr, "replay: %s needs a value\n", a); \
      return 2; \
    } \
  } while (0)
    if (positional || a[0] != '-' || a[1] == '\0') {
      if (log != NULL) {
        usage(stderr);
        return 2;
      }
      log = a;
    } else if (strcmp(a, "--") == 0)
      positional = 1;
    else if (strcmp(a, "-a") == 0 || strcmp(a, "--alloc") == 0) {
      NEED();
      addAlloc(argv[++i]);
    } else if (strcmp(a, "--svg") == 0) {
      NEED();
      opt.svg = argv[++i];
    } else if (strcmp(a, "--touch-max") == 0) {
      char *end;
      unsigned long long mib;
      NEED();
      errno = 0;
      mib = strtoull(argv[++i], &end, 10);
      if (errno != 0 || *end != '\0' || end == argv[i] || argv[i][0] == '-' || mib > (1ull << 40)) {
        usage(stderr);
        return 2;
      }
      opt.touchMax = (uint64_t)mib << 20;
    } else if (strcmp(a, "--pool") == 0) {
      NEED();
      opt.pool = argv[++i];
    } else if (strcmp(a, "--one") == 0) {
      NEED();
      opt.one = argv[++i];
    } else if (strcmp(a, "--fd") == 0) {
      NEED();
      opt.fd = atoi(argv[++i]);
    } else if (strcmp(a, "--serial") == 0)
      opt.serial = 1;
    else if (strcmp(a, "--strict") == 0)
      opt.strict = 1;
    else if (strcmp(a, "--progress") == 0)
      opt.progress = 1;
    else if (strcmp(a, "--no-progress") == 0)
      *noProgress = 1;
    else if (strcmp(a, "--report") == 0)
      opt.report = 1;
    else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0)
      opt.quiet = 1;
    else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--version") == 0) {
      printf("telltale-replay (telltale) %s\n", TELLTALE_VERSION_STRING);
      return 0;
    } else {
      usage(stderr);
      fprintf(stderr, "replay: unknown option %s\n", a);
      return 2;
    }
#undef NEED
  }
  if (log == NULL) {
    usage(stderr);
    return 2;
  }
  opt.log = log;
  return -1;
}

int main(int argc, char **argv)
{
  int noProgress = 0, status = parseArgs(argc, argv, &noProgress);
  const char *why;
  if (status >= 0)
    return status;
  if (opt.one != NULL) {
    if (opt.fd < 0)
      fail("--one needs --fd");
    return child();
  }
  if (opt.allocCount == 0)
    opt.alloc[opt.allocCount++] = "glibc";
  if (access(opt.log, R_OK) != 0)
    fail("%s: %s", opt.log, strerror(errno));
  /* Neither the chart nor standard output is the log or its live file
   * (design/telemetry.txt .tools.output), and the chart's file can be
   * written: said now, not after the replay. */
  OutPathInputs(&opt.log, 1);
  if ((why = OutPathRefused(opt.svg)) != NULL || (why = OutPathRefused(NULL)) != NULL) {
    fprintf(stderr, "replay: %s: %s, which writing would replace\n",
            opt.svg != NULL && OutPathRefused(opt.svg) != NULL ? opt.svg : "standard output", why);
    return 2;
  }
  if (opt.svg != NULL) {
    int fd = OutPathOpen("replay", opt.svg, 1);
    if (fd < 0 || close(fd) != 0)
      return 1;
  }
  opt.progress = !noProgress && isatty(2);
  for (size_t a = 0; a < opt.allocCount; ++a)
    if ((status = runChild(a, argv)) != 0)
      fail("%s: the replay failed", opt.alloc[a]);
  report(results);
  if (opt.svg != NULL)
    writeSvg(opt.svg, results, samples);
  status = logSay(&results[0]);
  /* A report that did not reach its reader is a failure (.tools.output) */
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "replay: error writing the report: %s\n", strerror(errno));
    status = 1;
  }
  return status;
}
