/* <src/event/eventout.c> -- the stream header and the streams
 *
 * .design: design/telemetry.txt
 *
 * What leaves the buffers: the stream header, with the registry the
 * program was built with (.stream.header); blocks of events to each
 * binary stream and as text to each mirror (.sol.block, .sol.multi);
 * write failures, counted (.sol.writer.fail).  The session's clock
 * pairs are here too, since the header carries the first (.sol.clock).
 * The live file is eventlive.c's, and the asynchronous writer, with the
 * writes after the lock, eventwriter.c's.
 *
 * Locking: the plinth's lock guards the session and the stream list; the
 * writer never takes it, and takes the queue lock instead.
 */

#include <string.h>

#include "eventint.h"
#include "eventpack.h"
#include "eventdecode.h"

/* The stream header ------------------------------------------------ */

/* HeaderBuf -- a growable byte buffer for building the header */
typedef struct HeaderBufStruct {
  unsigned char *base;
  size_t size, limit;
  int failed;
} HeaderBufStruct;

static void put(HeaderBufStruct *h, const void *p, size_t n)
{
  if (h->failed)
    return;
  if (h->size + n > h->limit) {
    size_t limit = h->limit == 0 ? 4096 : h->limit;
    unsigned char *base;
    while (limit < h->size + n)
      limit *= 2;
    base = PlinthAlloc(limit);
    if (base == NULL) {
      h->failed = 1;
      return;
    }
    if (h->size > 0)
      memcpy(base, h->base, h->size);
    PlinthFree(h->base);
    h->base = base;
    h->limit = limit;
  }
  memcpy(h->base + h->size, p, n);
  h->size += n;
}

static void putLE(HeaderBufStruct *h, uint64_t value, size_t n)
{
  unsigned char bytes[8];
  for (size_t i = 0; i < n; ++i)
    bytes[i] = (unsigned char)(value >> (8 * i));
  put(h, bytes, n);
}

static void putStr(HeaderBufStruct *h, const char *s)
{
  size_t len = s == NULL ? 0 : strlen(s);
  if (len > 0xFFFF)
    len = 0xFFFF;
  putLE(h, len, 2);
  put(h, s, len);
}

/* spansLength, putSpans -- the spans and counters that follow the
 * header's check, and their length.  design/telemetry.txt .stream.header.span */
static size_t spansLength(const EventRegistryStruct *reg)
{
  size_t n = 4;
  for (unsigned i = 0; i < reg->spanCount; ++i)
    n += 2 + strlen(reg->spans[i].name) + 6;
  for (unsigned i = 0; i < reg->counterCount; ++i)
    n += 2 + strlen(reg->counters[i].name) + 4;
  return n;
}

static void putSpans(HeaderBufStruct *h, const EventRegistryStruct *reg)
{
  putLE(h, reg->spanCount, 2);
  for (unsigned i = 0; i < reg->spanCount; ++i) {
    const EventSpanDescStruct *span = &reg->spans[i];
    putStr(h, span->name);
    putLE(h, span->begin, 2);
    putLE(h, span->end, 2);
    putLE(h, span->beginKey, 1);
    putLE(h, span->endKey, 1);
  }
  putLE(h, reg->counterCount, 2);
  for (unsigned i = 0; i < reg->counterCount; ++i) {
    const EventCounterDescStruct *counter = &reg->counters[i];
    putStr(h, counter->name);
    putLE(h, counter->code, 2);
    putLE(h, counter->value, 1);
    putLE(h, counter->key, 1);
  }
}

/* putRegistry -- a registry's name, kinds and events, as the header's
 * variable part has them.  .stream.header.var */
static void putRegistry(HeaderBufStruct *h, const EventRegistryStruct *reg)
{
  putStr(h, reg->name);
  putLE(h, reg->kindCount, 2);
  for (unsigned i = 0; i < reg->kindCount; ++i) {
    putStr(h, reg->kinds[i].name);
    putStr(h, reg->kinds[i].doc);
  }
  putLE(h, reg->eventCount, 2);
  for (unsigned i = 0; i < reg->eventCount; ++i) {
    const EventDescStruct *e = &reg->events[i];
    putLE(h, e->code, 2);
    putLE(h, e->kind, 1);
    putLE(h, (e->always ? 1u : 0u) | (e->retired ? 2u : 0u), 1);
    putStr(h, e->format);
    putStr(h, e->name);
    putStr(h, e->doc);
    for (unsigned j = 0; j < e->paramCount; ++j) {
      putStr(h, e->paramNames[j]);
      putStr(h, e->paramDocs[j]);
    }
  }
}

/* putSources -- the registries after the first (3.0.6): a count, then
 * each one's number, registry and spans; each as a registry block
 * carries it too.  Lock held.  .stream.header.registries */
static void putSources(HeaderBufStruct *h)
{
  unsigned n = 0;
  AVER_LOCKED();
  for (unsigned i = 0; i < SOURCE_LIMIT; ++i)
    n += eventSources[i] != NULL && eventSources[i]->number != 0;
  putLE(h, n, 2);
  for (unsigned i = 0; i < SOURCE_LIMIT; ++i)
    if (eventSources[i] != NULL && eventSources[i]->number != 0) {
      putLE(h, eventSources[i]->number, 2);
      putRegistry(h, eventSources[i]->registry);
      putSpans(h, eventSources[i]->registry);
    }
}

/* headerBuild -- the stream header.  design/telemetry.txt .stream.header */
static int headerBuild(HeaderBufStruct *h, size_t padTo)
{
  uint16_t bom = EVENT_BYTE_ORDER_MARK;
  char program[256];
  const EventRegistryStruct *reg = EVENT_SOURCE.registry;   /* number 0: .reg.many */
  memset(h, 0, sizeof *h);
  put(h, EVENT_STREAM_MAGIC, EVENT_STREAM_MAGIC_LEN);
  putLE(h, EventStreamMajor(), 2);      /* .compact.hook */
  putLE(h, EVENT_VERSION_MEDIAN, 2);
  putLE(h, EVENT_VERSION_MINOR, 2);
  put(h, &bom, 2);                      /* data byte order, .stream.header */
  putLE(h, sizeof(EventP), 1);
  putLE(h, sizeof(EventW), 1);
  putLE(h, 1, 1);                       /* IEEE 754 binary64 */
  putLE(h, 0, 1);
  putLE(h, 0, 4);                       /* header length, filled in below */
  putLE(h, PlinthClockFrequency(), 8);
  putLE(h, eventSession.startClock, 8);
  putLE(h, eventSession.startRealtime, 8);
  putLE(h, eventSession.startMonotonic, 8);
  putLE(h, PlinthProcessId(), 4);
  putLE(h, eventSession.id, 4);              /* .stream.check */
  if (PlinthProgramName(program, sizeof program) != 0)
    program[0] = '\0';
  putStr(h, program);
  putRegistry(h, reg);
  /* The header's length, then its check over all before it, flags
   * byte as 0 (a live file's changes), the spans and their check, and
   * the flags' own check, .stream.header.check; a live
   * file's header is padded to a page, its drop counts and regions'
   * count in its last bytes (.sol.dropped, .sol.recover). */
  if (h->failed) {
    PlinthFree(h->base);
    return 12; /* ENOMEM */
  }
  {
    size_t varEnd = h->size, total;
    HeaderBufStruct more;               /* the other registries (3.0.6) */
    memset(&more, 0, sizeof more);
    putSources(&more);
    total = varEnd + 4 + spansLength(reg) + 4 + 4 + more.size + 4;
    if (padTo > 0)
      total = eventRoundUp(total + EVENT_LIVE_SLOTS_LEN + EVENT_LIVE_DROPS_LEN
                           + EVENT_LIVE_REGIONS_LEN, padTo);
    for (size_t i = 0; i < 4; ++i)
      h->base[20 + i] = (unsigned char)(total >> (8 * i));
    putLE(h, EventHeaderCheck(h->base, varEnd), 4);
    putSpans(h, reg);                   /* 2.0.1, .stream.header.span */
    if (!h->failed) {
      putLE(h, EventHeaderCheck(h->base, h->size), 4);
      putLE(h, EventFlagsCheck(h->base), 4);   /* 3.0.5: flags 0, .stream.header.check */
    }
    h->failed |= more.failed;
    if (!h->failed && more.size > 0)
      put(h, more.base, more.size);
    PlinthFree(more.base);
    if (!h->failed)
      putLE(h, EventHeaderCheck(h->base, h->size), 4);  /* 3.0.6: .stream.header.registries */
    while (h->size < total && !h->failed)
      putLE(h, 0, 1);
  }
  if (h->failed) {
    PlinthFree(h->base);
    return 12; /* ENOMEM */
  }
  return 0;
}

/* eventHeaderBuild -- the stream header, padded to a multiple of padTo
 * if not 0 (the live file's, .sol.live), in memory for PlinthFree: 0
 * or an errno code */
int eventHeaderBuild(size_t padTo, unsigned char **baseReturn, size_t *sizeReturn)
{
  HeaderBufStruct h;
  int res = headerBuild(&h, padTo);
  if (res == 0) {
    *baseReturn = h.base;
    *sizeReturn = h.size;
  }
  return res;
}


/* Streams ---------------------------------------------------------- */

/* Write failures.  A binary stream whose write failed is written no
 * more: a full disk fails every write, and a block after a cut one would
 * be read as damage.  The failure is said once, by whichever thread meets
 * it first (an emitter under the lock, or the writer, which never takes
 * it), and the events of every block not written whole to the stream are
 * counted, to be said when the session ends.  Indexed like
 * eventSession.streams.  design/telemetry.txt .sol.writer.fail */
static _Atomic int streamFailure[STREAM_LIMIT];    /* the first failure's errno code, or 0 */
static _Atomic uintptr_t streamLost[STREAM_LIMIT]; /* events not written whole to it (a word:
                                                    lock-free on 32-bit platforms too) */

/* streamFail -- a write to stream i failed with code */
static void streamFail(size_t i, PlinthStream stream, int code)
{
  int none = 0;
  eventLiveLogFailed(stream);
  if (atomic_compare_exchange_strong(&streamFailure[i], &none, code))
    eventSay("cannot write to ", PlinthStreamDescribe(stream), ": ", PlinthStrError(code),
             "; nothing more is written to it, and the events lost are counted", NULL);
}

/* streamFailed -- streamFail for an entry of eventSession.streams.  Lock held. */
static void streamFailed(EventStreamEntryStruct *entry, int code)
{
  AVER_LOCKED();
  entry->failed = 1;
  streamFail((size_t)(entry - eventSession.streams), entry->stream, code);
}

/* countEvents -- how many events a block's data hold */
static uint64_t countEvents(const unsigned char *data, size_t size)
{
  uint64_t n = 0;
  for (size_t offset = 0; offset + EVENT_HEADER_LEN <= size; ++n) {
    uint32_t codeLength;
    memcpy(&codeLength, data + offset, sizeof codeLength);
    if (EVENT_CODE_OF(codeLength) == 0 || EVENT_LENGTH_OF(codeLength) < EVENT_HEADER_LEN)
      break;
    offset += EVENT_LENGTH_OF(codeLength);
  }
  return n;
}

/* streamLose -- a block of events is not written (whole) to stream i */
static void streamLose(size_t i, const unsigned char *data, size_t size)
{
  atomic_fetch_add(&streamLost[i], countEvents(data, size));
}

/* eventLostReport -- say how many events each failed stream lost.  Lock
 * held; the writer idle. */
void eventLostReport(void)
{
  AVER_LOCKED();
  for (size_t i = 0; i < eventSession.streamCount; ++i) {
    uintptr_t n = atomic_exchange(&streamLost[i], 0);
    if (n != 0) {
      char number[24];
      eventFormatUnsigned(number, n);
      eventSay(number, " events were not written to ",
               PlinthStreamDescribe(eventSession.streams[i].stream), " after its write failed (",
               PlinthStrError(atomic_load(&streamFailure[i])), ")", NULL);
    }
  }
}

/* eventStreamOpenFailed -- say why the log (or its live file) at path is not
 * written.  design/telemetry.txt .plinth.stream.file */
void eventStreamOpenFailed(const char *path, int code, const char *consequence)
{
  static const struct { int code; const char *why; } whys[] = {
    { 17 /* EEXIST */, "it is there and is not a telltale log; set TELLTALE_FILE to another name" },
    { 40 /* ELOOP */, "it is a symbolic link, which telltale never follows" },
    { 6 /* ENXIO */, "it is a FIFO that no process opened for reading within a second" },
    { 21 /* EISDIR */, "it is a directory" },
    { 19 /* ENODEV */, "it is a block device, which telltale never writes" },
    { 95 /* ENOTSUP */,
      "it is a file of /proc (or of no kind a log can be), which telltale never writes" },
  };
  for (size_t i = 0; i < sizeof whys / sizeof whys[0]; ++i)
    if (whys[i].code == code) {
      eventSay("not writing ", path, ": ", whys[i].why, consequence, NULL);
      return;
    }
  eventSay("cannot open ", path, ": ", PlinthStrError(code), consequence, NULL);
}

/* keepFailed -- say why the last log at path was not kept as older
 * (PATH.1, or PATH.1.live was at fault), so that this run's log is not
 * written: the last one stays where it is.  .sol.session */
static void keepFailed(const char *path, const char *older, int code)
{
  const char *why = code == 17 /* EEXIST */ ? "it is there and is not a telltale log"
                  : code == 21 /* EISDIR */ ? "it is a directory"
                  : code == 40 /* ELOOP */ ? "it is a symbolic link"
                  : PlinthStrError(code);
  eventSay("not writing ", path, ": the last log there cannot be kept as ", older, " (", why,
           "), so it is left as it is; move ", older, " or set TELLTALE_FILE to another name",
           NULL);
}

/* streamHeader -- write the header to a binary stream */
static void streamHeader(EventStreamEntryStruct *entry)
{
  int res = eventStreamWriteHeader(entry->stream);
  if (res != 0)
    streamFailed(entry, res);
}


static int streamAdd(PlinthStream stream, int binary, int owned, EventSlotSet kinds)
{
  EventStreamEntryStruct *entry;
  if (stream == NULL)
    return 22;
  (void)EventInit();
  PlinthLockClaim();
  if (eventSession.streamCount == STREAM_LIMIT) {
    PlinthLockRelease();
    return 28; /* ENOSPC */
  }
  atomic_store(&streamFailure[eventSession.streamCount], 0);
  atomic_store(&streamLost[eventSession.streamCount], 0);
  entry = &eventSession.streams[eventSession.streamCount];
  memset(entry, 0, sizeof *entry);
  entry->index = &eventSession.streamIndex[eventSession.streamCount++];
  *entry->index = 0;
  entry->stream = stream;
  entry->binary = binary;
  entry->owned = owned;
  entry->kinds = kinds;
  eventSession.finished = 0;
  eventSessionClock();
  if (binary && eventSession.started)
    streamHeader(entry);
  PlinthLockRelease();
  return 0;
}

/* EventStreamAddBinary -- send the binary log to a stream too */
int EventStreamAddBinary(PlinthStream stream)
{
  return streamAdd(stream, 1, 0, 0);
}

/* EventSourceStreamAddText -- mirror a registry's kinds to a stream as text */
int EventSourceStreamAddText(EventSourceStruct *source, PlinthStream stream, EventKindSet kinds)
{
  if (eventSourceReady(source) != 0)
    return 22; /* EINVAL */
  return streamAdd(stream, 0, 0, eventSlotsOf(source, kinds));
}

static int hasBinaryStream(void)
{
  for (size_t i = 0; i < eventSession.streamCount; ++i)
    if (eventSession.streams[i].binary)
      return 1;
  return 0;
}

/* eventSessionClock -- note when the session began, if not yet noted:
 * at EventInit, or at the first event or stream after EventFinish */
static void clockPair(EventClock *clockReturn, uint64_t *monotonicReturn,
                      uint64_t *realtimeReturn);

/* sessionId -- a session's id: a hash of what tells sessions apart
 * (pid and the three start clocks), never 0.  .stream.check */
static uint32_t sessionId(void)
{
  uint64_t parts[4];
  uint32_t id;
  parts[0] = eventSession.startClock;
  parts[1] = eventSession.startRealtime;
  parts[2] = eventSession.startMonotonic;
  parts[3] = PlinthProcessId();
  id = EventCheck(0, parts, sizeof parts);
  return id == 0 ? 1 : id;
}

void eventSessionClock(void)
{
  if (eventSession.startClock != 0)
    return;
  clockPair(&eventSession.startClock, &eventSession.startMonotonic, &eventSession.startRealtime);
  eventSession.id = sessionId();
}

/* clockPair -- the event clock and the system clocks at one moment.
 *
 * The clock is read between two readings of CLOCK_MONOTONIC, three
 * times, and the tightest try is kept: monotonic time is the middle of
 * its two readings, so the pair is good to half that gap (tens of ns).
 * Realtime is read next and moved back by the monotonic time that passed.
 * Pairs read any looser make the reader's clock rate wrong by the error
 * over the span between them.  design/telemetry.txt .sol.clock */
static void clockPair(EventClock *clockReturn, uint64_t *monotonicReturn,
                      uint64_t *realtimeReturn)
{
  uint64_t best = UINT64_MAX, realtime, after;
  for (int i = 0; i < 3; ++i) {
    uint64_t m0 = PlinthMonotonicNs();
    EventClock clock = PlinthClockNow();
    uint64_t m1 = PlinthMonotonicNs();
    if (m1 - m0 < best) {
      best = m1 - m0;
      *clockReturn = clock;
      *monotonicReturn = m0 + (m1 - m0) / 2;
    }
  }
  realtime = PlinthRealtimeNs();
  after = PlinthMonotonicNs();
  *realtimeReturn = realtime - (after - *monotonicReturn);
}

/* eventClockSync -- emit ClockSync from a pair read after the event is
 * reserved, so that a slow path taken to reserve it (setting the thread
 * up, writing a full buffer) falls outside the pair; the session keeps
 * the latest pair, for the traceback's clock rate. */
void eventClockSync(void)
{
  EventClock clock = 0;
  uint64_t monotonic = 0, realtime;
#if EVENT_VARIETY != EVENT_VARIETY_OFF   /* the generated emitters' rule: .sol.variety */
  EVENT_BEGIN(ClockSync)
    clockPair(&clock, &monotonic, &realtime);
    _event->header.clock = clock;
    _event->monotonic = (EventW)monotonic;
    _event->realtime = (EventW)realtime;
  EVENT_END(ClockSync)
  if (clock != 0) {
    PlinthLockClaim();
    if (clock > eventSession.syncClock) {
      eventSession.syncClock = clock;
      eventSession.syncMonotonic = monotonic;
    }
    PlinthLockRelease();
  }
#else
  (void)clock, (void)monotonic, (void)realtime;
#endif
}

/* A log another process is writing (it holds the log's lock) is never
 * moved, replaced or emptied: this process writes LOG.PID instead, and
 * says so; LOG.PID-2 and on if that is taken too (an earlier session of
 * this process, a library loaded again).  .plinth.stream.lock */
#define LOG_NAME_TRIES 8

/* logRename -- the try'th other name for the log (1: LOG.PID) */
static void logRename(const char *base, unsigned try)
{
  char digits[DECIMAL_MAX + 1];
  char name[sizeof eventSession.fileName];
  eventCopyString(name, sizeof name, base);
  eventAppend(name, sizeof name, ".");
  eventFormatUnsigned(digits, PlinthProcessId());
  eventAppend(name, sizeof name, digits);
  if (try > 1) {
    eventAppend(name, sizeof name, "-");
    eventFormatUnsigned(digits, try);
    eventAppend(name, sizeof name, digits);
  }
  memcpy(eventSession.fileName, name, sizeof name);
}

/* logClaim -- PlinthLogKeep at the log's name, moving on to another
 * name while the log there is another process's */
static int logClaim(char *blame, size_t blameSize)
{
  char base[sizeof eventSession.fileName];
  int res;
  memcpy(base, eventSession.fileName, sizeof base);
  for (unsigned try = 1;; ++try) {
    res = PlinthLogKeep(eventSession.fileName, EVENT_STREAM_MAGIC, EVENT_STREAM_MAGIC_LEN,
                        blame, blameSize);
    if (res != 16 /* EBUSY */ || try == LOG_NAME_TRIES)
      break;
    logRename(base, try);
  }
  if (strcmp(base, eventSession.fileName) != 0 && res == 0)
    eventSay(base, " is the log of a running process: this one, pid ",
             (eventFormatUnsigned(blame, PlinthProcessId()), blame), ", writes ",
             eventSession.fileName, NULL);
  return res;
}

/* logOpen -- open the log logClaim claimed; taken meanwhile by a
 * process starting at the same moment, claim another */
static int logOpen(PlinthStream *streamReturn)
{
  int res;
  for (unsigned tries = 0;; ++tries) {
    char blame[sizeof eventSession.fileName + 16];
    res = PlinthStreamOpenLog(streamReturn, eventSession.fileName, EVENT_STREAM_MAGIC,
                              EVENT_STREAM_MAGIC_LEN);
    if (res != 16 /* EBUSY */ || tries == LOG_NAME_TRIES)
      return res;
    if ((res = logClaim(blame, sizeof blame)) != 0)
      return res;
  }
}

/* eventSessionStart -- open the default streams and write the headers.
 * Called with the lock held, before the first block is claimed or sent.
 * design/telemetry.txt .sol.session */
void eventSessionStart(void)
{
  AVER_LOCKED();
  if (eventSession.started)
    return;
  eventEnvCheck();              /* names no registry had: .reg.many */
  eventSessionClock();
  if (!hasBinaryStream() && !eventSession.noDefault && !eventSession.finished) {
    /* The last run's log is kept as LOG.1, and a file that is not a
     * log is never overwritten.  .sol.session */
    PlinthStream stream;
    char blame[sizeof eventSession.fileName + 16];
    int res = logClaim(blame, sizeof blame);
    if (res != 0 && strcmp(blame, eventSession.fileName) != 0)
      keepFailed(eventSession.fileName, blame, res);
    else if (res != 0)
      eventStreamOpenFailed(eventSession.fileName, res, "");
    else if ((res = logOpen(&stream)) != 0)
      eventStreamOpenFailed(eventSession.fileName, res, "");
    else
      (void)streamAdd(stream, 1, 1, 0);
  }
  if (eventSession.mirrorKinds != 0 && eventSession.streamCount < STREAM_LIMIT) {
    PlinthStream stream;
    if (PlinthStreamOpenFd(&stream, 2, 0) == 0)
      (void)streamAdd(stream, 0, 1, eventSession.mirrorKinds);
  }
  /* Set started only now: streamAdd writes the header itself when the
   * session has started, so setting it before the default stream was
   * added wrote that stream's header twice. */
  eventSession.started = 1;
  for (size_t i = 0; i < eventSession.streamCount; ++i)
    if (eventSession.streams[i].binary)
      streamHeader(&eventSession.streams[i]);
  /* The live file goes beside the first binary stream that is a
   * regular file.  .sol.live */
  for (size_t i = 0; i < eventSession.streamCount; ++i)
    if (eventSession.streams[i].binary && PlinthStreamMappable(eventSession.streams[i].stream)) {
      eventLiveStart(eventSession.streams[i].stream, eventSession.streams[i].failed);
      break;
    }
  eventCtlStart(0);             /* a fork's child: its own page, .ctl.fork */
}

/* textMirror -- write events as text.  design/telemetry.txt .sol.multi */
static void textMirror(EventStreamEntryStruct *entry, const unsigned char *data, size_t size,
                       uint32_t thread, unsigned kind)
{
  EventLayoutStruct layout;
  size_t offset = 0;
  char line[TEXT_LINE_MAX];
  EventFormatContextStruct context;
  if (((entry->owned ? eventSession.mirrorKinds : entry->kinds) & SLOT_BIT(kind)) == 0)
    return;
  EventLayoutNative(&layout);
  EventFormatContextInit(&context, eventSlotView(kind));
  context.clockHz = PlinthClockFrequency();
  context.startClock = eventSession.startClock;
  context.startRealtime = eventSession.startRealtime;
  while (offset + EVENT_HEADER_LEN <= size) {
    EventRecordStruct rec;
    size_t n;
    if (EventDecode(&layout, eventSlotRegistry(kind), data + offset, size - offset, &rec, NULL)
        != EventDecodeOK)
      break;
    rec.thread = thread;
    rec.kind = eventSlots[kind].kind;
    if (!eventFilterKeep(kind, data + offset, rec.length)) {   /* .sol.filter */
      offset += rec.length;
      continue;
    }
    n = EventFormat(line, sizeof line - 1, &rec, &context);
    if (n > sizeof line - 2)
      n = sizeof line - 2;
    line[n++] = '\n';
    if (PlinthStreamWrite(entry->stream, line, n) != 0)
      break;
    offset += rec.length;
  }
}

/* eventBlockHeader -- fill in a block header: of a live region (index
 * NONE, no check), or of a block about to be written (blockWrite adds
 * its index and check).  design/telemetry.txt .stream.block */
void eventBlockHeader(unsigned char *base, size_t length, uint32_t serial, unsigned kind,
                        unsigned level, uint64_t seq)
{
  EventBlockHeaderStruct h;
  memcpy(h.magic, EVENT_BLOCK_MAGIC, 4);
  h.length = (uint32_t)length;
  h.thread = serial;
  /* kind is a slot: its registry's number and kind.  .stream.block.registry */
  h.kind = (uint16_t)(kind == EVENT_BLOCK_KIND_REGISTRY ? kind : eventSlotWire(kind));
  h.flags = (uint16_t)(level & EVENT_BLOCK_LEVEL_MASK);
  h.seq = seq;
  h.session = eventSession.id;
  h.index = EVENT_BLOCK_INDEX_NONE;
  h.check = 0;
  memcpy(base, &h, sizeof h);
}

/* eventBlockSend -- send events of a thread's kind to the streams.  Lock held.
 *
 * The events data[0 .. size-1] go as one block numbered seq to each
 * binary stream, and as text to each mirror.
 * design/telemetry.txt .sol.block */
static int blockWrite(EventStreamEntryStruct *entry, uint32_t serial, unsigned kind,
                      unsigned level, const unsigned char *data, size_t size, uint64_t seq,
                      EventWriteStruct *defer, int *failed);

void eventBlockSend(EventThreadStruct *thread, unsigned level, unsigned kind, unsigned slot,
                      const unsigned char *data, size_t size, uint64_t seq)
{
  unsigned deferred = atomic_load_explicit(&thread->writesCount, memory_order_relaxed);
  AVER_LOCKED();
  AVER(level < LEVEL_LIMIT && kind < SLOT_LIMIT && slot < 2);
  /* Only a live slot's block is written after the lock: should the
   * program die before it is, the live file has its events; and only by
   * the thread itself (one cancelled in its slow path left writesDefer
   * set, and its exit's flush, or another thread's, deferred its blocks
   * to no one).  .sol.writer.at */
  int defers = thread == eventThreadState && thread->writesDefer
               && eventLiveSlot(&thread->levels[level][kind], slot);
  if (size == 0)
    return;
  eventSessionStart();
  if (eventWriterIsAsync() && eventWriterEnqueue(thread, level, kind, slot, data, size, seq) == 0)
    return;
  for (size_t i = 0; i < eventSession.streamCount; ++i) {
    EventStreamEntryStruct *entry = &eventSession.streams[i];
    EventWriteStruct *defer = defers && deferred < WRITE_LIMIT
                              ? &thread->writes[deferred] : NULL;
    int failed = 0;
    if (entry->binary && (entry->failed || atomic_load(&streamFailure[i]) != 0)) {
      entry->failed = 1;        /* the writer may have failed it: .sol.writer.fail */
      streamLose(i, data, size);
      continue;
    }
    if (blockWrite(entry, thread->serial, kind, level, data, size, seq, defer, &failed)) {
      atomic_store_explicit(&thread->writesCount, ++deferred, memory_order_release);
      continue;
    }
    if (failed != 0) {
      streamFailed(entry, failed);
      streamLose(i, data, size);
    }
  }
}

/* blockWrite -- one block to one stream: binary, or text if a mirror.
 * *failed gets the error of a failed write.  A binary block gets the
 * stream's next index and its check here, off the hot path, by
 * whichever thread writes it.  design/telemetry.txt .stream.check
 *
 * With defer, a block for a file stream only gets its place there and
 * goes into *defer, to be written after the lock (writeReserved); then
 * the result is 1.  design/telemetry.txt .sol.writer.at */
static int blockWrite(EventStreamEntryStruct *entry, uint32_t serial, unsigned kind,
                      unsigned level, const unsigned char *data, size_t size, uint64_t seq,
                      EventWriteStruct *defer, int *failed)
{
  unsigned char header[EVENT_BLOCK_HEADER_LEN];
  EventBlockHeaderStruct *h = (EventBlockHeaderStruct *)header;
  const unsigned char *events = data, *kept;
  uint32_t check;
  unsigned compact;
  uint64_t at;
  int res, filtered = 0;
  if (!entry->binary) {
    textMirror(entry, data, size, serial, kind);
    return 0;
  }
  if (entry->failed)
    return 0;
  if (!entry->snapshot)
    data = eventFilterBlock(kind, data, &size, &filtered);   /* .sol.filter */
  kept = data;
  data = EventCompactBlock(eventSlotRegistry(kind), data, &size, &compact);   /* .compact.writer */
  eventBlockHeader(header, EVENT_BLOCK_HEADER_LEN + size, serial, kind, level, seq);
  h->flags = (uint16_t)(h->flags | EVENT_BLOCK_CHECKED | compact
                        | (filtered ? EVENT_BLOCK_FILTERED : 0));
  h->index = __atomic_fetch_add(entry->index, 1, __ATOMIC_RELAXED);
  /* Its header goes there now, so that a reader finds which block a
   * program that died before writing the rest lost, and whether the
   * live file has it.  .sol.writer.at */
  if (defer != NULL && data == events
      && PlinthStreamReserve(entry->stream, EVENT_BLOCK_HEADER_LEN + size, &at) == 0) {
    res = PlinthStreamWriteAt(entry->stream, at, header, sizeof header);
    if (res != 0) {
      *failed = res;
      return 0;
    }
    defer->stream = entry->stream;
    defer->entry = (size_t)(entry - eventSession.streams);
    defer->offset = at;
    defer->data = data;
    defer->size = size;
    memcpy(defer->header, header, sizeof header);
    return 1;
  }
  check = EventCheck(0, header, EVENT_BLOCK_HEADER_LEN);
  h->check = EventCheck(check, data, size);
  res = PlinthStreamWrite(entry->stream, header, sizeof header);
  if (res == 0)
    res = PlinthStreamWrite(entry->stream, data, size);
  EventCompactDone(data);
  if (filtered)
    eventFilterDone(kept);
  *failed = res;
  return 0;
}

/* eventRegistryAnnounce -- a registry joined after the streams had
 * their headers: a registry block carries it to each binary stream, to
 * be read before any block of its events (which come later).  Lock held.
 * design/telemetry.txt .stream.block.registry */
void eventRegistryAnnounce(EventSourceStruct *source)
{
  HeaderBufStruct h;
  AVER_LOCKED();
  eventLiveSlotsSay();
  if (source == NULL || !eventSession.started)
    return;                     /* the headers will have it */
  memset(&h, 0, sizeof h);
  putLE(&h, source->number, 2);
  putRegistry(&h, source->registry);
  putSpans(&h, source->registry);
  if (h.failed) {
    eventSay("registry '", source->registry->name, "' joined, but memory ran out to write it ",
             "into the log: its events there cannot be decoded", NULL);
    PlinthFree(h.base);
    return;
  }
  /* The block is the header's room, then the registry: one write, so
   * that no other block lands inside it. */
  {
    HeaderBufStruct b;
    memset(&b, 0, sizeof b);
    for (size_t i = 0; i < EVENT_BLOCK_HEADER_LEN; ++i)
      putLE(&b, 0, 1);
    put(&b, h.base, h.size);
    PlinthFree(h.base);
    if (b.failed) {
      PlinthFree(b.base);
      eventSay("registry '", source->registry->name, "' joined, but memory ran out to write it ",
               "into the log: its events there cannot be decoded", NULL);
      return;
    }
    for (size_t i = 0; i < eventSession.streamCount; ++i) {
      EventStreamEntryStruct *entry = &eventSession.streams[i];
      EventBlockHeaderStruct *bh = (EventBlockHeaderStruct *)b.base;
      int res;
      if (!entry->binary || entry->failed)
        continue;
      eventBlockHeader(b.base, b.size, source->number, EVENT_BLOCK_KIND_REGISTRY, 0, 0);
      bh->flags = (uint16_t)(bh->flags | EVENT_BLOCK_CHECKED);
      bh->index = __atomic_fetch_add(entry->index, 1, __ATOMIC_RELAXED);
      bh->check = EventBlockCheck(b.base, b.size);
      res = PlinthStreamWrite(entry->stream, b.base, b.size);
      if (res != 0)
        streamFailed(entry, res);
    }
    PlinthFree(b.base);
  }
}

/* eventStreamWriteHeader, eventStreamWriteBlock -- a header, and a block
 * numbered seq, to a stream not of the session's (a snapshot's, .ctl.snapshot);
 * *index is the stream's next block index.  0 or an errno code.  Lock held. */
int eventStreamWriteHeader(PlinthStream stream)
{
  HeaderBufStruct h;
  int res = headerBuild(&h, 0);
  AVER_LOCKED();
  if (res == 0) {
    res = PlinthStreamWrite(stream, h.base, h.size);
    PlinthFree(h.base);
  }
  return res;
}

int eventStreamWriteBlock(PlinthStream stream, uint32_t *index, uint32_t serial, unsigned kind,
                          unsigned level, const unsigned char *data, size_t size, uint64_t seq)
{
  EventStreamEntryStruct entry;
  int failed = 0;
  AVER_LOCKED();
  memset(&entry, 0, sizeof entry);
  entry.stream = stream;
  entry.binary = 1;
  entry.snapshot = 1;
  entry.index = index;
  (void)blockWrite(&entry, serial, kind, level, data, size, seq, NULL, &failed);
  return failed;
}

/* eventStreamLost -- a block written after the lock, or by the writer,
 * failed with code: stream i is failed, and the block's events lost.
 * Async-signal-safe.  .sol.writer.fail */
void eventStreamLost(size_t i, PlinthStream stream, int code, const unsigned char *data,
                     size_t size)
{
  streamFail(i, stream, code);
  streamLose(i, data, size);
}

/* eventBlockWriteTo -- the writer's job: one block to each of the
 * streams the session had when it was queued, a failed one's events
 * counted.  The plinth's lock not held.  .sol.writer */
void eventBlockWriteTo(EventStreamEntryStruct *streams, size_t count, uint32_t serial,
                       unsigned kind, unsigned level, const unsigned char *data, size_t size,
                       uint64_t seq)
{
  for (size_t i = 0; i < count; ++i) {
    int failed = 0;
    if (streams[i].binary && atomic_load(&streamFailure[i]) != 0) {
      streamLose(i, data, size);        /* failed: written no more */
      continue;
    }
    (void)blockWrite(&streams[i], serial, kind, level, data, size, seq, NULL, &failed);
    if (failed != 0)
      eventStreamLost(i, streams[i].stream, failed, data, size);
  }
}
