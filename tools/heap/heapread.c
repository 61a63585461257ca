/* <tools/heap/heapread.c> -- a recorder log read: every allocation
 * attributed to its call stack
 *
 * .design: design/heap.txt .heap .heap.temporary .heap.peak
 *
 * The events come in time order from the stream layer; a free stamped
 * before its allocation on another thread is put back in causal order
 * as replay does (tools/common/skew.h, .replay.skew).  Live blocks are
 * kept by address in an open-addressed table, so that a free finds its
 * block's size and stack.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "eventread.h"
#include "heapint.h"
#include "input.h"
#include "skew.h"
#include "heapstream.h"
#include "textsafe.h"

#define SAMPLE_LIMIT 2000       /* time slices of the memory chart */

/* The events read, found by name in the stream's own registry
 * (design/index.txt .req.self), with the parameters each needs,
 * in the order used below. */
typedef enum HeapEv {
  EvNone, EvMalloc, EvCalloc, EvRealloc, EvFree, EvMemalign, EvReallocMove, EvExec,
  EvStackFrames, EvMapExec, EvMapUnmap, EvForked, EvPeakRss, EV_LIMIT
} HeapEv;

typedef struct EvNameStruct {
  const char *name;
  HeapEv ev;
  const char *params[5];
} EvNameStruct;

static const EvNameStruct evNames[] = {
  /*  name               ev             parameters */
  {"Malloc",          EvMalloc,      {"size", "result"}},
  {"MallocAt",        EvMalloc,      {"size", "result", "stack"}},
  {"Calloc",          EvCalloc,      {"count", "size", "result"}},
  {"CallocAt",        EvCalloc,      {"count", "size", "result", "stack"}},
  {"Realloc",         EvRealloc,     {"old", "result", "size"}},
  {"ReallocAt",       EvRealloc,     {"old", "result", "size", "stack"}},
  {"Free",            EvFree,        {"pointer"}},
  {"FreeSized",       EvFree,        {"pointer"}},
  {"Memalign",        EvMemalign,    {"size", "result"}},
  {"MemalignAt",      EvMemalign,    {"size", "result", "stack"}},
  {"AlignedAlloc",    EvMemalign,    {"size", "result"}},
  {"AlignedAllocAt",  EvMemalign,    {"size", "result", "stack"}},
  {"PosixMemalign",   EvMemalign,    {"size", "result"}},
  {"PosixMemalignAt", EvMemalign,    {"size", "result", "stack"}},
  {"ReallocMove",     EvReallocMove, {"old"}},
  {"Exec",            EvExec,        {"path"}},
  {"StackFrames",     EvStackFrames, {"id", "depth", "index", "f0"}},
  {"MapExec",         EvMapExec,     {"start", "end", "offset", "path"}},
  {"MapUnmap",        EvMapUnmap,    {"start", "end"}},
  {"Forked",          EvForked,      {"parent", "clock"}},
  {"PeakRss",         EvPeakRss,     {"kib"}},
};

typedef struct CodeStruct {
  unsigned char ev;             /* HeapEv */
  unsigned char param[5];       /* value index of each parameter */
  unsigned char stacked;        /* it has a stack parameter */
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
} ReaderStruct;

static void outOfMemory(void)
{
  fprintf(stderr, "telltale-heap: out of memory\n");
  exit(1);
}

static void *xrealloc(void *p, size_t size)
{
  void *q = realloc(p, size);
  if (q == NULL)
    outOfMemory();
  return q;
}

/* findEvents -- which codes of the stream's registry are read */
static void findEvents(ReaderStruct *r, const EventRegistryStruct *reg)
{
  for (unsigned i = 0; i < reg->eventCount; ++i) {
    const EventDescStruct *d = &reg->events[i];
    for (size_t e = 0; e < sizeof evNames / sizeof evNames[0]; ++e) {
      CodeStruct c = {(unsigned char)evNames[e].ev, {0}, 0};
      int ok = d->code < EVENT_CODE_LIMIT && strcmp(d->name, evNames[e].name) == 0;
      for (unsigned p = 0; ok && p < 5 && evNames[e].params[p] != NULL; ++p) {
        unsigned j = 0;
        while (j < d->paramCount && strcmp(d->paramNames[j], evNames[e].params[p]) != 0)
          ++j;
        ok = j < d->paramCount;
        c.param[p] = (unsigned char)j;
        c.stacked |= strcmp(evNames[e].params[p], "stack") == 0;
      }
      if (ok)
        r->codes[d->code] = c;
    }
  }
}

/* The live-block table */

/* homeOf -- where address's probe starts */
static size_t homeOf(const ReaderStruct *r, uint64_t address)
{
  return (size_t)((address * 0x9E3779B97F4A7C15u) >> 20) & (r->capacity - 1);
}

/* slotOf -- where address is, or the empty slot where it would go */
static size_t slotOf(const ReaderStruct *r, uint64_t address)
{
  size_t i = homeOf(r, address);
  while (r->blocks[i].address != 0 && r->blocks[i].address != address)
    i = (i + 1) & (r->capacity - 1);
  return i;
}

static void blocksGrow(ReaderStruct *r)
{
  BlockStruct *old = r->blocks;
  size_t oldCapacity = r->capacity;
  r->capacity = oldCapacity == 0 ? 4096 : oldCapacity * 2;
  r->blocks = calloc(r->capacity, sizeof *r->blocks);
  if (r->blocks == NULL)
    outOfMemory();
  for (size_t i = 0; i < oldCapacity; ++i)
    if (old[i].address != 0)
      r->blocks[slotOf(r, old[i].address)] = old[i];
  free(old);
}

static void blockRemove(ReaderStruct *r, size_t i)
{
  size_t j = i;
  for (;;) {
    size_t home;
    j = (j + 1) & (r->capacity - 1);
    if (r->blocks[j].address == 0)
      break;
    home = homeOf(r, r->blocks[j].address);
    /* move j back to i if its home is not cyclically in (i, j] */
    if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
      r->blocks[i] = r->blocks[j];
      i = j;
    }
  }
  r->blocks[i].address = 0;
  --r->count;
}

static int liveAt(void *closure, uint64_t address)
{
  ReaderStruct *r = closure;
  return r->blocks[slotOf(r, address)].address == address;
}

static ThreadStruct *threadOf(ReaderStruct *r, uint32_t serial)
{
  if (serial >= r->threadLimit) {
    size_t n = r->threadLimit == 0 ? 64 : r->threadLimit;
    while (n <= serial)
      n *= 2;
    r->threads = xrealloc(r->threads, n * sizeof *r->threads);
    memset(r->threads + r->threadLimit, 0, (n - r->threadLimit) * sizeof *r->threads);
    r->threadLimit = n;
  }
  return &r->threads[serial];
}

/* FRAME_CHUNK -- addresses a chunk of framesCarve holds: 4 MiB */
#define FRAME_CHUNK ((size_t)1 << 20)

/* framesCarve -- room for a stack's depth address indexes, zeroed, from
 * the log's chunks, which never move (depth is at most 4096) */
static uint32_t *framesCarve(HeapLogStruct *log, size_t depth)
{
  if (log->frameChunkCount == 0 || FRAME_CHUNK - log->frameChunkUsed < depth) {
    uint32_t *chunk = calloc(FRAME_CHUNK, sizeof *chunk);
    if (chunk == NULL)
      outOfMemory();
    log->frameChunks = xrealloc(log->frameChunks, (log->frameChunkCount + 1) * sizeof *log->frameChunks);
    log->frameChunks[log->frameChunkCount++] = chunk;
    log->frameChunkUsed = 0;
  }
  log->frameChunkUsed += depth;
  return log->frameChunks[log->frameChunkCount - 1] + log->frameChunkUsed - depth;
}

static HeapStackStruct *stackOf(ReaderStruct *r, uint64_t id)
{
  HeapLogStruct *log = r->log;
  if (id > 0xFFFFFFFu)
    id = 0;                     /* no recorder makes so many: the unknown stack */
  if (id >= r->stacksCapacity) {
    size_t n = r->stacksCapacity * 2;
    while (n <= id)
      n *= 2;
    log->stacks = xrealloc(log->stacks, n * sizeof *log->stacks);
    memset(log->stacks + r->stacksCapacity, 0, (n - r->stacksCapacity) * sizeof *log->stacks);
    r->stacksCapacity = n;
  }
  if (id >= log->stackCount)
    log->stackCount = id + 1;
  return &log->stacks[id];
}

/* peakSave -- before a stack's live bytes change, its figure at the
 * latest peak, if it has not been kept since.  .heap.peak */
static void peakSave(const ReaderStruct *r, HeapStackStruct *s)
{
  if (s->peakEpoch != r->peakEpoch) {
    s->values[ProfilePeak] = s->live;
    s->peakEpoch = r->peakEpoch;
  }
}

static uint64_t nsOf(const ReaderStruct *r, EventClock clock)
{
  uint64_t t = clock > r->startClock ? clock - r->startClock : 0;
  if (r->clockHz == 0)
    return t;
  return t / r->clockHz * 1000000000u + t % r->clockHz * 1000000000u / r->clockHz;
}

/* samplesHalve -- slices twice as long, each keeping its highest figure */
static void samplesHalve(ReaderStruct *r)
{
  HeapLogStruct *log = r->log;
  size_t n = 0;
  r->sliceClock *= 2;
  for (size_t i = 0; i < log->sampleCount; ++i) {
    ProfileSampleStruct *s = &log->samples[i];
    if (n > 0 && log->samples[n - 1].ns / r->sliceClock == s->ns / r->sliceClock) {
      if (s->bytes > log->samples[n - 1].bytes)
        log->samples[n - 1] = *s;
    } else
      log->samples[n++] = *s;
  }
  log->sampleCount = n;
}

/* sample -- the chart's slice of now keeps its highest figure, and when
 * (at most SAMPLE_LIMIT slices, made twice as long when they would be
 * more, so the log's length need not be known; and the end: finish).
 * Kept in clock ticks from the start until finish makes them ns. */
static void sample(ReaderStruct *r, EventClock clock)
{
  HeapLogStruct *log = r->log;
  uint64_t t = clock > r->startClock ? clock - r->startClock : 0, slice;
  ProfileSampleStruct *last = log->sampleCount > 0 ? &log->samples[log->sampleCount - 1] : NULL;
  if (last != NULL && t >= r->sliceFrom && t < r->sliceFrom + r->sliceClock
      && last->ns >= r->sliceFrom && r->live <= last->bytes)
    return;                     /* the last slice's, and not higher: the usual case */
  slice = t / r->sliceClock;
  r->sliceFrom = slice * r->sliceClock;
  if (last != NULL && last->ns / r->sliceClock > slice)
    t = last->ns, slice = t / r->sliceClock;    /* held, then applied (skew.h) */
  if (last == NULL || last->ns / r->sliceClock != slice) {
    if (log->sampleCount == SAMPLE_LIMIT) {
      samplesHalve(r);
      sample(r, clock);
      return;
    }
    last = &log->samples[log->sampleCount++];
    last->bytes = 0;
  } else if (r->live <= last->bytes)
    return;
  last->ns = t;
  last->bytes = r->live;
}

/* seriesAdd -- a block of size bytes of log stack i made (or freed:
 * sign -1), for its series if it has one.  .heap.html */
static inline void seriesAdd(ReaderStruct *r, size_t i, uint64_t size, int sign)
{
  size_t n;
  int32_t k;
  if (r->seriesLive == NULL)
    return;
  n = r->opt->series->count;
  r->seriesLive[2 * n + 1] += sign > 0;
  if ((k = r->opt->series->seriesOf[i]) < 0)
    return;
  r->seriesLive[k] += sign > 0 ? size : (uint64_t)0 - size;
  r->seriesLive[n + 1 + (size_t)k] += sign > 0;
}

/* seriesRow -- the rows of the slices before clock (all: the last) */
static void seriesRow(ReaderStruct *r, EventClock clock, int end)
{
  HeapSeriesStruct *sr = r->opt->series;
  uint64_t t = clock > r->startClock ? clock - r->startClock : 0;
  while (end || r->seriesNext * sr->sliceClock < t) {
    uint64_t *row;
    size_t n = sr->count;
    sr->rows = xrealloc(sr->rows, (sr->rowCount + 1) * 2 * (n + 1) * sizeof *sr->rows);
    row = &sr->rows[sr->rowCount++ * 2 * (n + 1)];
    memcpy(row, r->seriesLive, n * sizeof *row);
    row[n] = r->live;
    memcpy(row + n + 1, r->seriesLive + n + 1, (n + 1) * sizeof *row);
    memset(r->seriesLive + n + 1, 0, (n + 1) * sizeof *row);     /* a slice's own */
    ++r->seriesNext;
    if (end)
      break;
  }
}

/* allocate -- a block made at address for stack */
static int allocate(ReaderStruct *r, const EventRecordStruct *rec, uint64_t address,
                    uint64_t size, uint64_t stack)
{
  HeapLogStruct *log = r->log;
  HeapStackStruct *s = stackOf(r, stack);
  unsigned cls = size == 0 ? 0 : 64u - (unsigned)__builtin_clzll(size);
  size_t i;
  if ((r->count + 1) * 4 > r->capacity * 3)
    blocksGrow(r);
  i = slotOf(r, address);
  if (r->blocks[i].address == address && r->blocks[i].stack == INHERITED)
    --r->count;                 /* its parent's, lost */
  else if (r->blocks[i].address == address) {      /* still live: the program lost it */
    HeapStackStruct *lost = &log->stacks[r->blocks[i].stack];
    seriesAdd(r, r->blocks[i].stack, r->blocks[i].size, -1);
    peakSave(r, lost);
    lost->live -= r->blocks[i].size, --lost->liveBlocks;
    r->live -= r->blocks[i].size;
    --r->count;
  }
  r->blocks[i] = (BlockStruct){address, size, (uint32_t)(s - log->stacks)};
  ++r->count;
  ++log->allocations, log->bytes += size;
  ++s->values[ProfileAllocations], s->values[ProfileBytes] += size;
  s->used = 1;
  ++log->histogram[cls][0], log->histogram[cls][1] += size;
  peakSave(r, s);
  seriesAdd(r, (size_t)(s - log->stacks), size, 1);
  s->live += size, ++s->liveBlocks;
  r->live += size;
  if (r->live > log->peakBytes) {
    log->peakBytes = r->live;
    r->peakClock = rec->clock;
    ++r->peakEpoch;
  }
  r->lastValid = 1, r->lastSize = size, r->lastStack = (uint32_t)(s - log->stacks);
  sample(r, rec->clock);
  return 1;
}

/* release -- the block at address is freed; 0 if it was not live */
static int release(ReaderStruct *r, const EventRecordStruct *rec, uint64_t address)
{
  HeapLogStruct *log = r->log;
  size_t i = slotOf(r, address);
  HeapStackStruct *s;
  int temporary;
  ++log->frees;
  if (r->blocks[i].address != address) {
    ++log->unknownFrees;
    return 0;
  }
  if (r->blocks[i].stack == INHERITED) {      /* .heap.tree */
    ++log->inheritedFrees;
    blockRemove(r, i);
    return 1;
  }
  temporary = r->lastValid && r->blocks[i].stack == r->lastStack
              && r->blocks[i].size == r->lastSize;
  r->lastValid = 0;
  s = &log->stacks[r->blocks[i].stack];
  seriesAdd(r, r->blocks[i].stack, r->blocks[i].size, -1);
  if (temporary)                /* .heap.temporary */
    ++s->values[ProfileTemporary], ++log->temporary;
  peakSave(r, s);
  s->live -= r->blocks[i].size, --s->liveBlocks;
  r->live -= r->blocks[i].size;
  blockRemove(r, i);
  sample(r, rec->clock);
  return 1;
}

/* applyHeld -- SkewApplyFunction: data[0] size, data[1] stack */
static int applyHeld(void *closure, const SkewEventStruct *e)
{
  ReaderStruct *r = closure;
  if (e->free)
    return release(r, &e->rec, e->address);
  return allocate(r, &e->rec, e->address, e->data[0], e->data[1]);
}

/* reallocEvent -- old, result, size: a free of old (if it was not
 * released by its ReallocMove) and an allocation of result */
static void reallocEvent(ReaderStruct *r, const EventRecordStruct *rec, const uint64_t *v,
                         uint64_t stack)
{
  ThreadStruct *t = threadOf(r, rec->thread);
  if (t->moving && t->movingOld == v[0] && v[0] != 0)
    t->moving = 0;
  else if (v[0] != 0) {
    if (v[1] == 0 && v[2] != 0) {
      ++r->log->failed;         /* it failed: the old block stays */
      return;
    }
    SkewFirst(&r->skew, v[0], rec->thread);
    release(r, rec, v[0]);
  }
  if (v[1] == 0) {
    r->log->failed += v[2] != 0;
    return;
  }
  SkewFirst(&r->skew, v[1], rec->thread);
  allocate(r, rec, v[1], v[2], stack);
}

/* addressSlot -- where address's index is in the table, or would go */
static size_t addressSlot(const ReaderStruct *r, uint64_t address)
{
  size_t mask = r->addressSlotCount - 1, i = (size_t)((address * 0x9E3779B97F4A7C15u) >> 17) & mask;
  while (r->addressSlots[i] != 0 && r->log->addresses[r->addressSlots[i] - 1] != address)
    i = (i + 1) & mask;
  return i;
}

/* addressIndex -- the index of address in the log's addresses, added
 * if new */
static uint32_t addressIndex(ReaderStruct *r, uint64_t address)
{
  HeapLogStruct *log = r->log;
  size_t i;
  if ((log->addressCount + 1) * 2 > r->addressSlotCount) {
    uint32_t *old = r->addressSlots;
    size_t oldCount = r->addressSlotCount;
    r->addressSlotCount = oldCount == 0 ? 4096 : oldCount * 2;
    if ((r->addressSlots = calloc(r->addressSlotCount, sizeof *r->addressSlots)) == NULL)
      outOfMemory();
    for (size_t k = 0; k < oldCount; ++k)
      if (old[k] != 0)
        r->addressSlots[addressSlot(r, log->addresses[old[k] - 1])] = old[k];
    free(old);
  }
  i = addressSlot(r, address);
  if (r->addressSlots[i] == 0) {
    if (log->addressCount == r->addressCapacity) {
      r->addressCapacity = r->addressCapacity == 0 ? 4096 : r->addressCapacity * 2;
      log->addresses = xrealloc(log->addresses, r->addressCapacity * sizeof *log->addresses);
    }
    log->addresses[log->addressCount++] = address;
    r->addressSlots[i] = (uint32_t)log->addressCount;
  }
  return r->addressSlots[i] - 1;
}

/* stackFrames -- id, depth, index, f0...f7 (f1 to f7 follow f0) */
static void stackFrames(ReaderStruct *r, const EventRecordStruct *rec, const CodeStruct *c)
{
  uint64_t id = rec->values[c->param[0]].u, depth = rec->values[c->param[1]].u;
  uint64_t index = rec->values[c->param[2]].u;
  HeapStackStruct *s;
  if (id == 0 || depth == 0 || depth > 4096 || index >= depth || c->param[3] + 8 > EVENT_PARAM_MAX)
    return;
  s = stackOf(r, id);
  if (s->addresses == NULL) {
    s->addresses = framesCarve(r->log, (size_t)depth);
    s->depth = (uint32_t)depth;
    s->mapVersion = (uint32_t)r->log->mapVersion;     /* .heap.symbols.time */
  }
  if (s->addresses == NULL || s->depth != depth)
    return;
  for (unsigned k = 0; k < 8 && index + k < depth; ++k, ++s->defined)
    s->addresses[index + k] = addressIndex(r, rec->values[c->param[3] + k].u);
  r->log->stacked = 1;
}

/* mapsEnd -- the mappings in force that overlap [start, end) end at a
 * new version; 1 if there were any.  .heap.symbols.time */
static int mapsEnd(HeapLogStruct *log, uint64_t start, uint64_t end)
{
  int ended = 0;
  for (size_t i = 0; i < log->mapCount; ++i) {
    HeapMapStruct *m = &log->maps[i];
    if (m->died == UINT64_MAX && m->start < end && start < m->end) {
      if (!ended)
        ++log->mapVersion, ended = 1;
      m->died = log->mapVersion;
    }
  }
  return ended;
}

/* mapExec -- a mapping from now on, replacing any it overlaps; one given
 * again (a forked child's log, an older recorder) changes nothing */
static void mapExec(ReaderStruct *r, const EventRecordStruct *rec, const CodeStruct *c)
{
  HeapLogStruct *log = r->log;
  HeapMapStruct m = {rec->values[c->param[0]].u, rec->values[c->param[1]].u,
                     rec->values[c->param[2]].u, rec->values[c->param[3]].s, 0, UINT64_MAX};
  for (size_t i = 0; i < log->mapCount; ++i)
    if (log->maps[i].died == UINT64_MAX && log->maps[i].start == m.start
        && log->maps[i].end == m.end && log->maps[i].offset == m.offset
        && (log->maps[i].path == m.path
            || (log->maps[i].path != NULL && m.path != NULL && strcmp(log->maps[i].path, m.path) == 0)))
      return;                   /* given again: the same mapping */
  if (!mapsEnd(log, m.start, m.end))
    ++log->mapVersion;
  m.born = log->mapVersion;
  if (m.path != NULL && (m.path = strdup(m.path)) == NULL)
    outOfMemory();              /* it points into the events, which go */
  log->maps = xrealloc(log->maps, (log->mapCount + 1) * sizeof *log->maps);
  log->maps[log->mapCount++] = m;
}

/* readEvent -- one event of the log */
static void readEvent(ReaderStruct *r, const EventRecordStruct *rec)
{
  const CodeStruct *c = &r->codes[rec->code < EVENT_CODE_LIMIT ? rec->code : 0];
  uint64_t v[4], stack;
  if (c->ev == EvNone)
    return;
  for (unsigned i = 0; i < 4; ++i)
    v[i] = rec->values[c->param[i]].u;
  if (r->execLast && rec->thread == r->execThread)
    r->execLast = 0;            /* the exec failed: the thread went on */
  switch ((HeapEv)c->ev) {
  case EvMalloc:
  case EvMemalign:
  case EvCalloc: {
    unsigned n = c->ev == EvCalloc;           /* calloc has count first */
    uint64_t size = n ? v[0] * v[1] : v[0], result = v[1 + n];
    stack = c->stacked ? v[2 + n] : 0;
    if (result == 0)
      ++r->log->failed;
    else
      SkewEvent(&r->skew, rec, 0, result, size, stack, 0);
    break;
  }
  case EvRealloc:
    reallocEvent(r, rec, v, c->stacked ? v[3] : 0);
    break;
  case EvFree:
    if (v[0] != 0)
      SkewEvent(&r->skew, rec, 1, v[0], 0, 0, 0);
    break;
  case EvReallocMove: {
    ThreadStruct *t;
    SkewFirst(&r->skew, v[0], rec->thread);   /* may grow the threads: first */
    t = threadOf(r, rec->thread);
    t->moving = 1;
    t->movingOld = v[0];
    if (v[0] != 0)
      release(r, rec, v[0]);
    break;
  }
  case EvExec:
    r->execLast = 1;
    r->execThread = rec->thread;
    break;
  case EvStackFrames:
    stackFrames(r, rec, c);
    break;
  case EvMapExec:
    mapExec(r, rec, c);
    break;
  case EvMapUnmap:
    (void)mapsEnd(r->log, v[0], v[1]);
    break;
  case EvPeakRss:               /* .heap.rss */
    if (v[0] * 1024 > r->log->peakRss)
      r->log->peakRss = v[0] * 1024;
    break;
  case EvForked:
    r->log->forked = 1;
    r->log->parentPid = (uint32_t)v[0];
    r->log->forkClock = v[1];
    break;
  case EvNone:
  case EV_LIMIT:
    break;
  }
}

/* finish -- the figures at the end: leaks, each stack's peak, the
 * times in ns (the clock's rate known now: it may come from the last
 * ClockSync) */
static void finish(ReaderStruct *r, const EventStreamInfoStruct *info)
{
  HeapLogStruct *log = r->log;
  r->clockHz = info->clockHz;
  log->durationNs = nsOf(r, info->lastClock);
  log->peakNs = nsOf(r, r->peakClock);
  log->endClock = info->lastClock;
  for (size_t i = 0; i < log->sampleCount; ++i)
    log->samples[i].ns = nsOf(r, r->startClock + log->samples[i].ns);
  for (size_t i = 0; i < log->stackCount; ++i) {
    HeapStackStruct *s = &log->stacks[i];
    peakSave(r, s);
    s->values[ProfileLeaked] = s->live;
    log->leakedBytes += s->live;
    log->leakedBlocks += s->liveBlocks;
  }
  /* the chart ends with the bytes live at the end, not its last slice's
   * highest figure */
  if (log->sampleCount > 0 && log->sampleCount < SAMPLE_LIMIT + 2
      && (log->samples[log->sampleCount - 1].bytes != r->live
          || log->samples[log->sampleCount - 1].ns < log->durationNs))
    log->samples[log->sampleCount++] = (ProfileSampleStruct){log->durationNs, r->live};
  for (size_t i = 0; i < log->sampleCount; ++i)
    if (log->samples[i].bytes == log->peakBytes && log->samples[i].ns == log->peakNs)
      log->peakSample = i;
}

/* sayEnd -- how the log ended, on stderr: at damage, at an exec, or
 * at a death whose last buffers are lost without a live file; 1 if
 * events are lost so, as eventcnv's exit status says too
 * (design/heap.txt .heap.ends) */
static int sayEnd(const ReaderStruct *r, const EventStreamInfoStruct *info, const char *problem,
                  const InputRecoveredStruct *recovered, int bad)
{
  const char *path = r->log->path;
  const HeapLogStruct *log = r->log;
  unsigned long offset = 0;
  if (bad && problem != NULL)
    (void)sscanf(problem, "offset %lu", &offset);
  if (log->allocations + log->frees + log->failed == 0 && !bad
      && (info->streamEnd || info->streamExec || r->execLast || recovered->done))   /* else lost: said below */
    fprintf(stderr, "telltale-heap: %s: the log holds no allocation events: it was not written by "
            "libtelltale-malloc.so, or the program allocated nothing\n", path);
  if (info->streamEnd)
    return 0;
  if (bad)
    fprintf(stderr, "telltale-heap: %s: reading stopped at the damage at offset %lu, so how the log "
            "ended is not known: blocks live then are counted as leaked\n", path, offset);
  else if (info->streamExec || r->execLast)   /* StreamExec from 3.0.2 on (.sol.exec) */
    fprintf(stderr, "telltale-heap: %s: the log ends where the program exec'd another: blocks live "
            "then are counted as leaked\n", path);
  else if (recovered->done)
    fprintf(stderr, "telltale-heap: %s: the stream did not end cleanly (no StreamEnd): the program died "
            "before it could end it, so blocks live at the end are not all leaks; %lu events "
            "were recovered from %s\n", path, (unsigned long)recovered->events, recovered->path);
  else if (info->recoveredUnchecked)   /* design/stream.txt .stream.header.check */
    fprintf(stderr, "telltale-heap: %s: the stream did not end cleanly (no StreamEnd), so blocks live at "
            "the end are not all leaks; offset %u: its flags say its log's live file was "
            "recovered into it when it was archived, but an archive older than %u.0.%u has no "
            "check of its flags, so whether it holds every event cannot be known\n", path,
            EVENT_STREAM_FLAGS_AT, EVENT_VERSION_ZSTD_MAJOR, EVENT_VERSION_FLAGS_CHECKED);
  else
    fprintf(stderr, "telltale-heap: %s: the stream did not end cleanly (no StreamEnd): the program died "
            "before it could end it, so blocks live at the end are not all leaks, and the "
            "events it still held in its buffers (up to the buffer size a thread: 1 MiB unless "
            "TELLTALE_BUFFER said) are lost: %s.live, from which they are recovered, is not "
            "there (the recorder keeps it unless TELLTALE_MAP=off)\n", path, path);
  return !bad && !info->streamExec && !r->execLast && !recovered->done;
}

/* sayChanged -- a warning, once a file, for each mapped file changed
 * since the log began: its frames would be named from the new file */
static void sayChanged(const HeapLogStruct *log, uint64_t startRealtime)
{
  for (size_t i = 0; i < log->mapCount; ++i) {
    struct stat st;
    size_t j = 0;
    uint64_t mtime;
    while (j < i && strcmp(log->maps[j].path, log->maps[i].path) != 0)
      ++j;
    if (j < i || log->maps[i].path == NULL || stat(log->maps[i].path, &st) != 0)
      continue;                 /* said already, or not there: symbols.c names it unknown */
    mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
    if (startRealtime != 0 && mtime > startRealtime) {
      fprintf(stderr, "telltale-heap: %s: ", log->path);
      TextPut(stderr, log->maps[i].path);       /* the log's bytes: .export.text */
      fprintf(stderr, " was changed after the log began, so its frames may be named wrongly\n");
    }
  }
}

/* snapTake -- the snapshots asked for before clock (all if end): the
 * blocks live then, as a child forked then inherits them.  .heap.tree */
static void snapTake(ReaderStruct *r, EventClock clock, int end)
{
  while (r->opt != NULL && r->snapNext < r->opt->snapCount
         && (end || r->opt->snaps[r->snapNext].clock < clock)) {
    HeapSnapStruct *snap = &r->opt->snaps[r->snapNext++];
    size_t n = 0;
    snap->blocks = xrealloc(NULL, (r->count + 1) * sizeof *snap->blocks);
    for (size_t i = 0; i < r->capacity; ++i)
      if (r->blocks[i].address != 0)
        snap->blocks[n++] = (HeapBlockStruct){r->blocks[i].address, r->blocks[i].size};
    snap->count = n;
    snap->taken = 1;
  }
}

/* SourceStruct -- where the events come from: the stream layer, which
 * holds the whole log, or HeapStream, which reads a sound one as it
 * goes (.heap.bounded) */
typedef struct SourceStruct {
  EventStreamStruct *stream;
  HeapStreamStruct *hs;
} SourceStruct;

static const EventStreamInfoStruct *sourceInfo(const SourceStruct *src)
{
  return src->hs != NULL ? HeapStreamInfo(src->hs) : EventStreamInfo(src->stream);
}

/* sourceProblem -- the first problem found, or NULL */
static const char *sourceProblem(const SourceStruct *src)
{
  if (src->hs != NULL)
    return "the log could not be read further";
  return EventStreamProblemCount(src->stream) > 0 ? EventStreamProblem(src->stream, 0) : NULL;
}

/* readAll -- every event; 1 if the stream is damaged (said) */
static int readAll(ReaderStruct *r, const SourceStruct *src)
{
  EventRecordStruct rec;
  EventStreamRes res;
  int got;
  if (src->hs != NULL) {
    while ((got = HeapStreamNext(src->hs, &rec)) > 0) {
      if (r->skew.count > 0)
        SkewExpire(&r->skew, rec.clock, 0);
      if (r->opt != NULL && r->snapNext < r->opt->snapCount)
        snapTake(r, rec.clock, 0);
      if (r->seriesLive != NULL)
        seriesRow(r, rec.clock, 0);
      readEvent(r, &rec);
    }
    SkewExpire(&r->skew, 0, 1);
    snapTake(r, 0, 1);
    if (got < 0) {
      fprintf(stderr, "telltale-heap: %s: %s: the report is of the events before it\n", r->log->path,
              sourceProblem(src));
      return 1;
    }
    return 0;
  }
  while ((res = EventStreamNext(src->stream, &rec)) == EventStreamOK) {
    if (r->skew.count > 0)
      SkewExpire(&r->skew, rec.clock, 0);
    if (r->opt != NULL && r->snapNext < r->opt->snapCount)
      snapTake(r, rec.clock, 0);
    if (r->seriesLive != NULL)
      seriesRow(r, rec.clock, 0);
    readEvent(r, &rec);
  }
  SkewExpire(&r->skew, 0, 1);
  snapTake(r, 0, 1);
  if (res == EventStreamERROR || EventStreamProblemCount(src->stream) > 0) {
    const char *problem = sourceProblem(src);
    fprintf(stderr, "telltale-heap: %s: %s: the report is of the events before it\n", r->log->path,
            problem != NULL ? problem : "cannot read the stream");
    return 1;
  }
  return 0;
}

static void readerInit(ReaderStruct *r, HeapLogStruct *log, const EventStreamInfoStruct *info,
                       const HeapReadOptionsStruct *opt)
{
  memset(r, 0, sizeof *r);
  r->log = log;
  r->opt = opt;
  log->pid = info->pid;
  log->startClock = info->startClock;
  log->endClock = info->lastClock;
  r->startClock = info->startClock;
  r->clockHz = info->clockHz;
  /* the log's length, if known (else 0), in SAMPLE_LIMIT slices */
  r->sliceClock = (info->lastClock > info->startClock ? info->lastClock - info->startClock : 0)
                  / SAMPLE_LIMIT + 1;
  log->samples = xrealloc(NULL, (SAMPLE_LIMIT + 2) * sizeof *log->samples);
  r->stacksCapacity = 1024;
  log->stacks = xrealloc(NULL, r->stacksCapacity * sizeof *log->stacks);
  memset(log->stacks, 0, r->stacksCapacity * sizeof *log->stacks);
  log->stackCount = 1;
  blocksGrow(r);
  for (size_t k = 0; opt != NULL && k < opt->inheritCount; ++k) {
    size_t i;
    if (opt->inherit[k].address == 0)
      continue;
    if ((r->count + 1) * 4 > r->capacity * 3)
      blocksGrow(r);
    i = slotOf(r, opt->inherit[k].address);
    if (r->blocks[i].address == 0)
      ++r->count, ++log->inheritedBlocks, log->inheritedBytes += opt->inherit[k].size;
    r->blocks[i] = (BlockStruct){opt->inherit[k].address, opt->inherit[k].size, INHERITED};
  }
  findEvents(r, info->registry);
  SkewInit(&r->skew, info->clockHz, liveAt, applyHeld, r, r->held);
  log->program = strdup(info->program != NULL ? info->program : "");
}

/* readWith -- the log from src: read, finished, its end said */
static int readWith(HeapLogStruct *log, const SourceStruct *src,
                    const InputRecoveredStruct *recovered, const HeapReadOptionsStruct *opt)
{
  ReaderStruct *r = xrealloc(NULL, sizeof *r);
  int bad;
  readerInit(r, log, sourceInfo(src), opt);
  if (opt != NULL && opt->series != NULL) {
    r->seriesLive = xrealloc(NULL, 2 * (opt->series->count + 1) * sizeof *r->seriesLive);
    memset(r->seriesLive, 0, 2 * (opt->series->count + 1) * sizeof *r->seriesLive);
    opt->series->rowCount = 0;
  }
  bad = readAll(r, src);
  if (r->seriesLive != NULL) {
    seriesRow(r, 0, 1);
    opt->series->sliceNs = nsOf(r, r->startClock + opt->series->sliceClock);
    free(r->seriesLive);
  }
  finish(r, sourceInfo(src));
  if (opt == NULL || !opt->quiet) {
    bad |= sayEnd(r, sourceInfo(src), bad ? sourceProblem(src) : NULL, recovered, bad);
    sayChanged(log, sourceInfo(src)->startRealtime);
  }
  free(r->blocks);
  free(r->threads);
  free(r->addressSlots);
  free(r);
  if (log->stackCount > 0)      /* no room to spare kept */
    log->stacks = xrealloc(log->stacks, log->stackCount * sizeof *log->stacks);
  return bad;
}

int HeapRead(const char *path, HeapLogStruct *log, const HeapReadOptionsStruct *opt)
{
  InputStruct in;
  InputRecoveredStruct recovered;
  SourceStruct src = {NULL, NULL};
  char msg[512];
  int err, bad;
  memset(log, 0, sizeof *log);
  memset(&recovered, 0, sizeof recovered);
  log->path = path;
  if (HeapStreamOpen(path, &src.hs) == 0) {     /* .heap.bounded */
    bad = readWith(log, &src, &recovered, opt);
    HeapStreamClose(src.hs);
    return bad;
  }
  if ((err = InputRead(path, &in)) != 0) {
    fprintf(stderr, "telltale-heap: %s: %s\n", path, strerror(err));
    return 1;
  }
  InputRecoverLive(path, &in, &recovered, "heap");
  if (EventStreamOpen(&src.stream, in.data, in.size, 0, msg, sizeof msg) != EventStreamOK) {
    fprintf(stderr, "telltale-heap: %s: %s\n", path, msg);
    InputFree(&in);
    return 1;
  }
  InputArchiveRecovered(EventStreamInfo(src.stream), &recovered);
  bad = readWith(log, &src, &recovered, opt);
  EventStreamClose(src.stream);
  InputFree(&in);
  return bad;
}

int HeapPeek(const char *path, HeapLogStruct *log)
{
  InputStruct in;
  SourceStruct src = {NULL, NULL};
  EventRecordStruct rec;
  ReaderStruct *r;
  char msg[512];
  memset(log, 0, sizeof *log);
  memset(&in, 0, sizeof in);
  log->path = path;
  if (HeapStreamOpen(path, &src.hs) != 0) {
    if (InputRead(path, &in) != 0)
      return 1;
    if (EventStreamOpen(&src.stream, in.data, in.size, 0, msg, sizeof msg) != EventStreamOK) {
      InputFree(&in);
      return 1;
    }
  }
  r = xrealloc(NULL, sizeof *r);
  memset(r, 0, sizeof *r);
  r->log = log;
  findEvents(r, sourceInfo(&src)->registry);
  log->pid = sourceInfo(&src)->pid;
  log->startClock = sourceInfo(&src)->startClock;
  /* Forked is the child's first event of its own, after the runtime's */
  for (unsigned n = 0; n < 64 && (src.hs != NULL ? HeapStreamNext(src.hs, &rec) > 0
                                  : EventStreamNext(src.stream, &rec) == EventStreamOK); ++n) {
    const CodeStruct *c = &r->codes[rec.code < EVENT_CODE_LIMIT ? rec.code : 0];
    if (c->ev == EvForked) {
      log->forked = 1;
      log->parentPid = (uint32_t)rec.values[c->param[0]].u;
      log->forkClock = rec.values[c->param[1]].u;
      break;
    }
    if (c->ev != EvNone && c->ev != EvMapExec && c->ev != EvStackFrames)
      break;
  }
  free(r);
  if (src.hs != NULL)
    HeapStreamClose(src.hs);
  else {
    EventStreamClose(src.stream);
    InputFree(&in);
  }
  return 0;
}

void HeapLogFree(HeapLogStruct *log)
{
  for (size_t i = 0; i < log->frameChunkCount; ++i)
    free(log->frameChunks[i]);
  free(log->frameChunks);
  free(log->addresses);
  for (size_t i = 0; i < log->mapCount; ++i)
    free((char *)log->maps[i].path);
  free(log->stacks);
  free(log->maps);
  free(log->samples);
  free(log->program);
  memset(log, 0, sizeof *log);
}
