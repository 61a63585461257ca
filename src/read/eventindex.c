/* <src/read/eventindex.c> -- the stream layer: the block index
 *
 * .design: design/stream.txt .stream.block .stream.check design/tools.txt .eventcnv.reader
 *
 * eventIndexBlocks walks a stream's blocks in file order, reading a
 * scan's window on as it goes (eventFill), checks each block and every
 * event in it, and notes what the merge and the reader need.  A block's
 * data in compact or zstd form are expanded by eventexpand.c; the
 * blocks missing, repeated or left as holes are found by eventholes.c.
 */

#include "eventstreamint.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* Indexing the blocks.  design/stream.txt .stream.block
 *
 * eventIndexBlocks walks the blocks in file order and every event in them,
 * so that faults are found before any event is returned, and gathers
 * what must be known before events are shown in time order: the
 * ClockSync events, StreamEnd, the unknown codes.
 */

/* eventFindBlockMagic -- the offset of the next "TTBK" at or after from, or size */
size_t eventFindBlockMagic(const EventStreamStruct *stream, size_t from)
{
  size_t pos = from;
  while (pos < stream->size && stream->size - pos >= 4) {
    const unsigned char *t = memchr(stream->base + pos, 'T', stream->size - pos - 3);
    if (t == NULL)
      break;
    pos = (size_t)(t - stream->base);
    if (memcmp(t, EVENT_BLOCK_MAGIC, 4) == 0)
      return pos;
    ++pos;
  }
  return stream->size;
}

/* eventFill -- for a scan: make the window hold need bytes from *pos on,
 * or all there are to the end of the stream.  The window moves: *pos
 * is where the same byte is after.  design/tools.txt .eventcnv.scan */
void eventFill(EventStreamStruct *stream, size_t *pos, size_t need)
{
  if (stream->read == NULL || stream->eof || stream->size - *pos >= need)
    return;
  if (*pos > 0) {
    memmove(stream->window, stream->window + *pos, stream->size - *pos);
    stream->origin += *pos;
    stream->size -= *pos;
    *pos = 0;
  }
  stream->base = stream->window;
  while (stream->size < need) {
    long n;
    /* The window grows as the bytes come, not to what a length field
     * claims: a corrupt length costs no more memory than the stream's
     * own size.  design/tools.txt .eventcnv.scan */
    if (stream->size == stream->windowCapacity) {
      size_t capacity = stream->windowCapacity * 2 < need ? stream->windowCapacity * 2 : need;
      unsigned char *bigger = realloc(stream->window, capacity);
      if (bigger == NULL) {     /* read no further: what is left is truncated */
        stream->outOfMemory = 1;
        stream->eof = 1;
        return;
      }
      stream->window = bigger;
      stream->base = bigger;
      stream->windowCapacity = capacity;
    }
    n = stream->read(stream->readClosure, stream->window + stream->size,
                     stream->windowCapacity - stream->size);
    if (n <= 0) {
      if (n < 0)
        eventProblemAdd(stream, "offset %" PRIu64 ": the stream could not be read further",
                   (uint64_t)(stream->origin + stream->size));
      stream->eof = 1;
      return;
    }
    stream->size += (size_t)n;
  }
}

/* eventBlockAdd -- note a block, at its stream offset */
int eventBlockAdd(EventStreamStruct *stream, const BlockStruct *block)
{
  if (stream->blockCount == stream->blockCapacity) {
    size_t newCapacity = stream->blockCapacity == 0 ? 64 : stream->blockCapacity * 2;
    BlockStruct *bigger = realloc(stream->blocks, newCapacity * sizeof *bigger);
    if (bigger == NULL)
      return 0;
    stream->blocks = bigger;
    stream->blockCapacity = newCapacity;
  }
  stream->blocks[stream->blockCount] = *block;
  stream->blocks[stream->blockCount].offset += stream->origin;
  stream->blocks[stream->blockCount].dataEnd += stream->origin;
  ++stream->blockCount;
  return 1;
}

/* eventCodesInit -- the direct table of codes of each registry, and
 * the counts.  An event of a fixed length and not one of telltale's own
 * (which the index reads) is sound if its length is that length: its
 * fields need no look.  Run again when a registry block adds a registry:
 * the counts so far are kept (a registry's events come after those of
 * every registry before it, .stream.header.registries). */
int eventCodesInit(EventStreamStruct *stream)
{
  const EventRegistryStruct *registry = &stream->registry;
  size_t kinds = registry->kindCount, events = registry->eventCount;
  size_t *counts = calloc(kinds * events + 1, sizeof *counts);
  unsigned char *plans = calloc(events + 1, EVENT_PARAM_MAX);
  EventLayoutStruct native;
  EventLayoutNative(&native);
  stream->swap = native.bigEndian != stream->info.layout.bigEndian;
  if (stream->codes == NULL)
    stream->codes = calloc(EVENT_CODE_LIMIT, sizeof *stream->codes);
  if (counts == NULL || plans == NULL || stream->codes == NULL) {
    free(counts);
    free(plans);
    return 0;
  }
  if (stream->counts != NULL) {  /* by code: a merge is in code order */
    for (size_t e = 0; e < stream->countsEvents; ++e) {
      const EventDescStruct *now = EventRegistryLookup(registry, stream->countsCodes[e]);
      for (size_t k = 0; k < stream->countsKinds && now != NULL; ++k)
        counts[k * events + (size_t)(now - registry->events)] =
          stream->counts[k * stream->countsEvents + e];
    }
    free(stream->counts);
  }
  free(stream->countsCodes);
  stream->countsCodes = malloc((events + 1) * sizeof *stream->countsCodes);
  if (stream->countsCodes == NULL) {
    free(counts);
    free(plans);
    stream->counts = NULL;
    return 0;
  }
  for (size_t e = 0; e < events; ++e)
    stream->countsCodes[e] = registry->events[e].code;
  free(stream->plans);
  stream->counts = counts;
  stream->countsKinds = kinds;
  stream->countsEvents = events;
  stream->plans = plans;
  stream->fixedMax = 0;
  for (unsigned r = 0; r < stream->regCount; ++r) {
    RegStruct *reg = &stream->regs[r];
    CodeStruct *codes = r == 0 ? stream->codes : reg->codes;
    if (codes == NULL && (codes = reg->codes = calloc(EVENT_CODE_LIMIT, sizeof *codes)) == NULL)
      return 0;
    reg->codes = codes;
    /* A head of 0 is no event's but code 0's, whose head is all ones. */
    codes[0].head = 0xFFFFFFFFu;
    for (unsigned i = 0; i < reg->reg.eventCount; ++i) {
      unsigned m = reg->eventMap != NULL ? reg->eventMap[i] : i;
      unsigned code = reg->reg.events[i].code & 0xFFFF;
      const EventDescStruct *desc = &registry->events[m];
      CodeStruct *c = &codes[code];
      unsigned char head[4], *plan = stream->plans + (size_t)m * EVENT_PARAM_MAX;
      c->event = (uint16_t)(m + 1);
      c->length = code < EVENT_CODE_RESERVED_LIMIT
                  ? 0 : (uint16_t)EventDescPlan(desc, &stream->info.layout, plan);
      c->head = code == 0 ? 0xFFFFFFFFu : 0;
      if (c->length != 0) {
        EventStore(head, code, 2, stream->info.layout.bigEndian);
        EventStore(head + 2, c->length, 2, stream->info.layout.bigEndian);
        memcpy(&c->head, head, sizeof head);
        stream->fixedMax = c->length > stream->fixedMax ? c->length : stream->fixedMax;
      }
    }
  }
  return 1;
}

/* walkFixed -- indexEvents' fast path: the events from pos on whose
 * code has a fixed length and whose first 4 bytes are that code and
 * length, while an event of the longest such length fits before size.
 * Nothing else is decoded.  Events of one code come in runs: while the
 * code is the last one's, an event is a compare of its head and its
 * clock for the first and last, and the next position is known without
 * a load, so that the walk is not one load after another.  Returns where
 * it stopped.  Inlined twice, so that swap is a constant in each.
 * design/tools.txt .eventcnv.reader.run */
static inline __attribute__((always_inline))
size_t walkFixed(const EventStreamStruct *stream, const CodeStruct *codes,
                 const unsigned char *data, size_t pos,
                 size_t size, size_t *counts, size_t *eventsIO, EventClock *firstIO,
                 EventClock *lastIO, const unsigned swap)
{
  size_t fixedMax = stream->fixedMax, limit, run = 0, length, event;
  EventClock first = *firstIO, last = *lastIO;
  uint32_t expect;
  CodeStruct c;
  if (fixedMax == 0 || size < fixedMax || pos > size - fixedMax)
    return pos;
  limit = size - fixedMax;
  /* The first event's code starts the first run (a matched code's
   * length is never 0, so each event moves the walk on). */
  memcpy(&expect, data + pos, sizeof expect);
  c = codes[eventLoad16(data + pos, swap)];
  if (expect != c.head)
    return pos;
  length = c.length;
  event = c.event - 1u;
  while (pos <= limit) {
    const unsigned char *p = data + pos;
    uint32_t head;
    EventClock clock;
    memcpy(&head, p, sizeof head);
    if (head != expect) {
      c = codes[eventLoad16(p, swap)];
      if (head != c.head)
        break;
      counts[event] += run;
      *eventsIO += run;
      run = 0;
      expect = head;
      length = c.length;
      event = c.event - 1u;
    }
    clock = eventLoad64(p + 4, swap);
    ++run;
    first = clock < first ? clock : first;
    last = clock > last ? clock : last;
    pos += length;
  }
  counts[event] += run;
  *eventsIO += run;
  *firstIO = first;
  *lastIO = last;
  return pos;
}

/* noteOwn -- what the index notes of telltale's own events: StreamEnd,
 * StreamExec, the ClockSyncs with the lowest and highest clock, the ClockRate, the drops, threads
 * started and ended.  design/stream.txt .stream.own */
static void noteOwn(const EventStreamStruct *stream, EventStreamInfoStruct *info, IndexStruct *index,
                    const EventRecordStruct *rec)
{
  unsigned reg;
  if (rec->code == EVENT_CODE_STREAM_END && eventIsFormat(rec->desc, "W")) {
    info->streamEnd = 1;
  } else if (rec->code == EVENT_CODE_STREAM_SNAPSHOT && eventIsFormat(rec->desc, "WW")) {
    info->streamSnapshot = 1;
  } else if (rec->code == EVENT_CODE_STREAM_EXEC && eventIsFormat(rec->desc, "WU")) {
    info->streamExec = rec->values[1].u == 0;   /* .sol.exec */
  } else if ((rec->code == EVENT_CODE_CLOCK_SYNC || rec->code == EVENT_CODE_CLOCK_RATE)
             && eventIsFormat(rec->desc, "WW")) {
    SyncStruct sync;
    sync.clock = rec->clock;
    sync.monotonic = rec->values[0].u;
    if (info->clockSyncCount == 0 || sync.clock < index->first.clock)
      index->first = sync;
    if (info->clockSyncCount == 0 || sync.clock > index->last.clock)
      index->last = sync;
    ++info->clockSyncCount;
    if (rec->code == EVENT_CODE_CLOCK_RATE && (!info->clockRated || sync.clock < index->rate.clock)) {
      index->rate = sync;
      info->clockRated = 1;
    }
  } else if (rec->code == EVENT_CODE_EVENTS_DROPPED && rec->desc->paramCount == 2
             && rec->values[0].u <= 0xFFFF
             && eventKindOf(stream, (unsigned)rec->values[0].u, &reg) >= 0) {
    /* its kind as blocks carry it: design/control.txt .sol.dropped, design/registry.txt .reg.many */
    info->dropped[eventKindOf(stream, (unsigned)rec->values[0].u, &reg)] += rec->values[1].u;
  } else if (rec->code == EVENT_CODE_REGISTRY_REFUSED && eventIsFormat(rec->desc, "US")) {
    if (info->registriesRefused++ == 0) {   /* .reg.many */
      size_t n = strlen(rec->values[1].s);
      n = n < sizeof info->registryRefused ? n : sizeof info->registryRefused - 1;
      memcpy(info->registryRefused, rec->values[1].s, n);
      info->registryRefused[n] = '\0';
    }
  } else if (rec->code == EVENT_CODE_THREAD_START) {
    ++info->threadStarts;
  } else if (rec->code == EVENT_CODE_THREAD_EXIT) {
    ++info->threadExits;
  }
}

/* indexEvents -- check the events of one block and note what matters.
 * Returns 1 if the block is sound; else reports the fault.
 *
 * Most events take the first path: a code in the table with a fixed
 * length, and that length.  Every other event (a string, one of
 * telltale's own, an unknown code, a fault) is decoded in full.
 * design/tools.txt .eventcnv.reader */
static int indexEvents(EventStreamStruct *stream, IndexStruct *index, BlockStruct *block, size_t end)
{
  EventStreamInfoStruct *info = &stream->info;
  size_t start = block->offset + info->blockHeaderLength;
  const unsigned char *data = block->raw != NULL ? block->raw : stream->base + start;
  const RegStruct *reg = &stream->regs[block->reg];
  const CodeStruct *codes = reg->codes;
  size_t *counts = stream->counts + (size_t)block->kind * stream->registry.eventCount;
  unsigned swap = stream->swap;
  size_t pos = 0, size = end - start;
  size_t events = 0;
  EventClock first = info->firstClock, last = info->lastClock;
  int sound = 1;

  block->dataEnd = end;
  while (pos < size) {
    EventRecordStruct rec;
    const char *why = "?";
    EventDecodeRes res;
    pos = swap ? walkFixed(stream, codes, data, pos, size, counts, &events, &first, &last, 1)
               : walkFixed(stream, codes, data, pos, size, counts, &events, &first, &last, 0);
    if (pos >= size)
      break;
    if (size - pos >= EVENT_HEADER_LEN) {   /* the last events of a block */
      const unsigned char *p = data + pos;
      unsigned length = eventLoad16(p + 2, swap);
      CodeStruct c = codes[eventLoad16(p, swap)];
      if (length == c.length && length != 0 && length <= size - pos) {
        EventClock clock = eventLoad64(p + 4, swap);
        ++counts[c.event - 1];
        ++events;
        first = clock < first ? clock : first;
        last = clock > last ? clock : last;
        pos += length;
        continue;
      }
    }
    res = EventDecode(&info->layout, &reg->reg, data + pos, size - pos, &rec, &why);
    if (res == EventDecodeOK && stream->regCount > 1) {   /* the merge's: .stream.header.registries */
      rec.desc = stream->registry.events + reg->eventMap[rec.desc - reg->reg.events];
      rec.code = rec.desc->code;
    }
    if (res == EventDecodeEND && info->major < 2) {
      block->dataEnd = start + pos;   /* 1.0: code 0 ends the data early */
      break;
    }
    if (res == EventDecodeTRUNCATED && block->cut) {
      block->dataEnd = start + pos;   /* the end of a block cut short: said once, by the caller */
      break;
    }
    if (res == EventDecodeEND) {        /* 2.0: a block holds whole events only */
      res = EventDecodeCORRUPT;
      why = "event code 0 inside a block's data";
    }
    if (res == EventDecodeUNKNOWN) {    /* design/stream.txt .stream.unknown */
      ++info->unknownCount;
      pos += rec.length;
      continue;
    }
    if (res == EventDecodeOK) {
      ++counts[rec.desc - stream->registry.events];
      ++events;
      first = rec.clock < first ? rec.clock : first;
      last = rec.clock > last ? rec.clock : last;
      noteOwn(stream, info, index, &rec);
      pos += rec.length;
      continue;
    }
    /* EventDecodeTRUNCATED, EventDecodeCORRUPT */
    block->dataEnd = start + pos;
    if (block->raw != NULL)             /* its events have no offsets of their own */
      eventProblemAdd(stream, "offset %" PRIu64 ": compact block's event %" PRIu64 " (code 0x%04" PRIx64 ", %" PRIu64 " bytes expanded): %s",
                 (uint64_t)(stream->origin + block->offset), (uint64_t)events, (uint64_t)rec.code,
                 (uint64_t)rec.length, why);
    else if (size - pos >= EVENT_HEADER_LEN)
      eventProblemAdd(stream, "offset %" PRIu64 ": event code 0x%04" PRIx64 " length %" PRIu64 ": %s (%" PRIu64 " bytes left in the block at offset %" PRIu64 ")",
                 (uint64_t)(stream->origin + start + pos), (uint64_t)rec.code, (uint64_t)rec.length, why,
                 (uint64_t)(size - pos), (uint64_t)(stream->origin + block->offset));
    else
      eventProblemAdd(stream, "offset %" PRIu64 ": %s (%" PRIu64 " bytes left in the block at offset %" PRIu64 ")",
                 (uint64_t)(stream->origin + start + pos), why, (uint64_t)(size - pos),
                 (uint64_t)(stream->origin + block->offset));
    sound = 0;
    break;
  }
  block->events = events;
  info->eventCount += events;
  info->firstClock = first;
  info->lastClock = last;
  return sound;
}

/* eventBlockEvents -- indexEvents for a block of any form: raw, compact,
 * zstd of either */
int eventBlockEvents(EventStreamStruct *stream, IndexStruct *index, BlockStruct *block, size_t end)
{
  size_t start = block->offset + stream->info.blockHeaderLength;
  const unsigned char *data = stream->base + start;
  size_t size = end - start;
  int sound = 1;
  if (block->zstd) {
    ++stream->info.zstdBlocks;
    data = eventBlockUnzstd(stream, block, data, size, &size);
    if (data == NULL) {
      block->dataEnd = start;
      return 0;
    }
    end = start + size;
  }
  if (block->compact) {
    end = eventBlockExpand(stream, block, data, size, &sound);
    ++stream->info.compactBlocks;
  }
  sound = indexEvents(stream, index, block, end) && sound;
  eventRawTrim(stream, block);
  return sound;
}

static int threadCompare(const void *a, const void *b)
{
  const ThreadStruct *ta = a, *tb = b;
  return ta->thread < tb->thread ? -1 : ta->thread > tb->thread;
}

/* indexThreads -- the threads with events, and how many each has */
static int indexThreads(EventStreamStruct *stream)
{
  size_t i, n = 0;
  if (stream->blockCount == 0)
    return 1;
  stream->threads = malloc(stream->blockCount * sizeof *stream->threads);
  if (stream->threads == NULL)
    return 0;
  for (i = 0; i < stream->blockCount; ++i)
    if (stream->blocks[i].events > 0) {
      stream->threads[n].thread = stream->blocks[i].thread;
      stream->threads[n].events = stream->blocks[i].events;
      ++n;
    }
  qsort(stream->threads, n, sizeof *stream->threads, threadCompare);
  stream->threadCount = 0;
  for (i = 0; i < n; ++i) {
    if (stream->threadCount > 0
        && stream->threads[stream->threadCount - 1].thread == stream->threads[i].thread)
      stream->threads[stream->threadCount - 1].events += stream->threads[i].events;
    else
      stream->threads[stream->threadCount++] = stream->threads[i];
  }
  return 1;
}

/* eventBlockRead -- read the header of the block at pos into *block.
 * Returns 1 if it is sound; else 0, with what is wrong in what.  A
 * block running past the end of the stream is also marked cut.
 * design/stream.txt .stream.check */
int eventBlockRead(EventStreamStruct *stream, size_t pos, BlockStruct *block, char *what,
                   size_t whatSize)
{
  const EventStreamInfoStruct *info = &stream->info;
  const unsigned char *p = stream->base + pos;
  size_t left = stream->size - pos;
  unsigned headerLength = info->blockHeaderLength;
  EventBlockHeaderStruct h;
  int kind;

  memset(block, 0, sizeof *block);
  block->offset = pos;
  if (left < headerLength) {
    eventFormatMessage(what, whatSize, "block header cut short: %" PRIu64 " bytes left, a block header is %" PRIu64 "",
                  (uint64_t)left, (uint64_t)headerLength);
    return 0;
  }
  if (memcmp(p, EVENT_BLOCK_MAGIC, 4) != 0) {
    char found[5], q[24];
    memcpy(found, p, 4);
    found[4] = '\0';
    eventFormatMessage(what, whatSize, "bad block magic %s (expected \"%s\")", eventQuote(q, sizeof q, found),
                  EVENT_BLOCK_MAGIC);
    return 0;
  }
  EventBlockDecode(&h, p, info->major, info->layout.bigEndian);
  kind = h.kind == EVENT_BLOCK_KIND_REGISTRY && info->major >= 3
         && info->minor >= EVENT_VERSION_REGISTRIES ? 0 : eventKindOf(stream, h.kind, &block->reg);
  block->thread = h.thread;
  block->kind = kind >= 0 ? (unsigned)kind : 0;
  block->registry = h.kind == EVENT_BLOCK_KIND_REGISTRY && kind == 0;
  block->level = h.flags & EVENT_BLOCK_LEVEL_MASK;
  block->seq = h.seq;
  block->index = h.index;
  block->length = h.length;
  block->cut = h.length > left;
  block->compact = (h.flags & EVENT_BLOCK_COMPACT) != 0;
  block->zstd = (h.flags & EVENT_BLOCK_ZSTD) != 0;
  if (h.length < headerLength)
    eventFormatMessage(what, whatSize, "block length %" PRIu64 " is less than the %" PRIu64 "-byte block header",
                  (uint64_t)h.length, (uint64_t)headerLength);
  else if (h.length > EVENT_BLOCK_LENGTH_MAX)
    eventFormatMessage(what, whatSize, "block length %" PRIu64 " is more than any block's (%" PRIu64 ")",
                  (uint64_t)h.length, (uint64_t)EVENT_BLOCK_LENGTH_MAX);
  else if (kind < 0)
    eventFormatMessage(what, whatSize, "block kind %" PRIu64 " (registry %" PRIu64 ", kind %" PRIu64
                       ") is in no registry of the stream", (uint64_t)h.kind,
                       (uint64_t)(h.kind >> EVENT_BLOCK_REGISTRY_SHIFT),
                       (uint64_t)(h.kind & ((1u << EVENT_BLOCK_REGISTRY_SHIFT) - 1)));
  else if (info->major >= 2 && h.session != info->session)
    eventFormatMessage(what, whatSize, "block of another session: id 0x%04" PRIx64 ", the stream's is 0x%04" PRIx64 "",
                  (uint64_t)h.session, (uint64_t)info->session);
  else if (block->cut)
    eventFormatMessage(what, whatSize, "block cut short: its length is %" PRIu64 ", the stream has %" PRIu64 " of its bytes",
                  (uint64_t)h.length, (uint64_t)left);
  else if (info->major >= 2 && (h.flags & EVENT_BLOCK_CHECKED) == 0)
    eventFormatMessage(what, whatSize, "block has no check");
  else if (info->major < 3 && block->compact)  /* .compact.version */
    eventFormatMessage(what, whatSize, "block is marked compact in a stream of version %" PRIu64 ", which has none",
                  (uint64_t)info->major);
  else if (info->major < EVENT_VERSION_ZSTD_MAJOR && block->zstd)  /* .zstd.version */
    eventFormatMessage(what, whatSize, "block is marked zstd in a stream of version %" PRIu64 ", which has none",
                  (uint64_t)info->major);
  else if (info->major >= 2 && EventBlockCheck(p, h.length) != h.check
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
           && !block->compact && !block->zstd   /* so that mutated data reach the decoders (.test.fuzz) */
#endif
          )
    eventFormatMessage(what, whatSize, "block damaged (thread %" PRIu64 ", kind %" PRIu64 ", %" PRIu64 " bytes): its check is 0x%04" PRIx64 ", "
                  "its bytes give 0x%04" PRIx64 ", so none of its events are shown", (uint64_t)h.thread,
                  (uint64_t)h.kind, (uint64_t)h.length, (uint64_t)h.check,
                  (uint64_t)EventBlockCheck(p, h.length));
  else
    return 1;
  block->cut = block->cut && h.length >= headerLength && h.length <= EVENT_BLOCK_LENGTH_MAX
               && kind >= 0
               && (info->major < 2 || h.session == info->session)
               && (info->major >= 3 || !block->compact)
               && (info->major >= EVENT_VERSION_ZSTD_MAJOR || !block->zstd);
  return 0;
}

/* blockFault -- report a bad block at pos; with resync, skip to the
 * next block magic and return where it is, else return 0 (stop). */
static size_t blockFault(EventStreamStruct *stream, size_t pos, const char *what)
{
  EventStreamInfoStruct *info = &stream->info;
  size_t next, size = stream->size;
  ++info->badBlocks;
  if ((stream->options & EVENT_STREAM_RESYNC) == 0) {
    eventProblemAdd(stream, "offset %" PRIu64 ": %s", (uint64_t)(stream->origin + pos), what);
    return 0;
  }
  next = eventFindBlockMagic(stream, pos + 1);
  info->skippedBytes += next - pos;
  if (next < size)
    eventProblemAdd(stream, "offset %" PRIu64 ": %s; skipped %" PRIu64 " bytes to the next block at offset %" PRIu64 "",
               (uint64_t)(stream->origin + pos), what, (uint64_t)(next - pos),
               (uint64_t)(stream->origin + next));
  else
    eventProblemAdd(stream, "offset %" PRIu64 ": %s; skipped the last %" PRIu64 " bytes of the file",
               (uint64_t)(stream->origin + pos), what, (uint64_t)(next - pos));
  return next;
}

/* blockCut -- the sound events of a block cut short by the end of the
 * stream (a full disk, a program killed in write()): shown, unchecked,
 * and the rest said lost.  The walk ends here. */
static void blockCut(EventStreamStruct *stream, IndexStruct *index, BlockStruct *block,
                     const char *what)
{
  EventStreamInfoStruct *info = &stream->info;
  ++info->badBlocks;
  (void)eventBlockEvents(stream, index, block, stream->size);
  eventProblemAdd(stream, "offset %" PRIu64 ": %s: the %" PRIu64 " whole events before the cut are shown, unchecked; the rest of the block is lost",
             (uint64_t)(stream->origin + block->offset), what, (uint64_t)block->events);
  if (block->dataEnd > block->offset + info->blockHeaderLength && !eventBlockAdd(stream, block))
    stream->outOfMemory = 1;
}

/* eventBlockFetch -- for a scan: the block header at *pos, then the whole
 * block, into the window (eventFill).  Otherwise nothing. */
void eventBlockFetch(EventStreamStruct *stream, size_t *pos)
{
  const EventStreamInfoStruct *info = &stream->info;
  unsigned headerLength = info->blockHeaderLength;
  eventFill(stream, pos, headerLength);
  if (stream->size - *pos >= headerLength
      && memcmp(stream->base + *pos, EVENT_BLOCK_MAGIC, 4) == 0) {
    uint64_t length = EventLoad(stream->base + *pos + 4, 4, info->layout.bigEndian);
    if (length <= EVENT_BLOCK_LENGTH_MAX)
      eventFill(stream, pos, (size_t)length);
  }
}

/* indexEnd -- what the walk leaves to be worked out: the check of the
 * block indexes (if the walk read to the end), the threads, and the
 * clock frequency; a scan's window goes. */
static void indexEnd(EventStreamStruct *stream, const IndexStruct *index, int complete)
{
  EventStreamInfoStruct *info = &stream->info;
  if (complete)
    eventIndexCheck(stream);
  eventHolesCheck(stream);
  if (stream->read != NULL) {   /* the scan is over: its window goes */
    /* A walk stopped at damage still says the stream's size, as the
     * mapped reader does, not where its window was.  design/tools.txt
     * .eventcnv.scan.split */
    while (!stream->eof) {
      size_t end = stream->size;
      eventFill(stream, &end, stream->windowCapacity);
      stream->origin += stream->size;
      stream->size = 0;
    }
    info->streamSize = stream->origin + stream->size;
    free(stream->window);
    stream->window = NULL;
    stream->base = NULL;
    stream->size = 0;
    stream->merging = 1;        /* and it has no events to merge */
  } else
    info->streamSize = stream->size;
  if (info->eventCount == 0)
    info->firstClock = 0;
  if (!indexThreads(stream))
    stream->outOfMemory = 1;

  /* The clock frequency: the header's, or from the header's start pair
   * and the ClockRate (one a stream, written a second after the start or
   * at the end), else the last ClockSync by clock (a log before 3.0.10,
   * or one whose program was killed before its ClockRate), so that the
   * result does not depend on the order of blocks; by the rule the
   * traceback uses too.  design/runtime.txt .sol.clock .sol.clock.rate */
  info->clockHz = info->headerHz;
  if (info->clockRated)
    info->clockHz = EventClockRate(info->headerHz, info->startClock, info->startMonotonic,
                                   index->rate.clock, index->rate.monotonic);
  else if (info->clockSyncCount >= 1)
    info->clockHz = EventClockRate(info->headerHz, info->startClock, info->startMonotonic,
                                   index->last.clock, index->last.monotonic);
  info->lastSyncClock = index->last.clock;
  info->lastSyncMonotonic = index->last.monotonic;
  info->rateSyncClock = info->clockRated ? index->rate.clock : index->last.clock;
  if (info->clockHz == info->headerHz)
    info->rateSyncClock = 0;
}

/* eventIndexBlocks -- walk the blocks in file order.  Each is checked
 * (eventBlockRead), then its events (indexEvents).  At damage the walk stops,
 * or with resync goes on at the next block.  design/tools.txt
 * .eventcnv.reader, design/stream.txt .stream.check */
void eventIndexBlocks(EventStreamStruct *stream)
{
  EventStreamInfoStruct *info = &stream->info;
  size_t pos = info->headerLength;
  unsigned headerLength = info->blockHeaderLength;
  int resync = (stream->options & EVENT_STREAM_RESYNC) != 0;
  IndexStruct index;
  int complete = 1;

  memset(&index, 0, sizeof index);
  info->firstClock = UINT64_MAX;
  info->lastClock = 0;
  if (stream->split != NULL)
    eventScanStart(stream);
  for (;;) {
    BlockStruct block;
    char what[200];
    size_t hole;

    if (stream->split != NULL && stream->origin + pos >= stream->splitNext)
      eventScanTake(stream, &index, &pos);   /* design/tools.txt .eventcnv.scan.split */
    eventBlockFetch(stream, &pos);
    if (pos >= stream->size)
      break;
    if (!eventBlockRead(stream, pos, &block, what, sizeof what)) {
      if (block.cut) {          /* the end: its events, if not read already */
        if (eventIndexNote(stream, &block))
          blockCut(stream, &index, &block, what);
        else
          ++info->badBlocks;
        complete = 0;
        break;
      }
      hole = eventHoleFind(stream, &pos, &block);
      if (hole > 0) {
        eventHoleAdd(stream, &block);
        pos += hole;
        continue;
      }
      pos = blockFault(stream, pos, what);
      if (pos == 0) {
        complete = 0;
        info->stopped = 1;
        break;
      }
      continue;
    }
    if (!eventIndexNote(stream, &block)) {
      pos += block.length;
      continue;
    }
    ++info->blockCount;
    if (block.registry) {       /* .stream.block.registry */
      char msg[400];
      if (stream->split != NULL)
        eventScanStop(stream);  /* they read by the registry it changes */
      if (!eventRegistryBlock(stream, pos + headerLength, pos + block.length, msg, sizeof msg)
          || !eventCodesInit(stream)) {
        eventProblemAdd(stream, "offset %" PRIu64 ": registry block: %s",
                        (uint64_t)(stream->origin + pos), msg);
        ++info->badBlocks;
      }
      pos += block.length;
      continue;
    }
    if (!eventBlockEvents(stream, &index, &block, pos + block.length)) {
      ++info->badBlocks;
      if (!resync) {
        if (block.dataEnd > pos + headerLength && !eventBlockAdd(stream, &block))
          stream->outOfMemory = 1;
        complete = 0;
        info->stopped = pos + block.length < stream->size || stream->read != NULL;
        break;
      }
      info->skippedBytes += block.compact || block.zstd ? 0 : pos + block.length - block.dataEnd;
    }
    if (block.index == EVENT_BLOCK_INDEX_NONE) {
      ++info->unindexedBlocks;
      info->unindexedEvents += block.events;
    }
    if (block.dataEnd > pos + headerLength && !eventBlockAdd(stream, &block)) {
      stream->outOfMemory = 1;
      break;
    }
    pos += block.length;
  }
  if (stream->split != NULL)
    eventScanStop(stream);
  indexEnd(stream, &index, complete);
}
