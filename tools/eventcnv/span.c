/* <tools/eventcnv/span.c> -- pairing the begin and end events of spans
 *
 * .design: design/registry.txt .reg.span
 *
 * The open spans are a hash table by (span, key), each entry the top of
 * a stack: a begin whose key is open already opens a span inside it,
 * and an end closes the innermost (.export.span.pair).  Each span has a
 * min-heap of free lanes, so that a span takes the lowest lane free when
 * it opens (.export.span.lane).  Each thread has a stack of the spans
 * that began on it and are open, in the order they began: a span that
 * ends on its begin thread while on top of that stack nests there
 * (.export.span.thread).
 */

#include "span.h"
#include "merge.h"

#include <stdlib.h>
#include <string.h>

typedef struct OpenStruct {
  SpanStruct span;
  struct OpenStruct *below;     /* the span of the same key it opened inside */
  struct OpenStruct *chain;     /* the next entry in the hash bucket */
  size_t at;                    /* its place in its begin thread's stack */
} OpenStruct;

/* StackStruct -- a thread's open spans in the order they began; a span
 * that closed off the top leaves NULL, dropped when the top reaches it
 * or when the NULLs are most of the stack */
typedef struct StackStruct {
  uint32_t serial;
  int used;
  OpenStruct **items;
  size_t count, limit, live;
} StackStruct;

typedef struct LanesStruct {
  unsigned *free;               /* a min-heap of freed lanes */
  size_t freeCount, freeLimit;
  unsigned next;                /* lanes 0 .. next-1 have been used */
} LanesStruct;

typedef struct DurationsStruct {
  int64_t *ns;
  size_t count, limit;
  uint64_t unfinished, unopened;
} DurationsStruct;

struct SpanTrackerStruct {
  const EventRegistryStruct *registry;
  unsigned char isSpanCode[65536 / 8];   /* a bit per code that begins or ends a span */
  OpenStruct **buckets;
  size_t bucketCount, openCount;
  LanesStruct *lanes;           /* by span */
  DurationsStruct *durations;   /* by span, if kept */
  StackStruct *stacks;          /* a hash table by thread serial */
  size_t stackLimit, stackCount;
  int keep;
  SpanReportFunction report;
  void *closure;
};

static size_t bucket(const SpanTrackerStruct *tracker, unsigned span, uint64_t key)
{
  uint64_t h = (key ^ (uint64_t)span << 56) * 0x9E3779B97F4A7C15u;
  return (size_t)(h >> 32) & (tracker->bucketCount - 1);
}

SpanTrackerStruct *SpanTrackerCreate(const EventRegistryStruct *registry, int keep,
                                     SpanReportFunction report, void *closure)
{
  SpanTrackerStruct *tracker = calloc(1, sizeof *tracker);
  if (tracker == NULL)
    return NULL;
  tracker->registry = registry;
  tracker->keep = keep;
  tracker->report = report;
  tracker->closure = closure;
  tracker->bucketCount = 256;
  tracker->buckets = calloc(tracker->bucketCount, sizeof *tracker->buckets);
  tracker->lanes = calloc(registry->spanCount + 1, sizeof *tracker->lanes);
  tracker->durations = calloc(registry->spanCount + 1, sizeof *tracker->durations);
  if (tracker->buckets == NULL || tracker->lanes == NULL || tracker->durations == NULL) {
    SpanTrackerDestroy(tracker);
    return NULL;
  }
  for (unsigned i = 0; i < registry->spanCount; ++i) {
    const EventSpanDescStruct *desc = &registry->spans[i];
    tracker->isSpanCode[desc->begin >> 3] |= (unsigned char)(1u << (desc->begin & 7));
    tracker->isSpanCode[desc->end >> 3] |= (unsigned char)(1u << (desc->end & 7));
  }
  return tracker;
}

/* grow -- twice the buckets, when there are more open spans than buckets */
static int grow(SpanTrackerStruct *tracker)
{
  size_t old = tracker->bucketCount;
  OpenStruct **oldBuckets = tracker->buckets;
  OpenStruct **buckets = calloc(old * 2, sizeof *buckets);
  if (buckets == NULL)
    return 1;
  tracker->buckets = buckets;
  tracker->bucketCount = old * 2;
  for (size_t i = 0; i < old; ++i)
    for (OpenStruct *open = oldBuckets[i], *next; open != NULL; open = next) {
      size_t b = bucket(tracker, open->span.span, open->span.key);
      next = open->chain;
      open->chain = buckets[b];
      buckets[b] = open;
    }
  free(oldBuckets);
  return 0;
}

/* laneTake, laneFree -- the lowest free lane of a span; give one back */
static unsigned laneTake(LanesStruct *lanes)
{
  unsigned lane, *heap = lanes->free;
  size_t n, i = 0;
  if (lanes->freeCount == 0)
    return lanes->next++;
  lane = heap[0];
  n = --lanes->freeCount;
  heap[0] = heap[n];
  for (;;) {    /* sift down */
    size_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && heap[c + 1] < heap[c])
      ++c;
    if (heap[i] <= heap[c])
      break;
    unsigned t = heap[i];
    heap[i] = heap[c];
    heap[c] = t;
    i = c;
  }
  return lane;
}

static int laneFree(LanesStruct *lanes, unsigned lane)
{
  size_t i;
  if (lanes->freeCount == lanes->freeLimit) {
    size_t limit = lanes->freeLimit > 0 ? 2 * lanes->freeLimit : 16;
    unsigned *bigger = realloc(lanes->free, limit * sizeof *bigger);
    if (bigger == NULL)
      return 1;
    lanes->free = bigger;
    lanes->freeLimit = limit;
  }
  i = lanes->freeCount++;
  lanes->free[i] = lane;
  while (i > 0 && lanes->free[(i - 1) / 2] > lanes->free[i]) {   /* sift up */
    unsigned t = lanes->free[i];
    lanes->free[i] = lanes->free[(i - 1) / 2];
    lanes->free[(i - 1) / 2] = t;
    i = (i - 1) / 2;
  }
  return 0;
}

static int keepDuration(DurationsStruct *d, int64_t ns)
{
  if (d->count == d->limit) {
    size_t limit = d->limit > 0 ? 2 * d->limit : 64;
    int64_t *bigger = realloc(d->ns, limit * sizeof *bigger);
    if (bigger == NULL)
      return 1;
    d->ns = bigger;
    d->limit = limit;
  }
  d->ns[d->count++] = ns;
  return 0;
}

/* stackOf -- thread serial's stack (made empty), or NULL if out of memory */
static StackStruct *stackOf(SpanTrackerStruct *tracker, uint32_t serial)
{
  size_t i;
  if (2 * (tracker->stackCount + 1) > tracker->stackLimit) {
    size_t limit = tracker->stackLimit > 0 ? 2 * tracker->stackLimit : 64;
    StackStruct *old = tracker->stacks, *bigger = calloc(limit, sizeof *bigger);
    if (bigger == NULL)
      return NULL;
    for (size_t o = 0; o < tracker->stackLimit; ++o)
      if (old[o].used) {
        for (i = (old[o].serial * 0x9E3779B9u) & (limit - 1); bigger[i].used; i = (i + 1) & (limit - 1))
          ;
        bigger[i] = old[o];
      }
    free(old);
    tracker->stacks = bigger;
    tracker->stackLimit = limit;
  }
  for (i = (serial * 0x9E3779B9u) & (tracker->stackLimit - 1); tracker->stacks[i].used;
       i = (i + 1) & (tracker->stackLimit - 1))
    if (tracker->stacks[i].serial == serial)
      return &tracker->stacks[i];
  tracker->stacks[i].used = 1;
  tracker->stacks[i].serial = serial;
  ++tracker->stackCount;
  return &tracker->stacks[i];
}

/* stackPush -- open on its begin thread's stack; 1 if out of memory */
static int stackPush(SpanTrackerStruct *tracker, OpenStruct *open)
{
  StackStruct *stack = stackOf(tracker, open->span.beginThread);
  if (stack == NULL)
    return 1;
  if (stack->count == stack->limit) {
    if (stack->live < stack->count / 2) {   /* mostly NULLs: close up */
      size_t n = 0;
      for (size_t k = 0; k < stack->count; ++k)
        if (stack->items[k] != NULL) {
          stack->items[k]->at = n;
          stack->items[n++] = stack->items[k];
        }
      stack->count = n;
    } else {
      size_t limit = stack->limit > 0 ? 2 * stack->limit : 16;
      OpenStruct **bigger = realloc(stack->items, limit * sizeof *bigger);
      if (bigger == NULL)
        return 1;
      stack->items = bigger;
      stack->limit = limit;
    }
  }
  open->at = stack->count;
  stack->items[stack->count++] = open;
  ++stack->live;
  return 0;
}

/* stackTake -- take open off its begin thread's stack; returns 1 if it
 * was on top, so that it nests there when it ends on that thread */
static int stackTake(SpanTrackerStruct *tracker, OpenStruct *open)
{
  StackStruct *stack = stackOf(tracker, open->span.beginThread);   /* made at its push */
  int top = open->at + 1 == stack->count;
  stack->items[open->at] = NULL;
  --stack->live;
  while (stack->count > 0 && stack->items[stack->count - 1] == NULL)
    --stack->count;
  return top;
}

/* spanOpen -- a begin event of span i */
static int spanOpen(SpanTrackerStruct *tracker, unsigned i, const EventRecordStruct *rec,
                    int64_t ns, uint64_t seq)
{
  const EventSpanDescStruct *desc = &tracker->registry->spans[i];
  OpenStruct *open, **top;
  if (tracker->openCount >= tracker->bucketCount && grow(tracker) != 0)
    return 1;
  open = calloc(1, sizeof *open);
  if (open == NULL)
    return 1;
  open->span.span = i;
  open->span.key = rec->values[desc->beginKey].u;
  open->span.beginNs = ns;
  open->span.endNs = -1;
  open->span.beginThread = rec->thread;
  open->span.beginSeq = seq;
  open->span.keyLetter = rec->desc->format[desc->beginKey];
  if (stackPush(tracker, open) != 0) {
    free(open);
    return 1;
  }
  open->span.lane = laneTake(&tracker->lanes[i]);
  top = &tracker->buckets[bucket(tracker, i, open->span.key)];
  for (OpenStruct **p = top; *p != NULL; p = &(*p)->chain)
    if ((*p)->span.span == i && (*p)->span.key == open->span.key) {   /* open inside it */
      open->below = *p;
      open->chain = (*p)->chain;
      *p = open;
      ++tracker->openCount;
      goto opened;
    }
  open->chain = *top;
  *top = open;
  ++tracker->openCount;
opened:
  if (tracker->report != NULL)
    tracker->report(tracker->closure, SpanOPENED, &open->span);
  return 0;
}

/* spanClose -- an end event of span i */
static int spanClose(SpanTrackerStruct *tracker, unsigned i, const EventRecordStruct *rec,
                     int64_t ns, uint64_t seq)
{
  const EventSpanDescStruct *desc = &tracker->registry->spans[i];
  uint64_t key = rec->values[desc->endKey].u;
  OpenStruct **p = &tracker->buckets[bucket(tracker, i, key)], *open;
  while (*p != NULL && ((*p)->span.span != i || (*p)->span.key != key))
    p = &(*p)->chain;
  if (*p == NULL) {
    ++tracker->durations[i].unopened;
    return 0;
  }
  open = *p;
  if (open->below != NULL) {
    open->below->chain = open->chain;
    *p = open->below;
  } else {
    *p = open->chain;
  }
  --tracker->openCount;
  open->span.endNs = ns;
  open->span.endThread = rec->thread;
  open->span.endSeq = seq;
  /* design/export.txt .export.span.thread */
  open->span.onThread = stackTake(tracker, open) && rec->thread == open->span.beginThread;
  if (tracker->report != NULL)
    tracker->report(tracker->closure, SpanCLOSED, &open->span);
  int err = laneFree(&tracker->lanes[i], open->span.lane);
  if (err == 0 && tracker->keep)
    err = keepDuration(&tracker->durations[i], MergeSubNs(ns, open->span.beginNs));
  free(open);
  return err;
}

int SpanTrackerEvent(SpanTrackerStruct *tracker, const EventRecordStruct *rec, int64_t ns,
                     uint64_t seq)
{
  const EventRegistryStruct *registry = tracker->registry;
  unsigned code = rec->code & 0xFFFFu;
  if (!(tracker->isSpanCode[code >> 3] >> (code & 7) & 1) || rec->desc == NULL)
    return 0;
  for (unsigned i = 0; i < registry->spanCount; ++i) {
    /* An end first: an event that ends one span and begins the next
     * (a phase change) closes before it opens. */
    if (registry->spans[i].end == code && spanClose(tracker, i, rec, ns, seq) != 0)
      return 1;
  }
  for (unsigned i = 0; i < registry->spanCount; ++i)
    if (registry->spans[i].begin == code && spanOpen(tracker, i, rec, ns, seq) != 0)
      return 1;
  return 0;
}

/* compareSpans -- open spans by the order they began */
static int compareSpans(const void *a, const void *b)
{
  const OpenStruct *x = *(OpenStruct *const *)a, *y = *(OpenStruct *const *)b;
  return x->span.beginSeq < y->span.beginSeq ? -1 : x->span.beginSeq > y->span.beginSeq;
}

void SpanTrackerFinish(SpanTrackerStruct *tracker)
{
  OpenStruct **all = malloc((tracker->openCount + 1) * sizeof *all);
  size_t n = 0;
  for (size_t b = 0; b < tracker->bucketCount; ++b)
    for (OpenStruct *open = tracker->buckets[b]; open != NULL; open = open->chain)
      for (OpenStruct *o = open; o != NULL; o = o->below) {
        ++tracker->durations[o->span.span].unfinished;
        o->span.onThread = 1;   /* all end at the last event: they nest in stack order */
        if (all != NULL)
          all[n++] = o;
      }
  if (all != NULL) {
    qsort(all, n, sizeof *all, compareSpans);
    for (size_t i = 0; i < n && tracker->report != NULL; ++i)
      tracker->report(tracker->closure, SpanUNFINISHED, &all[i]->span);
  }
  free(all);
}

static int compareNs(const void *a, const void *b)
{
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

void SpanStats(SpanTrackerStruct *tracker, unsigned span, SpanStatsStruct *statsReturn)
{
  DurationsStruct *d = &tracker->durations[span];
  memset(statsReturn, 0, sizeof *statsReturn);
  statsReturn->count = d->count;
  statsReturn->unfinished = d->unfinished;
  statsReturn->unopened = d->unopened;
  if (d->count == 0)
    return;
  qsort(d->ns, d->count, sizeof *d->ns, compareNs);
  statsReturn->min = d->ns[0];
  statsReturn->median = d->ns[(d->count + 1) / 2 - 1];
  statsReturn->p99 = d->ns[(d->count * 99 + 99) / 100 - 1];
  statsReturn->max = d->ns[d->count - 1];
}

void SpanTrackerDestroy(SpanTrackerStruct *tracker)
{
  if (tracker == NULL)
    return;
  if (tracker->buckets != NULL)
    for (size_t b = 0; b < tracker->bucketCount; ++b)
      for (OpenStruct *open = tracker->buckets[b], *next; open != NULL; open = next) {
        next = open->chain;
        for (OpenStruct *o = open, *below; o != NULL; o = below) {
          below = o->below;
          free(o);
        }
      }
  if (tracker->lanes != NULL)
    for (unsigned i = 0; i < tracker->registry->spanCount; ++i)
      free(tracker->lanes[i].free);
  if (tracker->durations != NULL)
    for (unsigned i = 0; i < tracker->registry->spanCount; ++i)
      free(tracker->durations[i].ns);
  for (size_t i = 0; i < tracker->stackLimit; ++i)
    free(tracker->stacks[i].items);
  free(tracker->stacks);
  free(tracker->lanes);
  free(tracker->durations);
  free(tracker->buckets);
  free(tracker);
}

int SpanCounterOf(const EventRegistryStruct *registry, unsigned code, int after)
{
  for (unsigned i = (unsigned)(after + 1); i < registry->counterCount; ++i)
    if (registry->counters[i].code == code)
      return (int)i;
  return -1;
}
