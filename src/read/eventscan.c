/* <src/read/eventscan.c> -- the stream layer: a scan's index split over threads
 *
 * .design: design/tools.txt .eventcnv.scan .eventcnv.scan.split
 *
 * EventStreamScanSplit cuts a stream that can be read at any offset
 * into contiguous ranges.  The first is read by the walk of eventindex.c
 * on the calling thread; each later range has a thread (scanRange) that
 * walks, with a window, counts and blocks of its own, the plain blocks
 * from the first sound block header at or after the range's start until
 * one starts past its end.  When the walk comes exactly to where a
 * range's thread began, it takes what that thread found and goes on
 * where the thread stopped (eventScanTake); anywhere else, or if the
 * thread met anything but plain blocks, its work is dropped and the
 * walk reads those bytes itself.  So the result is always the one
 * thread's walk's, in file order.
 */

#include "eventstreamint.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_LOOK (64u * 1024u)         /* bytes looked through for a block at a time */

/* ScanReaderStruct -- an EventStreamReadFunction's closure that reads
 * on from an offset with an EventStreamReadAtFunction */
typedef struct ScanReaderStruct {
  EventStreamReadAtFunction readAt;
  void *closure;
  uint64_t offset;              /* of the next read */
} ScanReaderStruct;

/* ScanRangeStruct -- a range after the first, and its thread's walk */
typedef struct ScanRangeStruct {
  size_t from, to;              /* its bytes: a block starting in them is its */
  EventStreamStruct stream;     /* the thread's own window, counts, blocks and
                                   problems; the registry and codes are shared */
  IndexStruct index;
  ScanReaderStruct reader;
  pthread_t thread;
  int running;                  /* the thread was made and not yet joined */
  int found;                    /* start is known: under the split's lock */
  size_t start;                 /* the first block it read, or SIZE_MAX: none */
  size_t stop;                  /* where it stopped: the next block, not read */
  int failed;                   /* what it found is not whole blocks' */
  int cancel;                   /* stop now (atomic) */
  ScanSplitStruct *split;
} ScanRangeStruct;

struct ScanSplitStruct {
  ScanReaderStruct reader;      /* the walk's own */
  uint64_t size;                /* of the stream, as the caller said */
  unsigned count;               /* ranges after the first */
  unsigned next;                /* the first not yet taken or dropped */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  ScanRangeStruct *ranges;
};

/* scanRead -- an EventStreamReadFunction for a ScanReaderStruct */
static long scanRead(void *closure, unsigned char *buf, size_t size)
{
  ScanReaderStruct *reader = closure;
  long n = reader->readAt(reader->closure, buf, size, reader->offset);
  if (n > 0)
    reader->offset += (uint64_t)n;
  return n;
}

/* rangeFound -- say where the range's thread starts, for the walk */
static void rangeFound(ScanRangeStruct *r, size_t start)
{
  pthread_mutex_lock(&r->split->lock);
  r->start = start;
  r->found = 1;
  pthread_cond_broadcast(&r->split->cond);
  pthread_mutex_unlock(&r->split->lock);
}

/* rangeFirst -- move *pos to the range's first sound block header,
 * with the block in the window.  Returns 0 if none starts in the
 * range.  A "TTBK" in events' data seldom has a sound header after
 * it; if it has, the walk passes it by and drops the range. */
static int rangeFirst(ScanRangeStruct *r, size_t *pos)
{
  EventStreamStruct *s = &r->stream;
  for (;;) {
    BlockStruct block;
    char what[200];
    size_t magic;
    eventFill(s, pos, SCAN_LOOK);
    magic = eventFindBlockMagic(s, *pos);
    if (s->origin + (magic < s->size ? magic : s->size) >= r->to
        || __atomic_load_n(&r->cancel, __ATOMIC_RELAXED))
      return 0;
    if (magic >= s->size) {     /* none in the window: on, keeping a magic's first 3 bytes */
      if (s->eof || s->size - *pos < 4)
        return 0;
      *pos = s->size - 3;
      continue;
    }
    *pos = magic;
    eventBlockFetch(s, pos);
    if (eventBlockRead(s, *pos, &block, what, sizeof what))
      return 1;
    ++*pos;
  }
}

/* scanRange -- a range's thread: walk the blocks from its first, as
 * eventIndexBlocks does, while they are plain (raw, sound, of the
 * registry it started with, each read once) and start in the range.
 * It stops before any other block, for the walk to read. */
static void *scanRange(void *arg)
{
  ScanRangeStruct *r = arg;
  EventStreamStruct *s = &r->stream;
  unsigned headerLength = s->info.blockHeaderLength;
  size_t pos = 0;

  if (!rangeFirst(r, &pos)) {
    rangeFound(r, SIZE_MAX);
    return NULL;
  }
  rangeFound(r, s->origin + pos);
  for (;;) {
    BlockStruct block;
    char what[200];
    if (__atomic_load_n(&r->cancel, __ATOMIC_RELAXED)) {
      r->failed = 1;
      break;
    }
    eventBlockFetch(s, &pos);
    if (pos >= s->size || s->origin + pos >= r->to)
      break;
    if (!eventBlockRead(s, pos, &block, what, sizeof what) || block.registry || block.compact
        || block.zstd)
      break;
    if (block.index != EVENT_BLOCK_INDEX_NONE) {
      TableEntryStruct *seen = eventTableFind(&s->seen, block.index);
      if (seen != NULL && seen->used)
        break;                  /* read twice: the walk says so */
      (void)eventIndexNote(s, &block);
    }
    ++s->info.blockCount;
    if (!eventBlockEvents(s, &r->index, &block, pos + block.length)) {
      r->failed = 1;            /* the block's events before its fault are counted */
      break;
    }
    if (block.index == EVENT_BLOCK_INDEX_NONE) {
      ++s->info.unindexedBlocks;
      s->info.unindexedEvents += block.events;
    }
    if (block.dataEnd > pos + headerLength && !eventBlockAdd(s, &block)) {
      r->failed = 1;
      break;
    }
    pos += block.length;
  }
  r->failed |= s->outOfMemory || s->problemCount > 0;
  r->stop = s->origin + pos;
  return NULL;
}

/* rangeFree -- what a range's stream holds of its own */
static void rangeFree(ScanRangeStruct *r)
{
  EventStreamStruct *s = &r->stream;
  for (size_t i = 0; i < s->problemCount; ++i)
    free(s->problems[i]);
  free(s->problems);
  free(s->window);
  free(s->counts);
  free(s->blocks);
  free(s->indexes);
  free(s->seen.entries);
  free(s->holes);
  memset(s, 0, sizeof *s);
}

/* rangeJoin -- wait for a range's thread, stopping it first unless
 * its work is wanted */
static void rangeJoin(ScanRangeStruct *r, int wanted)
{
  if (!r->running)
    return;
  if (!wanted)
    __atomic_store_n(&r->cancel, 1, __ATOMIC_RELAXED);
  (void)pthread_join(r->thread, NULL);
  r->running = 0;
}

/* rangeStream -- a range's stream: the walk's, sharing its registry and
 * codes, which nothing changes while the thread runs (eventScanStop), with
 * a window, counts and findings of its own.  Returns 0 if out of memory. */
static int rangeStream(EventStreamStruct *stream, ScanRangeStruct *r)
{
  EventStreamStruct *s = &r->stream;
  EventStreamInfoStruct *info = &s->info;
  *s = *stream;
  s->window = malloc(SCAN_WINDOW);
  s->counts = calloc(stream->countsKinds * stream->countsEvents + 1, sizeof *s->counts);
  s->base = s->window;
  s->windowCapacity = SCAN_WINDOW;
  s->size = 0;
  s->origin = r->from;
  s->eof = 0;
  r->reader = r->split->reader;
  r->reader.offset = r->from;
  s->read = scanRead;
  s->readClosure = &r->reader;
  s->split = NULL;
  s->blocks = NULL;
  s->blockCount = s->blockCapacity = 0;
  s->indexes = NULL;
  s->indexCount = s->indexCapacity = 0;
  memset(&s->seen, 0, sizeof s->seen);
  s->holes = NULL;
  s->holeCapacity = 0;
  s->problems = NULL;
  s->problemCount = s->problemCapacity = 0;
  s->outOfMemory = 0;
  s->threads = NULL;
  s->seqs = NULL;
  s->heap = NULL;
  s->pack = NULL;
  s->raws = NULL;
  s->scanRaw = NULL;
  s->zstd = NULL;
  s->unzstd = NULL;
  /* what the walk of its blocks finds (rangeTake) */
  info->blockCount = info->unindexedBlocks = info->unindexedEvents = 0;
  info->eventCount = info->unknownCount = info->clockSyncCount = 0;
  info->clockRated = 0;
  info->streamEnd = info->streamSnapshot = 0;
  info->streamExec = -1;        /* none seen */
  info->firstClock = UINT64_MAX;
  info->lastClock = 0;
  memset(info->dropped, 0, sizeof info->dropped);
  info->threadStarts = info->threadExits = 0;
  info->registriesRefused = 0;
  memset(&r->index, 0, sizeof r->index);
  return s->window != NULL && s->counts != NULL;
}

/* eventScanStart -- cut the stream after its header into ranges and
 * start a thread for each after the first */
void eventScanStart(EventStreamStruct *stream)
{
  ScanSplitStruct *split = stream->split;
  size_t first = stream->info.headerLength;
  uint64_t bytes = split->size > first ? split->size - first : 0;
  stream->splitNext = SIZE_MAX;
  for (unsigned i = 0; i < split->count; ++i) {
    ScanRangeStruct *r = &split->ranges[i];
    r->split = split;
    r->from = first + (size_t)(bytes * (i + 1) / (split->count + 1));
    r->to = i + 1 < split->count ? first + (size_t)(bytes * (i + 2) / (split->count + 1))
                                 : SIZE_MAX;
    r->start = SIZE_MAX;
    if (rangeStream(stream, r) && pthread_create(&r->thread, NULL, scanRange, r) == 0)
      r->running = 1;
    else
      r->found = 1;             /* none: the walk reads it */
  }
  if (split->count > 0)
    stream->splitNext = split->ranges[0].from;
}

/* rangeTake -- add what a range's thread found, all sound blocks, to
 * the walk's, as the walk would have found it.  Returns 0, having
 * changed nothing, if it cannot. */
static int rangeTake(EventStreamStruct *stream, IndexStruct *index, ScanRangeStruct *r)
{
  EventStreamStruct *s = &r->stream;
  EventStreamInfoStruct *info = &stream->info;
  const EventStreamInfoStruct *found = &s->info;
  size_t cells = stream->countsKinds * stream->countsEvents;

  if (s->countsKinds != stream->countsKinds || s->countsEvents != stream->countsEvents)
    return 0;
  for (size_t i = 0; i < s->indexCount; ++i) {   /* one read already: the walk says so */
    TableEntryStruct *seen = eventTableFind(&stream->seen, s->indexes[i].index);
    if (seen != NULL && seen->used)
      return 0;
  }
  if (stream->blockCapacity - stream->blockCount < s->blockCount) {
    size_t capacity = stream->blockCount + s->blockCount + 64;
    BlockStruct *bigger = realloc(stream->blocks, capacity * sizeof *bigger);
    if (bigger == NULL)
      return 0;
    stream->blocks = bigger;
    stream->blockCapacity = capacity;
  }
  if (stream->indexCapacity - stream->indexCount < s->indexCount) {
    size_t capacity = stream->indexCount + s->indexCount + 64;
    IndexEntryStruct *bigger = realloc(stream->indexes, capacity * sizeof *bigger);
    if (bigger == NULL)
      return 0;
    stream->indexes = bigger;
    stream->indexCapacity = capacity;
  }
  if (s->blockCount > 0)        /* their offsets are the stream's already */
    memcpy(stream->blocks + stream->blockCount, s->blocks, s->blockCount * sizeof *s->blocks);
  stream->blockCount += s->blockCount;
  for (size_t i = 0; i < s->indexCount; ++i) {
    if (eventTableSet(&stream->seen, s->indexes[i].index, s->indexes[i].offset))
      stream->outOfMemory = 1;
    stream->indexes[stream->indexCount++] = s->indexes[i];
  }
  for (size_t i = 0; i < cells; ++i)
    stream->counts[i] += s->counts[i];
  info->blockCount += found->blockCount;
  info->unindexedBlocks += found->unindexedBlocks;
  info->unindexedEvents += found->unindexedEvents;
  info->eventCount += found->eventCount;
  info->unknownCount += found->unknownCount;
  /* noteOwn's rule: the lowest and highest clock, the first in file order of equals */
  if (found->clockSyncCount > 0) {
    if (info->clockSyncCount == 0 || r->index.first.clock < index->first.clock)
      index->first = r->index.first;
    if (info->clockSyncCount == 0 || r->index.last.clock > index->last.clock)
      index->last = r->index.last;
    info->clockSyncCount += found->clockSyncCount;
  }
  if (found->clockRated && (!info->clockRated || r->index.rate.clock < index->rate.clock)) {
    index->rate = r->index.rate;
    info->clockRated = 1;
  }
  info->streamEnd |= found->streamEnd;
  info->streamSnapshot |= found->streamSnapshot;
  if (found->streamExec >= 0)
    info->streamExec = found->streamExec;
  info->firstClock = found->firstClock < info->firstClock ? found->firstClock : info->firstClock;
  info->lastClock = found->lastClock > info->lastClock ? found->lastClock : info->lastClock;
  for (size_t k = 0; k < EVENT_STREAM_KIND_LIMIT; ++k)
    info->dropped[k] += found->dropped[k];
  info->threadStarts += found->threadStarts;
  info->threadExits += found->threadExits;
  if (info->registriesRefused == 0)
    memcpy(info->registryRefused, found->registryRefused, sizeof info->registryRefused);
  info->registriesRefused += found->registriesRefused;
  return 1;
}

/* walkMove -- move the walk, at *pos in its window, on to offset to */
static void walkMove(EventStreamStruct *stream, size_t *pos, size_t to)
{
  if (to >= stream->origin && to - stream->origin <= stream->size) {
    *pos = to - stream->origin;
    return;
  }
  stream->origin = to;
  stream->size = 0;
  stream->eof = 0;
  stream->base = stream->window;
  stream->split->reader.offset = to;
  *pos = 0;
}

/* eventScanTake -- the walk is at *pos, at or past where it next looks
 * at the ranges (splitNext): take each range whose thread began
 * exactly there, moving on to where it stopped; drop each whose start
 * the walk has passed; and say where to look next. */
void eventScanTake(EventStreamStruct *stream, IndexStruct *index, size_t *pos)
{
  ScanSplitStruct *split = stream->split;
  while (split->next < split->count) {
    ScanRangeStruct *r = &split->ranges[split->next];
    size_t at = stream->origin + *pos;
    if (at < r->from) {
      stream->splitNext = r->from;
      return;
    }
    pthread_mutex_lock(&split->lock);
    while (!r->found)
      pthread_cond_wait(&split->cond, &split->lock);
    pthread_mutex_unlock(&split->lock);
    if (r->start != SIZE_MAX && at < r->start) {
      stream->splitNext = r->start;
      return;
    }
    rangeJoin(r, at == r->start);
    if (at == r->start && !r->failed && rangeTake(stream, index, r))
      walkMove(stream, pos, r->stop);
    rangeFree(r);
    ++split->next;
  }
  stream->splitNext = SIZE_MAX;
}

/* eventScanStop -- drop the ranges not taken, their threads stopped */
void eventScanStop(EventStreamStruct *stream)
{
  ScanSplitStruct *split = stream->split;
  for (; split->next < split->count; ++split->next) {
    rangeJoin(&split->ranges[split->next], 0);
    rangeFree(&split->ranges[split->next]);
  }
  stream->splitNext = SIZE_MAX;
}

/* eventScanFree -- a split, its threads stopped */
void eventScanFree(ScanSplitStruct *split)
{
  if (split == NULL)
    return;
  for (unsigned i = split->next; i < split->count; ++i) {
    rangeJoin(&split->ranges[i], 0);
    rangeFree(&split->ranges[i]);
  }
  pthread_mutex_destroy(&split->lock);
  pthread_cond_destroy(&split->cond);
  free(split->ranges);
  free(split);
}

/* EventStreamScanSplit -- EventStreamScan, reading with readAt, the
 * index split over jobs threads: count ranges after the walk's first */
EventStreamRes EventStreamScanSplit(EventStreamStruct **streamReturn,
                                    EventStreamReadAtFunction readAt, void *closure,
                                    uint64_t size, unsigned jobs, char *msg, size_t msgSize)
{
  ScanSplitStruct *split = calloc(1, sizeof *split);
  unsigned count = jobs > 1 ? jobs - 1 : 0;
  if (split != NULL && (split->ranges = calloc(count + 1, sizeof *split->ranges)) == NULL) {
    free(split);
    split = NULL;
  }
  if (split == NULL) {
    *streamReturn = NULL;
    if (msgSize > 0)
      eventFormatMessage(msg, msgSize, "offset 0: out of memory");
    return EventStreamERROR;
  }
  split->reader.readAt = readAt;
  split->reader.closure = closure;
  split->size = size;
  split->count = count;
  pthread_mutex_init(&split->lock, NULL);
  pthread_cond_init(&split->cond, NULL);
  return eventScanOpen(streamReturn, scanRead, &split->reader, split, msg, msgSize);
}
