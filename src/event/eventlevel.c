/* <src/event/eventlevel.c> -- signal levels: a handler's events in buffers of its own
 *
 * .design: design/plinth.txt .sol.signal.level
 *
 * A signal handler running on a thread emits into buffers of its own
 * level, so that its events never land inside an event it interrupted
 * (.sol.signal.level); handlers left by longjmp are seen and popped, and
 * the events they left half written are counted (.sol.signal.jump).
 * The buffers are eventbuf.c's; this file moves a thread between their
 * levels.
 *
 * Locking: a thread's levels are its own; what a flush may move
 * (kb->sent) is changed under the plinth's lock.
 */

#include <string.h>

#include "eventint.h"

/* hotSave, hotLoad, hotClear -- the running level's next and limit of
 * every slot the thread has used, put aside, brought back, or zeroed
 * (the slow path then runs).  Signal-safe. */
static void hotSave(EventThreadStruct *thread, unsigned level)
{
  for (unsigned slot = 0; slot < eventSlotsEnd; ++slot)
    if (thread->hot[slot] != NULL)
      thread->saved[level][slot] = *thread->hot[slot];
}

static void hotLoad(EventThreadStruct *thread, unsigned level)
{
  for (unsigned slot = 0; slot < eventSlotsEnd; ++slot)
    if (thread->hot[slot] != NULL)
      *thread->hot[slot] = thread->saved[level][slot];
}

static void hotClear(EventThreadStruct *thread)
{
  for (unsigned slot = 0; slot < eventSlotsEnd; ++slot)
    if (thread->hot[slot] != NULL)
      memset(thread->hot[slot], 0, sizeof *thread->hot[slot]);
}

/* levelSwitch -- the running code's next and limit become level's, or
 * zero if LEVEL_NONE: the slow path then drops and counts */
static void levelSwitch(EventThreadStruct *thread, unsigned level)
{
  AVER(level < LEVEL_LIMIT || level == LEVEL_NONE);
  if (thread->deeper == 0)
    hotSave(thread, thread->level);
  if (level == LEVEL_NONE) {
    ++thread->deeper;
    hotClear(thread);
    return;
  }
  thread->deeper = 0;
  thread->level = level;
  hotLoad(thread, level);
}

/* levelFree -- a level no running code uses, or LEVEL_NONE */
static unsigned levelFree(const EventThreadStruct *thread)
{
  for (unsigned level = 0; level < LEVEL_LIMIT; ++level) {
    unsigned d = 0;
    while (d <= thread->depth && thread->frames[d].level != level)
      ++d;
    if (d > thread->depth)
      return level;
  }
  return LEVEL_NONE;
}

/* levelAbandon -- the code that used a level (not running) was left by
 * a longjmp: an event it was half way through is never committed, so
 * next goes back to the end of its committed events, where its data
 * end, and the event is counted as dropped.  .sol.signal.jump */
static void levelAbandon(EventThreadStruct *thread, unsigned level)
{
  if (level == LEVEL_NONE)
    return;
  PlinthLockClaim();            /* kb->sent: a flush may move it */
  /* Its blocks placed in the log but not yet written (.sol.writer.at)
   * are written now, before the level's slots are used again: the code
   * that was to write them never will.  (Code still in its own writes
   * writes the same bytes again.) */
  eventWritesDo(thread);
  for (unsigned kind = 0; kind < eventSlotsEnd; ++kind) {
    EventKindBufStruct *kb = &thread->levels[level][kind];
    EventBufStruct *buf = &thread->saved[level][kind];
    uintptr_t end;
    if (kb->slot[kb->current] == NULL || buf->next <= kb->sent)
      continue;
    end = eventCommittedEnd(kind, kb->sent, buf->next);
    if (end < buf->next) {
      memset((void *)end, 0, 4);              /* the data end here */
      buf->next = end;
      eventDropCount(kind);
      ++kb->drops;
    }
  }
  PlinthLockRelease();
}

/* eventHandlersLeft -- the handlers on top of the thread's stack of
 * them that code at sp is not in were left by longjmp: pop them.  The
 * running code keeps its level, which the level below it gives up (its
 * half-written event abandoned); code that ran with no level takes the
 * level below back, unless a handler interrupted it (sp is then the
 * interrupted one's, thread->running 0), as it may be in the slow path.
 * design/plinth.txt .sol.signal.jump */
static void handlersLeft(EventThreadStruct *thread, uintptr_t sp, int running)
{
  while (thread->depth > 0) {
    EventHandlerFrameStruct *top = &thread->frames[thread->depth];
    EventHandlerFrameStruct *below = top - 1;
    if (sp >= top->low && sp < top->high)
      break;                    /* still in it */
    if (top->level != LEVEL_NONE) {
      levelAbandon(thread, below->level);
      below->level = top->level;
    } else if (below->level == LEVEL_NONE)
      --thread->deeper;
    else if (running) {
      levelAbandon(thread, below->level);
      thread->deeper = 1;       /* levelSwitch: nothing to save */
      levelSwitch(thread, below->level);
    } else
      break;
    --thread->depth;
  }
}

/* (Under the lock, which blocks signals: a handler that came half way
 * through would see the frames half popped, a level given up twice, and
 * roll back the running one's next over committed events.) */
void eventHandlersLeft(EventThreadStruct *thread, uintptr_t sp)
{
  if (thread != NULL && thread->depth > 0) {
    PlinthLockClaim();
    handlersLeft(thread, sp, 1);
    PlinthLockRelease();
  }
}

/* eventSignalJump -- the thread is about to longjmp to code at sp: the
 * handlers it leaves are popped now, exactly, as its next and limit go
 * with it.  .sol.signal.jump */
void eventSignalJump(uintptr_t sp)
{
  eventHandlersLeft(eventThreadState, sp);
}

/* eventSignalEnter, eventSignalLeave -- a handler the program installed
 * starts or ends on this thread (the plinth's trampoline calls them,
 * with every signal blocked).  The running level's next and limit are
 * put aside and a free level's brought in, so that the handler's events
 * go into buffers of their own: an event it interrupted, half written,
 * is left as it was.  With no level free, next and limit are zero, and
 * the slow path drops and counts.  The token is the handler's depth.
 * design/plinth.txt .sol.signal.level, .sol.signal.jump */
int eventSignalEnter(uintptr_t low, uintptr_t high, uintptr_t sp)
{
  EventThreadStruct *thread = eventThreadState;
  EventHandlerFrameStruct *frame;
  if (thread == NULL)
    return 0;                   /* no buffers to protect */
  if (sp != 0 && thread->depth > 0)
    handlersLeft(thread, sp, 0);
  if (thread->depth == DEPTH_LIMIT) {
    ++thread->unseen;           /* (no level free: it drops) */
    return DEPTH_LIMIT + 1;
  }
  frame = &thread->frames[++thread->depth];
  AVER(thread->depth <= DEPTH_LIMIT);
  frame->low = low;
  frame->high = high;
  frame->level = LEVEL_NONE;                /* (levelFree looks at it) */
  frame->level = thread->deeper == 0 ? levelFree(thread) : LEVEL_NONE;
  levelSwitch(thread, frame->level);
  return (int)thread->depth;
}

void eventSignalLeave(int token)
{
  EventThreadStruct *thread = eventThreadState;
  unsigned to, deeper = 0, level = 0;
  if (token == 0 || thread == NULL)
    return;
  if (token == DEPTH_LIMIT + 1) {
    if (thread->unseen > 0)
      --thread->unseen;
    return;
  }
  if ((unsigned)token > thread->depth)
    return;                     /* seen left already, or the session was reset */
  /* Handlers above this one were left by longjmp into it: the levels
   * they and it held, but the running one, were interrupted for good. */
  to = (unsigned)token - 1;
  for (unsigned d = (unsigned)token; d <= thread->depth; ++d)
    if (thread->deeper > 0 || thread->frames[d].level != thread->level)
      levelAbandon(thread, thread->frames[d].level);
  for (unsigned d = 0; d <= to; ++d)
    if (thread->frames[d].level == LEVEL_NONE)
      ++deeper;
    else
      level = thread->frames[d].level;
  if (thread->deeper == 0)
    hotSave(thread, thread->level);
  thread->depth = to;
  thread->level = level;
  thread->deeper = deeper;
  if (deeper == 0)
    hotLoad(thread, level);
  else
    hotClear(thread);
}
