/* <src/read/eventindex.c> -- the stream layer: the block index
 *
 * .design: design/telemetry.txt .stream.block .stream.check .eventcnv.reader
 *
 * eventIndexBlocks walks a stream's blocks in file order, reading a
 * scan's window on as it goes (eventFill), checks each block and every
 * event in it, and notes what the merge and the reader need.
 */

#include "eventstreamint.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* Indexing the blocks.  design/telemetry.txt .stream.block
 *
 * eventIndexBlocks walks the blocks in file order and every event in them,
 * so that faults are found before any event is returned, and gathers
 * what must be known before events are shown in time order: the
 * ClockSync events, StreamEnd, the unknown codes.
 */

typedef struct SyncStruct {
  EventClock clock;
  uint64_t monotonic;
} SyncStruct;

typedef struct IndexStruct {
  SyncStruct first, last;       /* ClockSyncs with the lowest and highest clock */
} IndexStruct;

#define EVENT_SEQ_NONE UINT64_MAX /* a hole's block whose header is zeros too */

/* findBlockMagic -- the offset of the next "TTBK" at or after from, or size */
static size_t findBlockMagic(const EventStreamStruct *stream, size_t from)
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
 * is where the same byte is after.  design/telemetry.txt .eventcnv.scan */
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
     * own size.  design/telemetry.txt .eventcnv.scan */
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

/* addBlock -- note a block, at its stream offset */
static int addBlock(EventStreamStruct *stream, const BlockStruct *block)
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

/* fieldSize -- the size of a field of this letter in this layout, or 0
 * if it has none of its own (S: its length varies) */
static unsigned fieldSize(char letter, const EventLayoutStruct *layout)
{
  const EventTypeStruct *type = EventTypeOf(letter);
  if (type == NULL)
    return 0;                   /* a letter parseRegistry refused */
  return EventTypeSize(type, layout->pointerSize, layout->wordSize);
}

/* fixedLength -- the length of every event of desc in this layout, or
 * 0 if it has a string (its length varies) */
static unsigned fixedLength(const EventDescStruct *desc, const EventLayoutStruct *layout)
{
  unsigned length = EVENT_HEADER_LEN, i;
  for (i = 0; desc->format[i] != '\0'; ++i) {
    unsigned size = fieldSize(desc->format[i], layout);
    if (size == 0)
      return 0;
    length += size;
  }
  return length;
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
      unsigned char head[4];
      c->event = (uint16_t)(m + 1);
      c->length = code < EVENT_CODE_RESERVED_LIMIT ? 0 : (uint16_t)fixedLength(desc, &stream->info.layout);
      c->head = code == 0 ? 0xFFFFFFFFu : 0;
      if (c->length != 0) {
        unsigned char *plan = stream->plans + (size_t)m * EVENT_PARAM_MAX;
        for (unsigned f = 0; f < EVENT_PARAM_MAX && desc->format[f] != '\0'; ++f)
          plan[f] = (unsigned char)fieldSize(desc->format[f], &stream->info.layout);
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
 * design/telemetry.txt .eventcnv.reader.run */
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
 * StreamExec, the ClockSyncs with the lowest and highest clock, the drops, threads
 * started and ended.  design/telemetry.txt .stream.own */
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
  } else if (rec->code == EVENT_CODE_CLOCK_SYNC && eventIsFormat(rec->desc, "WW")) {
    SyncStruct sync;
    sync.clock = rec->clock;
    sync.monotonic = rec->values[0].u;
    if (info->clockSyncCount == 0 || sync.clock < index->first.clock)
      index->first = sync;
    if (info->clockSyncCount == 0 || sync.clock > index->last.clock)
      index->last = sync;
    ++info->clockSyncCount;
  } else if (rec->code == EVENT_CODE_EVENTS_DROPPED && rec->desc->paramCount == 2
             && rec->values[0].u <= 0xFFFF
             && eventKindOf(stream, (unsigned)rec->values[0].u, &reg) >= 0) {
    /* its kind as blocks carry it: design/telemetry.txt .sol.dropped, .reg.many */
    info->dropped[eventKindOf(stream, (unsigned)rec->values[0].u, &reg)] += rec->values[1].u;
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
 * design/telemetry.txt .eventcnv.reader */
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
    if (res == EventDecodeUNKNOWN) {    /* design/telemetry.txt .stream.unknown */
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

/* EVENT_EXPAND_HELD_MAX -- the expanded events a mapped stream holds at
 * most: 256 MiB, or 256 times the stream's bytes if that is more.
 * design/telemetry.txt .zstd.held */
#define EVENT_EXPAND_HELD_MAX(size) \
  ((size) > ((size_t)1 << 20) ? (size) * 256 : ((size_t)256 << 20))

/* rawBuffer -- a buffer of size bytes for a block's events, expanded:
 * its own, kept until the stream is closed, or a scan's one buffer,
 * reused.  NULL if out of memory (said), or if it would take what the
 * stream holds past EVENT_EXPAND_HELD_MAX (said once, as the block's
 * fault). */
static unsigned char *rawBuffer(EventStreamStruct *stream, const BlockStruct *block, size_t size)
{
  unsigned char *raw;
  if (stream->read != NULL) {           /* a scan: one buffer, reused */
    if (size > stream->scanRawSize) {
      free(stream->scanRaw);
      stream->scanRawSize = 0;
      if ((stream->scanRaw = malloc(size)) == NULL) {
        stream->outOfMemory = 1;
        return NULL;
      }
      stream->scanRawSize = size;
    }
    return stream->scanRaw;
  }
  if (size > EVENT_EXPAND_HELD_MAX(stream->size) - stream->rawHeld
      || stream->rawHeld > EVENT_EXPAND_HELD_MAX(stream->size)) {
    if (!stream->expandCapped)
      eventProblemAdd(stream, "offset %" PRIu64 ": expanding this block (thread %" PRIu64 ", kind %" PRIu64 ") would take the events held past %" PRIu64 " MiB, the most a reader holds of a log this size (256 MiB, or 256 times its bytes): none of its events are shown, nor those of later blocks that would",
                      (uint64_t)(stream->origin + block->offset), (uint64_t)block->thread,
                      (uint64_t)block->kind, (uint64_t)(EVENT_EXPAND_HELD_MAX(stream->size) >> 20));
    stream->expandCapped = 1;
    return NULL;
  }
  if (stream->rawCount == stream->rawCapacity) {
    size_t capacity = stream->rawCapacity == 0 ? 64 : 2 * stream->rawCapacity;
    unsigned char **bigger = realloc(stream->raws, capacity * sizeof *bigger);
    if (bigger == NULL) {
      stream->outOfMemory = 1;
      return NULL;
    }
    stream->raws = bigger;
    stream->rawCapacity = capacity;
  }
  if ((raw = malloc(size > 0 ? size : 1)) == NULL) {
    stream->outOfMemory = 1;
    return NULL;
  }
  stream->raws[stream->rawCount++] = raw;
  stream->rawHeld += size;
  stream->rawLastSize = size;
  return raw;
}

/* rawTrim -- a block's own expanded buffer cut to the events indexed:
 * a damaged block's expansion (a zstd bomb's 64 MiB of nothing) is not
 * held while the rest is read.  design/telemetry.txt .zstd.held */
static void rawTrim(EventStreamStruct *stream, BlockStruct *block)
{
  size_t allocated = stream->rawLastSize;
  size_t start = block->offset + stream->info.blockHeaderLength;
  size_t used = block->dataEnd > start ? block->dataEnd - start : 0;
  unsigned char *smaller;
  if (stream->read != NULL || block->raw == NULL || stream->rawCount == 0
      || stream->raws[stream->rawCount - 1] != block->raw || used >= allocated)
    return;
  smaller = realloc(stream->raws[stream->rawCount - 1], used > 0 ? used : 1);
  if (smaller == NULL)
    return;
  block->raw = stream->raws[stream->rawCount - 1] = smaller;
  stream->rawHeld -= allocated - used;
}

/* blockExpand -- a compact block's events, in[0 .. inSize) (in the
 * stream, or a zstd block's output), expanded into a buffer of their
 * own (rawBuffer) at block->raw.  Returns the end of its expanded
 * events in the block's positions, for indexEvents.  If its data are
 * not sound (cut short is for the caller to say), reports it and sets
 * *sound to 0: the events before the fault are still expanded.
 * design/telemetry.txt .compact.reader */
static size_t blockExpand(EventStreamStruct *stream, BlockStruct *block, const unsigned char *in,
                          size_t inSize, int *sound)
{
  size_t start = block->offset + stream->info.blockHeaderLength, rawSize, limit, outSize = 0;
  unsigned char *raw;
  const char *why = NULL;

  if (stream->pack == NULL && (stream->pack = malloc(sizeof *stream->pack)) == NULL) {
    stream->outOfMemory = 1;
    *sound = 0;
    return start;
  }
  if (!EventPackRawSize(in, inSize, &rawSize)) {
    why = "its raw size is unreadable or more than a block's";
    limit = 0;
  } else if (rawSize / EVENT_PACK_RATIO_MAX > inSize) {
    /* No sound block expands so much: refused before it is allocated,
     * unless it is cut short (then what its bytes can hold). */
    if (!block->cut)
      why = "its raw size is more than its bytes could expand to";
    limit = block->cut ? inSize * EVENT_PACK_RATIO_MAX : 0;
  } else {
    limit = rawSize;
  }
  if ((raw = rawBuffer(stream, block, limit)) == NULL) {
    *sound = 0;
    return start;
  }
  block->raw = raw;
  if (why == NULL && !EventPackDecode(stream->pack, in, inSize, stream->info.layout.bigEndian,
                                      raw, limit, &outSize, &why) && block->cut)
    why = NULL;                         /* cut short: blockCut says so */
  if (why != NULL && !block->cut) {
    eventProblemAdd(stream, "offset %" PRIu64 ": %s (thread %" PRIu64 ", kind %" PRIu64 "): the events before the fault are shown",
               (uint64_t)(stream->origin + block->offset), why, (uint64_t)block->thread,
               (uint64_t)block->kind);
    *sound = 0;
  }
  return start + outSize;
}

/* blockUnzstd -- a zstd block's data, in[0 .. inSize), decompressed:
 * into a buffer of the block's own (rawBuffer, at block->raw) if they
 * are raw events, else into the stream's one buffer for blockExpand.
 * The frame must say its size, at most a block's and at most
 * EVENT_ZSTD_RATIO_MAX times its bytes, which is checked before
 * anything is allocated.  Returns the output, with *sizeReturn its
 * length; NULL, having said why unless the block is cut short (no
 * event of a frame cut short is shown), if it is not sound.
 * design/telemetry.txt .zstd.reader */
/* EventZstdFrameCheck -- eventread.h: the one rule for what a zstd
 * block's frame may expand to (.zstd.reader) */
const char *EventZstdFrameCheck(const unsigned char *in, size_t inSize, size_t *sizeReturn)
{
  unsigned long long size = ZSTD_getFrameContentSize(in, inSize);
  if (size == ZSTD_CONTENTSIZE_ERROR)
    return "its data are not a zstd frame";
  if (size == ZSTD_CONTENTSIZE_UNKNOWN)
    return "its zstd frame does not say its size";
  if (size > EVENT_BLOCK_LENGTH_MAX || size / EVENT_ZSTD_RATIO_MAX > inSize)
    return "its zstd frame's size is more than its bytes could expand to";
  *sizeReturn = (size_t)size;
  return NULL;
}

static const unsigned char *blockUnzstd(EventStreamStruct *stream, BlockStruct *block,
                                        const unsigned char *in, size_t inSize, size_t *sizeReturn)
{
  size_t size = 0;
  const char *why = EventZstdFrameCheck(in, inSize, &size);
  unsigned char *out = NULL;
  size_t got = 0;
  if (why != NULL)
    ;
  else if (stream->zstd == NULL && (stream->zstd = ZSTD_createDCtx()) == NULL)
    why = "out of memory";
  else if (!block->compact)
    block->raw = out = rawBuffer(stream, block, (size_t)size);
  else {
    if (size > stream->unzstdSize || stream->unzstd == NULL) {
      free(stream->unzstd);
      stream->unzstdSize = (size_t)size;
      stream->unzstd = malloc(size > 0 ? (size_t)size : 1);
    }
    out = stream->unzstd;
  }
  if (why == NULL && out == NULL && stream->expandCapped) {
    block->raw = NULL;
    return NULL;                /* said by rawBuffer */
  }
  if (why == NULL && out == NULL) {
    stream->outOfMemory = 1;
    why = "out of memory";
  }
  if (why == NULL) {
    got = ZSTD_decompressDCtx(stream->zstd, out, (size_t)size, in, inSize);
    if (ZSTD_isError(got))
      why = ZSTD_getErrorName(got);
    else if (got != size)
      why = "its zstd frame is shorter than it says";
  }
  if (why == NULL) {
    *sizeReturn = got;
    return out;
  }
  if (!block->cut)
    eventProblemAdd(stream, "offset %" PRIu64 ": zstd block (thread %" PRIu64 ", kind %" PRIu64 "): %s, so none of its events are shown",
                    (uint64_t)(stream->origin + block->offset), (uint64_t)block->thread,
                    (uint64_t)block->kind, why);
  block->raw = NULL;
  return NULL;
}

/* blockEvents -- indexEvents for a block of any form: raw, compact,
 * zstd of either */
static int blockEvents(EventStreamStruct *stream, IndexStruct *index, BlockStruct *block, size_t end)
{
  size_t start = block->offset + stream->info.blockHeaderLength;
  const unsigned char *data = stream->base + start;
  size_t size = end - start;
  int sound = 1;
  if (block->zstd) {
    ++stream->info.zstdBlocks;
    data = blockUnzstd(stream, block, data, size, &size);
    if (data == NULL) {
      block->dataEnd = start;
      return 0;
    }
    end = start + size;
  }
  if (block->compact) {
    end = blockExpand(stream, block, data, size, &sound);
    ++stream->info.compactBlocks;
  }
  sound = indexEvents(stream, index, block, end) && sound;
  rawTrim(stream, block);
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

/* blockRead -- read the header of the block at pos into *block.
 * Returns 1 if it is sound; else 0, with what is wrong in what.  A
 * block running past the end of the stream is also marked cut.
 * design/telemetry.txt .stream.check */
static int blockRead(EventStreamStruct *stream, size_t pos, BlockStruct *block, char *what,
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

/* indexNote -- note a block's index and offset, for indexCheck.
 * Returns 0, having said so, if a block with this index was read
 * already: the log holds it twice (spliced, or a write repeated), and
 * its events are not read again.  design/telemetry.txt .stream.check */
static int indexNote(EventStreamStruct *stream, const BlockStruct *block)
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

/* indexCheck -- every block the log was written with is there, in the
 * order written: the indexes read rise in file order from 0 to the
 * highest.  Only where the walk read to the end: a walk stopped at
 * damage reports that.  design/telemetry.txt .stream.check */
static void indexCheck(EventStreamStruct *stream)
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
    if (e[i].index > expect && i > 0 && holeEndsAt(stream, e[i].offset))
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
  next = findBlockMagic(stream, pos + 1);
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

/* holeFind -- is the block at pos, which failed its check or has no
 * magic, one the program had its place for but died before writing
 * whole (.sol.writer.at)?  Its header is written first, under the lock,
 * then header and data in one write, which death cuts short at a page
 * boundary of the file: so its data are zeros from their start or from
 * a page boundary on.  Or, if death came before even the header, zeros
 * up to the next block.  Returns its length, 0 if it is not one; *block
 * (a failed blockRead's) then has its thread, kind and seq, or a seq of
 * EVENT_SEQ_NONE if the header is zeros too.  Moves the window of a
 * scan, and *pos with it. */

static size_t holeFind(EventStreamStruct *stream, size_t *pos, BlockStruct *block)
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
  end = findBlockMagic(stream, start + 1);
  if (end >= stream->size)
    return 0;                   /* at the end: a block cut short (blockCut) */
  for (size_t i = start; i < end; ++i)
    if (stream->base[i] != 0)
      return 0;
  block->seq = EVENT_SEQ_NONE;
  block->length = (uint32_t)(end - start);
  return end - start;
}

/* holeAdd -- a hole the walk found, kept for holesCheck */
static void holeAdd(EventStreamStruct *stream, const BlockStruct *block)
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

/* holesCheck -- each hole is a live block (only those are written after
 * the lock), so a log recovered from its live file has its events: a
 * recovered block of its thread, kind, level and seq.  A hole without
 * one is events lost, and said.  .sol.writer.at */
static int holeSeqCompare(const void *a, const void *b)
{
  const HoleStruct *x = a, *y = b;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void holesCheck(EventStreamStruct *stream)
{
  EventStreamInfoStruct *info = &stream->info;
  size_t lost = 0, n = stream->holes != NULL ? info->holes : 0;
  uint64_t first = UINT64_MAX;
  if (info->holes == 0)
    return;
  /* by seq, so that each recovered block finds its holes at once (a
   * damaged log may have many); indexCheck is done with file order */
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

/* blockCut -- the sound events of a block cut short by the end of the
 * stream (a full disk, a program killed in write()): shown, unchecked,
 * and the rest said lost.  The walk ends here. */
static void blockCut(EventStreamStruct *stream, IndexStruct *index, BlockStruct *block,
                     const char *what)
{
  EventStreamInfoStruct *info = &stream->info;
  ++info->badBlocks;
  (void)blockEvents(stream, index, block, stream->size);
  eventProblemAdd(stream, "offset %" PRIu64 ": %s: the %" PRIu64 " whole events before the cut are shown, unchecked; the rest of the block is lost",
             (uint64_t)(stream->origin + block->offset), what, (uint64_t)block->events);
  if (block->dataEnd > block->offset + info->blockHeaderLength && !addBlock(stream, block))
    stream->outOfMemory = 1;
}

/* blockFetch -- for a scan: the block header at *pos, then the whole
 * block, into the window (eventFill).  Otherwise nothing. */
static void blockFetch(EventStreamStruct *stream, size_t *pos)
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
    indexCheck(stream);
  holesCheck(stream);
  info->streamSize = stream->origin + stream->size;
  if (stream->read != NULL) {   /* the scan is over: its window goes */
    free(stream->window);
    stream->window = NULL;
    stream->base = NULL;
    stream->size = 0;
    stream->merging = 1;        /* and it has no events to merge */
  }
  if (info->eventCount == 0)
    info->firstClock = 0;
  if (!indexThreads(stream))
    stream->outOfMemory = 1;

  /* The clock frequency: the header's, or from the header's start pair
   * and the last ClockSync by clock (so the result does not depend on
   * the order of blocks), by the rule the traceback uses too.
   * design/telemetry.txt .sol.clock */
  info->clockHz = info->headerHz;
  if (info->clockSyncCount >= 1)
    info->clockHz = EventClockRate(info->headerHz, info->startClock, info->startMonotonic,
                                   index->last.clock, index->last.monotonic);
}

/* eventIndexBlocks -- walk the blocks in file order.  Each is checked
 * (blockRead), then its events (indexEvents).  At damage the walk stops,
 * or with resync goes on at the next block.  design/telemetry.txt
 * .eventcnv.reader, .stream.check */
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
  for (;;) {
    BlockStruct block;
    char what[200];
    size_t hole;

    blockFetch(stream, &pos);
    if (pos >= stream->size)
      break;
    if (!blockRead(stream, pos, &block, what, sizeof what)) {
      if (block.cut) {          /* the end: its events, if not read already */
        if (indexNote(stream, &block))
          blockCut(stream, &index, &block, what);
        else
          ++info->badBlocks;
        complete = 0;
        break;
      }
      hole = holeFind(stream, &pos, &block);
      if (hole > 0) {
        holeAdd(stream, &block);
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
    if (!indexNote(stream, &block)) {
      pos += block.length;
      continue;
    }
    ++info->blockCount;
    if (block.registry) {       /* .stream.block.registry */
      char msg[400];
      if (!eventRegistryBlock(stream, pos + headerLength, pos + block.length, msg, sizeof msg)
          || !eventCodesInit(stream)) {
        eventProblemAdd(stream, "offset %" PRIu64 ": registry block: %s",
                        (uint64_t)(stream->origin + pos), msg);
        ++info->badBlocks;
      }
      pos += block.length;
      continue;
    }
    if (!blockEvents(stream, &index, &block, pos + block.length)) {
      ++info->badBlocks;
      if (!resync) {
        if (block.dataEnd > pos + headerLength && !addBlock(stream, &block))
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
    if (block.dataEnd > pos + headerLength && !addBlock(stream, &block)) {
      stream->outOfMemory = 1;
      break;
    }
    pos += block.length;
  }
  indexEnd(stream, &index, complete);
}
