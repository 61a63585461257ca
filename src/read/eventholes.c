/* <src/read/eventholes.c> -- the stream layer: blocks missing, repeated, or holes
 *
 * .design: design/stream.txt .stream.check design/control.txt .sol.writer.at
 *
 * What the walk of eventindex.c notes of each block's place: its index
 * (a block read twice is refused, and the indexes read must rise from
 * 0 with none missing) and the holes, blocks the program had its place
 * for but died before writing, which a recovered live file may fill.
 */

#include "eventstreamint.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* eventIndexNote -- note a block's index and offset, for eventIndexCheck.
 * Returns 0, having said so, if a block with this index was read
 * already: the log holds it twice (spliced, or a write repeated), and
 * its events are not read again.  design/stream.txt .stream.check */
int eventIndexNote(EventStreamStruct *stream, const BlockStruct *block)
{
  TableEntryStruct *first;
  size_t offset = stream->origin + block->offset;
  if (block->index == EVENT_BLOCK_INDEX_NONE)
    return 1;
  first = eventTableFind(&stream->seen, block->index);
  if (first != NULL && first->used) {
    ++stream->info.duplicateBlocks;
    eventProblemAdd(stream, "offset %" PRIu64 ": block %" PRIu64 " of the log again (first at offset %"
               PRIu64 "): its events are not shown twice", (uint64_t)offset,
               (uint64_t)block->index, first->value);
    return 0;
  }
  if (eventTableSet(&stream->seen, block->index, offset))
    stream->outOfMemory = 1;
  if (stream->indexCount == stream->indexCapacity) {
    size_t capacity = stream->indexCapacity == 0 ? 64 : stream->indexCapacity * 2;
    IndexEntryStruct *bigger = realloc(stream->indexes, capacity * sizeof *bigger);
    if (bigger == NULL) {
      stream->outOfMemory = 1;
      return 1;
    }
    stream->indexes = bigger;
    stream->indexCapacity = capacity;
  }
  stream->indexes[stream->indexCount].index = block->index;
  stream->indexes[stream->indexCount].offset = offset;
  ++stream->indexCount;
  return 1;
}

static int indexEntryCompare(const void *a, const void *b)
{
  const IndexEntryStruct *x = a, *y = b;
  if (x->index != y->index)
    return x->index < y->index ? -1 : 1;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* holeEndsAt -- does one of the holes the walk found end at offset?
 * They are in file order. */
static int holeEndsAt(const EventStreamStruct *stream, uint64_t offset)
{
  size_t lo = 0, hi = stream->holes != NULL ? stream->info.holes : 0;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (stream->holes[mid].end < offset)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < stream->info.holes && stream->holes != NULL && stream->holes[lo].end == offset;
}

/* eventIndexCheck -- every block the log was written with is there, in the
 * order written: the indexes read rise in file order from 0 to the
 * highest.  Only where the walk read to the end: a walk stopped at
 * damage reports that.  design/stream.txt .stream.check */
void eventIndexCheck(EventStreamStruct *stream)
{
  EventStreamInfoStruct *info = &stream->info;
  IndexEntryStruct *e = stream->indexes;
  size_t n = stream->indexCount, reports = 0, outOfOrder = 0;
  uint64_t expect = 0;
  if (n == 0)
    return;
  for (size_t i = 1; i < n; ++i)
    if (e[i].index < e[i - 1].index && outOfOrder++ == 0)
      eventProblemAdd(stream, "offset %" PRIu64 ": block %" PRIu64 " of the log comes after block %"
                 PRIu64 " (at offset %" PRIu64 "): the log's blocks are not in the order written",
                 (uint64_t)e[i].offset, (uint64_t)e[i].index, (uint64_t)e[i - 1].index,
                 (uint64_t)e[i - 1].offset);
  info->misorderedBlocks = outOfOrder;
  qsort(e, n, sizeof *e, indexEntryCompare);
  for (size_t i = 0; i < n; ++i) {
    if (e[i].index > expect && holeEndsAt(stream, e[i].offset))
      info->holeBlocks += e[i].index - expect;     /* .sol.writer.at */
    else if (e[i].index > expect) {
      info->missingBlocks += e[i].index - expect;
      if (++reports <= 8) {
        if (e[i].index == expect + 1)
          eventProblemAdd(stream, "block %" PRIu64 " of the log is missing: between offsets %" PRIu64
                     " and %" PRIu64, expect,
                     expect == 0 ? (uint64_t)info->headerLength : (uint64_t)e[i - 1].offset,
                     (uint64_t)e[i].offset);
        else if (expect == 0)
          eventProblemAdd(stream, "blocks 0 to %" PRIu64 " of the log are missing: the first block "
                     "there is at offset %" PRIu64, (uint64_t)e[i].index - 1,
                     (uint64_t)e[i].offset);
        else
          eventProblemAdd(stream, "blocks %" PRIu64 " to %" PRIu64 " of the log are missing: between "
                     "offsets %" PRIu64 " and %" PRIu64, expect, (uint64_t)e[i].index - 1,
                     (uint64_t)e[i - 1].offset, (uint64_t)e[i].offset);
      }
    }
    expect = (uint64_t)e[i].index + 1;
  }
  if (reports > 8)
    eventProblemAdd(stream, "%" PRIu64 " more gaps in the log's blocks not listed", (uint64_t)reports - 8);
}

/* eventHoleFind -- is the block at pos, which failed its check or has no
 * magic, one the program had its place for but died before writing
 * whole (.sol.writer.at)?  Header and data go in one write after the
 * lock, which death cuts short at a page boundary of the file, and the
 * live file has the header (recovery puts it back): so its data are
 * zeros from their start or from a page boundary on.  Or, with no header
 * there, zeros up to the next block.  Returns its length, 0 if it is not one; *block
 * (a failed blockRead's) then has its thread, kind and seq, or a seq of
 * EVENT_SEQ_NONE if the header is zeros too.  Moves the window of a
 * scan, and *pos with it. */

size_t eventHoleFind(EventStreamStruct *stream, size_t *pos, BlockStruct *block)
{
  unsigned headerLength = stream->info.blockHeaderLength;
  size_t start, end;
  eventFill(stream, pos, (size_t)EVENT_BLOCK_LENGTH_MAX + headerLength);
  start = *pos;
  block->offset = start;
  if (stream->size - start < headerLength)
    return 0;
  if (memcmp(stream->base + start, EVENT_BLOCK_MAGIC, 4) == 0) {
    end = start + block->length;
    return block->length >= headerLength && block->length <= stream->size - start
           && EventBlockHole(stream->base + start, block->length, headerLength,
                             stream->origin + start) ? end - start : 0;
  }
  end = eventFindBlockMagic(stream, start + 1);
  if (end >= stream->size)
    return 0;                   /* at the end: a block cut short (blockCut) */
  for (size_t i = start; i < end; ++i)
    if (stream->base[i] != 0)
      return 0;
  block->seq = EVENT_SEQ_NONE;
  block->length = (uint32_t)(end - start);
  return end - start;
}

/* eventHoleAdd -- a hole the walk found, kept for eventHolesCheck */
void eventHoleAdd(EventStreamStruct *stream, const BlockStruct *block)
{
  EventStreamInfoStruct *info = &stream->info;
  if (info->holes == 0)
    info->holeOffset = stream->origin + block->offset;
  if (info->holes == stream->holeCapacity) {
    size_t bigger = stream->holeCapacity == 0 ? 8 : 2 * stream->holeCapacity;
    HoleStruct *more = realloc(stream->holes, bigger * sizeof *more);
    if (more == NULL) {
      stream->outOfMemory = 1;
      return;
    }
    stream->holes = more;
    stream->holeCapacity = bigger;
  }
  stream->holes[info->holes].offset = stream->origin + block->offset;
  stream->holes[info->holes].end = stream->origin + block->offset + block->length;
  stream->holes[info->holes].seq = block->seq;
  stream->holes[info->holes].thread = block->thread;
  stream->holes[info->holes].kind = block->kind;
  stream->holes[info->holes].level = block->level;
  stream->holes[info->holes].recovered = 0;
  ++info->holes;
}

/* eventHolesCheck -- each hole is a live block (only those are written after
 * the lock), so a log recovered from its live file has its events: a
 * recovered block of its thread, kind, level and seq.  A hole without
 * one is events lost, and said.  .sol.writer.at */
static int holeSeqCompare(const void *a, const void *b)
{
  const HoleStruct *x = a, *y = b;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void eventHolesCheck(EventStreamStruct *stream)
{
  EventStreamInfoStruct *info = &stream->info;
  size_t lost = 0, n = stream->holes != NULL ? info->holes : 0;
  uint64_t first = UINT64_MAX;
  if (info->holes == 0)
    return;
  /* by seq, so that each recovered block finds its holes at once (a
   * damaged log may have many); eventIndexCheck is done with file order */
  qsort(stream->holes, n, sizeof *stream->holes, holeSeqCompare);
  for (size_t j = 0; j < stream->blockCount; ++j) {
    const BlockStruct *b = &stream->blocks[j];
    size_t lo = 0, hi = n;
    if (b->index != EVENT_BLOCK_INDEX_NONE)
      continue;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (stream->holes[mid].seq < b->seq)
        lo = mid + 1;
      else
        hi = mid;
    }
    for (; lo < n && stream->holes[lo].seq == b->seq; ++lo) {
      HoleStruct *h = &stream->holes[lo];
      h->recovered |= h->thread == b->thread && h->kind == b->kind && h->level == b->level;
    }
  }
  for (size_t i = 0; i < info->holes; ++i)
    if (i >= n || (!stream->holes[i].recovered || stream->holes[i].seq == EVENT_SEQ_NONE)) {
      ++lost;
      if (i < n && stream->holes[i].offset < first)
        first = stream->holes[i].offset;
    }
  if (first == UINT64_MAX)
    first = info->holeOffset;
  info->holesLost = lost;
  if (lost > 0)
    eventProblemAdd(stream, "offset %" PRIu64 ": a block the program died before writing whole "
               "(zeros where its events should be; %" PRIu64 " such block%s) and no live file "
               "recovered %s: %s events are lost", first, (uint64_t)lost, lost == 1 ? "" : "s",
               lost == 1 ? "it" : "them", lost == 1 ? "its" : "their");
}
