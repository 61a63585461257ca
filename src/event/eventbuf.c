/* <src/event/eventbuf.c> -- threads, their buffers, the slow path and flush
 *
 * .design: design/runtime.txt
 *
 * The slow path of EventReserve (event.h): setting a thread up, making a
 * kind's buffer, and making room when it is full, as a block sent to the
 * streams (eventout.c, eventwriter.c) with the older half kept for the
 * flight recorder.  Each thread's buffers come in levels, one for its
 * ordinary code and one for each signal handler nested on it
 * (eventlevel.c moves a thread between them).  Here too: flushing a
 * thread's buffers, output control's cuts, drops, the thread's exit and
 * the child's start after fork; the session's end is eventfinish.c's.
 *
 * Locking: the plinth's lock guards the session and the thread list.  A
 * thread's buffers are written only by that thread, except at
 * EventFinish (design/runtime.txt .sol.finish); the asynchronous writer
 * reads full ones, under the queue lock's rules (.sol.writer).
 */

#include <string.h>

#include "eventint.h"
#include "eventdecode.h"


/* Threads and the slow path ---------------------------------------- */

_Thread_local EventThreadStruct *eventThreadState
  __attribute__((tls_model("initial-exec")));

/* exitedSerial -- the serial of the calling thread once its exit has
 * run, for its late events (.sol.thread.late); 0 before */
static _Thread_local uint32_t exitedSerial __attribute__((tls_model("initial-exec")));

/* SLOT_OWN -- the slot of telltale's own kind: its registry is the first */
#define SLOT_OWN (EVENT_SOURCE.base + EventKindTelltale)

/* hotBuf -- a level's next and limit: in its source's thread-local
 * buffers if it is running (only the calling thread's run), else kept */
static EventBufStruct *hotBuf(EventThreadStruct *thread, unsigned level, unsigned slot)
{
  if (level == thread->level && thread->deeper == 0) {
    if (thread->hot[slot] == NULL)
      thread->hot[slot] = eventSlotHot(slot);
    return thread->hot[slot];
  }
  return &thread->saved[level][slot];
}

/* eventTlsClear -- every source's next and limit, zero on the calling
 * thread: it has no buffers (it exits, or is a fork's child) */
void eventTlsClear(void)
{
  for (unsigned i = 0; i < SOURCE_LIMIT; ++i)
    if (eventSources[i] != NULL)
      memset(eventSources[i]->bufs(), 0,
             eventSources[i]->registry->kindCount * sizeof(EventBufStruct));
}

static void threadExit(void *arg);

/* threadCreate -- set the calling thread up.  design/runtime.txt .sol.thread
 * *createdReturn is 0 if a signal handler set it up meanwhile. */
static EventThreadStruct *threadCreate(int *createdReturn)
{
  EventThreadStruct *thread = PlinthPagesAlloc(sizeof *thread);   /* zeroed */
  *createdReturn = 0;
  if (thread == NULL)
    return NULL;
  PlinthLockClaim();
  if (eventThreadState != NULL) {    /* a handler's event, since our first look */
    PlinthLockRelease();
    PlinthPagesFree(thread, sizeof *thread);
    return eventThreadState;
  }
  *createdReturn = 1;
  thread->exitSaid = exitedSerial != 0;
  thread->osid = PlinthThreadOSId();
  thread->serial = thread->exitSaid ? exitedSerial : ++eventSession.threadSerial;
  eventSessionClock();
  thread->bufferSize = eventSession.bufferSize;
  thread->next = eventSession.threads;
  if (eventSession.threads != NULL)
    eventSession.threads->prev = thread;
  eventSession.threads = thread;
  if (eventSession.signals)
    thread->altStack = PlinthAltStackCreate();
  eventThreadState = thread;
  PlinthLockRelease();
  (void)PlinthThreadOnExit(threadExit, thread);
  return thread;
}

/* threadAnnounce -- the thread's first events: ThreadStart, ThreadName */
static void threadAnnounce(EventThreadStruct *thread)
{
  char name[64];
  if (thread->serial == 1) {
    char program[256];
    if (PlinthProgramName(program, sizeof program) != 0)
      program[0] = '\0';
    EVENT_UUUS(StreamStart, EVENT_VERSION_MAJOR, EVENT_VERSION_MEDIAN, EVENT_VERSION_MINOR,
               program);
  }
  EVENT_UW(ThreadStart, thread->serial, (EventW)PlinthThreadOSId());
  if (PlinthThreadName(name, sizeof name) == 0 && name[0] != '\0') {
    eventCopyString(thread->name, sizeof thread->name, name);
    EVENT_US(ThreadName, thread->serial, name);
  }
  if (thread->serial == 1)
    (void)eventClockSync(EventSyncAny);
}

/* slotPrepare -- make slot s of a kind ready to fill.  Lock held.
 *
 * If the session has a live file, the slot is a region of the live file
 * (reused if the slot has one, its old events, all sent or passed over,
 * cleared) under a fresh block header: what is stored there survives
 * the program's death, and if the kind's output is off the header says
 * so.  Otherwise it is memory, reused if the slot has some.  Either is
 * sent when it fills if output is on, else is the ring.
 * design/control.txt .sol.live, design/runtime.txt .sol.ring, design/control.txt .sol.control.cut */
static int slotPrepare(EventThreadStruct *thread, unsigned level, unsigned kind, unsigned s)
{
  EventKindBufStruct *kb = &thread->levels[level][kind];
  int output = (eventOutputApplied & SLOT_BIT(kind)) != 0;
  AVER_LOCKED();
  AVER(s < 2);
  /* The writer may still be writing what the slot held: hand a live
   * region over to it (.sol.writer.detach), else wait for it, or, when
   * dropping rather than waiting, say so (.sol.writer). */
  if (eventSlotFree(kb, s))
    return 11; /* EAGAIN */
  if (output)
    eventSessionStart();
  /* A kind whose output is off fills a region too, marked so that
   * recovery takes nothing from it, so that output switched on later
   * has its events in the live file at once (.sol.control.cut). */
  /* A live region, or else memory.  .sol.live */
  if (eventLiveSlotPrepare(thread, level, kind, s, output) == 0)
    return 0;
  if (kb->mapped[s])
    eventSlotRelease(kb, s);
  if (kb->slot[s] == NULL) {
    kb->slot[s] = PlinthPagesAlloc(thread->bufferSize);
    if (kb->slot[s] == NULL)
      return 12; /* ENOMEM */
    kb->slotSize[s] = thread->bufferSize;
  }
  return 0;
}

/* slotUse -- start filling slot s */
static void slotUse(EventThreadStruct *thread, unsigned level, unsigned kind, unsigned s)
{
  EventKindBufStruct *kb = &thread->levels[level][kind];
  EventBufStruct *buf = hotBuf(thread, level, kind);
  AVER(s < 2 && kb->slot[s] != NULL);
  kb->current = s;
  buf->next = (uintptr_t)kb->slot[s] + EVENT_BLOCK_HEADER_LEN;
  buf->limit = (uintptr_t)kb->slot[s] + kb->slotSize[s] - EVENT_END_SLACK;
  kb->sent = buf->next;
  memset(kb->slot[s] + EVENT_BLOCK_HEADER_LEN, 0, EVENT_END_SLACK);  /* the data end here */
}

/* descFixedSize -- an event's size in this program's layout, but for
 * the characters of its string, if it has one (*stringReturn) */
static size_t descFixedSize(const EventDescStruct *desc, int *stringReturn)
{
  size_t size = EVENT_HEADER_LEN;
  *stringReturn = 0;
  for (const char *f = desc->format; *f != '\0'; ++f) {
    const EventTypeStruct *type = EventTypeOf(*f);
    size += EventTypeSize(type, sizeof(EventP), sizeof(EventW));
    *stringReturn |= type->form == EventTypeSTRING;   /* S: the characters and a NUL */
  }
  return size;
}

/* eventCommitted -- is there a whole, committed event at p, ending by
 * limit?  *lengthReturn gets its length.
 *
 * For a buffer another thread may be writing as this one reads it: the
 * code is stored last, after a release fence (.sol.hot), so an event
 * whose code is seen is whole, and one being written has code 0.  The
 * code and length must also fit the runtime's own registry (a fixed
 * size, or a string's NUL at the end), so that a commit store seen half
 * done, where it straddles a cache line, is taken for what it is: not
 * yet an event.  design/control.txt .sol.flush */
int eventCommitted(const EventRegistryStruct *registry, const unsigned char *p, uintptr_t limit,
                   size_t *lengthReturn)
{
  uint32_t codeLength;
  size_t length, fixed;
  unsigned code;
  int string;
  const EventDescStruct *desc;
  if ((uintptr_t)p + EVENT_HEADER_LEN > limit)
    return 0;
#ifdef EVENT_TSAN
  codeLength = __atomic_load_n((const uint32_t *)(const void *)p, __ATOMIC_ACQUIRE);
#else
  memcpy(&codeLength, p, sizeof codeLength);
  atomic_thread_fence(memory_order_acquire);
#endif
  code = EVENT_CODE_OF(codeLength);
  length = EVENT_LENGTH_OF(codeLength);
  if (code == 0 || length < EVENT_HEADER_LEN || (uintptr_t)p + length > limit)
    return 0;
  desc = EventRegistryLookup(registry, code);
  if (desc == NULL)
    return 0;
  fixed = descFixedSize(desc, &string);
  if (string ? length <= fixed || p[length - 1] != 0 : length != fixed)
    return 0;
  *lengthReturn = length;
  return 1;
}

/* eventCommittedEnd -- the end of the committed events from p on, in a slot
 * that ends at limit */
uintptr_t eventCommittedEnd(unsigned slot, uintptr_t p, uintptr_t limit)
{
  size_t length;
  const EventRegistryStruct *registry = eventSlotRegistry(slot);
  while (eventCommitted(registry, (const unsigned char *)p, limit, &length))
    p += length;
  return p;
}

/* kindFlush -- send what a kind's current slot holds and has not sent.
 * Lock held.  Sent if the kind's output is on, else passed over (the
 * ring keeps it): every change of output cuts the buffers of the kinds
 * it changes at their committed events (outputCut), so that what is
 * after "sent" was all emitted under the present setting.
 *
 * own: the slot is the calling thread's, at its running level, so every
 * event below next is committed.  Otherwise another thread (or a
 * handler this one interrupted) may be writing it: only the committed
 * events after "sent" go, and "sent" moves to their end, so that each
 * event is sent exactly once, whole.  design/control.txt .sol.flush */
static void kindFlushAs(EventThreadStruct *thread, unsigned level, unsigned kind, int own,
                        int output)
{
  EventKindBufStruct *kb = &thread->levels[level][kind];
  unsigned s = kb->current;
  uintptr_t end;
  AVER_LOCKED();
  if (kb->slot[s] == NULL)
    return;
  if (own)
    end = hotBuf(thread, level, kind)->next;
  else
    end = eventCommittedEnd(kind, kb->sent, (uintptr_t)kb->slot[s] + kb->slotSize[s]);
  /* The committed positions lie in the slot's data: sent where slotUse
   * or the last flush left it, end no further than the slot's end. */
  AVER(kb->sent >= (uintptr_t)kb->slot[s] + EVENT_BLOCK_HEADER_LEN);
  AVER(end <= (uintptr_t)kb->slot[s] + kb->slotSize[s]);
  if (end <= kb->sent)
    return;
  if (!output) {
    kb->sent = end;             /* emitted while off: never sent */
    return;
  }
  /* A live slot's block keeps its number through partial sends, so
   * that recovery knows how much of it the log has.  .sol.live */
  eventBlockSend(thread, level, kind, s, (const unsigned char *)kb->sent, end - kb->sent,
                 eventLiveSlot(kb, s) ? kb->seq[s] : eventSession.blocks++);
  kb->sent = end;
}

/* eventOutputApplied -- the output set the buffers were last cut for
 * (lock): a debugger that writes EventKindControl directly is seen at
 * the next slow path or flush (outputSeen).  .sol.control.cut */
EventSlotSet eventOutputApplied;

static void kindFlush(EventThreadStruct *thread, unsigned level, unsigned kind, int own)
{
  kindFlushAs(thread, level, kind, own, (eventOutputApplied & SLOT_BIT(kind)) != 0);
}

static void *dropped(unsigned kind, void *sink);

/* Output control.  design/control.txt .sol.control.cut
 *
 * A change of EventKindControl takes effect at the call, in every
 * thread, with nothing on the emitter's path: under the lock, each
 * buffer of a kind it changes is cut at its committed events (a thread
 * may be half way through the next), sending what is before the cut if
 * output was on, passing over it if off; later sends follow the new
 * setting.  A live region is retagged at the cut, so that recovery
 * takes from it only what was emitted while output was on. */

/* outputCut -- cut every buffer of the kinds whose output changed from
 * was to now: send (or pass over) its committed events, then retag its
 * live region.  A region whose output goes off is retagged only once
 * the writer has written what was sent of it: recovery takes nothing
 * from it after.  Lock held. */
static void outputCut(EventSlotSet was, EventSlotSet now)
{
  EventThreadStruct *self = eventThreadState;
  EventSlotSet changed = was ^ now;
  int retagging = 0;
  AVER_LOCKED();
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1 && (changed & was) != 0)
      eventWriterIdle();
    for (EventThreadStruct *t = eventSession.threads; t != NULL; t = t->next)
      for (unsigned level = 0; level < LEVEL_LIMIT; ++level)
        for (unsigned kind = 0; kind < eventSlotsEnd; ++kind) {
          EventKindBufStruct *kb = &t->levels[level][kind];
          unsigned s = kb->current;
          uintptr_t data;
          if ((changed & SLOT_BIT(kind)) == 0 || kb->slot[s] == NULL)
            continue;
          if (pass == 0) {      /* sent, or passed over, up to the committed events */
            kindFlushAs(t, level, kind, t == self && level == t->level && t->deeper == 0,
                        (was & SLOT_BIT(kind)) != 0);
            continue;
          }
          if (!eventLiveSlot(kb, s))
            continue;
          data = (uintptr_t)kb->slot[s] + EVENT_BLOCK_HEADER_LEN;
          if (!retagging)       /* a kill may tear the header being rewritten */
            eventLiveRetagging(retagging = 1);
          eventLiveRetag(t, level, kind, s, (now & SLOT_BIT(kind)) != 0
                                       ? (uint32_t)(kb->sent - data) : EVENT_LIVE_OUTPUT_OFF);
        }
  }
  if (retagging)
    eventLiveRetagging(0);
}

/* eventOutputCut -- the sources' output control, as EventSourceControl
 * or a debugger wrote it, takes effect now: the buffers of the slots
 * whose output changed are cut.  Lock held.  .sol.control.cut */
void eventOutputCut(void)
{
  EventSlotSet now = eventOutputNow();
  AVER_LOCKED();
  if (now != eventOutputApplied) {
    outputCut(eventOutputApplied, now);
    eventOutputApplied = now;
  }
}

static void outputSeen(void)
{
  eventOutputCut();
}

/* While a traceback is taken, a thread whose buffer fills waits before
 * its ring moves on, so that the events the traceback found stay where
 * they are, even before it has the lock.  design/plinth.txt
 * .sol.traceback */
static _Atomic int ringsFrozen;
static EventThreadStruct *_Atomic ringsFrozenBy;  /* it does not wait */

void eventRingsFreeze(int on)
{
  if (on)
    atomic_store(&ringsFrozenBy, eventThreadState);
  atomic_store(&ringsFrozen, on);
}

static void ringsWait(EventThreadStruct *thread)
{
  while (atomic_load_explicit(&ringsFrozen, memory_order_acquire)
         && atomic_load(&ringsFrozenBy) != thread)
    PlinthSleepNs(100000);
}

/* bufferFull -- make room when a kind's buffer is full: send what it
 * holds, and move to the kind's other slot, keeping this one as the
 * flight recorder's older half.  design/runtime.txt .sol.buffer, .sol.ring */
static int bufferFull(EventThreadStruct *thread, unsigned level, unsigned kind)
{
  EventKindBufStruct *kb = &thread->levels[level][kind];
  unsigned other = 1 - kb->current;
  int res;
  AVER(kb->slot[kb->current] != NULL);
  ringsWait(thread);
  PlinthLockClaim();
  outputSeen();
  /* Blocks for files are written after the lock, so that other threads
   * fill and write theirs meanwhile; not by a handler, which may have
   * interrupted the thread's own writes.  .sol.writer.at */
  thread->writesDefer = thread->depth == 0;
  /* The thread's own events (names, interned strings, labels) go out
   * with each full buffer, and before it, so that a log with no live
   * file to recover from has them wherever it has the thread's data,
   * even if the program is killed between the two writes.
   * .sol.death.limits */
  if (kind != SLOT_OWN)
    kindFlush(thread, level, SLOT_OWN, 1);
  kindFlush(thread, level, kind, 1);
  thread->writesDefer = 0;
  kb->previousEnd = hotBuf(thread, level, kind)->next;
  /* The ring moves on: a traceback read without the lock sees the
   * count change before the slot is overwritten.  .sol.traceback */
  atomic_fetch_add_explicit(&kb->moves, 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  res = slotPrepare(thread, level, kind, other);
  if (res == 0)
    slotUse(thread, level, kind, other);
  else
    (void)dropped(kind, NULL);  /* counted under the lock: EventFinish's report sees it */
  PlinthLockRelease();
  if (thread->depth == 0)
    eventWritesDo(thread);
  return res;
}

/* Events with nowhere to go (memory ran out for a buffer) are counted
 * per kind, never dropped silently: EventsDropped reports them at the
 * next flush, and on stderr.  design/control.txt .sol.dropped */
/* uintptr_t: a word is lock-free everywhere (an 8-byte atomic on a
 * 32-bit platform may take a lock, and this is reached from handlers) */
static _Atomic uintptr_t dropCount[SLOT_LIMIT];

static void *dropped(unsigned kind, void *sink)
{
  static _Atomic int said;
  eventLiveDropped(kind);       /* first: the live file never counts fewer */
  if (atomic_fetch_add(&dropCount[kind], 1) == 0 && !atomic_exchange(&said, 1))
    eventSay("no buffer for kind ", eventSlotName(kind),
             " (memory ran out, the writer is behind with TELLTALE_WRITER=async,drop,",
             " signal handlers nested too deep, an event abandoned by a longjmp out of a",
             " handler, or a handler allocated while the",
             " allocation recorder was starting or ending):",
             " its events are dropped and counted (EventsDropped)", NULL);
  return sink;
}

/* eventDropCount -- an event of the kind that its emitter could not
 * make (a handler's allocation while the allocation recorder starts or
 * ends, .malloc.signal): counted and reported as any drop.  Signal-safe. */
void eventDropCount(unsigned kind)
{
  (void)dropped(kind, NULL);
}

/* eventDropsReport -- emit EventsDropped for the kinds that lost events,
 * from a thread that has a buffer for them (or the report would be
 * lost as well; another thread, or EventFinish, reports instead).
 * Threads report at once (exiting, flushing, outside the lock), so
 * each takes the count it reports by exchange: a load and a subtract
 * let two take the same drops, and the count went below zero, to be
 * reported next as nearly 2^64.  .sol.dropped */
void eventDropsReport(int last)
{
  EventThreadStruct *thread = eventThreadState;
  EventKindBufStruct *kb;
  if (thread == NULL)
    return;
  kb = &thread->levels[thread->level][SLOT_OWN];
  if (thread->deeper > 0 || (kb->slot[kb->current] == NULL && !last))
    return;
  for (unsigned kind = 0; kind < eventSlotsEnd; ++kind) {
    uintptr_t n = atomic_load_explicit(&dropCount[kind], memory_order_relaxed) != 0
                  ? atomic_exchange(&dropCount[kind], 0) : 0;
    if (n != 0) {
      unsigned long drops = kb->drops;
      EVENT_UW(EventsDropped, eventSlotWire(kind), (EventW)n);
      /* The report itself dropped (its buffer full, the writer behind):
       * the count goes back for the next report, or it would be lost. */
      if (kb->drops != drops)
        atomic_fetch_add(&dropCount[kind], n);
    }
  }
}

/* eventOwnFlush -- send the calling thread's buffer of telltale's own
 * kind at its running level, if it has one.  Lock held. */
void eventOwnFlush(void)
{
  EventThreadStruct *self = eventThreadState;
  AVER_LOCKED();
  if (self != NULL)
    kindFlush(self, self->level, SLOT_OWN, 1);
}

/* eventThreadEnsure -- the calling thread, set up and announced on its first
 * use; NULL if memory ran out.  design/runtime.txt .sol.thread */
EventThreadStruct *eventThreadEnsure(void)
{
  EventThreadStruct *thread = eventThreadState;
  int created;
  if (thread != NULL)
    return thread;
  (void)EventInit();
  thread = threadCreate(&created);
  if (thread != NULL && created && !thread->exitSaid)   /* a late one was announced */
    threadAnnounce(thread);
  return thread;
}

/* EventReserveSlow -- the slow path of EventReserve.  design/runtime.txt .sol.slow
 *
 * Sets the thread up on its first event, makes the kind's buffer on its
 * first event of that kind, and makes room when the buffer is full.
 * Own events emitted here (ThreadStart) re-enter; the loop re-checks. */
static void *reserveSlow(unsigned kind, size_t size)   /* kind: the slot */
{
  /* A dropped event is written into the thread's own sink, so that
   * threads that drop share no cache line and race on nothing; only
   * threads that could not be set up at all share this one.  .sol.dropped */
  static unsigned char orphanSink[EVENT_SIZE_MAX + EVENT_END_SLACK];
  EventThreadStruct *thread;
  unsigned level;
  EVENT_ASSERT(kind < SLOT_LIMIT && size >= EVENT_HEADER_LEN && size <= EVENT_SIZE_MAX);
  thread = eventThreadEnsure();
  if (thread == NULL)
    return dropped(kind, orphanSink);
  if (thread->depth > 0)        /* handlers left by longjmp: .sol.signal.jump */
    eventHandlersLeft(thread, (uintptr_t)__builtin_frame_address(0));
  if (thread->deeper > 0)       /* a handler nested past the last level */
    return dropped(kind, thread->sink);
  /* A handler that interrupts from here on runs on a level of its own
   * and puts this level's next and limit back as it found them
   * (.sol.signal.level); what the lock guards it does not enter. */
  level = thread->level;
  for (;;) {
    EventKindBufStruct *kb = &thread->levels[level][kind];
    EventBufStruct *buf = hotBuf(thread, level, kind);
    if (kb->slot[kb->current] == NULL) {
      int res;
      PlinthLockClaim();
      outputSeen();
      res = slotPrepare(thread, level, kind, kb->current);
      if (res == 0) {
        slotUse(thread, level, kind, kb->current);
        kb->previousEnd = 0;
      } else
        (void)dropped(kind, NULL);
      PlinthLockRelease();
      if (res != 0) {
        ++kb->drops;
        return thread->sink;
      }
    }
    if (buf->limit - buf->next >= size) {
      void *p = (void *)buf->next;
      buf->next += size;
      return p;
    }
    if (bufferFull(thread, level, kind) != 0) {
      ++kb->drops;
      return thread->sink;      /* counted by bufferFull */
    }
  }
}

/* An asynchronous cancel waits until the slow path is done: one inside
 * it, between the lock and the writes after it, left a block's place
 * in the log unwritten.  .sol.cancel */
void *EventReserveIn(EventSourceStruct *source, unsigned kind, size_t size)
{
  /* A registry refused (said so when it was) records nothing: an
   * event already past its check goes here. */
  static unsigned char refusedSink[EVENT_SIZE_MAX + EVENT_END_SLACK];
  void *p;
  if (eventSourceReady(source) != 0 || kind >= source->registry->kindCount)
    return refusedSink;
  PlinthCancelHold();
  p = reserveSlow(source->base + kind, size);
  PlinthCancelRelease();
  return p;
}

/* eventThreadFlush -- send what a thread's buffers hold at every
 * level.  Lock held.  own: the thread is the caller, whose running
 * level is sent up to next; every other level, which a handler may
 * have interrupted half way through an event, or another thread may be
 * filling, is sent up to its last committed event (kindFlush).  So a
 * handler's flush, and an exit from a handler, sends the code's events
 * it interrupted.  design/plinth.txt .sol.signal.level, design/control.txt .sol.flush */
void eventThreadFlush(EventThreadStruct *thread, int own)
{
  AVER_LOCKED();
  for (unsigned level = 0; level < LEVEL_LIMIT; ++level)
    for (unsigned kind = 0; kind < eventSlotsEnd; ++kind)
      kindFlush(thread, level, kind,
                own && level == thread->level && thread->deeper == 0);
}

/* eventThreadRelease -- give up a thread's buffers */
void eventThreadRelease(EventThreadStruct *thread)
{
  for (unsigned level = 0; level < LEVEL_LIMIT; ++level)
    for (unsigned kind = 0; kind < eventSlotsEnd; ++kind) {
      EventKindBufStruct *kb = &thread->levels[level][kind];
      eventSlotRelease(kb, 0);
      eventSlotRelease(kb, 1);
      kb->previousEnd = 0;
      kb->current = 0;
      memset(&thread->saved[level][kind], 0, sizeof thread->saved[level][kind]);
    }
}

static void threadFree(EventThreadStruct *thread)
{
  if (thread->prev != NULL)
    thread->prev->next = thread->next;
  else
    eventSession.threads = thread->next;
  if (thread->next != NULL)
    thread->next->prev = thread->prev;
  eventThreadRelease(thread);
  PlinthPagesFree(thread, sizeof *thread);
}

/* exitAbandoned -- a thread exits with events half written, never to be
 * committed (cancelled asynchronously, or pthread_exit from a handler):
 * each is counted as dropped.  Lock held, after the flush.  .sol.cancel */
static void exitAbandoned(EventThreadStruct *thread)
{
  AVER_LOCKED();
  for (unsigned level = 0; level < LEVEL_LIMIT; ++level)
    for (unsigned kind = 0; kind < eventSlotsEnd; ++kind) {
      EventKindBufStruct *kb = &thread->levels[level][kind];
      uintptr_t next;
      if (kb->slot[kb->current] == NULL)
        continue;
      next = hotBuf(thread, level, kind)->next;
      if (kb->slot[kb->current] != NULL && next > kb->sent && eventCommittedEnd(kind, kb->sent, next) < next) {
        (void)dropped(kind, NULL);
        ++kb->drops;
      }
    }
}

/* threadExit -- a thread is exiting: flush its buffers, never lose them.
 * design/runtime.txt .sol.thread.exit */
static void threadExit(void *arg)
{
  EventThreadStruct *thread = arg;
  void *altStack;
  if (thread != eventThreadState)
    return;
  PlinthCancelHold();           /* (a cancel's unwinding holds it already) */
  /* An asynchronous cancel in a write after the lock cut it short: its
   * blocks are written again, whole (.sol.writer.at, .sol.cancel). */
  eventWritesDo(thread);
  thread->writesDefer = 0;
  eventHandlersLeft(thread, (uintptr_t)__builtin_frame_address(0));
  if (!thread->exitSaid)
    EVENT_U(ThreadExit, thread->serial);
  exitedSerial = thread->serial;
  eventDropsReport(1);
  PlinthLockClaim();
  /* Up to the last committed event at every level: an asynchronous
   * cancel, or a handler's pthread_exit, may have cut one short. */
  eventThreadFlush(thread, 0);
  exitAbandoned(thread);
  altStack = thread->altStack;
  threadFree(thread);
  eventThreadState = NULL;           /* before a handler can run again */
  eventTlsClear();
  eventWriterPoke();            /* was it the last thread but the writer? */
  eventCtlPoke();
  PlinthLockRelease();
  PlinthAltStackDestroy(altStack);
  PlinthCancelRelease();
}

/* EventFlush -- send the calling thread's buffers to the streams */
void EventFlush(void)
{
  EventThreadStruct *thread = eventThreadState;
  if (thread == NULL)
    return;
  eventHandlersLeft(thread, (uintptr_t)__builtin_frame_address(0));
  (void)eventClockSync(EventSyncAny);
  eventDropsReport(0);
  PlinthLockClaim();
  outputSeen();
  eventThreadFlush(thread, 1);
  eventWriterIdle();
  eventStreamsFlush();
  PlinthLockRelease();
}

/* eventClockRateSend -- the control thread's ClockRate, once it is due
 * (eventClockRateWait): emitted, written at once so that --follow may
 * print, and the thread then leaves the session as an exiting thread
 * does, so that the end does not wait for it.  .sol.clock.rate */
void eventClockRateSend(void)
{
  EventThreadStruct *thread;
  if (!eventClockSync(EventSyncRate) || (thread = eventThreadState) == NULL)
    return;
  PlinthLockClaim();
  eventThreadFlush(thread, 1);
  eventWriterIdle();
  eventStreamsFlush();
  PlinthLockRelease();
  threadExit(thread);
}

/* eventAfterFork -- in the child of fork(): the parent's buffered events are
 * the parent's to write, its regions of the live file are the parent's
 * file, and its streams are shared with the parent, so the child drops
 * all of them (unmapping affects only the child) and starts a session
 * of its own in a file named after the parent's with ".PID" added.
 * design/plinth.txt .sol.fork */
void eventAfterFork(void)
{
  EventThreadStruct *t, *next;
  /* The child has one thread, but claims the lock (fresh in the child:
   * PlinthAtFork) as every other path does, so that what is said to run
   * with it held does.  .sol.fork */
  PlinthLockClaim();
  eventSession.finished = 0;      /* the child's own session may open its file */
  eventSession.ending = 0;
  eventWriterAfterFork();
  eventLiveAfterFork();
  eventCtlAfterFork();
  for (t = eventSession.threads; t != NULL; t = next) {
    next = t->next;
    threadFree(t);
  }
  eventThreadState = NULL;
  eventTlsClear();
  eventSession.threadSerial = 0;
  /* The parent's drops are the parent's to report: counted again in
   * the child's log they would be reported twice.  .sol.dropped */
  for (unsigned kind = 0; kind < SLOT_LIMIT; ++kind)
    atomic_store(&dropCount[kind], 0);
  eventSessionClose(0);
  eventFileAfterFork();
  PlinthLockRelease();
}


/* eventSlotsLeave -- a registry leaves (dlclose): every thread's
 * buffers of its slots are sent, up to their committed events, and
 * freed, so that the slots can be another's.  Its drops not yet
 * reported are said here: no EventsDropped can name it after.  Lock
 * held.  design/registry.txt .reg.many */
void eventSlotsLeave(unsigned base, unsigned count)
{
  EventThreadStruct *self = eventThreadState;
  AVER_LOCKED();
  eventOutputCut();
  for (EventThreadStruct *t = eventSession.threads; t != NULL; t = t->next)
    for (unsigned level = 0; level < LEVEL_LIMIT; ++level)
      for (unsigned slot = base; slot < base + count; ++slot) {
        EventKindBufStruct *kb = &t->levels[level][slot];
        if (kb->slot[kb->current] != NULL)
          kindFlush(t, level, slot, t == self && level == t->level && t->deeper == 0);
      }
  eventWriterIdle();
  for (EventThreadStruct *t = eventSession.threads; t != NULL; t = t->next)
    for (unsigned level = 0; level < LEVEL_LIMIT; ++level)
      for (unsigned slot = base; slot < base + count; ++slot) {
        EventKindBufStruct *kb = &t->levels[level][slot];
        eventSlotRelease(kb, 0);
        eventSlotRelease(kb, 1);
        memset(kb, 0, sizeof *kb);
        memset(&t->saved[level][slot], 0, sizeof t->saved[level][slot]);
        t->hot[slot] = NULL;
      }
  for (unsigned slot = base; slot < base + count; ++slot) {
    uintptr_t n = atomic_exchange(&dropCount[slot], 0);
    if (n != 0) {
      char digits[DECIMAL_MAX + 1];
      eventFormatUnsigned(digits, n);
      eventSay(digits, " events of kind ", eventSlotName(slot),
               " were dropped before its registry was unloaded", NULL);
    }
  }
}
