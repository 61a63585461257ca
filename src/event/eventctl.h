/* <src/event/eventctl.h> -- the control page a running program shares with telltale-ctl
 *
 * .design: design/tools.txt .ctl
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
#define EVENT_CTL_VERSION 2u
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

/* EventCtlState -- where the request on the page is, in the low two
 * bits of the page's state word, whose other bits number the request.
 * A client fills a request in (the page Idle or Withdrawn) and sets
 * the word to its number and Asked; the program takes it (Asked to
 * Serving), does it, sets it Idle and stores its number in done; a
 * client that gives up takes it back (Asked to Withdrawn).  Every
 * change from Asked is a compare-and-swap of the whole word, so a
 * request is done before its client's answer, or never, and the client
 * says which. */
typedef enum EventCtlState {
  EventCtlIdle = 0, EventCtlAsked, EventCtlServing, EventCtlWithdrawn
} EventCtlState;

#define EVENT_CTL_STATE(word) ((word) & 3u)
#define EVENT_CTL_NUMBER(word) ((word) >> 2)
#define EVENT_CTL_WORD(number, state) ((uint32_t)((number) << 2) | (uint32_t)(state))

/* EventCtlPageStruct -- the page.  state and done are futex words: the
 * program's control thread sleeps on state, a client on done.  Clients
 * take turns by an OFD lock on the file's first byte, held until they
 * have read the answer; the program's flock on the whole file says it
 * is alive. */
typedef struct EventCtlPageStruct {
  char magic[8];
  uint32_t version;
  uint32_t pid;
  uint32_t state;               /* atomic: a request's number and EventCtlState */
  uint32_t done;                /* atomic: the number of the latest request done */
  uint32_t op;                  /* EventCtlOp */
  uint32_t on;
  uint32_t count;
  int32_t result;               /* 0, or an errno code */
  char arg[EVENT_CTL_TEXT_MAX];
  char answer[EVENT_CTL_ANSWER_MAX];   /* what the program says, NUL-terminated */
} EventCtlPageStruct;

#endif /* eventctl_h */
