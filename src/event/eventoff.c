/* <src/event/eventoff.c> -- the runtime of the off variety: nothing
 *
 * .design: design/runtime.txt .sol.variety.off
 *
 * libtelltale-off.a is this file (with the block checks of
 * eventcheck.c, which are pure functions): every call of the interface
 * a program of the off variety may make, doing nothing.  No
 * constructor, no thread, no signal handler, no wrapping of sigaction or
 * signal, no file, no environment read: a program links only the
 * functions it calls, each a return.  An assertion still fails: it is
 * the program's own check (.sol.assert), said on stderr, then abort.
 *
 * No registry joins: a registry's source and its constructor are not
 * in an eventgen.c of the off variety, and its calls pass no source.
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
int EventSourceStreamAddText(EventSourceStruct *source, struct PlinthStreamStruct *stream,
                             EventKindSet kinds)
{
  (void)source, (void)stream, (void)kinds;
  return 0;
}

/* Registries: none joins (.reg.many). */
int EventSourceRegister(EventSourceStruct *source) { (void)source; return 0; }
void EventSourceUnregister(EventSourceStruct *source) { (void)source; }

static unsigned char offSink[EVENT_SIZE_MAX + EVENT_END_SLACK];   /* no emitter reaches it */

void *EventReserveIn(EventSourceStruct *source, unsigned kind, size_t size)
{
  (void)source, (void)kind, (void)size;
  return offSink;
}

/* Control and recording: every kind off, whatever is asked. */
EventKindSet EventSourceControl(EventSourceStruct *source, EventKindSet reset, EventKindSet flip)
{
  (void)source, (void)reset, (void)flip;
  return 0;
}

EventKindSet EventSourceRecord(EventSourceStruct *source, EventKindSet reset, EventKindSet flip)
{
  (void)source, (void)reset, (void)flip;
  return 0;
}

int EventKindsSwitch(const char *names, int output, int on, char *err, size_t errSize)
{
  (void)names, (void)output, (void)on;
  if (err != NULL && errSize > 0)
    err[0] = '\0';
  return 0;
}

int EventRecordByName(const char *name, int on, char *err, size_t errSize)
{
  (void)name, (void)on;
  if (err != NULL && errSize > 0)
    err[0] = '\0';
  return 0;
}

int EventSourceKindParse(EventSourceStruct *source, const char *spec, EventKindSet *kindsReturn,
                         char *err, size_t errSize)
{
  (void)source, (void)spec;
  if (kindsReturn != NULL)
    *kindsReturn = 0;
  if (err != NULL && errSize > 0)
    err[0] = '\0';
  return 0;
}

int EventSourceKindIndex(EventSourceStruct *source, const char *name)
{
  (void)source, (void)name;
  return -1;
}

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
