/* <src/event/eventout.c> -- the streams
 *
 * .design: design/runtime.txt
 *
 * What leaves the buffers: the stream header (built by eventhead.c,
 * .stream.header) and the registry blocks; blocks of events to each
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

/* Streams ---------------------------------------------------------- */

/* streamList -- the session's streams: this file's alone, which the
 * others reach through its functions (eventStreamCount,
 * eventStreamsFlush, eventStreamsClose; eventBlockSend hands the
 * writer a copy).  Lock held.  design/runtime.txt .sol.multi */
static struct {
  int started;                          /* the streams have their headers */
  size_t count;
  EventStreamEntryStruct entries[STREAM_LIMIT];
  uint32_t index[STREAM_LIMIT];         /* each stream's next block index */
} streamList;

/* Write failures.  A binary stream whose write failed is written no
 * more: a full disk fails every write, and a block after a cut one would
 * be read as damage.  The failure is said once, by whichever thread meets
 * it first (an emitter under the lock, or the writer, which never takes
 * it), and the events of every block not written whole to the stream are
 * counted, to be said when the session ends.  Indexed like
 * streamList.entries.  design/control.txt .sol.writer.fail */
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

/* streamFailed -- streamFail for an entry of streamList.entries.  Lock held. */
static void streamFailed(EventStreamEntryStruct *entry, int code)
{
  AVER_LOCKED();
  entry->failed = 1;
  streamFail((size_t)(entry - streamList.entries), entry->stream, code);
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
  for (size_t i = 0; i < streamList.count; ++i) {
    uintptr_t n = atomic_exchange(&streamLost[i], 0);
    if (n != 0) {
      char number[24];
      eventFormatUnsigned(number, n);
      eventSay(number, " events were not written to ",
               PlinthStreamDescribe(streamList.entries[i].stream), " after its write failed (",
               PlinthStrError(atomic_load(&streamFailure[i])), ")", NULL);
    }
  }
}

/* eventStreamOpenFailed -- say why the log (or its live file) at path is not
 * written.  design/plinth.txt .plinth.stream.file */
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
  if (streamList.count == STREAM_LIMIT) {
    PlinthLockRelease();
    return 28; /* ENOSPC */
  }
  atomic_store(&streamFailure[streamList.count], 0);
  atomic_store(&streamLost[streamList.count], 0);
  entry = &streamList.entries[streamList.count];
  memset(entry, 0, sizeof *entry);
  entry->index = &streamList.index[streamList.count++];
  *entry->index = 0;
  entry->stream = stream;
  entry->binary = binary;
  entry->owned = owned;
  entry->kinds = kinds;
  eventSession.finished = 0;
  eventSessionClock();
  if (binary && streamList.started)
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
  for (size_t i = 0; i < streamList.count; ++i)
    if (streamList.entries[i].binary)
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
  eventSession.rateClaimed = 0;
  eventSession.rateClock = eventSession.syncClock = 0;
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

/* eventClockRateWait -- ns until the session's ClockRate is due, 0 if
 * it is due now, UINT64_MAX if it is sent or the session has no streams
 * yet (no event was emitted: the control thread must not make the log):
 * for the control thread, which sends it.  .sol.clock.rate */
uint64_t eventClockRateWait(void)
{
  uint64_t wait = UINT64_MAX, now;
  PlinthLockClaim();
  if (!eventSession.rateClaimed && eventSession.startClock != 0 && streamList.started) {
    now = PlinthMonotonicNs() - eventSession.startMonotonic;
    wait = now >= EVENT_RATE_SPAN_NS ? 0 : EVENT_RATE_SPAN_NS - now;
  }
  PlinthLockRelease();
  return wait;
}

/* eventClockSync -- emit ClockSync from a pair read after the event is
 * reserved, so that a slow path taken to reserve it (setting the thread
 * up, writing a full buffer) falls outside the pair.  The session's one
 * ClockRate instead, if it is not sent and EVENT_RATE_SPAN_NS have passed
 * since the start, or this is the end (EventSyncFinal).  The session
 * keeps its pair, and the latest ClockSync's, for the traceback's clock
 * rate (eventClockHz).  EventSyncRate: ClockRate or
 * nothing.  Returns 1 if it was ClockRate.  design/runtime.txt
 * .sol.clock.rate */
int eventClockSync(EventSyncMode mode)
{
  EventClock clock = 0;
  uint64_t monotonic = 0, realtime;
  int rate = 0;
#if EVENT_VARIETY != EVENT_VARIETY_OFF   /* the generated emitters' rule: .sol.variety */
  PlinthLockClaim();
  if (!eventSession.rateClaimed
      && (mode == EventSyncFinal
          || (eventSession.startClock != 0
              && PlinthMonotonicNs() - eventSession.startMonotonic >= EVENT_RATE_SPAN_NS)))
    eventSession.rateClaimed = rate = 1;
  PlinthLockRelease();
  if (!rate && mode == EventSyncRate)
    return 0;
  /* ClockRate and ClockSync have the same fields, filled alike */
#define SYNC_FILL() \
  (clockPair(&clock, &monotonic, &realtime), _event->header.clock = clock, \
   _event->monotonic = (EventW)monotonic, _event->realtime = (EventW)realtime)
  if (rate) {
    EVENT_BEGIN(ClockRate)
      SYNC_FILL();
    EVENT_END(ClockRate)
  } else {
    EVENT_BEGIN(ClockSync)
      SYNC_FILL();
    EVENT_END(ClockSync)
  }
#undef SYNC_FILL
  if (clock != 0) {
    PlinthLockClaim();
    if (rate) {
      eventSession.rateClock = clock;
      eventSession.rateMonotonic = monotonic;
    }
    if (clock > eventSession.syncClock) {
      eventSession.syncClock = clock;
      eventSession.syncMonotonic = monotonic;
    }
    PlinthLockRelease();
  }
#else
  (void)clock, (void)monotonic, (void)realtime, (void)mode;
#endif
  return rate;
}

/* eventClockHz -- the clock's rate by the reader's rule (.sol.clock):
 * the ClockRate's, once it is sent, else the latest ClockSync's */
uint64_t eventClockHz(void)
{
  int rated = eventSession.rateClock != 0;
  return EventClockRate(PlinthClockFrequency(), eventSession.startClock,
                        eventSession.startMonotonic,
                        rated ? eventSession.rateClock : eventSession.syncClock,
                        rated ? eventSession.rateMonotonic : eventSession.syncMonotonic);
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
  AVER_LOCKED();
  if (streamList.started)
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
  if (eventSession.mirrorKinds != 0 && streamList.count < STREAM_LIMIT) {
    PlinthStream stream;
    if (PlinthStreamOpenFd(&stream, 2, 0) == 0)
      (void)streamAdd(stream, 0, 1, eventSession.mirrorKinds);
  }
  /* Set started only now: streamAdd writes the header itself when the
   * session has started, so setting it before the default stream was
   * added wrote that stream's header twice. */
  streamList.started = 1;
  for (size_t i = 0; i < streamList.count; ++i)
    if (streamList.entries[i].binary)
      streamHeader(&streamList.entries[i]);
  /* The live file goes beside the first binary stream that is a
   * regular file.  .sol.live */
  for (size_t i = 0; i < streamList.count; ++i)
    if (streamList.entries[i].binary && PlinthStreamMappable(streamList.entries[i].stream)) {
      eventLiveStart(streamList.entries[i].stream, streamList.entries[i].failed);
      break;
    }
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
  context.clockHz = eventClockHz();
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
  if (eventWriterIsAsync() && eventWriterEnqueue(thread, level, kind, slot, data, size, seq, streamList.entries,
                                                 streamList.count) == 0)
    return;
  for (size_t i = 0; i < streamList.count; ++i) {
    EventStreamEntryStruct *entry = &streamList.entries[i];
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
  /* The live file notes its place and header, or its header goes there
   * now, so that a reader finds which block a program that died before
   * writing the rest lost, and whether the live file has it.
   * .sol.writer.at */
  if (defer != NULL && data == events
      && PlinthStreamReserve(entry->stream, EVENT_BLOCK_HEADER_LEN + size, &at) == 0) {
    defer->place = eventLivePlace(entry->stream, at, header);
    res = defer->place != 0 ? 0 : PlinthStreamWriteAt(entry->stream, at, header, sizeof header);
    if (res != 0) {
      *failed = res;
      return 0;
    }
    defer->stream = entry->stream;
    defer->entry = (size_t)(entry - streamList.entries);
    defer->offset = at;
    defer->data = data;
    defer->size = size;
    memcpy(defer->header, header, sizeof header);
    return 1;
  }
  check = EventCheck(0, header, EVENT_BLOCK_HEADER_LEN);
  h->check = EventCheck(check, data, size);
  /* One place for header and events, so that no other write lands
   * between them: the writer thread writes without the lock.
   * design/control.txt .sol.writer.one */
  if (PlinthStreamReserve(entry->stream, EVENT_BLOCK_HEADER_LEN + size, &at) == 0) {
    res = PlinthStreamWriteTwoAt(entry->stream, at, header, sizeof header, data, size);
  } else {
    res = PlinthStreamWrite(entry->stream, header, sizeof header);
    if (res == 0)
      res = PlinthStreamWrite(entry->stream, data, size);
  }
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
  unsigned char *base;
  size_t size;
  AVER_LOCKED();
  eventLiveSlotsSay();
  if (source == NULL || !streamList.started)
    return;                     /* the headers will have it */
  eventWriterIdle();            /* no block of the writer's half written: .sol.writer.one */
  if (eventRegistryBlockBuild(source, &base, &size) != 0) {
    eventSay("registry '", source->registry->name, "' joined, but memory ran out to write it ",
             "into the log: its events there cannot be decoded", NULL);
    return;
  }
  /* The block is the header's room, then the registry: one write, so
   * that no other block lands inside it. */
  for (size_t i = 0; i < streamList.count; ++i) {
    EventStreamEntryStruct *entry = &streamList.entries[i];
    EventBlockHeaderStruct *bh = (EventBlockHeaderStruct *)base;
    int res;
    if (!entry->binary || entry->failed)
      continue;
    eventBlockHeader(base, size, source->number, EVENT_BLOCK_KIND_REGISTRY, 0, 0);
    bh->flags = (uint16_t)(bh->flags | EVENT_BLOCK_CHECKED);
    bh->index = __atomic_fetch_add(entry->index, 1, __ATOMIC_RELAXED);
    bh->check = EventBlockCheck(base, size);
    res = PlinthStreamWrite(entry->stream, base, size);
    if (res != 0)
      streamFailed(entry, res);
  }
  PlinthFree(base);
}

/* eventStreamWriteHeader, eventStreamWriteBlock -- a header, and a block
 * numbered seq, to a stream not of the session's (a snapshot's, .ctl.snapshot);
 * *index is the stream's next block index.  0 or an errno code.  Lock held. */
int eventStreamWriteHeader(PlinthStream stream)
{
  unsigned char *base;
  size_t size;
  int res = eventHeaderBuild(0, &base, &size);
  AVER_LOCKED();
  if (res == 0) {
    res = PlinthStreamWrite(stream, base, size);
    PlinthFree(base);
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

/* eventStreamCount -- how many streams the session has.  Lock held. */
size_t eventStreamCount(void)
{
  AVER_LOCKED();
  return streamList.count;
}

/* eventStreamsFlush -- flush every stream of the session.  Lock held,
 * or a death's flush that could not take it (eventdump.c). */
void eventStreamsFlush(void)
{
  for (size_t i = 0; i < streamList.count; ++i)
    (void)PlinthStreamFlush(streamList.entries[i].stream);
}

/* eventStreamsClose -- close the streams telltale opened (flushing each
 * first, with flush), unless a thread is still in its writes after the
 * lock (eventWritesUnsettled), and forget them all.  Lock held. */
void eventStreamsClose(int flush)
{
  int unsettled = eventWritesUnsettled();   /* .sol.writer.at */
  AVER_LOCKED();
  for (size_t i = 0; i < streamList.count; ++i) {
    EventStreamEntryStruct *entry = &streamList.entries[i];
    if (flush)
      (void)PlinthStreamFlush(entry->stream);
    if (entry->owned && !unsettled)
      PlinthStreamClose(entry->stream);
  }
  streamList.count = 0;
  streamList.started = 0;
}
