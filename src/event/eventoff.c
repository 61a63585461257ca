/* <src/event/eventoff.c> -- the runtime of the off variety: nothing
 *
 * .design: design/telemetry.txt .sol.variety.off
 *
 * libtelltale-off.a is this file (with the block checks of
 * eventcheck.c, which are pure functions): every call of the interface
 * a program of the off variety may make, doing nothing.  No
 * constructor, no thread, no signal handler, no wrapping of sigaction or
 * signal, no file, no environment read: a program links only the
 * functions it calls, each a return.  An assertion still fails: it is
 * the program's own check (.sol.assert), said on stderr, then abort.
 *
 * The hot path's data (EventThreadBuf, EventKindRecord, EventOff) and
 * EventReserveSlow are not here: no emitter of the off variety refers
 * to them.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "event.h"
#include "plinth.h"

#if EVENT_VARIETY != 0
#error "eventoff.c is the off variety's runtime: compile it with -DEVENT_VARIETY=0"
#endif

int EventInit(void) { return 0; }
void EventFlush(void) {}
void EventFinish(void) {}
int EventExecBefore(void) { return 0; }
void EventExecFailed(int before, int error) { (void)before, (void)error; }
int EventStreamAddBinary(struct PlinthStreamStruct *stream) { (void)stream; return 0; }
int EventStreamAddText(struct PlinthStreamStruct *stream, EventKindSet kinds)
{
  (void)stream, (void)kinds;
  return 0;
}

/* Control and recording: every kind off, whatever is asked. */
EventKindSet EventControl(EventKindSet reset, EventKindSet flip) { (void)reset, (void)flip; return 0; }
EventKindSet EventControlSet(EventKindSet kinds) { (void)kinds; return 0; }
EventKindSet EventControlReset(EventKindSet kinds) { (void)kinds; return 0; }
EventKindSet EventControlFlip(EventKindSet kinds) { (void)kinds; return 0; }
EventKindSet EventRecord(EventKindSet reset, EventKindSet flip) { (void)reset, (void)flip; return 0; }
EventKindSet EventRecordSet(EventKindSet kinds) { (void)kinds; return 0; }
EventKindSet EventRecordReset(EventKindSet kinds) { (void)kinds; return 0; }

int EventRecordByName(const char *name, int on, char *err, size_t errSize)
{
  (void)name, (void)on;
  if (err != NULL && errSize > 0)
    err[0] = '\0';
  return 0;
}

int EventKindParse(const char *spec, EventKindSet *kindsReturn, char *err, size_t errSize)
{
  (void)spec;
  if (kindsReturn != NULL)
    *kindsReturn = 0;
  if (err != NULL && errSize > 0)
    err[0] = '\0';
  return 0;
}

int EventKindIndex(const char *name) { (void)name; return -1; }
EventW EventInternString(const char *string) { (void)string; return 0; }
void EventLabel(EventA address, EventW id) { (void)address, (void)id; }
void EventLabelString(EventA address, const char *label) { (void)address, (void)label; }
void EventThreadNameSet(const char *name) { (void)name; }

/* EventAssertFail -- the program's assertion failed: say so and abort */
void EventAssertFail(const char *condition, const char *file, unsigned line)
{
  fprintf(stderr, "%s:%u: assertion failed: %s\n", file, line, condition);
  abort();
}

void EventDump(unsigned count) { (void)count; }
void EventDumpTo(int fd, unsigned count) { (void)fd, (void)count; }
int EventFlushAll(void) { return 0; }
int EventFatalSignals(int on) { (void)on; return 0; }
int EventWriterAsync(int async, int drop) { (void)async, (void)drop; return 0; }
int EventBufferSizeSet(size_t size) { (void)size; return 0; }
int EventCompact(int on) { (void)on; return 0; }

int EventFilterAdd(const char *spec, char *err, size_t errSize)
{
  (void)spec;
  if (err != NULL && errSize > 0)
    err[0] = '\0';
  return 0;
}

int EventFilterClear(const char *name) { (void)name; return 0; }
int EventCtl(int on) { (void)on; return 0; }

/* Streams: none is made (a NULL stream), and writing to it does nothing,
 * so that no file is opened. */
int PlinthStreamOpenFile(PlinthStream *streamReturn, const char *path)
{
  (void)path;
  *streamReturn = NULL;
  return 0;
}

int PlinthStreamOpenFd(PlinthStream *streamReturn, int fd, int closeOnDestroy)
{
  (void)fd, (void)closeOnDestroy;
  *streamReturn = NULL;
  return 0;
}

int PlinthStreamOpenMemory(PlinthStream *streamReturn)
{
  *streamReturn = NULL;
  return 0;
}

int PlinthStreamWrite(PlinthStream stream, const void *buf, size_t size)
{
  (void)stream, (void)buf, (void)size;
  return 0;
}

int PlinthStreamFlush(PlinthStream stream) { (void)stream; return 0; }
void PlinthStreamClose(PlinthStream stream) { (void)stream; }

const unsigned char *PlinthStreamMemory(PlinthStream stream, size_t *sizeReturn)
{
  (void)stream;
  if (sizeReturn != NULL)
    *sizeReturn = 0;
  return NULL;
}

const char *PlinthStreamDescribe(PlinthStream stream) { (void)stream; return "none (the off variety)"; }

uint64_t PlinthMonotonicNs(void)
{
  struct timespec ts;
  (void)clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const char *PlinthStrError(int code) { return strerror(code); }
