/* <tools/heap/heaplive.c> -- what a recorder log's events say: the live
 * blocks, each stack's figures and the chart
 *
 * .design: design/heap.txt .heap .heap.temporary .heap.peak
 *
 * Live blocks are kept by address in an open-addressed table, so that a
 * free finds its block's size and stack; a free stamped before its
 * allocation on another thread is put back in causal order as replay
 * does (tools/common/skew.h, .replay.skew).  Each stack keeps its
 * allocations, bytes, temporaries, live bytes and its figure at the
 * peak; the chart keeps the highest figure of each time slice.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "heapreader.h"
#include "report.h"

#define SAMPLE_LIMIT 2000       /* time slices of the memory chart */

void *HeapReaderRealloc(void *p, size_t size)
{
  void *q = realloc(p, size == 0 ? 1 : size);
  if (q == NULL)
    ReportOutOfMemory();
  return q;
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

/* probeOf -- slotOf, as the latest liveAt found it if the table has
 * not changed since: the skew check and the change look up one
 * address.  design/heap.txt .heap.bounded.time */
static size_t probeOf(ReaderStruct *r, uint64_t address)
{
  if (!r->probeValid || r->probeAddress != address) {
    r->probeAddress = address;
    r->probeSlot = slotOf(r, address);
  }
  r->probeValid = 0;            /* the caller changes the table */
  return r->probeSlot;
}

/* tableAlloc -- a zeroed table; one of 2 MiB or more in huge pages
 * where the kernel gives them: each doubling faulted in a page at a
 * time, and lookups missed the TLB.  design/heap.txt .heap.bounded.huge */
#define TABLE_HUGE ((size_t)2 << 20)
static void *tableAlloc(size_t size)
{
  void *p;
  if (size < TABLE_HUGE) {
    p = calloc(1, size);
    if (p == NULL)
      ReportOutOfMemory();
    return p;
  }
  if (posix_memalign(&p, TABLE_HUGE, size) != 0)
    ReportOutOfMemory();
#ifdef MADV_HUGEPAGE
  (void)madvise(p, size, MADV_HUGEPAGE);      /* advice: refused is fine */
#endif
  memset(p, 0, size);
  return p;
}

static void blocksGrow(ReaderStruct *r)
{
  BlockStruct *old = r->blocks;
  size_t oldCapacity = r->capacity;
  r->probeValid = 0;
  r->capacity = oldCapacity == 0 ? 4096 : oldCapacity * 2;
  r->blocks = tableAlloc(r->capacity * sizeof *r->blocks);
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
  r->probeAddress = address;
  r->probeSlot = slotOf(r, address);
  r->probeValid = 1;
  return r->blocks[r->probeSlot].address == address;
}

static ThreadStruct *threadOf(ReaderStruct *r, uint32_t serial)
{
  if (serial >= r->threadLimit) {
    size_t n = r->threadLimit == 0 ? 64 : r->threadLimit;
    while (n <= serial)
      n *= 2;
    r->threads = HeapReaderRealloc(r->threads, n * sizeof *r->threads);
    memset(r->threads + r->threadLimit, 0, (n - r->threadLimit) * sizeof *r->threads);
    r->threadLimit = n;
  }
  return &r->threads[serial];
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

uint64_t HeapReaderNs(const ReaderStruct *r, EventClock clock)
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

/* HeapReaderSeriesRow -- the rows of the slices before clock (all: the last) */
void HeapReaderSeriesRow(ReaderStruct *r, EventClock clock, int end)
{
  HeapSeriesStruct *sr = r->opt->series;
  uint64_t t = clock > r->startClock ? clock - r->startClock : 0;
  while (end || r->seriesNext * sr->sliceClock < t) {
    uint64_t *row;
    size_t n = sr->count;
    sr->rows = HeapReaderRealloc(sr->rows, (sr->rowCount + 1) * 2 * (n + 1) * sizeof *sr->rows);
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
  HeapStackStruct *s = HeapReaderStack(r, stack);
  unsigned cls = size == 0 ? 0 : 64u - (unsigned)__builtin_clzll(size);
  size_t i;
  if ((r->count + 1) * 4 > r->capacity * 3)
    blocksGrow(r);
  i = probeOf(r, address);
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
  size_t i = probeOf(r, address);
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

/* HeapReaderPrefetch -- heapreader.h */
void HeapReaderPrefetch(const ReaderStruct *r, const EventRecordStruct *rec)
{
  const CodeStruct *c = &r->codes[rec->code];
  for (unsigned k = 0; k < c->looks; ++k) {
    uint64_t address = rec->values[c->param[c->lookFrom + k]].u;
    if (address != 0)
      __builtin_prefetch(&r->blocks[homeOf(r, address)]);
  }
}

/* HeapReaderEvent -- one event of the log */
void HeapReaderEvent(ReaderStruct *r, const EventRecordStruct *rec)
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
    HeapReaderStackFrames(r, rec, c);
    break;
  case EvMapExec:
    HeapReaderMapExec(r, rec, c);
    break;
  case EvMapUnmap:
    (void)HeapReaderMapsEnd(r->log, v[0], v[1]);
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

/* HeapReaderFinish -- the figures at the end: leaks, each stack's peak, the
 * times in ns (the clock's rate known now: it may come from the last
 * ClockSync) */
void HeapReaderFinish(ReaderStruct *r, const EventStreamInfoStruct *info)
{
  HeapLogStruct *log = r->log;
  r->clockHz = info->clockHz;
  log->durationNs = HeapReaderNs(r, info->lastClock);
  log->peakNs = HeapReaderNs(r, r->peakClock);
  log->endClock = info->lastClock;
  for (size_t i = 0; i < log->sampleCount; ++i)
    log->samples[i].ns = HeapReaderNs(r, r->startClock + log->samples[i].ns);
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

/* HeapReaderSnap -- the snapshots asked for before clock (all if end): the
 * blocks live then, as a child forked then inherits them.  .heap.tree */
void HeapReaderSnap(ReaderStruct *r, EventClock clock, int end)
{
  while (r->opt != NULL && r->snapNext < r->opt->snapCount
         && (end || r->opt->snaps[r->snapNext].clock < clock)) {
    HeapSnapStruct *snap = &r->opt->snaps[r->snapNext++];
    size_t n = 0;
    snap->blocks = HeapReaderRealloc(NULL, (r->count + 1) * sizeof *snap->blocks);
    for (size_t i = 0; i < r->capacity; ++i)
      if (r->blocks[i].address != 0)
        snap->blocks[n++] = (HeapBlockStruct){r->blocks[i].address, r->blocks[i].size};
    snap->count = n;
    snap->taken = 1;
  }
}

/* HeapReaderInit -- a reader of log, whose stream says info */
void HeapReaderInit(ReaderStruct *r, HeapLogStruct *log, const EventStreamInfoStruct *info,
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
  log->samples = HeapReaderRealloc(NULL, (SAMPLE_LIMIT + 2) * sizeof *log->samples);
  r->stacksCapacity = 1024;
  log->stacks = HeapReaderRealloc(NULL, r->stacksCapacity * sizeof *log->stacks);
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
  SkewInit(&r->skew, info->clockHz, liveAt, applyHeld, r, r->held);
  log->program = strdup(info->program != NULL ? info->program : "");
}
