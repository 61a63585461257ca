/* <tools/heap/heapstacks.c> -- the stacks and mappings a recorder log gives
 *
 * .design: design/heap.txt .heap .heap.symbols.time
 *
 * A stack's frames come in StackFrames events, eight at a time; they are
 * kept as indexes of the log's addresses, four bytes a frame, in chunks
 * that never move.  The mappings come in MapExec and MapUnmap events,
 * each in force from one version of the map to another, so that a
 * stack is named with the mappings of its time.
 */

#include <stdlib.h>
#include <string.h>

#include "heapreader.h"
#include "report.h"

/* FRAME_CHUNK -- addresses a chunk of framesCarve holds: 4 MiB */
#define FRAME_CHUNK ((size_t)1 << 20)

/* framesCarve -- room for a stack's depth address indexes, zeroed, from
 * the log's chunks, which never move (depth is at most 4096) */
static uint32_t *framesCarve(HeapLogStruct *log, size_t depth)
{
  if (log->frameChunkCount == 0 || FRAME_CHUNK - log->frameChunkUsed < depth) {
    uint32_t *chunk = calloc(FRAME_CHUNK, sizeof *chunk);
    if (chunk == NULL)
      ReportOutOfMemory();
    log->frameChunks = HeapReaderRealloc(log->frameChunks, (log->frameChunkCount + 1) * sizeof *log->frameChunks);
    log->frameChunks[log->frameChunkCount++] = chunk;
    log->frameChunkUsed = 0;
  }
  log->frameChunkUsed += depth;
  return log->frameChunks[log->frameChunkCount - 1] + log->frameChunkUsed - depth;
}

HeapStackStruct *HeapReaderStack(ReaderStruct *r, uint64_t id)
{
  HeapLogStruct *log = r->log;
  if (id > 0xFFFFFFFu)
    id = 0;                     /* no recorder makes so many: the unknown stack */
  if (id >= r->stacksCapacity) {
    size_t n = r->stacksCapacity * 2;
    while (n <= id)
      n *= 2;
    log->stacks = HeapReaderRealloc(log->stacks, n * sizeof *log->stacks);
    memset(log->stacks + r->stacksCapacity, 0, (n - r->stacksCapacity) * sizeof *log->stacks);
    r->stacksCapacity = n;
  }
  if (id >= log->stackCount)
    log->stackCount = id + 1;
  return &log->stacks[id];
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
      ReportOutOfMemory();
    for (size_t k = 0; k < oldCount; ++k)
      if (old[k] != 0)
        r->addressSlots[addressSlot(r, log->addresses[old[k] - 1])] = old[k];
    free(old);
  }
  i = addressSlot(r, address);
  if (r->addressSlots[i] == 0) {
    if (log->addressCount == r->addressCapacity) {
      r->addressCapacity = r->addressCapacity == 0 ? 4096 : r->addressCapacity * 2;
      log->addresses = HeapReaderRealloc(log->addresses, r->addressCapacity * sizeof *log->addresses);
    }
    log->addresses[log->addressCount++] = address;
    r->addressSlots[i] = (uint32_t)log->addressCount;
  }
  return r->addressSlots[i] - 1;
}

/* HeapReaderStackFrames -- id, depth, index, f0...f7 (f1 to f7 follow f0) */
void HeapReaderStackFrames(ReaderStruct *r, const EventRecordStruct *rec, const CodeStruct *c)
{
  uint64_t id = rec->values[c->param[0]].u, depth = rec->values[c->param[1]].u;
  uint64_t index = rec->values[c->param[2]].u;
  HeapStackStruct *s;
  if (id == 0 || depth == 0 || depth > 4096 || index >= depth || c->param[3] + 8 > EVENT_PARAM_MAX)
    return;
  s = HeapReaderStack(r, id);
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

/* HeapReaderMapsEnd -- the mappings in force that overlap [start, end) end at a
 * new version; 1 if there were any.  .heap.symbols.time */
int HeapReaderMapsEnd(HeapLogStruct *log, uint64_t start, uint64_t end)
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

/* HeapReaderMapExec -- a mapping from now on, replacing any it overlaps; one given
 * again (a forked child's log, an older recorder) changes nothing */
void HeapReaderMapExec(ReaderStruct *r, const EventRecordStruct *rec, const CodeStruct *c)
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
  if (!HeapReaderMapsEnd(log, m.start, m.end))
    ++log->mapVersion;
  m.born = log->mapVersion;
  if (m.path != NULL && (m.path = strdup(m.path)) == NULL)
    ReportOutOfMemory();              /* it points into the events, which go */
  log->maps = HeapReaderRealloc(log->maps, (log->mapCount + 1) * sizeof *log->maps);
  log->maps[log->mapCount++] = m;
}
