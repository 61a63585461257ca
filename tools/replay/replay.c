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
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
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

#include "eventread.h"
#include "plinth.h"
#include "plinthclock.h"
#include "replaypool.h"

#define ALLOC_LIMIT 8           /* allocators in one run */
#define SAMPLE_LIMIT 2048       /* points per allocator on the plot */
#define RING_SIZE 4096          /* ops queued per replay thread, a power of two */
#define WORKER_LIMIT 4096       /* replay threads alive at once */
#define PEAK_EVERY 512          /* events between RSS readings, a power of two */
#define REPORT_LIMIT 5          /* anomalies of each kind reported one by one */
#define REPORT_LIMIT_NULL 1     /* free(NULL): legal, and common */


/* Operations and anomalies ------------------------------------------- */

typedef enum OpKind {
  OpMalloc, OpCalloc, OpRealloc, OpFree, OpMemalign, OpAlignedAlloc, OpPosixMemalign,
  OpPoolCreate, OpPoolAlloc, OpPoolFree, OpPoolDestroy, OP_LIMIT
} OpKind;

static const char *const opName[OP_LIMIT] = {
  "malloc", "calloc", "realloc", "free", "memalign", "aligned_alloc", "posix_memalign",
  "pool create", "pool alloc", "pool free", "pool destroy"
};

typedef enum AnomalyKind {
  AnomalyUnknownFree, AnomalyDoubleFree, AnomalyDuplicate, AnomalyFreeNull,
  AnomalyReplayFailed, ANOMALY_LIMIT
} AnomalyKind;

static const char *const anomalyName[ANOMALY_LIMIT] = {
  "unknown frees", "double frees", "duplicate live", "free(NULL)", "replay failures"
};

/* The events replay understands, found by name in the stream's own
 * registry (design/telemetry.txt .req.self), and the parameters it
 * reads, by name. */
typedef enum EvKind {
  EvNone, EvMalloc, EvCalloc, EvRealloc, EvFree, EvFreeSized, EvMemalign, EvAlignedAlloc,
  EvPosixMemalign, EvReallocMove, EvPoolCreate, EvPoolDestroy, EvPoolAlloc, EvPoolFree, EvThreadExit,
  EV_LIMIT
} EvKind;

typedef struct EvDescStruct {
  const char *name;
  const char *params[4];        /* the parameters read, in the order used below */
} EvDescStruct;

static const EvDescStruct evDesc[EV_LIMIT] = {
  [EvMalloc] = {"Malloc", {"size", "result"}},
  [EvCalloc] = {"Calloc", {"count", "size", "result"}},
  [EvRealloc] = {"Realloc", {"old", "result", "size"}},
  [EvFree] = {"Free", {"pointer"}},
  [EvFreeSized] = {"FreeSized", {"pointer"}},
  [EvMemalign] = {"Memalign", {"alignment", "size", "result"}},
  [EvAlignedAlloc] = {"AlignedAlloc", {"alignment", "size", "result"}},
  [EvPosixMemalign] = {"PosixMemalign", {"alignment", "size", "result"}},
  [EvReallocMove] = {"ReallocMove", {"old"}},
  [EvPoolCreate] = {"PoolCreate", {"pool", "size"}},
  [EvPoolDestroy] = {"PoolDestroy", {"pool"}},
  [EvPoolAlloc] = {"PoolAlloc", {"pool", "addr", "size"}},
  [EvPoolFree] = {"PoolFree", {"pool", "addr", "size"}},
  [EvThreadExit] = {"ThreadExit", {"thread"}},
};

static unsigned char codeEv[65536];            /* stream code -> EvKind */
static unsigned char codeParam[65536][4];      /* stream code -> value index per parameter */


/* Options ------------------------------------------------------------ */

static struct {
  const char *log;
  const char *alloc[ALLOC_LIMIT];
  size_t allocCount;
  const char *svg;
  const char *pool;             /* a pool .so, or NULL for the example */
  int serial, strict, progress, quiet;
  const char *one;              /* child: the allocator to replay */
  int fd;                       /* child: where to send the figures */
  int report;                   /* child: report anomalies one by one */
} opt = { .fd = -1 };


/* Memory outside the heap under test.  design/telemetry.txt .replay.map */

#define REGION_LIMIT 65536
static struct { void *base; size_t size; } region[REGION_LIMIT];
static size_t regionCount;
static int ownDirty = 1;        /* regions changed since ownResident */

static void fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
  va_list ap;
  fputs("replay: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

/* mapAnon -- size bytes of zeroed memory, not from the heap under test */
static void *mapAnon(size_t size)
{
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    fail("out of memory mapping %zu bytes", size);
  for (size_t i = 0; i < REGION_LIMIT; ++i)
    if (region[i].base == NULL) {
      region[i].base = p;
      region[i].size = size;
      if (i >= regionCount)
        regionCount = i + 1;
      ownDirty = 1;
      return p;
    }
  fail("too many regions");
}

static void unmapAnon(void *p)
{
  for (size_t i = 0; i < regionCount; ++i)
    if (region[i].base == p) {
      munmap(p, region[i].size);
      region[i].base = NULL;
      ownDirty = 1;
      return;
    }
}

/* ownResident -- bytes of replay's own mapped memory that are resident */
static size_t ownResident(void)
{
  static unsigned char vec[16384];
  size_t page = 4096, total = 0;
  for (size_t i = 0; i < regionCount; ++i) {
    unsigned char *base = region[i].base;
    size_t pages = region[i].size / page;
    if (base == NULL)
      continue;
    for (size_t at = 0; at < pages; at += sizeof vec) {
      size_t n = pages - at < sizeof vec ? pages - at : sizeof vec;
      if (mincore(base + at * page, n * page, vec) != 0)
        break;
      for (size_t j = 0; j < n; ++j)
        total += vec[j] & 1;
    }
  }
  return total * page;
}

/* rssAnon -- the process's anonymous resident bytes, less replay's own.
 * File pages (the log, mapped to read it) are not counted.  Replay's
 * own resident bytes are counted again when fresh is set (at each
 * sample) or a region was mapped or unmapped: between, they grow by at
 * most a slot chunk (512 KiB), and counting them costs a mincore of
 * every region. */
static int statmFd = -1;
static size_t ownCached;
static size_t rssAnon(int fresh)
{
  char buf[256];
  unsigned long size, resident, shared;
  ssize_t n = pread(statmFd, buf, sizeof buf - 1, 0);
  size_t own;
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  if (sscanf(buf, "%lu %lu %lu", &size, &resident, &shared) != 3)
    return 0;
  if (fresh || ownDirty) {
    ownCached = ownResident();
    ownDirty = 0;
  }
  own = ownCached;
  resident = resident > shared ? resident - shared : 0;
  resident *= (unsigned long)sysconf(_SC_PAGESIZE);
  return resident > own ? resident - own : 0;
}


/* Slots: one per replayed block.  design/telemetry.txt .replay.threads
 *
 * A slot holds the replayed pointer of a recorded block.  It is PENDING
 * until the thread that allocates it has done so; a thread that frees a
 * block another thread allocated waits for that.  That is the only
 * synchronisation between replay threads.  Slots are recycled through a
 * stack that any thread pushes onto and only the reading thread takes
 * from, all at once, so there is no ABA problem. */

#define PENDING ((uintptr_t)1)

typedef struct SlotStruct {
  _Atomic uintptr_t ptr;        /* the replayed block, PENDING or 0 if it failed */
  struct SlotStruct *next;      /* on a free list */
  uint64_t size;                /* requested */
} SlotStruct;

#define SLOT_CHUNK ((size_t)1 << 14)
static _Atomic(SlotStruct *) slotReturned;     /* pushed by any thread */
static SlotStruct *slotFree;                   /* the reader's own */
static SlotStruct *slotChunk;
static size_t slotChunkUsed = SLOT_CHUNK;

static SlotStruct *slotNew(uint64_t size)
{
  SlotStruct *s = slotFree;
  if (s == NULL)
    s = slotFree = atomic_exchange(&slotReturned, NULL);
  if (s != NULL)
    slotFree = s->next;
  else {
    if (slotChunkUsed == SLOT_CHUNK) {
      slotChunk = mapAnon(SLOT_CHUNK * sizeof(SlotStruct));
      slotChunkUsed = 0;
    }
    s = &slotChunk[slotChunkUsed++];
  }
  atomic_store_explicit(&s->ptr, PENDING, memory_order_relaxed);
  s->size = size;
  return s;
}

static void slotRelease(SlotStruct *s)
{
  SlotStruct *head = atomic_load_explicit(&slotReturned, memory_order_relaxed);
  do
    s->next = head;
  while (!atomic_compare_exchange_weak_explicit(&slotReturned, &head, s,
                                                memory_order_release, memory_order_relaxed));
}

static void *slotWait(SlotStruct *s)
{
  uintptr_t p;
  unsigned spins = 0;
  while ((p = atomic_load_explicit(&s->ptr, memory_order_acquire)) == PENDING)
    if (++spins > 64)
      sched_yield();
  return (void *)p;
}


/* The pointer map: recorded address -> slot.  design/telemetry.txt .replay.map
 * Open addressing, only the reading thread touches it.  An entry whose
 * block was freed keeps its key with the slot FREED, so that a second
 * free is told from a free of something never allocated. */

#define FREED ((SlotStruct *)1)

typedef struct EntryStruct {
  uint64_t key;                 /* 0: empty */
  SlotStruct *slot;
} EntryStruct;

typedef struct MapStruct {
  EntryStruct *entries;
  size_t capacity, count;
} MapStruct;

static size_t mapHash(uint64_t key)
{
  return (size_t)((key >> 3) * 0x9E3779B97F4A7C15u >> 16);
}

static void mapInit(MapStruct *map, size_t capacity)
{
  map->entries = mapAnon(capacity * sizeof(EntryStruct));
  map->capacity = capacity;
  map->count = 0;
}

/* mapFind -- the entry for key: found, or the empty one where it would go */
static EntryStruct *mapFind(MapStruct *map, uint64_t key)
{
  size_t mask = map->capacity - 1, i = mapHash(key) & mask;
  while (map->entries[i].key != 0 && map->entries[i].key != key)
    i = (i + 1) & mask;
  return &map->entries[i];
}

/* mapPut -- the entry for key, made if new */
static EntryStruct *mapPut(MapStruct *map, uint64_t key)
{
  EntryStruct *e;
  if ((map->count + 1) * 2 > map->capacity) {
    MapStruct bigger;
    mapInit(&bigger, map->capacity * 2);
    for (size_t i = 0; i < map->capacity; ++i)
      if (map->entries[i].key != 0) {
        EntryStruct *n = mapFind(&bigger, map->entries[i].key);
        *n = map->entries[i];
        ++bigger.count;
      }
    unmapAnon(map->entries);
    *map = bigger;
  }
  e = mapFind(map, key);
  if (e->key == 0) {
    e->key = key;
    e->slot = NULL;
    ++map->count;
  }
  return e;
}


/* Replay threads.  design/telemetry.txt .replay.threads */

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

typedef struct WorkerStruct {
  uint32_t serial;
  int running, exiting;
  pthread_t thread;
  OpStruct *ring;
  _Atomic uint64_t head, tail;
  uint64_t cycles, calls, failed;
} WorkerStruct;

static WorkerStruct serialWorker;
static WorkerStruct *worker[WORKER_LIMIT];
static size_t workerCount;
static size_t pageSize = 4096;

/* touch -- write to every page of a new block, as a program would.
 * Past TOUCH_LIMIT bytes, not: a corrupt size that overcommit granted
 * must not make the replay run out of memory. */
#define TOUCH_LIMIT ((uint64_t)1 << 30)
static void touch(void *p, uint64_t size)
{
  unsigned char *b = p;
  if (p == NULL || size == 0)
    return;
  if (size > TOUCH_LIMIT)
    size = TOUCH_LIMIT;
  for (uint64_t at = 0; at < size; at += pageSize)
    b[at] = 1;
  b[size - 1] = 1;
}

/* execute -- make one call of the allocator under test, timing it */
static void execute(WorkerStruct *w, const OpStruct *op)
{
  void *p = NULL, *old = NULL;
  uint64_t t0, t1;
  if (op->old != NULL)
    old = slotWait(op->old);
  t0 = PlinthClockNow();
  switch ((ExecKind)op->kind) {
  case ExecMalloc: p = malloc(op->size); break;
  case ExecCalloc: p = calloc(1, op->size); break;
  case ExecRealloc: p = realloc(old, op->size); break;
  case ExecFree: free(old); break;
  case ExecMemalign: p = memalign(op->align, op->size); break;
  case ExecAlignedAlloc: p = aligned_alloc(op->align, op->size); break;
  case ExecPosixMemalign:
    if (posix_memalign(&p, op->align, op->size) != 0)
      p = NULL;
    break;
  case ExecExit: return;
  }
  t1 = PlinthClockNow();
  w->cycles += t1 - t0;
  ++w->calls;
  if (op->old != NULL && !(op->kind == ExecRealloc && p == NULL && op->size > 0))
    slotRelease(op->old);
  if (op->slot != NULL) {
    if (p == NULL)
      ++w->failed;
    else if (op->kind != ExecCalloc)
      touch(p, op->size);
    atomic_store_explicit(&op->slot->ptr, (uintptr_t)p, memory_order_release);
  }
}

static void *workerRun(void *arg)
{
  WorkerStruct *w = arg;
  uint64_t head = atomic_load_explicit(&w->head, memory_order_relaxed);
  unsigned idle = 0;
  for (;;) {
    uint64_t tail = atomic_load_explicit(&w->tail, memory_order_acquire);
    if (head == tail) {
      if (++idle < 256)
        sched_yield();
      else {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
      }
      continue;
    }
    idle = 0;
    while (head != tail) {
      OpStruct *op = &w->ring[head & (RING_SIZE - 1)];
      if (op->kind == ExecExit) {
        atomic_store_explicit(&w->head, head + 1, memory_order_release);
        return NULL;
      }
      execute(w, op);
      ++head;
      atomic_store_explicit(&w->head, head, memory_order_release);
    }
  }
}

/* workerFor -- the replay thread of a recorded thread, started if need be */
static WorkerStruct *workerFor(uint32_t serial)
{
  WorkerStruct *w = NULL;
  for (size_t i = 0; i < workerCount; ++i)
    if (worker[i]->serial == serial && !worker[i]->exiting)
      return worker[i];
  for (size_t i = 0; i < workerCount; ++i)
    if (worker[i]->exiting && atomic_load(&worker[i]->head) == atomic_load(&worker[i]->tail)) {
      pthread_join(worker[i]->thread, NULL);
      w = worker[i];
      break;
    }
  if (w == NULL) {
    if (workerCount == WORKER_LIMIT)
      fail("more than %d threads alive at once", WORKER_LIMIT);
    w = worker[workerCount++] = mapAnon(sizeof *w);
    w->ring = mapAnon(RING_SIZE * sizeof(OpStruct));
  }
  w->serial = serial;
  w->exiting = 0;
  w->running = 1;
  if (pthread_create(&w->thread, NULL, workerRun, w) != 0)
    fail("cannot start a replay thread");
  return w;
}

/* submit -- run op on the replay thread of a recorded thread, or here */
static void submit(uint32_t thread, const OpStruct *op)
{
  WorkerStruct *w;
  uint64_t tail;
  if (opt.serial) {
    execute(&serialWorker, op);
    return;
  }
  w = workerFor(thread);
  tail = atomic_load_explicit(&w->tail, memory_order_relaxed);
  while (tail - atomic_load_explicit(&w->head, memory_order_acquire) >= RING_SIZE)
    sched_yield();
  w->ring[tail & (RING_SIZE - 1)] = *op;
  atomic_store_explicit(&w->tail, tail + 1, memory_order_release);
  if (op->kind == ExecExit)
    w->exiting = 1;
}


/* The figures a child sends back.  design/telemetry.txt .replay.report */

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
  uint32_t sampleCount;
} ResultStruct;

static ResultStruct result;
static SampleStruct *sample;
static uint64_t sampleEvery = 4096, sampleNext;


/* The reading thread ------------------------------------------------ */

static uint64_t live, baseline;

static void anomaly(AnomalyKind kind, const EventRecordStruct *rec, uint64_t address)
{
  ++result.anomaly[kind];
  uint64_t limit = kind == AnomalyFreeNull ? REPORT_LIMIT_NULL : REPORT_LIMIT;
  if (opt.strict || (opt.report && result.anomaly[kind] <= limit)) {
    const char *name = rec->desc != NULL ? rec->desc->name : "?";
    fprintf(stderr, "replay: offset %zu: %s: %s of 0x%" PRIx64 "\n", rec->offset, name,
            kind == AnomalyUnknownFree ? "unknown free" :
            kind == AnomalyDoubleFree ? "double free" :
            kind == AnomalyDuplicate ? "duplicate live pointer" :
            kind == AnomalyFreeNull ? "free(NULL)" : "replay failed", address);
    if (opt.report && result.anomaly[kind] == limit && !opt.strict)
      fprintf(stderr, "replay: (further %s are counted, not listed)\n", anomalyName[kind]);
  }
  if (opt.strict)
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

/* allocation -- an event that made a block */
static void allocation(const EventRecordStruct *rec, ExecKind kind, uint64_t size,
                       uint64_t align, uint64_t address)
{
  OpStruct op = {kind, size, align, NULL, NULL};
  if (address == 0)
    return;                     /* it failed when recorded: nothing to replay */
  op.slot = slotNew(size);
  made(rec, address, op.slot);
  submit(rec->thread, &op);
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

static void poolEvent(const EventRecordStruct *rec, EvKind ev, const uint64_t *v)
{
  EntryStruct *e;
  PoolHandleStruct *ph;
  uint64_t t0;
  switch (ev) {
  case EvPoolCreate:
    ++result.ops[OpPoolCreate];
    if (handleUsed == HANDLE_CHUNK) {
      handleChunk = mapAnon(HANDLE_CHUNK * sizeof *handleChunk);
      handleUsed = 0;
    }
    ph = &handleChunk[handleUsed++];
    t0 = PlinthClockNow();
    ph->handle = pool.create((size_t)v[1], rec->desc->name);
    poolCycles += PlinthClockNow() - t0, ++poolCalls;
    if (ph->handle == NULL)
      anomaly(AnomalyReplayFailed, rec, v[0]);
    mapPut(&pools, v[0])->slot = (SlotStruct *)ph;
    break;
  case EvPoolDestroy:
    ++result.ops[OpPoolDestroy];
    e = mapFind(&pools, v[0]);
    if (e->key == 0 || e->slot == FREED) {
      anomaly(e->key == 0 ? AnomalyUnknownFree : AnomalyDoubleFree, rec, v[0]);
      break;
    }
    ph = (PoolHandleStruct *)e->slot;
    if (ph->handle != NULL) {
      t0 = PlinthClockNow();
      pool.destroy(ph->handle);
      poolCycles += PlinthClockNow() - t0, ++poolCalls;
    }
    ph->dead = 1;
    e->slot = FREED;
    break;
  case EvPoolAlloc: {
    SlotStruct *slot;
    void *p = NULL;
    ++result.ops[OpPoolAlloc];
    e = mapFind(&pools, v[0]);
    if (e->key == 0 || e->slot == FREED) {
      anomaly(AnomalyUnknownFree, rec, v[0]);
      break;
    }
    ph = (PoolHandleStruct *)e->slot;
    if (ph->handle != NULL) {
      t0 = PlinthClockNow();
      p = pool.alloc(ph->handle, (size_t)v[2]);
      poolCycles += PlinthClockNow() - t0, ++poolCalls;
    }
    if (p == NULL)
      anomaly(AnomalyReplayFailed, rec, v[1]);
    slot = slotNew(v[2]);
    atomic_store(&slot->ptr, (uintptr_t)p);
    slot->next = (SlotStruct *)ph;      /* the pool it came from */
    e = mapPut(&objects, v[1]);
    if (e->slot != NULL && e->slot != FREED)
      anomaly(AnomalyDuplicate, rec, v[1]);
    e->slot = slot;
    live += v[2];
    if (live > result.peakLive)
      result.peakLive = live;
    break;
  }
  case EvPoolFree: {
    SlotStruct *slot;
    void *p;
    ++result.ops[OpPoolFree];
    e = mapFind(&objects, v[1]);
    if (e->key == 0 || e->slot == FREED) {
      anomaly(e->key == 0 ? AnomalyUnknownFree : AnomalyDoubleFree, rec, v[1]);
      break;
    }
    slot = e->slot;
    e->slot = FREED;
    ph = (PoolHandleStruct *)slot->next;
    live -= slot->size;
    p = (void *)atomic_load(&slot->ptr);
    if (p != NULL && !ph->dead) {
      t0 = PlinthClockNow();
      pool.free(ph->handle, p, (size_t)v[2]);
      poolCycles += PlinthClockNow() - t0, ++poolCalls;
    }
    slotRelease(slot);
    break;
  }
  default:
    break;
  }
}

/* replayEvent -- dispatch one recorded event */
static void replayEvent(const EventRecordStruct *rec)
{
  EvKind ev = (EvKind)codeEv[rec->code];
  uint64_t v[4];
  SlotStruct *old;
  for (unsigned i = 0; i < 4; ++i)
    v[i] = rec->values[codeParam[rec->code][i]].u;
  switch (ev) {
  case EvNone:
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
  case EvAlignedAlloc:
  case EvPosixMemalign:
    ++result.ops[ev == EvMemalign ? OpMemalign : ev == EvAlignedAlloc ? OpAlignedAlloc : OpPosixMemalign];
    allocation(rec, ev == EvMemalign ? ExecMemalign : ev == EvAlignedAlloc ? ExecAlignedAlloc
               : ExecPosixMemalign, v[1], v[0], v[2]);
    break;
  case EvFree:
  case EvFreeSized:
    ++result.ops[OpFree];
    if (v[0] == 0)
      anomaly(AnomalyFreeNull, rec, 0);
    else if ((old = unmade(rec, v[0])) != NULL) {
      OpStruct op = {ExecFree, 0, 0, NULL, old};
      submit(rec->thread, &op);
    }
    break;
  case EvReallocMove: {
    /* The first half of a realloc that moved its block: the old address
     * is free for others from here; the block is in transit until the
     * Realloc event of the same thread.  design/telemetry.txt .malloc.order */
    MovingStruct *m = movingFor(rec->thread);
    m->old = v[0];
    m->valid = 1;
    m->slot = v[0] == 0 ? NULL : unmade(rec, v[0]);
    break;
  }
  case EvRealloc: {
    /* v: old, result, size */
    OpStruct op = {ExecRealloc, v[2], 0, NULL, NULL};
    MovingStruct *m = movingFor(rec->thread);
    ++result.ops[OpRealloc];
    if (m->valid && m->old == v[0] && v[0] != 0) {
      m->valid = 0;
      op.old = m->slot;
    } else if (v[0] != 0) {
      if (v[1] == 0 && v[2] != 0)
        return;                 /* it failed: the old block stays */
      op.old = unmade(rec, v[0]);
    }
    if (v[1] == 0) {            /* realloc(p, 0) freed p */
      if (op.old != NULL) {
        op.kind = ExecFree;
        submit(rec->thread, &op);
      }
      return;
    }
    if (op.old == NULL)
      op.kind = ExecMalloc;     /* realloc(NULL, n), or of a block we never saw */
    op.slot = slotNew(v[2]);
    made(rec, v[1], op.slot);
    submit(rec->thread, &op);
    break;
  }
  case EvThreadExit:
    if (!opt.serial) {
      for (size_t i = 0; i < workerCount; ++i)
        if (worker[i]->serial == (uint32_t)v[0] && !worker[i]->exiting) {
          OpStruct op = {ExecExit, 0, 0, NULL, NULL};
          submit((uint32_t)v[0], &op);
        }
    }
    break;
  case EvPoolCreate:
  case EvPoolDestroy:
  case EvPoolAlloc:
  case EvPoolFree:
    poolEvent(rec, ev, v);
    break;
  case EV_LIMIT:
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
      if (strcmp(d->name, evDesc[ev].name) != 0 || d->code > 0xFFFF)
        continue;
      for (unsigned p = 0; p < 4 && evDesc[ev].params[p] != NULL; ++p) {
        unsigned j;
        for (j = 0; j < d->paramCount; ++j)
          if (strcmp(d->paramNames[j], evDesc[ev].params[p]) == 0)
            break;
        if (j == d->paramCount || strchr("PAWU", d->format[j]) == NULL)
          ok = 0;
        idx[p] = j;
      }
      if (!ok) {
        if (opt.report)
          fprintf(stderr, "replay: event %s has unexpected parameters: not replayed\n", d->name);
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

/* child -- replay the log against one allocator, the one in LD_PRELOAD.
 * design/telemetry.txt .replay.child */
static int child(void)
{
  const char *lib = allocatorLib(opt.one);
  int fd;
  struct stat st;
  unsigned char *buf;
  EventStreamStruct *stream;
  EventStreamRes res;
  EventRecordStruct rec;
  char msg[512];
  uint64_t total, hz;
  double start;
  snprintf(result.name, sizeof result.name, "%s", opt.one);
  if (lib != NULL && dlopen(lib, RTLD_NOW | RTLD_NOLOAD) == NULL)
    fail("%s: %s is not loaded: is it installed%s?", opt.one, lib, allocatorPackage(opt.one));
  pageSize = (size_t)sysconf(_SC_PAGESIZE);
  statmFd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  fd = open(opt.log, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail("%s: %s", opt.log, strerror(errno));
  if (fstat(fd, &st) != 0 || st.st_size == 0)
    fail("%s: empty or unreadable", opt.log);
  buf = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (buf == MAP_FAILED)
    fail("%s: %s", opt.log, strerror(errno));
  close(fd);
  (void)madvise(buf, (size_t)st.st_size, MADV_SEQUENTIAL);
  res = EventStreamOpen(&stream, buf, (size_t)st.st_size, 0, msg, sizeof msg);
  if (res != EventStreamOK)
    fail("%s: %s", opt.log, msg);
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
  while ((res = EventStreamNext(stream, &rec)) == EventStreamOK) {
    replayEvent(&rec);
    ++result.events;
    if ((result.events & (PEAK_EVERY - 1)) == 0) {
      uint64_t rss = rssAnon(0);
      if (rss > baseline && rss - baseline > result.peakRss)
        result.peakRss = rss - baseline;
    }
    if (result.events >= sampleNext) {
      sampleNext += sampleEvery;
      takeSample();
      if (opt.progress)
        progress(result.events, total, 0);
    }
  }
  if (res == EventStreamERROR) {
    size_t n = EventStreamProblemCount(stream);
    fail("%s: %s", opt.log, n > 0 ? EventStreamProblem(stream, n - 1) : "cannot read the stream");
  }
  for (size_t i = 0; i < workerCount; ++i)
    if (!worker[i]->exiting) {
      OpStruct op = {ExecExit, 0, 0, NULL, NULL};
      submit(worker[i]->serial, &op);
    }
  for (size_t i = 0; i < workerCount; ++i)
    if (worker[i]->running)
      pthread_join(worker[i]->thread, NULL);
  result.wall = nowSeconds() - start;
  takeSample();
  result.finalRss = sample[result.sampleCount - 1].rss;
  if (opt.progress)
    progress(total, total, 1);
  hz = PlinthClockFrequency();
  {
    uint64_t cycles = serialWorker.cycles + poolCycles;
    result.calls = serialWorker.calls + poolCalls;
    result.anomaly[AnomalyReplayFailed] += serialWorker.failed;
    for (size_t i = 0; i < workerCount; ++i) {
      cycles += worker[i]->cycles;
      result.calls += worker[i]->calls;
      result.anomaly[AnomalyReplayFailed] += worker[i]->failed;
    }
    result.seconds = hz != 0 ? (double)cycles / (double)hz : (double)cycles / 1e9;
  }
  result.threads = opt.serial || workerCount == 0 ? 1 : workerCount;
  /* What the program never freed is freed now, untimed, after the
   * figures, so that a leak checker sees replay itself as clean. */
  for (size_t i = 0; i < blocks.capacity; ++i) {
    SlotStruct *slot = blocks.entries[i].slot;
    if (blocks.entries[i].key != 0 && slot != NULL && slot != FREED)
      free((void *)atomic_load(&slot->ptr));
  }
  for (size_t i = 0; i < pools.capacity; ++i) {
    PoolHandleStruct *ph = (PoolHandleStruct *)pools.entries[i].slot;
    if (pools.entries[i].key != 0 && ph != NULL && ph != (PoolHandleStruct *)FREED &&
        ph->handle != NULL && !ph->dead)
      pool.destroy(ph->handle);
  }
  EventStreamClose(stream);
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
  char fdText[16];
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

static double mb(uint64_t bytes)
{
  return (double)bytes / (1024.0 * 1024.0);
}

/* report -- the side-by-side table.  design/telemetry.txt .replay.report */
static void report(void)
{
  size_t n = opt.allocCount;
  printf("replay %s: %" PRIu64 " events, %" PRIu64 " thread%s%s\n\n", opt.log, results[0].events,
         results[0].threads, results[0].threads == 1 ? "" : "s", opt.serial ? " (serial)" : "");
  printf("%-26s", "");
  for (size_t i = 0; i < n; ++i)
    printf(" %12.12s", results[i].name);
  printf("\n");
#define ROW(label, fmt, expr) \
  do { \
    printf("%-26s", label); \
    for (size_t i = 0; i < n; ++i) \
      printf(" " fmt, expr); \
    printf("\n"); \
  } while (0)
  for (unsigned op = 0; op < OP_LIMIT; ++op) {
    int any = 0;
    for (size_t i = 0; i < n; ++i)
      any |= results[i].ops[op] != 0;
    if (any || op <= OpFree)
      ROW(opName[op], "%12" PRIu64, results[i].ops[op]);
  }
  for (unsigned a = 0; a < ANOMALY_LIMIT; ++a)
    ROW(anomalyName[a], "%12" PRIu64, results[i].anomaly[a]);
  ROW("time in allocator (ms)", "%12.1f", results[i].seconds * 1e3);
  ROW("allocator ops/s (M)", "%12.2f",
      results[i].seconds > 0 ? (double)results[i].calls / results[i].seconds / 1e6 : 0.0);
  ROW("replay wall time (s)", "%12.2f", results[i].wall);
  ROW("peak live requested (MB)", "%12.1f", mb(results[i].peakLive));
  ROW("peak RSS growth (MB)", "%12.1f", mb(results[i].peakRss));
  ROW("peak RSS / ideal", "%12.2f",
      results[i].peakLive > 0 ? (double)results[i].peakRss / (double)results[i].peakLive : 0.0);
  ROW("final RSS growth (MB)", "%12.1f", mb(results[i].finalRss));
#undef ROW
}

/* writeSvg -- live bytes and RSS over the replay, every allocator on one chart */
static void writeSvg(const char *path)
{
  static const char *const colour[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                       "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
  const double W = 800, H = 420, L = 70, R = 170, T = 40, B = 50;
  double pw = W - L - R, ph = H - T - B;
  uint64_t maxY = 1, maxX = 1;
  FILE *f = fopen(path, "w");
  if (f == NULL)
    fail("%s: %s", path, strerror(errno));
  for (size_t i = 0; i < opt.allocCount; ++i)
    for (uint32_t s = 0; s < results[i].sampleCount; ++s) {
      if (samples[i][s].rss > maxY) maxY = samples[i][s].rss;
      if (samples[i][s].live > maxY) maxY = samples[i][s].live;
      if (samples[i][s].event > maxX) maxX = samples[i][s].event;
    }
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
          "font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
  fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  fprintf(f, "<text x=\"%.0f\" y=\"22\" font-size=\"14\">replay of %s: live bytes and RSS growth</text>\n",
          L, strrchr(opt.log, '/') != NULL ? strrchr(opt.log, '/') + 1 : opt.log);
  for (int t = 0; t <= 5; ++t) {
    double y = T + ph - ph * t / 5.0, x = L + pw * t / 5.0;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, y, L + pw, y);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.1f</text>\n", L - 6, y + 4,
            mb(maxY) * t / 5.0);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f%%</text>\n", x, T + ph + 18,
            20.0 * t);
  }
  fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"black\"/>\n",
          L, T, pw, ph);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">events replayed</text>\n",
          L + pw / 2, H - 12);
  fprintf(f, "<text transform=\"translate(18,%.1f) rotate(-90)\" text-anchor=\"middle\">MB</text>\n",
          T + ph / 2);
  for (size_t i = 0; i <= opt.allocCount; ++i) {
    /* i == allocCount: the live bytes of the first, the ideal */
    size_t a = i < opt.allocCount ? i : 0;
    const char *c = i < opt.allocCount ? colour[i % 8] : "black";
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"", c,
            i < opt.allocCount ? "" : " stroke-dasharray=\"5,3\"");
    for (uint32_t s = 0; s < results[a].sampleCount; ++s) {
      uint64_t y = i < opt.allocCount ? samples[a][s].rss : samples[a][s].live;
      fprintf(f, "%.1f,%.1f ", L + pw * (double)samples[a][s].event / (double)maxX,
              T + ph - ph * (double)y / (double)maxY);
    }
    fprintf(f, "\"/>\n");
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"2\"%s/>\n",
            L + pw + 12, T + 10 + 20.0 * (double)i, L + pw + 36, T + 10 + 20.0 * (double)i, c,
            i < opt.allocCount ? "" : " stroke-dasharray=\"5,3\"");
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n", L + pw + 42, T + 14 + 20.0 * (double)i,
            i < opt.allocCount ? results[i].name : "live (ideal)");
  }
  fprintf(f, "</svg>\n");
  if (fclose(f) != 0)
    fail("%s: %s", path, strerror(errno));
}

static void usage(FILE *f)
{
  fputs("usage: replay [options] LOG\n"
        "Replays the allocations recorded in LOG (by libtelltale-malloc.so) against\n"
        "allocators and prints their figures side by side.\n"
        "  -a, --alloc NAME  glibc (the default), jemalloc, mimalloc, tcmalloc, or a\n"
        "                    path to an allocator .so; repeat, or separate with commas\n"
        "  --serial          replay every thread's calls on one thread, in recorded order\n"
        "  --strict          an unknown free, double free, duplicate live pointer or\n"
        "                    free(NULL) is an error (exit status 1)\n"
        "  --svg FILE        plot live bytes and RSS over the replay\n"
        "  --pool LIB.so     replay pool events against LIB.so (tools/replay/replaypool.h);\n"
        "                    the default is the example allocator (examples/pool)\n"
        "  --no-progress     no progress bar (it is shown only on a terminal)\n"
        "  -q, --quiet       do not list anomalies one by one\n"
        "  -h, --help\n", f);
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

int main(int argc, char **argv)
{
  int noProgress = 0, i, status = 0, positional = 0;
  const char *log = NULL;
  for (i = 1; i < argc; ++i) {
    const char *a = argv[i];
#define NEED() do { if (i + 1 >= argc) fail("%s needs a value", a); } while (0)
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
      noProgress = 1;
    else if (strcmp(a, "--report") == 0)
      opt.report = 1;
    else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0)
      opt.quiet = 1;
    else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      fail("unknown option %s", a);
    }
#undef NEED
  }
  if (log == NULL) {
    usage(stderr);
    return 2;
  }
  opt.log = log;
  if (opt.one != NULL) {
    if (opt.fd < 0)
      fail("--one needs --fd");
    return child();
  }
  if (opt.allocCount == 0)
    opt.alloc[opt.allocCount++] = "glibc";
  if (access(opt.log, R_OK) != 0)
    fail("%s: %s", opt.log, strerror(errno));
  opt.progress = !noProgress && isatty(2);
  for (size_t a = 0; a < opt.allocCount; ++a)
    if ((status = runChild(a, argv)) != 0)
      fail("%s: the replay failed", opt.alloc[a]);
  report();
  if (opt.svg != NULL)
    writeSvg(opt.svg);
  return 0;
}
