/* <src/event/eventctl.h> -- the control page a running program shares with telltale-ctl
 *
 * .design: design/telemetry.txt .ctl
 *
 * A program that uses telltale makes, unless it opts out (TELLTALE_CTL=
 * off), a file DIR/PID.ctl of one EventCtlPageStruct, mode 0600, in a
 * directory of its user's alone, maps it shared and holds a shared flock
 * on it for its life.  telltale-ctl (tools/ctl) writes a request into it
 * and wakes the program's control thread, which does what was asked
 * through the runtime's own interface and writes the answer back.  The
 * emitter never reads the page: control changes go through the same
 * calls as the program's own, so the hot path is unchanged.
 *
 * Both sides are on one machine and build this header alike; the
 * layout is checked by the magic and the version.
 */

#ifndef eventctl_h
#define eventctl_h

#include <stdint.h>

#define EVENT_CTL_MAGIC "TTCTL\0\0"     /* 8 bytes, with its NUL */
#define EVENT_CTL_VERSION 1u
#define EVENT_CTL_SUFFIX ".ctl"
#define EVENT_CTL_TEXT_MAX 2048         /* bytes of an argument */
#define EVENT_CTL_ANSWER_MAX 8192       /* bytes of an answer */

/* EventCtlOp -- what a request asks.  The argument is text, parsed by
 * the program with its own registry: names, kind sets, a filter, a path. */
typedef enum EventCtlOp {
  EventCtlStatus = 1,           /* answer: the program, its log, each kind's state */
  EventCtlOutput,               /* arg kinds; on: output on, else off */
  EventCtlRecord,               /* arg kinds; on: recorded, else not */
  EventCtlEvent,                /* arg an event's name; on: recorded, else turned off */
  EventCtlFlush,                /* every thread's committed events to the log */
  EventCtlSnapshot,             /* arg a path: the flight recorder, as a log of its own */
  EventCtlRecent,               /* arg a path telltale-ctl made; count events: the traceback */
  EventCtlFilter,               /* arg a filter ("PoolAlloc size>=4096"); on: add, else clear */
  EventCtlOpLimit
} EventCtlOp;

/* EventCtlPageStruct -- the page.  request and done are futex words:
 * telltale-ctl stores the next request's number in request and wakes
 * it; the program's control thread answers, stores that number in done
 * and wakes it.  Clients take turns by an OFD lock on the file's first
 * byte; the program's flock on the whole file says it is alive. */
typedef struct EventCtlPageStruct {
  char magic[8];
  uint32_t version;
  uint32_t pid;
  uint32_t request;             /* atomic: the latest request's number */
  uint32_t done;                /* atomic: the latest request answered */
  uint32_t op;                  /* EventCtlOp */
  uint32_t on;
  uint32_t count;
  int32_t result;               /* 0, or an errno code */
  char arg[EVENT_CTL_TEXT_MAX];
  char answer[EVENT_CTL_ANSWER_MAX];   /* what the program says, NUL-terminated */
} EventCtlPageStruct;

#endif /* eventctl_h */
