/* <src/event/eventdump.c> -- the traceback, and what telltale does at a death
 *
 * .design: design/plinth.txt .sol.traceback .sol.death
 *
 * The flight recorder's traceback (EventDump, EventDumpTo): the latest
 * events of every thread's buffers, whatever their kind's output, merged
 * in time order and formatted as eventcnv formats them.  At a death (a
 * fatal signal, a failed assertion) telltale says what happened, prints
 * the traceback and flushes every thread's buffers.  All of it is
 * async-signal-safe: no malloc, no stdio, and the lock is waited for only
 * a moment, since its holder may be the thread that died.
 */

#include <string.h>

#include "eventint.h"
#include "eventdecode.h"
#include "plinthclock.h"

/* Death ------------------------------------------------------------- */

/* lockWithin -- claim the lock, waiting at most about ns for a thread
 * that holds it; 1 if claimed.  At death the lock must not be waited
 * for without end (its holder may be stuck), but a moment's wait lets
 * a thread finish writing a block.  Async-signal-safe.  .sol.death */
static int lockWithin(uint64_t ns)
{
  for (uint64_t waited = 0; ; waited += 1000000) {
    if (PlinthLockTry())
      return 1;
    if (waited >= ns)
      return 0;
    PlinthSleepNs(1000000);
  }
}

#define DEATH_LOCK_WAIT_NS ((uint64_t)200 * 1000000)

/* DumpEntryStruct -- an event found in a buffer, for the traceback */
typedef struct DumpEntryStruct {
  EventClock clock;
  const unsigned char *event;
  EventThreadStruct *thread;
  EventKindBufStruct *kb;       /* its buffer */
  unsigned moves;               /* the buffer's ring moves when it was found */
  unsigned slack;               /* moves it survives: 1 in the current slot */
  unsigned kind;
  uintptr_t limit;              /* the end of its slot's data */
} DumpEntryStruct;

/* DumpHeapStruct -- the latest events offered: a min-heap by clock */
typedef struct DumpHeapStruct {
  DumpEntryStruct *e;
  size_t n, cap;
  size_t seen;                  /* events offered */
} DumpHeapStruct;

static DumpEntryStruct dumpEntries[DUMP_LIMIT];  /* static: no malloc in a signal handler */

static void dumpSwap(DumpEntryStruct *a, DumpEntryStruct *b)
{
  DumpEntryStruct t = *a;
  *a = *b;
  *b = t;
}

/* dumpSift -- restore the heap below i; max: a max-heap, else a min-heap */
static void dumpSift(DumpEntryStruct *e, size_t i, size_t n, int max)
{
  for (;;) {
    size_t best = i, l = 2 * i + 1, r = l + 1;
    if (l < n && (max ? e[l].clock > e[best].clock : e[l].clock < e[best].clock))
      best = l;
    if (r < n && (max ? e[r].clock > e[best].clock : e[r].clock < e[best].clock))
      best = r;
    if (best == i)
      return;
    dumpSwap(&e[i], &e[best]);
    i = best;
  }
}

static void dumpOffer(DumpHeapStruct *h, const DumpEntryStruct *entry)
{
  if (h->n < h->cap) {
    size_t i = h->n++;
    h->e[i] = *entry;
    while (i > 0 && h->e[(i - 1) / 2].clock > h->e[i].clock) {
      dumpSwap(&h->e[(i - 1) / 2], &h->e[i]);
      i = (i - 1) / 2;
    }
  } else if (h->cap > 0 && entry->clock > h->e[0].clock) {
    h->e[0] = *entry;
    dumpSift(h->e, 0, h->n, 0);
  }
}

/* dumpRange -- offer the committed events from p, in a slot ending at
 * limit, that are no later than bound */
static void dumpRange(DumpHeapStruct *h, DumpEntryStruct *entry, const unsigned char *p,
                      uintptr_t limit, EventClock bound)
{
  size_t length;
  const EventRegistryStruct *registry = eventSlotRegistry(entry->kind);
  entry->limit = limit;
  while (eventCommitted(registry, p, limit, &length)) {
    memcpy(&entry->clock, p + 4, sizeof entry->clock);
    if (entry->clock <= bound) {
      entry->event = p;
      dumpOffer(h, entry);
      ++h->seen;
    }
    p += length;
  }
}

/* dumpScan -- offer a thread's events from every level and kind: the
 * slot before the current one up to where it ended, then the current
 * one up to its first uncommitted event.  .sol.ring */
static void dumpScan(DumpHeapStruct *h, EventThreadStruct *t, EventClock bound)
{
  for (unsigned level = 0; level < LEVEL_LIMIT; ++level)
    for (unsigned kind = 0; kind < eventSlotsEnd; ++kind) {   /* kind: a slot */
      EventKindBufStruct *kb = &t->levels[level][kind];
      unsigned s = kb->current, o = 1 - s;
      DumpEntryStruct entry;
      if (eventSlots[kind].source == NULL)
        continue;
      entry.thread = t;
      entry.kb = kb;
      entry.kind = kind;
      entry.moves = atomic_load_explicit(&kb->moves, memory_order_acquire);
      entry.slack = 0;
      if (kb->slot[o] != NULL && kb->previousEnd != 0)
        dumpRange(h, &entry, kb->slot[o] + EVENT_BLOCK_HEADER_LEN, kb->previousEnd, bound);
      entry.slack = 1;
      if (kb->slot[s] != NULL)
        dumpRange(h, &entry, kb->slot[s] + EVENT_BLOCK_HEADER_LEN,
                  (uintptr_t)kb->slot[s] + kb->slotSize[s], bound);
    }
}

/* dumpCopy -- copy an entry's event; 0 if it may have been overwritten
 * since it was found (its ring moved on: only without the lock) */
static int dumpCopy(const DumpEntryStruct *entry, unsigned char *copy, size_t size)
{
  size_t length;
  uintptr_t limit = (uintptr_t)entry->event + size;
  if (!eventCommitted(eventSlotRegistry(entry->kind), entry->event,
                      limit < entry->limit ? limit : entry->limit, &length))
    return 0;
  memcpy(copy, entry->event, length);
  atomic_thread_fence(memory_order_acquire);
  return atomic_load_explicit(&entry->kb->moves, memory_order_relaxed) - entry->moves
         <= entry->slack;
}

/* threadLabel -- "T3 (worker-1)", or "T3" for a thread with no name */
static const char *threadLabel(char *buf, size_t size, const EventThreadStruct *t)
{
  char number[DECIMAL_MAX + 1];
  eventFormatUnsigned(number, t != NULL ? t->serial : 0);
  buf[0] = '\0';
  eventAppend(buf, size, "T");
  eventAppend(buf, size, number);
  if (t != NULL && t->name[0] != '\0') {
    eventAppend(buf, size, " (");
    eventAppend(buf, size, t->name);
    eventAppend(buf, size, ")");
  }
  return buf;
}

/* dumpSelect -- find the events to show: self (the thread that failed,
 * or called) gets up to half of count, more if the other threads have
 * fewer than the rest; they get the rest.  The entries end up in
 * dumpEntries, oldest first; returns how many are self's in *mineReturn
 * and the others' in *restReturn. */
static size_t dumpSelect(unsigned count, EventThreadStruct *self, EventClock bound,
                         size_t *mineReturn, size_t *restReturn)
{
  DumpHeapStruct mine, rest;
  size_t n;
  memset(&mine, 0, sizeof mine);
  memset(&rest, 0, sizeof rest);
  if (self != NULL)
    dumpScan(&mine, self, bound);
  for (EventThreadStruct *t = eventSession.threads; t != NULL; t = t->next)
    if (t != self)
      dumpScan(&rest, t, bound);
  mine.cap = mine.seen < (count + 1) / 2 ? mine.seen : (count + 1) / 2;
  rest.cap = rest.seen < count - mine.cap ? rest.seen : count - mine.cap;
  mine.cap = mine.seen < count - rest.cap ? mine.seen : count - rest.cap;
  mine.e = dumpEntries;
  rest.e = dumpEntries + mine.cap;
  /* (Without the lock the second count can differ from the first.) */
  if (self != NULL)
    dumpScan(&mine, self, bound);
  for (EventThreadStruct *t = eventSession.threads; t != NULL; t = t->next)
    if (t != self)
      dumpScan(&rest, t, bound);
  n = mine.n + rest.n;
  /* Heap sort, oldest first. */
  for (size_t i = n / 2; i > 0; --i)
    dumpSift(dumpEntries, i - 1, n, 1);
  for (size_t end = n; end > 1; --end) {
    dumpSwap(&dumpEntries[0], &dumpEntries[end - 1]);
    dumpSift(dumpEntries, 0, end - 1, 1);
  }
  *mineReturn = mine.n;
  *restReturn = rest.n;
  return n;
}

/* dumpHeading -- what the traceback holds, and the threads it names;
 * at a death, the moment of the failure, where it is cut (bound) */
static void dumpHeading(int fd, size_t n, EventThreadStruct *self, const char *why,
                        size_t mine, size_t rest, const EventFormatContextStruct *context,
                        EventClock bound, int dying)
{
  char times[64];
  char line[TEXT_LINE_MAX], label[64];
  char number[DECIMAL_MAX + 1], ofSelf[DECIMAL_MAX + 1], ofRest[DECIMAL_MAX + 1];
  eventFormatUnsigned(number, n);
  if (self != NULL) {
    eventFormatUnsigned(ofSelf, mine);
    eventFormatUnsigned(ofRest, rest);
    eventSayTo(fd, "the last ", number, " events in the flight recorder, oldest first: ", ofSelf,
               " of ", threadLabel(label, sizeof label, self), ", which ", why, ", and ", ofRest,
               " of the other threads", NULL);
  } else
    eventSayTo(fd, "the last ", number, " events in the flight recorder, oldest first", NULL);
  line[0] = '\0';
  for (EventThreadStruct *t = eventSession.threads; t != NULL; t = t->next)
    for (size_t i = 0; i < n; ++i)
      if (dumpEntries[i].thread == t) {
        eventAppend(line, sizeof line, line[0] == '\0' ? "threads: " : ", ");
        eventAppend(line, sizeof line, threadLabel(label, sizeof label, t));
        break;
      }
  if (line[0] != '\0')
    eventSayTo(fd, line, NULL);
  if (dying && EventFormatTimes(times, sizeof times, bound, context) < sizeof times)
    eventSayTo(fd, "(seconds since start, UTC time, thread, kind, event, its fields), up to the "
               "failure at ", times + strspn(times, " "), ":", NULL);
  else
    eventSayTo(fd, "(seconds since start, UTC time, thread, kind, event, its fields):", NULL);
}

/* dump -- the traceback: the latest count events, oldest first, to fd.
 * design/plinth.txt .sol.traceback
 *
 * Only events no later than bound (the moment of failure) are shown.
 * With the lock held no ring moves, so what was found stays; without
 * it, an event whose ring moved on is counted as unreadable rather than
 * shown torn.  Async-signal-safe. */
static void dump(int fd, unsigned count, EventThreadStruct *self, const char *why,
                 EventClock bound, int locked, int dying)
{
  size_t n, mine, rest, unreadable = 0;
  EventLayoutStruct layout;
  EventFormatContextStruct context;
  char line[TEXT_LINE_MAX], number[DECIMAL_MAX + 1];
  if (count > DUMP_LIMIT)
    count = DUMP_LIMIT;
  /* The clock's rate by the reader's rule (.sol.clock), from the
   * stream's ClockRate: at death, emitted now if it was not sent, at a
   * level of its own (.sol.signal.level). */
  if (dying && locked && eventThreadState != NULL) {
    int token = eventSignalEnter(0, UINTPTR_MAX, 0);  /* never seen as left */
    (void)eventClockSync(EventSyncFinal);
    eventSignalLeave(token);
  }
  n = dumpSelect(count, self, bound, &mine, &rest);
  EventLayoutNative(&layout);
  EventFormatContextInit(&context, EVENT_SOURCE.registry);
  for (unsigned slot = 0; slot < eventSlotsEnd; ++slot)   /* every registry's kinds */
    if (eventSlots[slot].source != NULL) {
      const char *kind = eventSlotView(slot)->kinds[eventSlots[slot].kind].name;
      size_t width = strlen(kind);
      if (width > context.kindWidth && width <= 2 * EVENT_NAME_MAX + 1)
        context.kindWidth = (unsigned)width;
    }
  context.label = eventLabelLookup;
  context.clockHz = eventClockHz();
  context.startClock = eventSession.startClock;
  context.startRealtime = eventSession.startRealtime;
  dumpHeading(fd, n, self, why, mine, rest, &context, bound, dying);
  for (size_t i = 0; i < n; ++i) {
    DumpEntryStruct *e = &dumpEntries[i];
    unsigned char copy[EVENT_SIZE_MAX];
    EventRecordStruct rec;
    size_t len;
    if (!dumpCopy(e, copy, sizeof copy)
        || EventDecode(&layout, eventSlotRegistry(e->kind), copy, sizeof copy, &rec, NULL)
           != EventDecodeOK) {
      ++unreadable;
      continue;
    }
    rec.thread = e->thread->serial;
    rec.kind = eventSlots[e->kind].kind;
    context.registry = eventSlotView(e->kind);   /* each event its own registry's: .reg.many */
    len = EventFormat(line, sizeof line - 1, &rec, &context);
    if (len > sizeof line - 2)
      len = sizeof line - 2;
    line[len++] = '\n';
    PlinthWriteFd(fd, line, len);
  }
  if (unreadable > 0) {
    eventFormatUnsigned(number, unreadable);
    eventSayTo(fd, number, " of them could not be read: other threads overwrote them"
               " while the traceback was taken, without the lock", NULL);
  }
}

/* dumpNow -- a traceback asked for, not a death: self is given a share */
static void dumpNow(int fd, unsigned count, EventThreadStruct *self)
{
  EventClock bound;
  int locked;
  eventRingsFreeze(1);
  bound = PlinthClockNow();
  locked = lockWithin(DEATH_LOCK_WAIT_NS);
  if (!locked)
    eventSayTo(fd, "another thread holds telltale's lock: reading buffers without it", NULL);
  dump(fd, count, self, "called", bound, locked, 0);
  if (locked)
    PlinthLockRelease();
  eventRingsFreeze(0);
}

/* EventDumpTo -- the traceback of the calling thread and the others, to
 * fd: for a program's own fatal-signal handler and logger */
void EventDumpTo(int fd, unsigned count)
{
  dumpNow(fd, count, eventThreadState);
}

/* EventDump -- the latest events of every thread, to stderr: what a
 * debugger calls (the thread it calls from is no more than any other) */
void EventDump(unsigned count)
{
  dumpNow(2, count, NULL);
}

/* Snapshot.  design/tools.txt .ctl.snapshot */

/* snapshotRange -- the committed events from p in a slot ending at
 * limit, as one block of the snapshot; 0 or an errno code */
static int snapshotRange(PlinthStream stream, uint32_t *index, uint64_t *seq, uint64_t *events,
                         const EventThreadStruct *t, unsigned level, unsigned kind,
                         const unsigned char *p, uintptr_t limit)
{
  const unsigned char *end = p;
  size_t length;
  uint64_t n = 0;
  while (eventCommitted(eventSlotRegistry(kind), end, limit, &length)) {
    end += length;
    ++n;
  }
  if (n == 0)
    return 0;
  *events += n;
  return eventStreamWriteBlock(stream, index, t->serial, kind, level, p, (size_t)(end - p),
                               (*seq)++);
}

/* eventSnapshotWrite -- the flight recorder as a log of its own: the
 * header; every thread's committed events of every level and kind,
 * output or not, sent or not (the slot before the current one, then the
 * current one, as the traceback reads them: .sol.ring); and a
 * StreamSnapshot, which ends it as StreamEnd ends a log.  Its blocks are numbered from
 * 0 in its own order.  Lock held, so no ring moves meanwhile. */
int eventSnapshotWrite(PlinthStream stream, uint64_t *eventsReturn)
{
  uint32_t index = 0, serial = 1;
  uint64_t seq = 0, events = 0;
  EventStructStreamSnapshot end;
  int res = eventStreamWriteHeader(stream);
  for (EventThreadStruct *t = eventSession.threads; t != NULL && res == 0; t = t->next) {
    serial = t->serial;
    for (unsigned level = 0; level < LEVEL_LIMIT && res == 0; ++level)
      for (unsigned kind = 0; kind < eventSlotsEnd && res == 0; ++kind) {
        const EventKindBufStruct *kb = &t->levels[level][kind];
        if (eventSlots[kind].source == NULL)
          continue;
        unsigned s = kb->current, o = 1 - s;
        if (kb->slot[o] != NULL && kb->previousEnd != 0)
          res = snapshotRange(stream, &index, &seq, &events, t, level, kind,
                              kb->slot[o] + EVENT_BLOCK_HEADER_LEN, kb->previousEnd);
        if (res == 0 && kb->slot[s] != NULL)
          res = snapshotRange(stream, &index, &seq, &events, t, level, kind,
                              kb->slot[s] + EVENT_BLOCK_HEADER_LEN,
                              (uintptr_t)kb->slot[s] + kb->slotSize[s]);
      }
  }
  if (res == 0) {
    memset(&end, 0, sizeof end);
    end.header.codeLength = EVENT_CODE_LENGTH(EventCodeStreamSnapshot, sizeof end);
    end.header.clock = PlinthClockNow();
    end.blocks = (EventW)seq;
    end.events = (EventW)events;
    res = eventStreamWriteBlock(stream, &index, serial, EventKindTelltale, 0,
                                (const unsigned char *)&end, sizeof end, seq);
  }
  *eventsReturn = events;
  return res;
}

/* flushAll -- send every thread's committed events.  Lock held.  With
 * the asynchronous writer nothing is written here: the writer may be
 * mid-write in the same stream; it goes on until the process ends, and
 * the live file keeps the rest.  .sol.death, .sol.writer */
static int flushAll(void)
{
  if (eventWriterIsAsync())
    return 16; /* EBUSY */
  eventWritesFlush();           /* blocks placed before these: .sol.writer.at */
  for (EventThreadStruct *t = eventSession.threads; t != NULL; t = t->next)
    eventThreadFlush(t, 0);
  eventStreamsFlush();
  return 0;
}

/* EventFlushAll -- send every thread's committed events to the streams,
 * from anywhere, a fatal-signal handler included.  .sol.death */
int EventFlushAll(void)
{
  int res;
  if (!lockWithin(DEATH_LOCK_WAIT_NS))
    return 11; /* EAGAIN */
  res = flushAll();
  PlinthLockRelease();
  return res;
}

/* death -- telltale's part of a death: say what happened, the
 * traceback (of events up to since, if not 0, else now), and the flush,
 * under the lock if it can be had.  .sol.death */
static void death(const char *what, const char *detail, EventClock since)
{
  EventClock bound;
  EventThreadStruct *self = eventThreadState;
  int locked;
  char label[64];
  eventRingsFreeze(1);
  bound = PlinthClockNow();
  if (since != 0 && since < bound)
    bound = since;
  locked = lockWithin(DEATH_LOCK_WAIT_NS);
  if (!eventSession.dumped) {
    eventSession.dumped = 1;
    eventSay(what, detail, " in thread ", threadLabel(label, sizeof label, self), NULL);
    if (!locked)
      eventSay("another thread holds telltale's lock: reading buffers without it", NULL);
    dump(2, eventSession.dumpCount, self, "failed", bound, locked, 1);
  }
  if (!locked)
    eventSay("another thread holds telltale's lock: buffers are not flushed;",
             " eventcnv recovers them from ",
             eventLiveName() != NULL ? eventLiveName() : "(no live file)", NULL);
  else {
    (void)flushAll();
    PlinthLockRelease();
  }
  eventRingsFreeze(0);
}

/* fatalSignal -- telltale's part of a fatal signal.  The plinth then
 * passes the signal on.  .sol.signal */
static void fatalSignal(int sig, const char *name)
{
  (void)sig;
  /* A fault the program's handler tried first came earlier. */
  death("fatal signal ", name, PlinthFaultClock());
}

/* EventAssertFail -- an assertion failed: say so, dump, flush, abort.
 * design/plinth.txt .sol.assert */
void EventAssertFail(const char *condition, const char *file, unsigned line)
{
  char number[DECIMAL_MAX + 1], detail[MESSAGE_MAX + 1] = ": ";
  eventFormatUnsigned(number, line);
  eventAppend(detail, sizeof detail, condition);
  eventAppend(detail, sizeof detail, " at ");
  eventAppend(detail, sizeof detail, file);
  eventAppend(detail, sizeof detail, ":");
  eventAppend(detail, sizeof detail, number);
  death("assertion failed", detail, 0);
  PlinthAbort();
}

/* EventFatalSignals -- install (on) or remove (off) telltale's handlers
 * for fatal signals.  Installed at start unless TELLTALE_SIGNALS=off. */
int EventFatalSignals(int on)
{
  int res = 0;
  PlinthLockClaim();
  if (on && !eventSession.signals) {
    res = PlinthFatalSignalsInstall(fatalSignal);
    eventSession.signals = res == 0;
  } else if (!on && eventSession.signals) {
    PlinthFatalSignalsRemove();
    eventSession.signals = 0;
  }
  PlinthLockRelease();
  return res;
}

