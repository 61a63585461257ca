/* <tools/heap/heapstacks.c> -- the stacks and mappings a recorder log gives
 *
 * .design: design/heap.txt .heap .heap.symbols.time
 *
 * A stack's frames come in StackFrames events, eight at a time, as
 * indexes of the log's addresses; once all are defined, the stack is a
 * node of the tree of call paths, which shares the frames that stacks
 * share.  The mappings come in MapExec and MapUnmap events,
 * each in force from one version of the map to another, so that a
 * stack is named with the mappings of its time.
 */

#include <stdlib.h>
#include <string.h>

#include "heapreader.h"
#include "report.h"

/* nodeSlot -- where the node of (parent, address) is in the tree's
 * index, or would go */
static size_t nodeSlot(const ReaderStruct *r, uint32_t parent, uint32_t address)
{
  size_t mask = r->nodeSlotCount - 1, i;
  uint64_t h = ((uint64_t)parent * 0x9E3779B97F4A7C15u ^ address) * 0xBF58476D1CE4E5B9u;
  i = (size_t)(h ^ h >> 31) & mask;     /* both small numbers mixed into the low bits */
  for (;;) {
    const HeapNodeStruct *n;
    if (r->nodeSlots[i] == 0)
      return i;
    n = &r->log->nodes[r->nodeSlots[i] - 1];
    if (n->parent == parent && n->address == address)
      return i;
    i = (i + 1) & mask;
  }
}

/* nodeOf -- the node + 1 of address called from parent's frame, made
 * if new */
static uint32_t nodeOf(ReaderStruct *r, uint32_t parent, uint32_t address)
{
  HeapLogStruct *log = r->log;
  size_t i;
  if ((log->nodeCount + 1) * 2 > r->nodeSlotCount) {
    free(r->nodeSlots);
    r->nodeSlotCount = r->nodeSlotCount == 0 ? 4096 : r->nodeSlotCount * 2;
    if ((r->nodeSlots = calloc(r->nodeSlotCount, sizeof *r->nodeSlots)) == NULL)
      ReportOutOfMemory();
    for (size_t k = 0; k < log->nodeCount; ++k)
      r->nodeSlots[nodeSlot(r, log->nodes[k].parent, log->nodes[k].address)] = (uint32_t)k + 1;
  }
  i = nodeSlot(r, parent, address);
  if (r->nodeSlots[i] != 0)
    return r->nodeSlots[i];
  if (log->nodeCount == r->nodeCapacity) {
    r->nodeCapacity = r->nodeCapacity == 0 ? 4096 : r->nodeCapacity + r->nodeCapacity / 2;
    log->nodes = HeapReaderRealloc(log->nodes, r->nodeCapacity * sizeof *log->nodes);
  }
  log->nodes[log->nodeCount] = (HeapNodeStruct){parent, address};
  r->nodeSlots[i] = (uint32_t)++log->nodeCount;
  return r->nodeSlots[i];
}

/* stackPlace -- s's frames, defined, take their place in the tree:
 * from the outermost in.  The outer frames it shares with the stack
 * placed before it, as stacks defined one after another mostly do, are
 * that one's nodes, found without a look in the index.
 * design/heap.txt .heap.bounded.time */
static void stackPlace(ReaderStruct *r, HeapStackStruct *s)
{
  uint32_t node = 0;
  size_t j = 0, same;
  if (s->depth > r->pathCapacity) {
    r->pathCapacity = s->depth;
    r->path = HeapReaderRealloc(r->path, r->pathCapacity * sizeof *r->path);
  }
  for (same = 0; same < r->pathDepth && same < s->depth; ++same)
    if (r->path[same][0] != s->pending[s->depth - 1 - same])
      break;
  for (size_t k = s->depth; k-- > 0; ++j) {
    if (j < same) {
      node = r->path[j][1];
      continue;
    }
    node = nodeOf(r, node, s->pending[k]);
    r->path[j][0] = s->pending[k], r->path[j][1] = node;
  }
  r->pathDepth = s->depth;
  s->node = node;
  free(s->pending);
  s->pending = NULL;
}

void HeapReaderStacksEnd(ReaderStruct *r)
{
  HeapLogStruct *log = r->log;
  for (size_t i = 0; i < log->stackCount; ++i)
    if (log->stacks[i].pending != NULL)
      stackPlace(r, &log->stacks[i]);
  free(r->nodeSlots);
  r->nodeSlots = NULL;
  r->nodeSlotCount = 0;
  free(r->path);
  r->path = NULL;
  r->pathDepth = r->pathCapacity = 0;
  if (log->nodeCount > 0)       /* no room to spare kept */
    log->nodes = HeapReaderRealloc(log->nodes, log->nodeCount * sizeof *log->nodes);
}

HeapStackStruct *HeapReaderStack(ReaderStruct *r, uint64_t id)
{
  HeapLogStruct *log = r->log;
  if (id > 0xFFFFFFFu)
    id = 0;                     /* no recorder makes so many: the unknown stack */
  if (id >= r->stacksCapacity) {
    /* grown by a quarter: doubling left up to half of it spare, and
     * zeroed, at the reading's peak (.heap.bounded.stacks) */
    size_t n = r->stacksCapacity + r->stacksCapacity / 4;
    if (n <= id)
      n = (size_t)id + 1 + (size_t)id / 4;
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
  if (s->pending == NULL && s->node == 0 && s->depth == 0) {
    if ((s->pending = calloc((size_t)depth, sizeof *s->pending)) == NULL)
      ReportOutOfMemory();
    s->depth = (uint16_t)depth;
    s->mapVersion = (uint32_t)r->log->mapVersion;     /* .heap.symbols.time */
  }
  if (s->pending == NULL || s->depth != depth)
    return;             /* placed already, or another depth: damage */
  for (unsigned k = 0; k < 8 && index + k < depth; ++k, ++s->defined)
    s->pending[index + k] = addressIndex(r, rec->values[c->param[3] + k].u);
  if (s->defined >= depth)
    stackPlace(r, s);
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
