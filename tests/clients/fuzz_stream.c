/* <tests/clients/fuzz_stream.c> -- a libFuzzer harness over every decoder entry
 *
 * .design: design/tests.txt .test.fuzz design/index.txt .req.share design/tools.txt .eventcnv.reader
 *
 * One harness for every way a reader meets bytes it did not write, so
 * that one corpus and one run cover them all and libFuzzer can carry a
 * mutation found by one entry into another.  It uses only the public
 * reader API (eventread.h), so it outlives changes to the format.
 *
 * Input: a selector byte, then the payload.  entry = selector % 4,
 * param = selector / 4:
 *
 *   0 open     EventStreamOpen on the payload (EVENT_STREAM_RESYNC if
 *              param bit 0), then all eventcnv does: --header (the
 *              info), --list (the registry), --count and --summary (the
 *              index), every event in time order formatted, and the
 *              problems.  Lines are formatted into a buffer of a size
 *              chosen by param bits 1-3, to cut them short too.
 *   1 scan     EventStreamScan of the payload through a read function
 *              that gives it in chunks of a size chosen by param bits
 *              0-2, and with param bit 3 fails instead of ending; then
 *              what --count and --summary read.  Unless it fails, the
 *              same of EventStreamScanSplit on 2 to 5 threads (param
 *              bits 4-5), which must say all the same
 *              (.eventcnv.scan.split).
 *   2 recover  EventRecover: the payload is a 4-byte little-endian
 *              length n, then n bytes of log (fewer if the payload is
 *              shorter), then the live file.  A merged stream is then
 *              read as entry 0 reads one (resync if param bit 0), and
 *              must hold no event of the log twice.
 *   3 event    EventDecode and EventFormat over a block's data: the
 *              payload's events, one after another, with the harness's
 *              registry below (every format letter) and the layout in
 *              param bits 0-2 (big-endian, 4-byte pointers, 4-byte
 *              words); also EventFormatDouble and EventClockRate on
 *              values taken from the payload.
 *
 * Memory: the heap an input's reading takes at its peak (ASan's malloc
 * hooks count it) must be within FUZZ_HEAP_MAX of its size: the most a
 * reader holds of expanded events (.zstd.held), a block's decompression
 * and expansion in flight, and the index.
 *
 * Beside the sanitizers, the harness checks the API's promises
 * (eventread.h): a decoded event's length is within what was given,
 * formatted lines are NUL-terminated within their buffer and as long as
 * the result says, and EventStreamNext ends.  A broken promise aborts.
 *
 * Build: ninja fuzz (build/fuzz/fuzz_stream).  Run: tests/tools/fuzz.sh.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sanitizer/allocator_interface.h>

#include "eventread.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* FUZZ_HEAP_MAX -- the heap reading size bytes may take at its peak:
 * 256 MiB of expanded events held (or 256 a byte past 1 MiB,
 * .zstd.held), two blocks' 64 MiB in flight (a zstd frame's output and
 * its expansion), the index and tables (64 MiB, and 64 a byte: the
 * corpus takes at most 1 MiB and 300 a byte of its small logs).
 * design/tests.txt .test.fuzz */
#define FUZZ_HEAP_MAX(size) \
  (((size_t)448 << 20) + ((size) > ((size_t)1 << 20) ? (size) * 256 : 0) + (size) * 64)

static size_t heapNow, heapPeak;

/* The hooks run on a split scan's threads too. */
static void mallocHook(const volatile void *p, size_t n)
{
  size_t now = __atomic_add_fetch(&heapNow, n, __ATOMIC_RELAXED);
  (void)p;
  if (now > __atomic_load_n(&heapPeak, __ATOMIC_RELAXED))
    __atomic_store_n(&heapPeak, now, __ATOMIC_RELAXED);
}

static void freeHook(const volatile void *p)
{
  if (p != NULL && __sanitizer_get_ownership((const void *)p))
    __atomic_sub_fetch(&heapNow, __sanitizer_get_allocated_size((const void *)p),
                       __ATOMIC_RELAXED);
}

enum { ENTRY_OPEN, ENTRY_SCAN, ENTRY_RECOVER, ENTRY_EVENT, ENTRY_COUNT };

/* promise -- abort, naming the promise, if cond is false */
#define promise(cond) \
  do { \
    if (!(cond)) { \
      fprintf(stderr, "fuzz_stream: %s:%d: promise broken: %s\n", __FILE__, __LINE__, #cond); \
      abort(); \
    } \
  } while (0)

/* sink -- make the compiler keep a value (and ASan check its read) */
static volatile size_t sinkValue;
static void sink(size_t v)
{
  sinkValue += v;
}

static void sinkString(const char *s)
{
  if (s != NULL)
    sink(strlen(s));
}

/* checkLine -- EventFormat's promise: like snprintf */
static void checkLine(const char *buf, size_t size, size_t length)
{
  if (size == 0)
    return;
  promise(memchr(buf, '\0', size) != NULL);
  promise(strlen(buf) == (length < size ? length : size - 1));
}


/* THE REGISTRY for entry 3: every letter, alone and together.  Codes
 * sorted (eventcom.h). */

static const EventKindDescStruct fuzzKinds[] = {
  {"Telltale", "telltale's own events"},
  {"Fuzz", "the harness's events"},
};

static const char *const names6[] = {"a", "b", "c", "d", "e", "f"};
static const char *const docs6[] = {"", "", "", "", "", ""};

static const EventDescStruct fuzzEvents[] = {
  {0x0001, 0, 1, 0, 4, "StreamStart", "UUUS", "", names6, docs6},
  {0x0004, 0, 1, 0, 2, "Intern", "WS", "", names6, docs6},
  {0x0005, 0, 1, 0, 2, "Label", "AW", "", names6, docs6},
  {0x0100, 1, 1, 0, 1, "P", "P", "", names6, docs6},
  {0x0101, 1, 1, 0, 1, "A", "A", "", names6, docs6},
  {0x0102, 1, 1, 0, 1, "W", "W", "", names6, docs6},
  {0x0103, 1, 1, 0, 1, "U", "U", "", names6, docs6},
  {0x0104, 1, 1, 0, 1, "D", "D", "", names6, docs6},
  {0x0105, 1, 1, 0, 1, "S", "S", "", names6, docs6},
  {0x0106, 1, 1, 0, 6, "All", "PAWUDS", "", names6, docs6},
  {0x0107, 1, 0, 1, 0, "None", "", "", NULL, NULL},
};

static const EventRegistryStruct fuzzRegistry = {
  "fuzz", sizeof fuzzKinds / sizeof fuzzKinds[0], fuzzKinds,
  sizeof fuzzEvents / sizeof fuzzEvents[0], fuzzEvents, 0, NULL, 0, NULL,
};

static const char *fuzzLabel(void *closure, uint64_t address)
{
  (void)closure;
  return address % 3 == 0 ? "label" : NULL;
}


/* readStream -- everything eventcnv reads of an open stream */
static void readStream(EventStreamStruct *stream, size_t streamSize, size_t lineSize)
{
  const EventStreamInfoStruct *info = EventStreamInfo(stream);
  const EventRegistryStruct *registry = info->registry;
  EventFormatContextStruct ctx;
  EventRecordStruct rec;
  EventStreamRes res;
  char line[4096];
  size_t i, events = 0, n;

  /* --header */
  sinkString(info->program);
  sink(info->major + info->median + info->minor + info->layout.pointerSize);
  EventStreamFormatContext(stream, &ctx);
  n = EventFormatTimes(line, sizeof line, info->lastClock, &ctx);
  checkLine(line, sizeof line, n);

  /* --list */
  promise(registry != NULL);
  sinkString(registry->name);
  for (i = 0; i < registry->kindCount; ++i) {
    sinkString(registry->kinds[i].name);
    sinkString(registry->kinds[i].doc);
  }
  for (i = 0; i < registry->eventCount; ++i) {
    const EventDescStruct *desc = &registry->events[i];
    sinkString(desc->name);
    sinkString(desc->format);
    sinkString(desc->doc);
    for (unsigned p = 0; p < desc->paramCount; ++p) {
      sinkString(desc->paramNames[p]);
      sinkString(desc->paramDocs[p]);
    }
    promise(EventRegistryLookup(registry, desc->code) != NULL);
  }

  /* --count and --summary: the index */
  for (unsigned kind = 0; kind < registry->kindCount; ++kind)
    for (i = 0; i < registry->eventCount; ++i)
      sink(EventStreamCount(stream, kind, registry->events[i].code));
  for (i = 0; i < EventStreamThreadCount(stream); ++i) {
    uint32_t thread;
    size_t count;
    EventStreamThread(stream, i, &thread, &count);
    sink(thread + count);
  }

  /* the events, in time order */
  while ((res = EventStreamNext(stream, &rec)) == EventStreamOK) {
    n = EventFormat(line, lineSize, &rec, &ctx);
    checkLine(line, lineSize, n);
    sinkString(EventStreamLabel(stream, rec.values[0].u));
    ++events;
    /* Each event is returned once: never more than the bytes hold (in
     * a compact block an event takes 2 bytes or more: a tag and a
     * clock; design/stream.txt .compact.encoding). */
    promise(events <= streamSize / (info->compactBlocks > 0 ? 2 : EVENT_HEADER_LEN));
  }
  promise(res == EventStreamEND || res == EventStreamERROR);

  for (i = 0; i < EventStreamProblemCount(stream); ++i)
    sinkString(EventStreamProblem(stream, i));
}

/* lineSizes -- the line buffer sizes entry 0 uses */
static const size_t lineSizes[8] = {4096, 4096, 4096, 4096, 1, 7, 40, 100};

static void entryOpen(const uint8_t *data, size_t size, unsigned param)
{
  EventStreamStruct *stream = NULL;
  char msg[256];
  unsigned options = param & 1 ? EVENT_STREAM_RESYNC : 0;
  EventStreamRes res = EventStreamOpen(&stream, data, size, options, msg, sizeof msg);
  if (res != EventStreamOK) {
    promise(stream == NULL);
    promise(memchr(msg, '\0', sizeof msg) != NULL);
    return;
  }
  readStream(stream, size, lineSizes[(param >> 1) & 7]);
  EventStreamClose(stream);
}


/* ENTRY 1: the scan path */

typedef struct ChunkReaderStruct {
  const uint8_t *data;
  size_t size, offset, chunk;
  int fail;                     /* at the end, fail rather than end */
} ChunkReaderStruct;

static long chunkRead(void *closure, unsigned char *buf, size_t size)
{
  ChunkReaderStruct *reader = closure;
  size_t n = reader->size - reader->offset;
  if (n == 0)
    return reader->fail ? -1 : 0;
  if (n > reader->chunk)
    n = reader->chunk;
  if (n > size)
    n = size;
  memcpy(buf, reader->data + reader->offset, n);
  reader->offset += n;
  return (long)n;
}

static const size_t chunkSizes[8] = {65536, 1, 3, 24, 64, 4095, 4096, (size_t)1 << 20};

/* chunkReadAt -- an EventStreamReadAtFunction of the same chunks */
static long chunkReadAt(void *closure, unsigned char *buf, size_t size, uint64_t offset)
{
  const ChunkReaderStruct *reader = closure;
  size_t n = offset < reader->size ? reader->size - (size_t)offset : 0;
  n = n < reader->chunk ? n : reader->chunk;
  n = n < size ? n : size;
  memcpy(buf, reader->data + offset, n);
  return (long)n;
}

/* scanSaid -- all a scanned stream answers, as text in buf, to compare */
static void scanSaid(const EventStreamStruct *stream, char *buf, size_t size)
{
  const EventStreamInfoStruct *info = EventStreamInfo(stream);
  const EventRegistryStruct *registry = info->registry;
  size_t n = 0;
#define SAY(...) \
  do { \
    if (n < size) \
      n += (size_t)snprintf(buf + n, size - n, __VA_ARGS__); \
  } while (0)
  SAY("%zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %llu %d %d %d %d",
      info->blockCount, info->compactBlocks, info->zstdBlocks, info->unindexedBlocks,
      info->unindexedEvents, info->eventCount, info->unknownCount, info->clockSyncCount,
      info->skippedBytes, info->badBlocks, info->missingBlocks, info->duplicateBlocks,
      info->misorderedBlocks, info->holes, info->holesLost, info->holeBlocks,
      info->threadStarts + 1000 * info->threadExits, (unsigned long long)info->streamSize,
      info->stopped, info->streamEnd, info->streamSnapshot, info->streamExec);
  SAY(" %llu %llu %llu %llu\n", (unsigned long long)info->firstClock,
      (unsigned long long)info->lastClock, (unsigned long long)info->clockHz,
      (unsigned long long)info->holeOffset);
  for (unsigned kind = 0; kind < registry->kindCount; ++kind) {
    SAY("%llu", (unsigned long long)info->dropped[kind]);
    for (size_t i = 0; i < registry->eventCount; ++i)
      SAY(" %zu", EventStreamCount(stream, kind, registry->events[i].code));
    SAY("\n");
  }
  for (size_t i = 0; i < EventStreamThreadCount(stream); ++i) {
    uint32_t thread;
    size_t count;
    EventStreamThread(stream, i, &thread, &count);
    SAY("T%u %zu\n", (unsigned)thread, count);
  }
  for (size_t i = 0; i < EventStreamProblemCount(stream); ++i)
    SAY("%s\n", EventStreamProblem(stream, i));
#undef SAY
}

static void entryScan(const uint8_t *data, size_t size, unsigned param)
{
  EventStreamStruct *stream = NULL;
  char msg[256];
  ChunkReaderStruct reader = {data, size, 0, chunkSizes[param & 7], (param >> 3) & 1};
  EventStreamRes res = EventStreamScan(&stream, chunkRead, &reader, msg, sizeof msg);
  if (res != EventStreamOK) {
    promise(stream == NULL);
    promise(memchr(msg, '\0', sizeof msg) != NULL);
    if (!reader.fail) {         /* split, it fails alike */
      char splitMsg[sizeof msg];
      promise(EventStreamScanSplit(&stream, chunkReadAt, &reader, size, 2 + ((param >> 4) & 3),
                                   splitMsg, sizeof splitMsg) == res);
      promise(stream == NULL && strcmp(msg, splitMsg) == 0);
    }
    return;
  }
  {
    const EventStreamInfoStruct *info = EventStreamInfo(stream);
    const EventRegistryStruct *registry = info->registry;
    EventRecordStruct rec;
    sinkString(info->program);
    for (unsigned kind = 0; kind < registry->kindCount; ++kind)
      for (size_t i = 0; i < registry->eventCount; ++i)
        sink(EventStreamCount(stream, kind, registry->events[i].code));
    for (size_t i = 0; i < EventStreamThreadCount(stream); ++i) {
      uint32_t thread;
      size_t count;
      EventStreamThread(stream, i, &thread, &count);
      sink(thread + count);
    }
    for (size_t i = 0; i < EventStreamProblemCount(stream); ++i)
      sinkString(EventStreamProblem(stream, i));
    /* A scanned stream holds no events (eventread.h). */
    promise(EventStreamNext(stream, &rec) != EventStreamOK);
  }
  if (!reader.fail) {           /* split, it says the same (eventread.h) */
    static char one[1 << 16], split[1 << 16];
    EventStreamStruct *other = NULL;
    unsigned jobs = 2 + ((param >> 4) & 3);
    res = EventStreamScanSplit(&other, chunkReadAt, &reader, size, jobs, msg, sizeof msg);
    promise(res == EventStreamOK && other != NULL);
    scanSaid(stream, one, sizeof one);
    scanSaid(other, split, sizeof split);
    promise(strcmp(one, split) == 0);
    EventStreamClose(other);
  }
  EventStreamClose(stream);
}


/* ENTRY 2: live-file recovery */

/* EventKeyStruct -- what tells an event from every other of a log: a
 * thread's events of one kind have rising clocks, and its parameters.
 * The clock alone is not enough: an event stamped before the one before
 * it is given that one's time by the reader (.stream.order.back), so a
 * live block's first event whose clock is damaged would otherwise look
 * like the log's last event of its number. */
typedef struct EventKeyStruct {
  uint64_t clock;
  uint32_t thread;
  unsigned kind, code;
  uint64_t values;              /* valuesHash */
} EventKeyStruct;

/* valuesHash -- FNV-1a of an event's parameters (a string's characters) */
static uint64_t valuesHash(const EventRecordStruct *rec)
{
  uint64_t hash = 0xcbf29ce484222325u;
  if (rec->desc == NULL)
    return hash;
  for (unsigned i = 0; i < rec->desc->paramCount; ++i) {
    unsigned char bytes[8];
    const unsigned char *p = bytes;
    size_t n = sizeof bytes;
    if (rec->desc->format[i] == 'S') {
      p = (const unsigned char *)rec->values[i].s;
      n = rec->stringLength;
    } else {
      memcpy(bytes, &rec->values[i].u, sizeof bytes);
    }
    for (size_t j = 0; j < n; ++j)
      hash = (hash ^ p[j]) * 0x100000001b3u;
  }
  return hash;
}

static int cmpKey(const void *a, const void *b)
{
  const EventKeyStruct *x = a, *y = b;
  if (x->clock != y->clock)
    return x->clock < y->clock ? -1 : 1;
  if (x->thread != y->thread)
    return x->thread < y->thread ? -1 : 1;
  if (x->kind != y->kind)
    return x->kind < y->kind ? -1 : 1;
  if (x->code != y->code)
    return x->code < y->code ? -1 : 1;
  return x->values < y->values ? -1 : x->values > y->values;
}

/* uncheckedBlock -- is the event at offset in a block whose check is
 * wrong?  The fuzz build reads such compact blocks (ninja/fuzz.ninja);
 * a build for use shows none of their events, so their events, whose
 * sequence number may be mutated too, are left out of the comparison.
 * The block is the last magic at or before offset. */
static int uncheckedBlock(const unsigned char *buf, size_t size, size_t offset,
                          const EventStreamInfoStruct *info)
{
  EventBlockHeaderStruct h;
  size_t at = offset;
  if (info->major < 2 || size < info->blockHeaderLength)
    return 0;
  if (at > size - info->blockHeaderLength)
    at = size - info->blockHeaderLength;
  while (memcmp(buf + at, EVENT_BLOCK_MAGIC, 4) != 0)
    if (at-- <= info->headerLength)
      return 0;
  EventBlockDecode(&h, buf + at, info->major, info->layout.bigEndian);
  return offset - at < h.length && h.length <= size - at
         && EventBlockCheck(buf + at, h.length) != h.check;
}

/* eventKeys -- the keys of the events EventStreamNext returns from a
 * stream, but for those of blocks whose check is wrong, sorted; NULL
 * and 0 if it cannot be opened */
static EventKeyStruct *eventKeys(const unsigned char *buf, size_t size, unsigned options,
                                 size_t *countReturn)
{
  EventStreamStruct *stream = NULL;
  EventKeyStruct *keys = NULL;
  EventRecordStruct rec;
  size_t count = 0;
  char msg[256];
  *countReturn = 0;
  if (EventStreamOpen(&stream, buf, size, options, msg, sizeof msg) != EventStreamOK)
    return NULL;
  keys = malloc((size / 2 + 1) * sizeof *keys);   /* a compact event is 2 bytes or more */
  promise(keys != NULL);
  while (EventStreamNext(stream, &rec) == EventStreamOK && count <= size / 2) {
    EventKeyStruct key = {rec.clock, rec.thread, rec.kind, rec.code, valuesHash(&rec)};
    if (!uncheckedBlock(buf, size, rec.offset, EventStreamInfo(stream)))
      keys[count++] = key;
  }
  EventStreamClose(stream);
  qsort(keys, count, sizeof *keys, cmpKey);
  *countReturn = count;
  return keys;
}

/* checkNoDuplicate -- EventRecover adds only events the log lacks
 * (design/control.txt .sol.recover; issue 10 item 1): no event of
 * the log is in the merged stream more often than in the log. */
static void checkNoDuplicate(const unsigned char *log, size_t logSize, const unsigned char *merged,
                             size_t mergedSize, unsigned options)
{
  size_t logCount, mergedCount, i = 0, j = 0;
  EventKeyStruct *logKeys = eventKeys(log, logSize, options, &logCount);
  EventKeyStruct *mergedKeys = eventKeys(merged, mergedSize, options, &mergedCount);
  while (i < logCount && j < mergedCount) {
    int c = cmpKey(&logKeys[i], &mergedKeys[j]);
    if (c < 0) {
      ++i;
    } else if (c > 0) {
      ++j;
    } else {
      size_t inLog = 0, inMerged = 0;
      EventKeyStruct key = logKeys[i];
      for (; i < logCount && cmpKey(&logKeys[i], &key) == 0; ++i)
        ++inLog;
      for (; j < mergedCount && cmpKey(&mergedKeys[j], &key) == 0; ++j)
        ++inMerged;
      if (inMerged > inLog) {
        fprintf(stderr, "fuzz_stream: thread %u kind %u code 0x%04x clock %llu: %zu in the log, "
                "%zu with the live file\n", (unsigned)key.thread, key.kind, key.code,
                (unsigned long long)key.clock, inLog, inMerged);
        promise(!"EventRecover added events the log already has");
      }
    }
  }
  free(logKeys);
  free(mergedKeys);
}

static void entryRecover(const uint8_t *data, size_t size, unsigned param)
{
  size_t logSize, liveSize, mergedSize = 0;
  EventRecoverStruct result;
  unsigned char *merged = NULL, *log, *live;
  unsigned options = param & 1 ? EVENT_STREAM_RESYNC : 0;
  char msg[256];
  if (size < 4)
    return;
  logSize = (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 | (size_t)data[3] << 24;
  data += 4;
  size -= 4;
  if (logSize > size)
    logSize = size;
  liveSize = size - logSize;
  /* Each in a buffer of its own size, so that ASan sees a read past
   * either end. */
  log = malloc(logSize);
  live = malloc(liveSize);
  promise((log != NULL || logSize == 0) && (live != NULL || liveSize == 0));
  if (logSize > 0)
    memcpy(log, data, logSize);
  if (liveSize > 0)
    memcpy(live, data + logSize, liveSize);
  if (EventRecover(log, logSize, live, liveSize, &merged, &mergedSize, &result, msg,
                   sizeof msg) == 0) {
    EventStreamStruct *stream = NULL;
    promise(merged != NULL);
    sink(result.events + result.blocks + result.rejected + result.damaged);
    if (EventStreamOpen(&stream, merged, mergedSize, options, msg, sizeof msg) == EventStreamOK) {
      readStream(stream, mergedSize, 4096);
      EventStreamClose(stream);
    }
    checkNoDuplicate(log, logSize, merged, mergedSize, options);
    free(merged);
  } else {
    promise(memchr(msg, '\0', sizeof msg) != NULL);
  }
  free(log);
  free(live);
}


/* ENTRY 3: the event layer alone */

static uint64_t take64(const uint8_t *p)
{
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static void entryEvent(const uint8_t *data, size_t size, unsigned param)
{
  EventLayoutStruct layout = {param & 1, param & 2 ? 4 : 8, param & 4 ? 4 : 8};
  EventFormatContextStruct ctx;
  EventRecordStruct rec;
  char line[4096];
  size_t offset = 0, n;

  EventFormatContextInit(&ctx, &fuzzRegistry);
  ctx.label = fuzzLabel;
  if (size >= 32) {             /* the clock, from the tail */
    const uint8_t *tail = data + size - 32;
    double d;
    ctx.startClock = take64(tail);
    ctx.clockHz = take64(tail + 8) >> (param >> 3);
    ctx.startRealtime = take64(tail + 16);
    memcpy(&d, tail + 24, sizeof d);
    n = EventFormatDouble(line, sizeof line, d);
    checkLine(line, sizeof line, n);
    n = EventFormatDouble(line, 5, d);
    checkLine(line, 5, n);
    sink(EventClockRate(take64(tail + 8), take64(tail), take64(tail + 16), take64(tail + 24),
                        take64(tail + 4)));
  }
  while (offset < size) {
    const char *why = NULL;
    EventDecodeRes res = EventDecode(&layout, &fuzzRegistry, data + offset, size - offset, &rec,
                                     &why);
    if (res == EventDecodeEND)
      break;
    if (res == EventDecodeTRUNCATED || res == EventDecodeCORRUPT) {
      promise(why != NULL);
      sinkString(why);
      break;
    }
    promise(res == EventDecodeOK || res == EventDecodeUNKNOWN);
    promise(rec.length >= EVENT_HEADER_LEN && rec.length <= size - offset);
    if (res == EventDecodeOK) {
      promise(rec.desc != NULL && rec.desc->code == rec.code);
      for (unsigned i = 0; i < rec.desc->paramCount; ++i)
        if (rec.desc->format[i] == 'S') {
          promise(rec.values[i].s != NULL);
          promise(strlen(rec.values[i].s) == rec.stringLength);
        }
    }
    n = EventFormat(line, sizeof line, &rec, &ctx);
    checkLine(line, sizeof line, n);
    n = EventFormat(line, 16, &rec, &ctx);
    checkLine(line, 16, n);
    offset += rec.length;
  }
}


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  unsigned selector, param;
  uint8_t *copy;
  static int hooked;
  if (!hooked)
    hooked = __sanitizer_install_malloc_and_free_hooks(mallocHook, freeHook);
  if (size == 0)
    return 0;
  heapPeak = heapNow;
  size_t heapStart = heapNow;
  selector = data[0];
  param = selector / ENTRY_COUNT;
  /* The payload alone in a buffer of exactly its size, so that ASan
   * sees a read past its end (or before its start). */
  copy = malloc(size - 1);
  promise(copy != NULL || size == 1);
  if (size > 1)
    memcpy(copy, data + 1, size - 1);
  switch (selector % ENTRY_COUNT) {
  case ENTRY_OPEN:
    entryOpen(copy, size - 1, param);
    break;
  case ENTRY_SCAN:
    entryScan(copy, size - 1, param);
    break;
  case ENTRY_RECOVER:
    entryRecover(copy, size - 1, param);
    break;
  default:
    entryEvent(copy, size - 1, param);
    break;
  }
  free(copy);
  promise(!hooked || heapPeak - heapStart <= FUZZ_HEAP_MAX(size));
  return 0;
}
