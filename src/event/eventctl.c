/* <src/event/eventctl.c> -- steering from outside: the control page and its thread
 *
 * .design: design/tools.txt .ctl
 *
 * The program's side of telltale-ctl (tools/ctl).  EventInit makes the
 * control page (src/event/eventctl.h) and starts the control thread,
 * which sleeps on the page's state word and, when telltale-ctl wakes
 * it, does what was asked through the runtime's own interface, so a
 * change made from outside takes effect as the program's own does
 * (.sol.control.cut), and the emitter reads nothing new.
 */

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "eventint.h"
#include "eventctl.h"
#include "plinthclock.h"

/* EVENT_CTL_DEFAULT -- a control page unless TELLTALE_CTL says otherwise;
 * the allocation recorder, which goes into every process of a command,
 * is built with 0, and so is a ThreadSanitizer build: there the child of
 * a fork whose parent had the control thread aborted at exit, in glibc's
 * sem_post (tests/test_threads 2.2).  .ctl.optout */
#if !defined(EVENT_CTL_DEFAULT) && defined(EVENT_TSAN)
#define EVENT_CTL_DEFAULT 0
#elif !defined(EVENT_CTL_DEFAULT)
#define EVENT_CTL_DEFAULT 1
#endif

#define CTL_LOOK_NS ((uint64_t)1000000000)      /* an idle thread looks this often */
#define CTL_POKED_NS ((uint64_t)1000000)        /* after a thread's exit */
#define CTL_POKED_LOOKS 100

static EventCtlPageStruct *page;        /* the control page, or NULL */
static int threadRunning;               /* the control thread was started */
static _Atomic int stopping;            /* it ends at its next look */
static _Atomic unsigned pokes;          /* looks left at the short interval */
static char cwd[1024];                  /* where the program started: for the log's path */

static void say(const char *s)
{
  eventAppend(page->answer, sizeof page->answer, s);
}

static void sayNumber(uint64_t n)
{
  char buf[DECIMAL_MAX + 1];
  buf[eventFormatUnsigned(buf, n)] = '\0';
  say(buf);
}

/* status -- one line of the program, then one per kind: recorded, output */
static void status(void)
{
  char program[256];
  int any = 0;
  if (PlinthProgramName(program, sizeof program) != 0)
    eventCopyString(program, sizeof program, "?");
  say("pid ");
  sayNumber(PlinthProcessId());
  say(" program ");
  say(program);
  say(" log ");
  PlinthLockClaim();
  if (eventSession.noDefault && eventStreamCount() == 0)
    say("(none)");
  else {
    if (eventSession.fileName[0] != '/' && cwd[0] != '\0') {
      say(cwd);
      say("/");
    }
    say(eventSession.fileName);
  }
  say(eventWriterIsAsync() ? " writer async" : " writer sync");
  PlinthLockRelease();
  say("\n");
  /* Each registry's kinds, by the names the environment takes
   * (eventKindName): .reg.many */
  PlinthLockClaim();
  for (unsigned slot = 0; slot < eventSlotsEnd; ++slot) {
    EventSourceStruct *source = eventSlots[slot].source;
    char name[2 * EVENT_NAME_MAX + 2];
    EventKindSet bit;
    if (source == NULL || (source->number != 0 && eventSlots[slot].kind == EventKindTelltale))
      continue;                 /* telltale's own kind is the first registry's */
    bit = EVENT_KIND_BIT(eventSlots[slot].kind);
    eventKindName(name, sizeof name, slot);
    say("kind ");
    say(name);
    say((atomic_load(source->record) & bit) ? " record on" : " record off");
    say((eventOutputApplied & SLOT_BIT(slot)) ? " output on\n" : " output off\n");
  }
  for (unsigned s = 0; s < SOURCE_LIMIT; ++s) {
    EventSourceStruct *source = eventSources[s];
    if (source == NULL)
      continue;
    for (unsigned i = 0; i < source->registry->eventCount; ++i) {
      unsigned code = source->registry->events[i].code;
      if (code < source->offLimit && atomic_load(&source->off[code])) {
        say(any ? ", " : "events off ");
        say(source->registry->events[i].name);
        any = 1;
      }
    }
  }
  PlinthLockRelease();
  say(any ? "\n" : "events off (none)\n");
  eventFilterSay(page->answer, sizeof page->answer);
}


/* flush -- every thread's committed events, written (by the writer too)
 * before the answer.  .ctl.flush */
static int flush(void)
{
  PlinthLockClaim();
  eventWritesFlush();
  for (EventThreadStruct *t = eventSession.threads; t != NULL; t = t->next)
    eventThreadFlush(t, 0);
  eventWriterIdle();
  eventStreamsFlush();
  PlinthLockRelease();
  say("flushed");
  return 0;
}

/* snapshot -- the flight recorder into a new file.  .ctl.snapshot */
static int snapshot(void)
{
  PlinthStream stream;
  uint64_t events = 0;
  int fd, res = PlinthCtlOpenFile(page->arg, 1, &fd);
  if (res == 0)
    res = PlinthStreamOpenFd(&stream, fd, 1);
  if (res != 0) {
    say(page->arg);
    say(": ");
    say(strerror(res));
    return res;
  }
  PlinthLockClaim();
  res = eventSnapshotWrite(stream, &events);
  PlinthLockRelease();
  if (res == 0)
    res = PlinthStreamFlush(stream);
  PlinthStreamClose(stream);
  if (res != 0) {
    say(page->arg);
    say(": ");
    say(strerror(res));
    return res;
  }
  sayNumber(events);
  say(" events, then StreamSnapshot, in ");
  say(page->arg);
  return 0;
}

/* recent -- the traceback into the file telltale-ctl made */
static int recent(void)
{
  int fd, res = PlinthCtlOpenFile(page->arg, 0, &fd);
  if (res != 0) {
    say(page->arg);
    say(": ");
    say(strerror(res));
    return res;
  }
  EventDumpTo(fd, page->count);
  (void)close(fd);
  return 0;
}

/* serve -- do the request on the page and write its answer */
static void serve(void)
{
  char err[256];
  int res = 0;
  page->arg[sizeof page->arg - 1] = '\0';
  page->answer[0] = '\0';
  switch (page->op) {
  case EventCtlStatus:
    status();
    break;
  case EventCtlOutput:
  case EventCtlRecord:
    if ((res = EventKindsSwitch(page->arg, page->op == EventCtlOutput, (int)page->on,
                                err, sizeof err)) != 0)
      say(err);
    else {
      say(page->op == EventCtlOutput ? "output " : "recording ");
      say(page->on ? "on: " : "off: ");
      say(page->arg);
    }
    break;
  case EventCtlEvent:
    if ((res = EventRecordByName(page->arg, (int)page->on, err, sizeof err)) != 0)
      say(err);
    else {
      say(page->arg);
      say(page->on ? " on" : " off");
    }
    break;
  case EventCtlFlush:
    res = flush();
    break;
  case EventCtlSnapshot:
    res = snapshot();
    break;
  case EventCtlRecent:
    res = recent();
    break;
  case EventCtlFilter:
    if (page->on)
      res = EventFilterAdd(page->arg, err, sizeof err);
    else if ((res = EventFilterClear(page->arg)) != 0)
      eventCopyString(err, sizeof err, res == EINVAL ? "no such event" : "no filter on that event");
    say(res != 0 ? err : page->on ? "filter added" : "filters cleared");
    break;
  default:
    say("unknown request");
    res = EINVAL;
  }
  page->result = res;
}

static _Atomic int said;        /* a failure to set up is said once */

/* setUp -- on the control thread, so that the program's start pays only
 * for the thread: the directory, the file, the page, and the file named
 * into place once the page is ready.  0 if there is to be no page. */
static int setUp(void)
{
  char dir[1024], why[1200];
  void *base;
  if (PlinthCtlDir(dir, sizeof dir, why, sizeof why) != 0
      || PlinthCtlCreate(dir, sizeof(EventCtlPageStruct), &base, why, sizeof why) != 0) {
    if (!atomic_exchange(&said, 1))
      eventSay("no control page, so telltale-ctl cannot steer this program: ", why, NULL);
    return 0;
  }
  PlinthLockClaim();
  if (atomic_load(&stopping)) {         /* stopped meanwhile: no page */
    PlinthCtlRemove();
    PlinthLockRelease();
    return 0;
  }
  page = base;
  memcpy(page->magic, EVENT_CTL_MAGIC, sizeof page->magic);
  page->version = EVENT_CTL_VERSION;
  page->pid = (uint32_t)PlinthProcessId();
  if (PlinthCtlPublish() != 0) {
    PlinthCtlRemove();
    page = NULL;
  }
  PlinthLockRelease();
  return page != NULL;
}

/* run -- the control thread: set the page up; sleep on the state
 * word; serve each request; end when the program's own threads have all
 * ended (glibc ends a process only with its last thread: .ctl.thread) */
static void run(void)
{
  if (!setUp())
    return;
  for (;;) {
    uint32_t word = __atomic_load_n(&page->state, __ATOMIC_ACQUIRE);
    uint32_t number = EVENT_CTL_NUMBER(word);
    unsigned poked;
    uint64_t rate, look;
    if (atomic_load(&stopping))
      return;
    if (EVENT_CTL_STATE(word) == EventCtlAsked
        && __atomic_compare_exchange_n(&page->state, &word,
                                       EVENT_CTL_WORD(number, EventCtlServing), 0,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      serve();
      __atomic_store_n(&page->state, EVENT_CTL_WORD(number, EventCtlIdle), __ATOMIC_RELEASE);
    } else if (EVENT_CTL_STATE(word) != EventCtlWithdrawn
               || !__atomic_compare_exchange_n(&page->state, &word,
                                               EVENT_CTL_WORD(number, EventCtlIdle), 0,
                                               __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      number = UINT32_MAX;      /* nothing to answer */
    if (number != UINT32_MAX) {
      __atomic_store_n(&page->done, number, __ATOMIC_RELEASE);
      PlinthFutexWake(&page->done);
      continue;
    }
    if (EVENT_CTL_STATE(word) == EventCtlAsked || EVENT_CTL_STATE(word) == EventCtlWithdrawn)
      continue;                 /* the word changed under the swap: look again */
    /* The session's ClockRate, a second after its start (.sol.clock.rate) */
    rate = eventClockRateWait();
    if (rate == 0) {
      eventClockRateSend();
      continue;
    }
    poked = atomic_load(&pokes);
    look = poked > 0 ? CTL_POKED_NS : CTL_LOOK_NS;
    (void)PlinthFutexWait(&page->state, word, rate < look ? rate : look);
    if (poked > 0)
      atomic_fetch_sub(&pokes, 1);
    if (PlinthLastThread())
      return;
  }
}

/* ctlOff -- EventCtl(0) was called: no page until EventCtl(1), in a
 * fork's child too.  ctlEnded -- the process is exiting or the library
 * unloading (eventCtlStop): the session's end must not start it again. */
static int ctlOff, ctlEnded;

/* eventCtlStart -- the control thread, which makes the page, unless
 * TELLTALE_CTL is off (and not forced, by EventCtl(1)) or EventCtl(0)
 * was called; said once, and carried on without, if it cannot be made.
 * Lock not held. */
void eventCtlStart(int force)
{
  const char *value = PlinthGetEnv("TELLTALE_CTL");
  int on = EVENT_CTL_DEFAULT;
  if (force)
    on = 1;
  else if (value != NULL && value[0] != '\0') {
    if (strcmp(value, "on") == 0 || strcmp(value, "1") == 0)
      on = 1;
    else if (strcmp(value, "off") == 0 || strcmp(value, "0") == 0)
      on = 0;
    else if (!atomic_exchange(&said, 1))
      eventSay("TELLTALE_CTL='", value, "' must be on or off (or 1 or 0); the default is used", NULL);
  }
  PlinthLockClaim();
  if (!on || threadRunning || ctlOff || ctlEnded) {
    PlinthLockRelease();
    return;
  }
  if (cwd[0] == '\0' && getcwd(cwd, sizeof cwd) == NULL)
    cwd[0] = '\0';
  atomic_store(&stopping, 0);
  threadRunning = PlinthCtlThreadStart(run) == 0;
  PlinthLockRelease();
  if (!threadRunning && !atomic_exchange(&said, 1))
    eventSay("no control thread, so telltale-ctl cannot steer this program", NULL);
}

/* eventCtlStop -- the page removed and the thread told to end; with
 * join, waited for (its code is about to be unloaded).  Lock not held. */
void eventCtlStop(int join)
{
  int running;
  PlinthLockClaim();
  running = threadRunning;
  threadRunning = 0;
  ctlEnded = 1;
  atomic_store(&stopping, 1);
  if (page != NULL) {
    PlinthCtlRemove();
    PlinthFutexWake(&page->state);
  }
  PlinthLockRelease();
  if (running && join)
    PlinthCtlThreadJoin();
  else if (running)
    PlinthCtlThreadDetach();     /* at exit: it ends alone, not left unjoined */
}

/* eventCtlPoke -- a thread exited: the control thread looks soon
 * whether the program's threads are all gone */
void eventCtlPoke(void)
{
  if (page == NULL)
    return;
  atomic_store(&pokes, CTL_POKED_LOOKS);
  PlinthFutexWake(&page->state);
}

/* eventCtlAfterFork -- the child lets go of the parent's page; its own
 * is made when its session starts.  Not under ThreadSanitizer, which
 * does not support a thread started in the child of a threaded process
 * (with die_after_fork=0, such a child aborted in glibc here). */
void eventCtlAfterFork(void)
{
  PlinthCtlForget();
  page = NULL;
  threadRunning = 0;
#ifdef EVENT_TSAN
  ctlEnded = 1;
#else
  ctlEnded = 0;
#endif
}

/* EventCtl -- event.h */
int EventCtl(int on)
{
  if (on) {
    ctlOff = ctlEnded = 0;
    eventCtlStart(1);
  } else {
    ctlOff = 1;
    eventCtlStop(1);
  }
  return 0;
}
