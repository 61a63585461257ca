/* <src/event/eventwriter.c> -- the writes after the lock, and the writer thread
 *
 * .design: design/control.txt .sol.writer
 *
 * Blocks that are placed in a file stream under the lock and written
 * after it by the thread that filled them (.sol.writer.at); and the
 * asynchronous writer thread, with its queue of jobs and the live
 * regions handed to it (.sol.writer, .sol.writer.detach).
 *
 * Locking: the writer never takes the plinth's lock; its queue and the
 * slots' pending counts are guarded by the queue lock.
 */

#include <string.h>

#include "eventint.h"

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
      eventStreamLost(w->entry, w->stream, res, w->data, w->size);
    }
    eventLivePlaced(w->place);
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
  AVER_LOCKED();
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
  AVER_LOCKED();
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

/* The writer's mode: blocks go to it (writerAsync), and, when it is
 * behind, events are dropped and counted rather than waited for
 * (writerDrops: TELLTALE_WRITER=async,drop).  This file's alone; the
 * others ask through eventWriterIsAsync and set through
 * eventWriterAsyncSet and eventWriterDropsSet.  Plinth lock held to
 * change them; the child of fork keeps them. */
static int writerAsync, writerDrops;

int eventWriterIsAsync(void)
{
  return writerAsync;
}

void eventWriterAsyncSet(int async)
{
  writerAsync = async != 0;
}

void eventWriterDropsSet(int drop)
{
  writerDrops = drop != 0;
}

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
/* A sleeping writer is woken once this many jobs are queued, by a job
 * not in the live file, or by a thread about to wait for it
 * (writerAwait): each wake costs the emitting thread more than the
 * events of its block at 100 ns of work an event, and the writer finds
 * fewer within WRITER_LOOK_NS anyway.  .sol.writer.wake */
#define WRITER_WAKE_JOBS 4
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
    writerAsync = 0;
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
  AVER_UNLOCKED();
  PlinthLockClaim();
  eventWriterIdle();            /* before others write: .sol.writer.one */
  writerAsync = 0;
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

/* writerAwait -- wait on the queue for the writer, waking it first:
 * it may be asleep with fewer than WRITER_WAKE_JOBS jobs queued.  Queue
 * lock held. */
static void writerAwait(void)
{
  PlinthQueueWake();
  PlinthQueueWait();
}

/* writerRun -- the writer thread: write jobs as they come */
static void writerRun(void)
{
  for (;;) {
    JobStruct job;
    AVER_UNLOCKED();            /* the writer never takes it: .sol.writer */
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
    eventBlockWriteTo(job.streams, job.streamCount, job.serial, job.kind, job.level, job.data,
                      job.size, job.seq);
    PlinthQueueClaim();
    AVER(*writer.writingPending > 0);
    --*writer.writingPending;   /* the job's, or its region's if detached since */
    writer.writingPending = NULL;
    PlinthQueueWake();
    PlinthQueueRelease();
  }
}

/* eventWriterEnqueue -- queue a block for the writer, to the session's
 * streams as they are now (a copy of them).  Plinth lock held.
 * Returns nonzero if there is no writer: the caller writes it. */
int eventWriterEnqueue(EventThreadStruct *thread, unsigned level, unsigned kind, unsigned slot,
                       const unsigned char *data, size_t size, uint64_t seq,
                       const EventStreamEntryStruct *streams, size_t streamCount)
{
  JobStruct *job;
  AVER_LOCKED();
  AVER(size > 0 && slot < 2);
  if (!writer.started) {
    if (PlinthWriterStart(writerRun) != 0) {
      eventSay("cannot start the writer thread: writing synchronously", NULL);
      writerAsync = 0;
      return 1;
    }
    writer.started = 1;
  }
  PlinthQueueClaim();
  while (writer.count == JOB_LIMIT)
    writerAwait();
  AVER(writer.count < JOB_LIMIT);
  job = &writer.jobs[(writer.head + writer.count) % JOB_LIMIT];
  memcpy(job->streams, streams, streamCount * sizeof *streams);
  job->streamCount = streamCount;
  job->data = data;
  job->size = size;
  job->seq = seq;
  job->serial = thread->serial;
  job->kind = kind;
  job->level = level;
  job->pending = &thread->levels[level][kind].pending[slot];
  ++*job->pending;
  ++writer.count;
  if (writer.count >= WRITER_WAKE_JOBS || !eventLiveSlot(&thread->levels[level][kind], slot))
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
    writerAwait();
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
    writerAwait();
  busy = kb->pending[s] > 0;
  PlinthQueueRelease();
  return busy;
}

/* slotDetach -- free slot s of a live region the writer still
 * reads by handing the region to the writer's jobs, taking in exchange
 * a region they are done with, if there is one of its size: 0 if the
 * slot is free (its region kept, exchanged, or handed over and none
 * taken), else nonzero.  Plinth lock held; no memory is allocated or
 * freed, as a signal handler may be here.  .sol.writer.detach */
static int slotDetach(EventKindBufStruct *kb, unsigned s)
{
  DetachedStruct *d = NULL;
  int busy;
  AVER_LOCKED();
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
    AVER(d->base == NULL || d->pending == 0);
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
    kb->liveGen[s] = eventLiveGen();
  }
  busy = kb->pending[s] > 0;
  PlinthQueueRelease();
  return busy;
}

/* eventSlotFree -- make slot s free of the writer's jobs: a live
 * region they read handed over to them (slotDetach), else waited for,
 * or, when dropping rather than waiting, not: 0 if the slot is free,
 * else nonzero.  Plinth lock held.  .sol.writer, .sol.writer.detach */
int eventSlotFree(EventKindBufStruct *kb, unsigned s)
{
  AVER_LOCKED();
  return slotDetach(kb, s) && eventSlotBusy(kb, s, !writerDrops);
}

/* eventSlotsReturned -- give back to the live file the regions handed
 * to the writer, once it is done with them.  Plinth lock held. */
void eventSlotsReturned(void)
{
  DetachedStruct done[DETACH_LIMIT];
  size_t n = 0;
  AVER_LOCKED();
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
  writerAsync = async != 0;
  writerDrops = async && drop;
  PlinthLockRelease();
  return 0;
}



/* eventWriterAfterFork -- in the child of fork(): the writer is the
 * parent's.  design/plinth.txt .sol.fork */
void eventWriterAfterFork(void)
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
}
