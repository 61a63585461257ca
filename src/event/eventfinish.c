/* <src/event/eventfinish.c> -- the session's end: finish, exec and unload
 *
 * .design: design/runtime.txt .sol.finish
 *
 * EventFinish and the end at exit (.sol.finish), the program's exec
 * (.sol.exec), and the library's unload (.sol.unload): every thread's
 * committed events sent, the drops reported, the streams closed and
 * the live file ended.
 *
 * Locking: the plinth's lock guards the session; the writer is waited
 * for (eventWriterIdle) before the streams close.
 */

#include "eventint.h"

/* eventSessionClose -- close the streams telltale opened (flushing each
 * first, with flush), and forget the streams, the start and the block
 * count: the next event starts a new session.  Lock held. */
void eventSessionClose(int flush)
{
  AVER_LOCKED();
  eventStreamsClose(flush);
  eventSession.blocks = 0;
  eventSession.startClock = 0;
  eventSession.rateClock = eventSession.syncClock = 0;
  eventInternSessionEnd();
}

/* exitsUnseen -- at the end, ThreadExit for each thread that is gone
 * although its exit never ran: its first event came after its key
 * destructors (.sol.thread.late); with all, for every other thread
 * whose exit was not said (at unload: .sol.unload).  Emitted here,
 * under its serial. */
static void exitsUnseen(int all)
{
  uint32_t serials[64];
  size_t n;
  do {
    n = 0;
    PlinthLockClaim();
    for (EventThreadStruct *t = eventSession.threads; t != NULL && n < 64; t = t->next)
      if (t != eventThreadState && !t->exitSaid && (all || !PlinthThreadAlive(t->osid))) {
        t->exitSaid = 1;
        serials[n++] = t->serial;
      }
    PlinthLockRelease();
    for (size_t i = 0; i < n; ++i)
      EVENT_U(ThreadExit, serials[i]);
  } while (n == 64);
}

/* finish -- end the session.  design/runtime.txt .sol.finish
 *
 * Every thread's committed events are sent, then the calling thread's
 * ClockSync and StreamEnd.  At exit, threads still running go on
 * emitting until the process ends: the session then stays open for
 * them (streams, live file, writer), so that what they emit after
 * StreamEnd follows it in the log, or is recovered from the live file.
 * Otherwise the streams close, and what threads still running emit
 * afterwards is not in this session's log. */
static void finish(int atExit)
{
  EventThreadStruct *self;
  unsigned running = 0;
  eventHandlersLeft(eventThreadState, (uintptr_t)__builtin_frame_address(0));
  if (!eventSession.ending && eventSession.threads != NULL)
    exitsUnseen(0);
  self = eventThreadState;
  PlinthLockClaim();
  if (eventSession.ending || (eventSession.threads == NULL && eventStreamCount() == 0)) {
    PlinthLockRelease();
    return;
  }
  /* At exit, threads still running wait for the writer from here on: a
   * drop after the report below could never be reported (.sol.writer).
   * A drop before is counted under this lock, so the report sees it. */
  if (atExit)
    eventWriterDropsSet(0);
  for (EventThreadStruct *t = eventSession.threads; t != NULL; t = t->next) {
    eventThreadFlush(t, t == self);
    if (t != self)
      running += !t->exitSaid;  /* gone ones emit no more */
  }
  /* The report below is the session's last: with every block written,
   * its buffer has room, and it is not dropped.  .sol.dropped */
  eventWriterIdle();
  PlinthLockRelease();
  (void)eventClockSync(EventSyncFinal);
  eventDropsReport(1);
  PlinthLockClaim();
  EVENT_W(StreamEnd, (EventW)eventSession.blocks);
  eventOwnFlush();
  if (atExit && running > 0) {
    eventWriterIdle();
    eventLostReport();
    eventStreamsFlush();
    eventSession.ending = 1;
    PlinthLockRelease();
    return;
  }
  if (eventThreadState != NULL) {
    self = eventThreadState;
    /* The next session starts this thread's buffers afresh. */
    eventThreadRelease(self);
    eventTlsClear();
  }
  eventWriterIdle();                 /* every block written before the streams close */
  eventSlotsReturned();
  eventLostReport();
  eventSessionClose(1);
  eventLiveEnd();
  eventSession.finished = 1;
  PlinthLockRelease();
}

void EventFinish(void)
{
  finish(0);
}

/* EventExecBefore, EventExecFailed -- the program is about to exec,
 * or the exec failed.  design/plinth.txt .sol.exec
 *
 * As finish, but the session stays open in case the exec fails: every
 * thread's committed events are sent, then the drops and StreamExec, on
 * this thread, because the writer thread does not outlive the exec. */
int EventExecBefore(void)
{
  EventThreadStruct *self;
  int async;
  PlinthLockClaim();
  if (eventSession.ending || eventSession.threads == NULL) {
    PlinthLockRelease();
    return 0;                   /* nothing emitted, nothing to end */
  }
  async = eventWriterIsAsync();
  eventWriterIdle();            /* as EventWriterAsync(0, 0) */
  eventWriterAsyncSet(0);
  self = eventThreadState;
  for (EventThreadStruct *t = eventSession.threads; t != NULL; t = t->next)
    eventThreadFlush(t, t == self);
  eventWriterIdle();
  PlinthLockRelease();
  (void)eventClockSync(EventSyncFinal);
  eventDropsReport(1);
  PlinthLockClaim();
  EVENT_WU(StreamExec, (EventW)eventSession.blocks, 0);
  eventOwnFlush();
  eventWriterIdle();            /* the deferred writes (.sol.writer.at) */
  eventStreamsFlush();
  PlinthLockRelease();
  return async ? 2 : 1;
}

void EventExecFailed(int before, int error)
{
  if (before == 0)
    return;
  PlinthLockClaim();
  /* Sent now: a log whose last StreamExec says 0 ended at the exec. */
  EVENT_WU(StreamExec, (EventW)eventSession.blocks, error > 0 ? (EventU)error : 1);
  eventOwnFlush();
  eventWriterIdle();
  eventWriterAsyncSet(before == 2);
  PlinthLockRelease();
}

/* eventAtExit -- the process is exiting: finish the session */
void eventAtExit(void)
{
  eventCtlStop(0);
  finish(1);
}

/* eventUnload -- the library is being unloaded (dlclose): no thread can emit through it again, so a session left
 * open for threads still running is closed now, their committed events
 * sent; then nothing of it may run again: the writer ends, threads'
 * exits and signals no longer call it.  .sol.unload */
void eventUnload(void)
{
  /* Threads still running have left the session, as at their exit:
   * none can emit into it again.  Then it ends whole, as with no thread
   * running (its exit handler may come after, and finds it ended). */
  exitsUnseen(1);
  eventCtlStop(1);
  finish(1);
  eventWriterStop();
  PlinthLockClaim();
  if (eventSession.ending) {
    for (EventThreadStruct *t = eventSession.threads; t != NULL; t = t->next)
      eventThreadFlush(t, 0);
    eventWritesFlush();
    eventLostReport();
    eventSessionClose(1);
    eventLiveEnd();
    eventSession.finished = 1;
  }
  PlinthThreadOnExitStop();
  PlinthSignalsUnload();
  eventSession.signals = 0;
  PlinthLockRelease();
}
