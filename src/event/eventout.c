/* <src/event/eventout.c> -- the stream header, the streams, the live file, the writer
 *
 * .design: design/stream.txt
 *
 * What leaves the buffers: the stream header, with the registry the
 * program was built with (.stream.header); blocks of events to each
 * binary stream and as text to each mirror (.sol.block, .sol.multi);
 * write failures, counted (.sol.writer.fail); the live file, whose
 * regions the buffers of output kinds live in, so that a death loses
 * nothing (.sol.live); and the asynchronous writer thread (.sol.writer).
 * The session's clock pairs are here too, since the header carries the
 * first (.sol.clock).
 *
 * Locking: the plinth's lock guards the session and the stream list; the
 * writer never takes it, and takes the queue lock instead.
 */

#include <string.h>

#include "eventint.h"
#include "eventpack.h"
#include "eventdecode.h"

/* LiveRegionStruct -- a region of the live file no thread is using */
typedef struct LiveRegionStruct {
  struct LiveRegionStruct *next;
  unsigned char *base;
  size_t size;
} LiveRegionStruct;


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
 * header's check, and their length.  design/stream.txt .stream.header.span */
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

/* headerBuild -- the stream header.  design/stream.txt .stream.header */
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


/* Streams ---------------------------------------------------------- */

/* Write failures.  A binary stream whose write failed is written no
 * more: a full disk fails every write, and a block after a cut one would
 * be read as damage.  The failure is said once, by whichever thread meets
 * it first (an emitter under the lock, or the writer, which never takes
 * it), and the events of every block not written whole to the stream are
 * counted, to be said when the session ends.  Indexed like
 * eventSession.streams.  design/control.txt .sol.writer.fail */
static _Atomic int streamFailure[STREAM_LIMIT];    /* the first failure's errno code, or 0 */
static _Atomic uintptr_t streamLost[STREAM_LIMIT]; /* events not written whole to it (a word:
                                                    lock-free on 32-bit platforms too) */

static void liveLogFailed(PlinthStream stream);

/* streamFail -- a write to stream i failed with code */
static void streamFail(size_t i, PlinthStream stream, int code)
{
  int none = 0;
  liveLogFailed(stream);
  if (atomic_compare_exchange_strong(&streamFailure[i], &none, code))
    eventSay("cannot write to ", PlinthStreamDescribe(stream), ": ", PlinthStrError(code),
             "; nothing more is written to it, and the events lost are counted", NULL);
}

/* streamFailed -- streamFail for an entry of eventSession.streams.  Lock held. */
static void streamFailed(EventStreamEntryStruct *entry, int code)
{
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

/* streamOpenFailed -- say why the log (or its live file) at path is not
 * written.  design/plinth.txt .plinth.stream.file */
static void streamOpenFailed(const char *path, int code, const char *consequence)
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

/* The live file's drop counts: the page of its header that holds them
 * is mapped, so that a drop is counted there at once, and a program
 * killed before it reports its drops (EventsDropped) leaves the count
 * for recovery.  One address serves every session: a session's end
 * covers the page with private memory (PlinthMemoryCover), and the
 * next maps its own there, so a drop racing with the end never
 * faults.  design/control.txt .sol.dropped */
static void *liveDropsPage;                 /* the address, once mapped */
static _Atomic uintptr_t *_Atomic liveDrops;  /* the counts, while mapped */
static void liveSlotsSay(void);
static _Atomic unsigned char liveFlags;     /* the live file's flags byte */

/* liveFlagsSet -- set and clear flags of the live file's header, in
 * place.  The writer thread (a failed write) and a control call (a
 * retag) may race: each writes the byte, then writes again until what
 * it wrote is the byte as it stands, so the last write is right. */
static void liveFlagsSet(unsigned set, unsigned clear)
{
  unsigned char now, wrote;
  if (set != 0)
    atomic_fetch_or(&liveFlags, (unsigned char)set);
  if (clear != 0)
    atomic_fetch_and(&liveFlags, (unsigned char)~clear);
  now = atomic_load(&liveFlags);
  do {
    wrote = now;
    (void)PlinthStreamWriteAt(eventSession.live, EVENT_STREAM_FLAGS_AT, &wrote, 1);
    now = atomic_load(&liveFlags);
  } while (now != wrote);
}

static void liveDropsMap(void)
{
  size_t page = PlinthPageSize(), length = eventSession.liveHeaderLength;
  void *base;
  atomic_store(&liveFlags, 0);
  if (length < page
      || PlinthStreamMapAt(eventSession.live, length - page, page, liveDropsPage, &base) != 0)
    return;                     /* then the header says nothing of drops */
  liveDropsPage = base;
  atomic_store(&liveDrops, (_Atomic uintptr_t *)((unsigned char *)base + page
                                                 - EVENT_LIVE_REGIONS_LEN - EVENT_LIVE_DROPS_LEN));
  liveSlotsSay();
  liveFlagsSet(EVENT_LIVE_DROPS, 0);
}

/* liveDropsUnmap -- the live file's counts are not this process's to
 * keep (the session ended, or this is the child of fork) */
static void liveDropsUnmap(void)
{
  atomic_store(&liveDrops, NULL);
  PlinthMemoryCover(liveDropsPage, PlinthPageSize());
}

/* liveSlotsSay -- each slot's kind, as blocks carry it, before the
 * drop counts, so that recovery knows whose they are; written again
 * when a registry joins or leaves.  Lock held.  .reg.many */
static void liveSlotsSay(void)
{
  unsigned char *map;
  if (atomic_load(&liveDrops) == NULL)
    return;
  map = (unsigned char *)atomic_load(&liveDrops) - EVENT_LIVE_SLOTS_LEN;
  _Static_assert(EVENT_LIVE_SLOTS == SLOT_LIMIT, "the live file has a word for every slot");
  for (unsigned slot = 0; slot < SLOT_LIMIT; ++slot) {
    unsigned wire = eventSlots[slot].source != NULL ? eventSlotWire(slot) : 0xFFFFu;
    map[2 * slot] = (unsigned char)wire;              /* little-endian, as the header */
    map[2 * slot + 1] = (unsigned char)(wire >> 8);
  }
}

/* eventLiveSlotsLeft -- slots a registry gave up: their counts go,
 * and the map says they are free.  Lock held. */
void eventLiveSlotsLeft(unsigned base, unsigned count)
{
  _Atomic uintptr_t *counts = atomic_load(&liveDrops);
  if (counts == NULL)
    return;
  for (unsigned slot = base; slot < base + count; ++slot)
    for (unsigned w = 0; w < 8 / sizeof(uintptr_t); ++w)
      atomic_store(&counts[slot * (8 / sizeof(uintptr_t)) + w], 0);
  liveSlotsSay();
}

/* eventLiveDropped -- an event of the kind was dropped: counted in the
 * live file, if there is one, before the count that EventsDropped
 * reports, so that the live file never counts fewer.  Signal-safe. */
void eventLiveDropped(unsigned kind)
{
  _Atomic uintptr_t *counts = atomic_load(&liveDrops);
  if (counts != NULL)
    atomic_fetch_add_explicit(&counts[kind * (8 / sizeof(uintptr_t))], 1, memory_order_relaxed);
}

/* liveStart -- open the live file beside the first binary stream that
 * is a regular file: its header, padded to a page, then the regions
 * that the buffers of output kinds live in.  Lock held.
 * design/control.txt .sol.live */
static void liveStart(void)
{
  EventStreamEntryStruct *entry = NULL;
  HeaderBufStruct h;
  const char *name;
  size_t n;
  int res;
  if (!eventSession.mapAllowed || eventSession.live != NULL)
    return;
  for (size_t i = 0; i < eventSession.streamCount && entry == NULL; ++i)
    if (eventSession.streams[i].binary && PlinthStreamMappable(eventSession.streams[i].stream))
      entry = &eventSession.streams[i];
  if (entry == NULL)
    return;
  name = PlinthStreamDescribe(entry->stream);
  n = strlen(name);
  if (n + sizeof ".live" > sizeof eventSession.liveName)
    return;
  memcpy(eventSession.liveName, name, n);
  memcpy(eventSession.liveName + n, ".live", sizeof ".live");
  eventSession.liveLog = entry->stream;
  res = PlinthStreamOpenLog(&eventSession.live, eventSession.liveName, EVENT_STREAM_MAGIC,
                            EVENT_STREAM_MAGIC_LEN);
  if (res != 0) {
    eventSession.live = NULL;
    streamOpenFailed(eventSession.liveName, res,
                     "; events emitted just before a crash may be lost");
    return;
  }
  res = headerBuild(&h, PlinthPageSize());
  if (res == 0) {
    eventSession.liveHeaderLength = h.size;
    eventSession.liveRegions = eventSession.liveRegionsSaid = 0;
    res = PlinthStreamWrite(eventSession.live, h.base, h.size);
    PlinthFree(h.base);
  }
  if (res == 0)
    liveDropsMap();
  if (res == 0 && entry->failed)
    liveLogFailed(entry->stream);
  if (res != 0) {
    eventSay("cannot write ", eventSession.liveName, ": ", PlinthStrError(res), NULL);
    PlinthStreamClose(eventSession.live);
    (void)PlinthRemoveFile(eventSession.liveName);
    eventSession.live = NULL;
  }
}

/* liveLogFailed -- the log beside the live file lost a write: say so in
 * the live file's header (a write in place, which a full disk allows),
 * and keep the live file at the end, so that a reader knows the log is
 * incomplete.  .sol.recover */
static void liveLogFailed(PlinthStream stream)
{
  if (eventSession.live == NULL || stream != eventSession.liveLog)
    return;
  eventSession.liveKeep = 1;
  liveFlagsSet(EVENT_LIVE_LOG_FAILED, 0);
}

/* eventLiveRetagging -- live regions' headers are being rewritten in
 * place (on nonzero) or no longer: a kill in between may leave one
 * torn, which the flag tells recovery to take as holding nothing.
 * Lock held.  .sol.control.retag */
void eventLiveRetagging(int on)
{
  if (eventSession.live != NULL)
    liveFlagsSet(on ? EVENT_LIVE_RETAG : 0, on ? 0 : EVENT_LIVE_RETAG);
}

/* eventLiveEnd -- the session ends cleanly: every event is in the streams,
 * so the live file goes, unless the log lost writes.  Lock held. */
void eventLiveEnd(void)
{
  liveDropsUnmap();
  ++eventSession.liveGen;       /* its regions that threads hold are stale: .sol.live.session */
  while (eventSession.liveFree != NULL) {
    LiveRegionStruct *region = eventSession.liveFree;
    eventSession.liveFree = region->next;
    PlinthStreamUnmap(eventSession.live, region->base, region->size);
    PlinthFree(region);
  }
  if (eventSession.live != NULL) {
    PlinthStreamClose(eventSession.live);
    if (!eventSession.liveKeep)
      (void)PlinthRemoveFile(eventSession.liveName);
    eventSession.live = NULL;
  }
  eventSession.liveFailed = 0;
  eventSession.liveKeep = 0;
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
 * over the span between them.  design/runtime.txt .sol.clock */
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
 * design/runtime.txt .sol.session */
void eventSessionStart(void)
{
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
      streamOpenFailed(eventSession.fileName, res, "");
    else if ((res = logOpen(&stream)) != 0)
      streamOpenFailed(eventSession.fileName, res, "");
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
  liveStart();
  eventCtlStart(0);             /* a fork's child: its own page, .ctl.thread */
}

/* textMirror -- write events as text.  design/runtime.txt .sol.multi */
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
 * its index and check).  design/stream.txt .stream.block */
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
 * design/runtime.txt .sol.block */
static int blockWrite(EventStreamEntryStruct *entry, uint32_t serial, unsigned kind,
                      unsigned level, const unsigned char *data, size_t size, uint64_t seq,
                      EventWriteStruct *defer, int *failed);
static int writerEnqueue(EventThreadStruct *thread, unsigned level, unsigned kind, unsigned slot,
                         const unsigned char *data, size_t size, uint64_t seq);

void eventBlockSend(EventThreadStruct *thread, unsigned level, unsigned kind, unsigned slot,
                      const unsigned char *data, size_t size, uint64_t seq)
{
  unsigned deferred = atomic_load_explicit(&thread->writesCount, memory_order_relaxed);
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
  if (eventSession.async && writerEnqueue(thread, level, kind, slot, data, size, seq) == 0)
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
 * whichever thread writes it.  design/stream.txt .stream.check
 *
 * With defer, a block for a file stream only gets its place there and
 * goes into *defer, to be written after the lock (writeReserved); then
 * the result is 1.  design/control.txt .sol.writer.at */
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
 * design/stream.txt .stream.block.registry */
void eventRegistryAnnounce(EventSourceStruct *source)
{
  HeaderBufStruct h;
  liveSlotsSay();
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
  memset(&entry, 0, sizeof entry);
  entry.stream = stream;
  entry.binary = 1;
  entry.snapshot = 1;
  entry.index = index;
  (void)blockWrite(&entry, serial, kind, level, data, size, seq, NULL, &failed);
  return failed;
}

/* writeReserved -- write a block blockWrite deferred, with its check, at
 * its place: 0 or an errno code.  Async-signal-safe. */
static int writeReserved(const EventWriteStruct *w)
{
  unsigned char header[EVENT_BLOCK_HEADER_LEN];
  EventBlockHeaderStruct *h = (EventBlockHeaderStruct *)header;
  memcpy(header, w->header, sizeof header);
  h->check = EventCheck(EventCheck(0, header, sizeof header), w->data, w->size);
  return PlinthStreamWriteTwoAt(w->stream, w->offset, header, sizeof header, w->data, w->size);
}

/* eventWritesDo -- the calling thread writes its deferred blocks, after
 * the lock.  .sol.writer.at */
void eventWritesDo(EventThreadStruct *thread)
{
  unsigned n = atomic_load_explicit(&thread->writesCount, memory_order_relaxed);
  if (n == 0)
    return;
  PlinthCancelHold();           /* a block cut short is a hole: .sol.cancel */
  for (unsigned i = 0; i < n; ++i) {
    const EventWriteStruct *w = &thread->writes[i];
    int res = writeReserved(w);
    if (res != 0) {
      streamFail(w->entry, w->stream, res);
      streamLose(w->entry, w->data, w->size);
    }
  }
  atomic_store_explicit(&thread->writesCount, 0, memory_order_release);
  PlinthCancelRelease();
}

/* writesSettle -- every block placed but perhaps not yet written is
 * written now, by the caller (the same bytes to the same place: what a
 * block holds changes only under the lock); with wait, the caller then
 * waits, a second at most, for the other threads to be out of their
 * writes, so that a stream is not closed under them.  Lock held.
 * .sol.writer.at */
static void writesSettle(int wait)
{
  EventThreadStruct *self = eventThreadState;
  for (EventThreadStruct *t = eventSession.threads; t != NULL; t = t->next) {
    unsigned n = atomic_load_explicit(&t->writesCount, memory_order_acquire);
    for (unsigned i = 0; i < n; ++i)
      (void)writeReserved(&t->writes[i]);
  }
  if (wait)
    for (EventThreadStruct *t = eventSession.threads; t != NULL; t = t->next)
      for (unsigned waited = 0; t != self && waited < 50000
           && atomic_load_explicit(&t->writesCount, memory_order_acquire) != 0; ++waited)
        PlinthSleepNs(20000);
}

void eventWritesFlush(void)
{
  writesSettle(0);
}

/* eventWritesUnsettled -- is a thread still in its writes after
 * writesSettle waited?  Then the streams are not closed: it would write
 * into a closed descriptor, or one the program opened since.  Lock held. */
int eventWritesUnsettled(void)
{
  for (EventThreadStruct *t = eventSession.threads; t != NULL; t = t->next)
    if (atomic_load_explicit(&t->writesCount, memory_order_acquire) != 0)
      return 1;
  return 0;
}


/* The asynchronous writer.  design/control.txt .sol.writer
 *
 * In async mode a block is not written by the thread that fills it: it
 * becomes a job on a queue, and the writer thread writes it while the
 * emitter goes on in its other slot.  The job points into the slot, so
 * the slot is not reused until the job is done (pending, under the queue
 * lock).  The writer never claims the plinth lock, so an emitter may wait
 * for it while holding that lock. */

#define JOB_LIMIT 256

typedef struct JobStruct {
  EventStreamEntryStruct streams[STREAM_LIMIT];  /* the session's, when queued */
  size_t streamCount;
  const unsigned char *data;
  size_t size;
  uint64_t seq;
  uint32_t serial;
  unsigned kind, level;
  unsigned *pending;            /* the slot's count, to decrement when done */
} JobStruct;

/* DetachedStruct -- a live slot's region handed to the writer, with the
 * count of jobs still reading it.  .sol.writer.detach */
#define DETACH_LIMIT 16

typedef struct DetachedStruct {
  unsigned pending;             /* jobs reading the region */
  unsigned char *base;          /* NULL: the record is not in use */
  size_t size;
} DetachedStruct;

static struct {
  JobStruct jobs[JOB_LIMIT];
  size_t head, count;           /* the queue: jobs[head .. head + count) */
  unsigned *writingPending;     /* the count of the job the writer holds, or NULL */
  int started;
  unsigned poked;               /* looks left soon after a thread's exit */
  int stop;                     /* end when idle: the library is unloaded */
  DetachedStruct detached[DETACH_LIMIT];
} writer;

/* The writer is a thread of the process, and glibc ends a process
 * whose main thread called pthread_exit only when its last thread
 * ends; so the writer, when idle, looks whether it is the last, and if
 * so ends as that thread would have (the atexit handlers then run on it,
 * writing synchronously).  It looks soon after a thread's exit, and
 * every WRITER_LOOK_NS, for threads that never emitted.  .sol.writer.last */
#define WRITER_LOOK_NS ((uint64_t)100000000)
#define WRITER_POKED_NS ((uint64_t)1000000)
#define WRITER_POKED_LOOKS 100

/* writerLast -- is the writer the process's last thread?  Queue lock
 * held; if it is, it writes no more. */
static int writerLast(void)
{
  int last;
  PlinthQueueRelease();
  last = PlinthLastThread();
  if (last) {
    PlinthLockClaim();
    eventSession.async = 0;
    writer.started = 0;         /* (eventWriterIdle waits for no one) */
    PlinthLockRelease();
  }
  PlinthQueueClaim();
  return last && writer.count == 0;
}

/* eventWriterStop -- the writer writes what it has and ends, and is
 * waited for: its code is about to be unloaded.  Lock not held (the
 * writer's own exit may emit, as the allocation recorder's free does);
 * writing is synchronous from here on.  .sol.unload */
void eventWriterStop(void)
{
  PlinthLockClaim();
  eventSession.async = 0;
  PlinthLockRelease();
  if (!writer.started)
    return;
  PlinthQueueClaim();
  writer.stop = 1;
  PlinthQueueWake();
  PlinthQueueRelease();
  PlinthWriterJoin();
  writer.started = 0;
}

/* eventWriterPoke -- a thread exited: the writer looks soon whether it
 * is the last */
void eventWriterPoke(void)
{
  if (!writer.started)
    return;
  PlinthQueueClaim();
  writer.poked = WRITER_POKED_LOOKS;
  PlinthQueueWake();
  PlinthQueueRelease();
}

/* writerRun -- the writer thread: write jobs as they come */
static void writerRun(void)
{
  for (;;) {
    JobStruct job;
    PlinthQueueClaim();
    while (writer.count == 0) {
      if (writer.stop) {
        PlinthQueueRelease();
        return;
      }
      PlinthQueueWaitFor(writer.poked > 0 ? WRITER_POKED_NS : WRITER_LOOK_NS);
      if (writer.poked > 0)
        --writer.poked;
      if (writer.count == 0 && writerLast()) {
        PlinthQueueRelease();
        return;
      }
    }
    job = writer.jobs[writer.head];
    writer.head = (writer.head + 1) % JOB_LIMIT;
    --writer.count;
    writer.writingPending = job.pending;
    PlinthQueueRelease();
    for (size_t i = 0; i < job.streamCount; ++i) {
      int failed = 0;
      if (job.streams[i].binary && atomic_load(&streamFailure[i]) != 0) {
        streamLose(i, job.data, job.size);     /* failed: written no more */
        continue;
      }
      (void)blockWrite(&job.streams[i], job.serial, job.kind, job.level, job.data, job.size,
                       job.seq, NULL, &failed);
      if (failed != 0) {
        streamFail(i, job.streams[i].stream, failed);
        streamLose(i, job.data, job.size);
      }
    }
    PlinthQueueClaim();
    --*writer.writingPending;   /* the job's, or its region's if detached since */
    writer.writingPending = NULL;
    PlinthQueueWake();
    PlinthQueueRelease();
  }
}

/* writerEnqueue -- queue a block for the writer.  Plinth lock held.
 * Returns nonzero if there is no writer: the caller writes it. */
static int writerEnqueue(EventThreadStruct *thread, unsigned level, unsigned kind, unsigned slot,
                         const unsigned char *data, size_t size, uint64_t seq)
{
  JobStruct *job;
  if (!writer.started) {
    if (PlinthWriterStart(writerRun) != 0) {
      eventSay("cannot start the writer thread: writing synchronously", NULL);
      eventSession.async = 0;
      return 1;
    }
    writer.started = 1;
  }
  PlinthQueueClaim();
  while (writer.count == JOB_LIMIT)
    PlinthQueueWait();
  job = &writer.jobs[(writer.head + writer.count) % JOB_LIMIT];
  memcpy(job->streams, eventSession.streams, sizeof job->streams);
  job->streamCount = eventSession.streamCount;
  job->data = data;
  job->size = size;
  job->seq = seq;
  job->serial = thread->serial;
  job->kind = kind;
  job->level = level;
  job->pending = &thread->levels[level][kind].pending[slot];
  ++*job->pending;
  ++writer.count;
  PlinthQueueWake();
  PlinthQueueRelease();
  return 0;
}

/* eventWriterIdle -- wait until the writer has written every queued job */
void eventWriterIdle(void)
{
  writesSettle(1);
  if (!writer.started)
    return;
  PlinthQueueClaim();
  while (writer.count > 0 || writer.writingPending != NULL)
    PlinthQueueWait();
  PlinthQueueRelease();
}

/* eventSlotBusy -- does a job still read slot s?  With wait, wait until not. */
int eventSlotBusy(EventKindBufStruct *kb, unsigned s, int wait)
{
  int busy;
  if (!writer.started)
    return 0;
  PlinthQueueClaim();
  while (wait && kb->pending[s] > 0)
    PlinthQueueWait();
  busy = kb->pending[s] > 0;
  PlinthQueueRelease();
  return busy;
}

/* eventSlotDetach -- free slot s of a live region the writer still
 * reads by handing the region to the writer's jobs, taking in exchange
 * a region they are done with, if there is one of its size: 0 if the
 * slot is free (its region kept, exchanged, or handed over and none
 * taken), else nonzero.  Plinth lock held; no memory is allocated or
 * freed, as a signal handler may be here.  .sol.writer.detach */
int eventSlotDetach(EventKindBufStruct *kb, unsigned s)
{
  DetachedStruct *d = NULL;
  int busy;
  if (!writer.started)
    return 0;
  PlinthQueueClaim();
  if (kb->pending[s] > 0 && eventLiveSlot(kb, s))
    for (size_t i = 0; i < DETACH_LIMIT; ++i) {
      DetachedStruct *r = &writer.detached[i];
      if (r->base == NULL ? d == NULL : r->pending == 0 && r->size == kb->slotSize[s])
        d = r;
      if (d != NULL && d->base != NULL)
        break;
    }
  if (d != NULL) {
    unsigned *from = &kb->pending[s];
    unsigned char *done = d->base;
    for (size_t i = 0; i < writer.count; ++i) {
      JobStruct *job = &writer.jobs[(writer.head + i) % JOB_LIMIT];
      if (job->pending == from)
        job->pending = &d->pending;
    }
    if (writer.writingPending == from)
      writer.writingPending = &d->pending;
    d->pending = kb->pending[s];
    d->base = kb->slot[s];
    d->size = kb->slotSize[s];
    kb->pending[s] = 0;
    kb->slot[s] = done;
    kb->mapped[s] = done != NULL;
    kb->liveGen[s] = eventSession.liveGen;
  }
  busy = kb->pending[s] > 0;
  PlinthQueueRelease();
  return busy;
}

/* eventSlotsReturned -- give back to the live file the regions handed
 * to the writer, once it is done with them.  Plinth lock held. */
void eventSlotsReturned(void)
{
  DetachedStruct done[DETACH_LIMIT];
  size_t n = 0;
  if (!writer.started)
    return;
  PlinthQueueClaim();
  for (size_t i = 0; i < DETACH_LIMIT; ++i)
    if (writer.detached[i].base != NULL && writer.detached[i].pending == 0) {
      done[n++] = writer.detached[i];
      writer.detached[i].base = NULL;
    }
  PlinthQueueRelease();
  for (size_t i = 0; i < n; ++i)
    eventLiveRegionRelease(done[i].base, done[i].size);
}

/* EventWriterAsync -- write blocks on the writer thread (1) or on the
 * emitting thread (0, the default).  drop: when the writer is behind,
 * drop and count events (EventsDropped) rather than wait for it. */
int EventWriterAsync(int async, int drop)
{
  PlinthLockClaim();
  if (!async)
    eventWriterIdle();
  eventSession.async = async != 0;
  eventSession.dropWhenBehind = async && drop;
  PlinthLockRelease();
  return 0;
}


/* The live file's regions ------------------------------------------ */

/* eventLiveRegion -- a region of the live file of the given size */
int eventLiveRegion(size_t size, unsigned char **baseReturn)
{
  void *base;
  int res;
  for (LiveRegionStruct **p = &eventSession.liveFree; *p != NULL; p = &(*p)->next)
    if ((*p)->size == size) {
      LiveRegionStruct *region = *p;
      *p = region->next;
      *baseReturn = region->base;
      PlinthFree(region);
      return 0;
    }
  res = PlinthStreamMap(eventSession.live, size, &base);
  if (res == 0) {
    memset(base, 0, EVENT_BLOCK_HEADER_LEN);
    *baseReturn = base;
    ++eventSession.liveRegions;
  }
  return res;
}

/* eventLiveRegionRelease -- a slot's region is given up: it goes on the
 * free list, marked free (magic zeroed, length kept) so that recovery
 * passes over it.  Lock held. */
void eventLiveRegionRelease(unsigned char *base, size_t size)
{
  LiveRegionStruct *region = NULL;
  /* Without a live file (after EventFinish, or in the child of fork,
   * where the region is the parent's) the region is only unmapped. */
  if (eventSession.live != NULL) {
    memset(base, 0, 4);
    region = PlinthAlloc(sizeof *region);
  }
  if (region == NULL)
    PlinthStreamUnmap(eventSession.live, base, size);
  else {
    region->base = base;
    region->size = size;
    region->next = eventSession.liveFree;
    eventSession.liveFree = region;
  }
}

/* eventLiveRegionsSay -- the count of regions, in the live file's header's
 * last bytes, once a new region has its header: a reader knows how many
 * to find, so a live file cut short or zeroed is not taken for a whole
 * one.  A write in place: a full disk allows it.  .sol.recover */
void eventLiveRegionsSay(void)
{
  unsigned char bytes[EVENT_LIVE_REGIONS_LEN];
  if (eventSession.liveRegions == eventSession.liveRegionsSaid)
    return;
  for (size_t i = 0; i < sizeof bytes; ++i)
    bytes[i] = (unsigned char)(eventSession.liveRegions >> (8 * i));
  if (PlinthStreamWriteAt(eventSession.live, eventSession.liveHeaderLength - sizeof bytes, bytes,
                          sizeof bytes) == 0)
    eventSession.liveRegionsSaid = eventSession.liveRegions;
}

/* eventOutAfterFork -- in the child of fork(): the writer and the live
 * file are the parent's.  design/plinth.txt .sol.fork */
void eventOutAfterFork(void)
{
  /* The writer thread is the parent's: the child starts its own when it
   * needs one, and the parent's queued jobs are the parent's, as are
   * the regions they read. */
  for (size_t i = 0; i < DETACH_LIMIT; ++i)
    if (writer.detached[i].base != NULL)
      PlinthStreamUnmap(NULL, writer.detached[i].base, writer.detached[i].size);
  memset(&writer, 0, sizeof writer);
  /* The parent's threads write their own deferred blocks. */
  for (EventThreadStruct *t = eventSession.threads; t != NULL; t = t->next)
    atomic_store(&t->writesCount, 0);
  /* The parent's live file is the parent's: unmap its regions (in the
   * child only) rather than reuse them, and let go of the stream. */
  liveDropsUnmap();
  if (eventSession.live != NULL) {
    PlinthStreamClose(eventSession.live);
    eventSession.live = NULL;
  }
  while (eventSession.liveFree != NULL) {
    LiveRegionStruct *region = eventSession.liveFree;
    eventSession.liveFree = region->next;
    PlinthStreamUnmap(NULL, region->base, region->size);
    PlinthFree(region);
  }
}
