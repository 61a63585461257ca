/* <src/read/eventstream.c> -- the stream layer: open, scan, merge, and what a reader asks
 *
 * .design: design/stream.txt .stream design/tools.txt .eventcnv.reader
 *
 * See eventread.h for the interface, and eventstreamint.h for how the
 * stream layer is split: the header is read by eventheader.c and the
 * blocks indexed by eventindex.c; this file opens and closes a stream,
 * merges its sequences in time order, answers for labels, counts and
 * problems, and keeps the tables and messages the others use.  For the
 * tools only: it allocates with malloc, sorts with qsort and formats
 * messages with snprintf.  Every read of the input is checked against
 * the bytes left, and faults are reported as "offset N: what is wrong",
 * N counting bytes from the start of the stream.
 */

#include "eventstreamint.h"

#include <zstd.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Tables ------------------------------------------------------------ */

static size_t tableHash(uint64_t key, size_t capacity)
{
  key ^= key >> 33;
  key *= 0xFF51AFD7ED558CCDu;
  key ^= key >> 33;
  return (size_t)key & (capacity - 1);
}

TableEntryStruct *eventTableFind(const TableStruct *table, uint64_t key)
{
  size_t i;
  if (table->capacity == 0)
    return NULL;
  for (i = tableHash(key, table->capacity);; i = (i + 1) & (table->capacity - 1)) {
    TableEntryStruct *entry = &table->entries[i];
    if (!entry->used || entry->key == key)
      return entry;
  }
}

/* eventTableSet -- returns 0 on success, 1 if out of memory */
int eventTableSet(TableStruct *table, uint64_t key, uint64_t value)
{
  TableEntryStruct *entry;
  if ((table->count + 1) * 2 > table->capacity) {
    size_t newCapacity = table->capacity == 0 ? 64 : table->capacity * 2;
    TableStruct bigger;
    size_t i;
    bigger.entries = calloc(newCapacity, sizeof *bigger.entries);
    if (bigger.entries == NULL)
      return 1;
    bigger.capacity = newCapacity;
    bigger.count = table->count;
    for (i = 0; i < table->capacity; ++i)
      if (table->entries[i].used)
        *eventTableFind(&bigger, table->entries[i].key) = table->entries[i];
    free(table->entries);
    *table = bigger;
  }
  entry = eventTableFind(table, key);
  if (!entry->used) {
    entry->used = 1;
    entry->key = key;
    ++table->count;
  }
  entry->value = value;
  return 0;
}


/* Messages ---------------------------------------------------------- */

/* eventFormatMessage -- snprintf to buf, for a message */
void eventFormatMessage(char *buf, size_t size, const char *format, ...)
{
  va_list args;
  if (size == 0)
    return;
  va_start(args, format);
  (void)vsnprintf(buf, size, format, args);
  va_end(args);
}

/* eventQuote -- s quoted with C escapes, in buf, for a message */
const char *eventQuote(char *buf, size_t size, const char *s)
{
  size_t n = strlen(s);
  if (size < 3)
    return "";
  buf[0] = '"';
  n = EventEscape(buf + 1, size - 2, s, n);
  if (n > size - 3)
    n = size - 3;
  buf[n + 1] = '"';
  buf[n + 2] = '\0';
  return buf;
}

/* eventProblemAdd -- record a fault of the stream */
void eventProblemAdd(EventStreamStruct *stream, const char *format, ...)
{
  va_list args;
  char *text;
  int n;

  va_start(args, format);
  n = vsnprintf(NULL, 0, format, args);
  va_end(args);
  text = n < 0 ? NULL : malloc((size_t)n + 1);
  if (text == NULL) {
    stream->outOfMemory = 1;
    return;
  }
  va_start(args, format);
  (void)vsnprintf(text, (size_t)n + 1, format, args);
  va_end(args);

  if (stream->problemCount == stream->problemCapacity) {
    size_t newCapacity = stream->problemCapacity == 0 ? 4 : stream->problemCapacity * 2;
    char **bigger = realloc(stream->problems, newCapacity * sizeof *bigger);
    if (bigger == NULL) {
      free(text);
      stream->outOfMemory = 1;
      return;
    }
    stream->problems = bigger;
    stream->problemCapacity = newCapacity;
  }
  stream->problems[stream->problemCount++] = text;
}


/* Merging the sequences.  design/stream.txt .stream.order */

static int blockCompare(const void *a, const void *b)
{
  const BlockStruct *ba = a, *bb = b;
  if (ba->thread != bb->thread)
    return ba->thread < bb->thread ? -1 : 1;
  if (ba->kind != bb->kind)
    return ba->kind < bb->kind ? -1 : 1;
  if (ba->level != bb->level)
    return ba->level < bb->level ? -1 : 1;
  if (ba->seq != bb->seq)
    return ba->seq < bb->seq ? -1 : 1;
  return ba->offset < bb->offset ? -1 : ba->offset > bb->offset;
}

/* seqSeek -- move a cursor to the next known event at or after its
 * position, reading only its header.  Returns 0 if the sequence has no
 * more events.  indexEvents checked every event before dataEnd: each
 * has a code other than 0 and a length from 12 to what is left. */
/* eventBytes -- the event at pos in a block: in the stream, or in the
 * block's expansion if it is compact */
static const unsigned char *eventBytes(const EventStreamStruct *stream, const BlockStruct *block,
                                       size_t pos)
{
  if (block->raw != NULL)
    return block->raw + (pos - block->offset - stream->info.blockHeaderLength);
  return stream->base + pos;
}

static int seqSeek(EventStreamStruct *stream, SeqStruct *seq)
{
  while (seq->block < seq->blockLimit) {
    const BlockStruct *block = &stream->blocks[seq->block];
    if (seq->pos < block->dataEnd) {
      const unsigned char *p = eventBytes(stream, block, seq->pos);
      unsigned event = stream->regs[block->reg].codes[eventLoad16(p, stream->swap)].event;
      unsigned length = eventLoad16(p + 2, stream->swap);
      if (event != 0) {
        seq->clock = eventLoad64(p + 4, stream->swap);
        seq->desc = &stream->registry.events[event - 1];
        return 1;
      }
      if (length >= EVENT_HEADER_LEN) {   /* unknown: skip it */
        seq->pos += length;
        continue;
      }
      seq->pos = block->dataEnd;          /* cannot happen */
      continue;
    }
    ++seq->block;
    if (seq->block < seq->blockLimit)
      seq->pos = stream->blocks[seq->block].offset + stream->info.blockHeaderLength;
  }
  return 0;
}

/* seqBefore -- whether sequence a's event comes before b's: by clock,
 * then block sequence number, then offset, so the order is total. */
static int seqBefore(const EventStreamStruct *stream, size_t a, size_t b)
{
  const SeqStruct *sa = &stream->seqs[a], *sb = &stream->seqs[b];
  uint64_t seqA, seqB;
  if (sa->clock != sb->clock)
    return sa->clock < sb->clock;
  seqA = stream->blocks[sa->block].seq;
  seqB = stream->blocks[sb->block].seq;
  if (seqA != seqB)
    return seqA < seqB;
  return sa->pos < sb->pos;
}

static void heapDown(EventStreamStruct *stream, size_t i)
{
  size_t *heap = stream->heap, n = stream->heapCount;
  for (;;) {
    size_t left = 2 * i + 1, right = left + 1, least = i;
    size_t t;
    if (left < n && seqBefore(stream, heap[left], heap[least]))
      least = left;
    if (right < n && seqBefore(stream, heap[right], heap[least]))
      least = right;
    if (least == i)
      return;
    t = heap[i];
    heap[i] = heap[least];
    heap[least] = t;
    i = least;
  }
}

/* heapTop -- heapDown from the top, and the earliest clock of the
 * top's children noted: while the top sequence's next event is earlier,
 * it stays the top, with no look at the heap.  A sequence's events come
 * in runs before the next sequence's, so most events cost one compare. */
static void heapTop(EventStreamStruct *stream)
{
  EventClock runner = ~(EventClock)0;
  heapDown(stream, 0);
  for (size_t i = 1; i < 3 && i < stream->heapCount; ++i)
    if (stream->seqs[stream->heap[i]].clock < runner)
      runner = stream->seqs[stream->heap[i]].clock;
  stream->runnerClock = runner;
}

/* seqStarts -- whether block i starts a sequence: a (thread, kind,
 * signal level) of its own.  Blocks sorted by blockCompare. */
static int seqStarts(const EventStreamStruct *stream, size_t i)
{
  const BlockStruct *b = &stream->blocks[i];
  return i == 0 || b->thread != b[-1].thread || b->kind != b[-1].kind || b->level != b[-1].level;
}

/* mergeStart -- group the blocks into sequences and heap them */
static int mergeStart(EventStreamStruct *stream)
{
  size_t i, count = 0;
  stream->merging = 1;
  if (stream->blockCount == 0)
    return 1;
  qsort(stream->blocks, stream->blockCount, sizeof *stream->blocks, blockCompare);
  for (i = 0; i < stream->blockCount; ++i)
    if (seqStarts(stream, i))
      ++count;
  stream->seqs = calloc(count, sizeof *stream->seqs);
  stream->heap = calloc(count, sizeof *stream->heap);
  if (stream->seqs == NULL || stream->heap == NULL)
    return 0;
  for (i = 0; i < stream->blockCount; ++i) {
    SeqStruct *seq;
    if (seqStarts(stream, i)) {
      seq = &stream->seqs[stream->seqCount++];
      seq->block = i;
      seq->pos = stream->blocks[i].offset + stream->info.blockHeaderLength;
    }
    stream->seqs[stream->seqCount - 1].blockLimit = i + 1;
  }
  for (i = 0; i < stream->seqCount; ++i)
    if (seqSeek(stream, &stream->seqs[i]))
      stream->heap[stream->heapCount++] = i;
  for (i = stream->heapCount / 2; i > 1; --i)
    heapDown(stream, i - 1);
  heapTop(stream);
  return 1;
}


/* streamIndex -- read the header, then index the blocks.  On failure,
 * closes the stream. */
static EventStreamRes streamIndex(EventStreamStruct *stream, char *msg, size_t msgSize)
{
  EventStreamRes res = eventParseHeader(stream, msg, msgSize);
  if (res != EventStreamOK) {
    EventStreamClose(stream);
    return res;
  }
  if (!eventCodesInit(stream)) {
    eventFormatMessage(msg, msgSize, "offset %" PRIu64 ": out of memory", (uint64_t)stream->info.headerLength);
    EventStreamClose(stream);
    return EventStreamERROR;
  }
  eventIndexBlocks(stream);
  return EventStreamOK;
}

/* EventStreamOpen -- read the header, index the blocks */

EventStreamRes EventStreamOpen(EventStreamStruct **streamReturn,
                               const unsigned char *buf, size_t size,
                               unsigned options, char *msg, size_t msgSize)
{
  EventStreamStruct *stream;
  EventStreamRes res;

  *streamReturn = NULL;
  if (msgSize > 0)
    msg[0] = '\0';
  stream = calloc(1, sizeof *stream);
  if (stream == NULL) {
    eventFormatMessage(msg, msgSize, "offset 0: out of memory");
    return EventStreamERROR;
  }
  stream->base = buf;
  stream->size = buf != NULL ? size : 0;
  stream->options = options;
  stream->eof = 1;
  res = streamIndex(stream, msg, msgSize);
  if (res == EventStreamOK)
    *streamReturn = stream;
  return res;
}


/* EventStreamScan -- read the header and index the blocks, reading the
 * stream through a window that moves on, so that it is read once, in
 * file order, into memory that stays warm.  design/tools.txt
 * .eventcnv.scan .eventcnv.scan.copy */

EventStreamRes EventStreamScan(EventStreamStruct **streamReturn, EventStreamReadFunction read,
                               void *closure, char *msg, size_t msgSize)
{
  return eventScanOpen(streamReturn, read, closure, NULL, msg, msgSize);
}

/* eventScanOpen -- EventStreamScan, its index split as split says if
 * that is not NULL; the stream owns split, even on failure */
EventStreamRes eventScanOpen(EventStreamStruct **streamReturn, EventStreamReadFunction read,
                             void *closure, ScanSplitStruct *split, char *msg, size_t msgSize)
{
  EventStreamStruct *stream;
  EventStreamRes res;
  size_t pos = 0;

  *streamReturn = NULL;
  if (msgSize > 0)
    msg[0] = '\0';
  stream = calloc(1, sizeof *stream);
  if (stream != NULL)
    stream->window = malloc(SCAN_WINDOW);
  if (stream == NULL || stream->window == NULL) {
    eventFormatMessage(msg, msgSize, "offset 0: out of memory");
    if (stream == NULL)
      eventScanFree(split);
    else
      stream->split = split;
    EventStreamClose(stream);
    return EventStreamERROR;
  }
  stream->split = split;
  stream->base = stream->window;
  stream->windowCapacity = SCAN_WINDOW;
  stream->read = read;
  stream->readClosure = closure;
  /* The fixed header, then the whole header, for eventParseHeader. */
  eventFill(stream, &pos, EVENT_STREAM_FIXED_LEN);
  if (stream->size >= EVENT_STREAM_FIXED_LEN)
    eventFill(stream, &pos, (size_t)EventLoad(stream->base + 20, 4, 0));
  if (stream->problemCount > 0 || stream->outOfMemory) {
    eventFormatMessage(msg, msgSize, "%s", stream->problemCount > 0 ? stream->problems[0] : "offset 0: out of memory");
    EventStreamClose(stream);
    return EventStreamERROR;
  }
  res = streamIndex(stream, msg, msgSize);
  if (res == EventStreamOK)
    *streamReturn = stream;
  return res;
}


void EventStreamClose(EventStreamStruct *stream)
{
  size_t i;
  if (stream == NULL)
    return;
  eventScanFree(stream->split);
  for (i = 0; i < stream->problemCount; ++i)
    free(stream->problems[i]);
  free(stream->problems);
  free(stream->interns.entries);
  free(stream->seen.entries);
  free(stream->labels.entries);
  free(stream->heap);
  free(stream->seqs);
  free(stream->blocks);
  free(stream->indexes);
  free(stream->holes);
  free(stream->window);
  free(stream->threads);
  free(stream->counts);
  free(stream->countsCodes);
  free(stream->codes);
  free(stream->plans);
  eventRegistriesFree(stream);
  free(stream->strings);
  free(stream->paramStrings);
  free(stream->spans);
  free(stream->counters);
  free(stream->events);
  free(stream->kinds);
  for (i = 0; i < stream->rawCount; ++i)
    free(stream->raws[i]);
  free(stream->raws);
  free(stream->scanRaw);
  free(stream->pack);
  free(stream->unzstd);
  ZSTD_freeDCtx(stream->zstd);
  free(stream);
}


const EventStreamInfoStruct *EventStreamInfo(const EventStreamStruct *stream)
{
  return &stream->info;
}


/* clockBack -- seq's next event is stamped before its last, at clock:
 * it is given that time, so that a thread's events never go back and
 * the merge stays in time order, and it is counted and said.
 * design/stream.txt .stream.order.back */
static void clockBack(EventStreamStruct *stream, SeqStruct *seq, EventClock clock)
{
  const BlockStruct *block = &stream->blocks[seq->block];
  seq->clock = clock;
  EventStreamClockBack(stream, block->thread, block->raw != NULL ? block->offset : seq->pos);
}

void EventStreamClockBack(EventStreamStruct *stream, uint32_t thread, uint64_t offset)
{
  EventStreamInfoStruct *info = &stream->info;
  if (info->clockBacks++ == 0) {
    info->clockBackOffset = offset;
    info->clockBackThread = thread;
  }
}


/* EventStreamNextHead -- the event that comes first of all the
 * sequences': its place and header; its fields are decoded by
 * EventStreamDecode, now or on another thread.  The first call starts
 * the merge.  design/tools.txt .eventcnv.text.split */

EventStreamRes EventStreamNextHead(EventStreamStruct *stream, EventStreamHeadStruct *headReturn)
{
  SeqStruct *seq;
  const BlockStruct *block;
  const unsigned char *p;
  unsigned code;

  if (!stream->merging && !mergeStart(stream))
    stream->outOfMemory = 1;
  if (stream->heapCount == 0)
    return stream->problemCount > 0 || stream->outOfMemory ? EventStreamERROR : EventStreamEND;
  seq = &stream->seqs[stream->heap[0]];
  block = &stream->blocks[seq->block];
  p = eventBytes(stream, block, seq->pos);
  code = eventLoad16(p, stream->swap);
  headReturn->bytes = p;
  headReturn->desc = seq->desc;
  headReturn->clock = seq->clock;
  headReturn->offset = block->raw != NULL ? block->offset : seq->pos;  /* compact: the block's */
  headReturn->thread = block->thread;
  headReturn->kind = block->kind;
  headReturn->code = (uint16_t)code;   /* its own registry's: desc has the merge's */
  headReturn->length = eventLoad16(p + 2, stream->swap);

  seq->pos += headReturn->length;
  if (!seqSeek(stream, seq)) {
    stream->heap[0] = stream->heap[--stream->heapCount];
    heapTop(stream);
  } else {
    if (seq->clock < headReturn->clock)   /* a sequence never goes back: .stream.order.back */
      clockBack(stream, seq, headReturn->clock);
    if (seq->clock >= stream->runnerClock)   /* ties go by heapDown's order */
      heapTop(stream);
  }

  /* design/index.txt .req.intern */
  if (code == EVENT_CODE_INTERN || code == EVENT_CODE_LABEL) {
    EventRecordStruct rec;
    EventStreamDecode(stream, headReturn, &rec);
    if (code == EVENT_CODE_INTERN && eventIsFormat(rec.desc, "WS")) {
      if (eventTableSet(&stream->interns, rec.values[0].u, (uint64_t)(uintptr_t)rec.values[1].s))
        stream->outOfMemory = 1;
    } else if (code == EVENT_CODE_LABEL && eventIsFormat(rec.desc, "AW")) {
      if (eventTableSet(&stream->labels, rec.values[0].u, rec.values[1].u))
        stream->outOfMemory = 1;
    }
  }
  return EventStreamOK;
}


/* EventStreamDecode -- the record of an event EventStreamNextHead gave.
 * It reads the stream and writes nothing of it. */

void EventStreamDecode(const EventStreamStruct *stream, const EventStreamHeadStruct *head,
                       EventRecordStruct *recReturn)
{
  const char *why;
  recReturn->desc = head->desc;
  recReturn->code = head->desc != NULL ? head->desc->code : head->code;
  recReturn->length = head->length;
  recReturn->clock = head->clock;
  recReturn->stringLength = 0;
  if (!stream->swap && head->desc != NULL
      && stream->plans[(size_t)(head->desc - stream->registry.events) * EVENT_PARAM_MAX] != 0) {
    /* Of a fixed length, which the index checked: by its plan.
     * design/tools.txt .eventcnv.reader.plan */
    EventDecodePlanned(stream->plans + (size_t)(head->desc - stream->registry.events) * EVENT_PARAM_MAX,
                       head->bytes + EVENT_HEADER_LEN, recReturn->values);
  } else {
    /* indexEvents checked it: this cannot fail. */
    (void)EventDecodeFields(&stream->info.layout, head->desc, head->bytes, head->length, recReturn, &why);
  }
  recReturn->thread = head->thread;
  recReturn->kind = head->kind;
  recReturn->offset = head->offset;
  /* The kind that EventsDropped and EventsFiltered carry is, from 3.0.6,
   * as blocks carry it: shown as the stream's registry's kind, as the
   * block's is.  .stream.block.registry */
  if (stream->regCount > 1 && head->desc != NULL && recReturn->desc->paramCount >= 1
      && (recReturn->code == EVENT_CODE_EVENTS_DROPPED || recReturn->code == EVENT_CODE_EVENTS_FILTERED)
      && recReturn->values[0].u <= 0xFFFF) {
    unsigned reg;
    int kind = eventKindOf(stream, (unsigned)recReturn->values[0].u, &reg);
    if (kind >= 0)
      recReturn->values[0].u = (uint64_t)kind;
  }
}


/* EventStreamNext -- the next event, decoded now */

EventStreamRes EventStreamNext(EventStreamStruct *stream, EventRecordStruct *recReturn)
{
  EventStreamHeadStruct head;
  EventStreamRes res = EventStreamNextHead(stream, &head);
  if (res == EventStreamOK) {
    memset(recReturn->values, 0, sizeof recReturn->values);   /* past its fields too */
    EventStreamDecode(stream, &head, recReturn);
  }
  return res;
}


size_t EventStreamLabelCount(const EventStreamStruct *stream)
{
  return stream->labels.count;
}


/* EventStreamBlockCount -- the merge's order is the blocks' sorted */
size_t EventStreamBlockCount(EventStreamStruct *stream)
{
  if (!stream->merging && !mergeStart(stream))
    stream->outOfMemory = 1;
  return stream->read != NULL ? 0 : stream->blockCount;
}

void EventStreamBlock(const EventStreamStruct *stream, size_t i, EventStreamBlockStruct *blockReturn)
{
  const BlockStruct *block = &stream->blocks[i];
  size_t start = block->offset + stream->info.blockHeaderLength;
  blockReturn->thread = block->thread;
  blockReturn->kind = block->kind;
  blockReturn->level = block->level;
  blockReturn->seq = block->seq;
  blockReturn->data = eventBytes(stream, block, start);
  blockReturn->size = block->dataEnd > start ? block->dataEnd - start : 0;
  blockReturn->events = block->events;
  blockReturn->cut = block->cut;
  blockReturn->compact = block->compact;
  blockReturn->offset = block->offset;
  blockReturn->expanded = block->raw != NULL;
}


const char *EventStreamLabel(void *closure, uint64_t address)
{
  const EventStreamStruct *stream = closure;
  const TableEntryStruct *label, *string;
  label = eventTableFind(&stream->labels, address);
  if (label == NULL || !label->used)
    return NULL;
  string = eventTableFind(&stream->interns, label->value);
  if (string == NULL || !string->used)
    return NULL;
  return (const char *)(uintptr_t)string->value;
}


void EventStreamFormatContext(EventStreamStruct *stream, EventFormatContextStruct *ctxReturn)
{
  EventFormatContextInit(ctxReturn, &stream->registry);
  ctxReturn->startClock = stream->info.startClock;
  ctxReturn->clockHz = stream->info.clockHz;
  ctxReturn->startRealtime = stream->info.startRealtime;
  ctxReturn->label = EventStreamLabel;
  ctxReturn->labelClosure = stream;
}


size_t EventStreamCount(const EventStreamStruct *stream, unsigned kind, unsigned code)
{
  const EventDescStruct *desc = EventRegistryLookup(&stream->registry, code);
  if (desc == NULL || kind >= stream->registry.kindCount)
    return 0;
  return stream->counts[(size_t)kind * stream->registry.eventCount
                        + (size_t)(desc - stream->registry.events)];
}


size_t EventStreamThreadCount(const EventStreamStruct *stream)
{
  return stream->threadCount;
}

void EventStreamThread(const EventStreamStruct *stream, size_t i, uint32_t *threadReturn,
                       size_t *eventsReturn)
{
  *threadReturn = i < stream->threadCount ? stream->threads[i].thread : 0;
  *eventsReturn = i < stream->threadCount ? stream->threads[i].events : 0;
}


size_t EventStreamProblemCount(const EventStreamStruct *stream)
{
  return stream->problemCount + (stream->outOfMemory ? 1 : 0);
}

const char *EventStreamProblem(const EventStreamStruct *stream, size_t i)
{
  if (i < stream->problemCount)
    return stream->problems[i];
  if (i == stream->problemCount && stream->outOfMemory)
    return "out of memory";
  return NULL;
}
