/* <src/plinth/plinthint.h> -- what the plinth's files share, and no one else
 *
 * .design: design/plinth.txt .plinth
 *
 * plinth.c (clocks, memory, the process), plinththread.c (threads, the
 * lock, fork), plinthio.c (streams), plinthopen.c (opening files and
 * logs), plinthsig.c (signals) and plinthctl.c (the control page) are
 * one module split by concern; these are the few facts that cross
 * between them.  The dependence runs one
 * way: the others use plinth.c, never the reverse, so that a program
 * that needs only the clock links none of them.
 */

#ifndef plinthint_h
#define plinthint_h

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include "plinth.h"

/* wrapActive -- the program has installed a handler of its own
 * (plinthsig.c sets it): from then on the lock's holder blocks signals
 * (plinththread.c).  design/plinth.txt .sol.signal.level */
extern _Atomic int PlinthWrapActive;

/* PlinthAllButFaults -- every signal but the synchronous faults, which
 * a thread must never block: one raised while blocked kills outright */
extern void PlinthAllButFaults(sigset_t *set);

/* PlinthOwnThreadRun -- run() on a thread of telltale's own (the writer,
 * the control thread): every signal but the faults blocked, named,
 * and not counted by PlinthLastThread */
extern void PlinthOwnThreadRun(const char *name, void (*run)(void));

/* PlinthOwnThreadCreate -- pthread_create for a thread of telltale's
 * own: born with every signal but the faults blocked (.sol.signal.own) */
extern int PlinthOwnThreadCreate(pthread_t *thread, const pthread_attr_t *attr,
                                 void *(*start)(void *), void *arg);

/* PlinthFdWrite -- write size bytes to fd, at most most in one write(),
 * retrying short writes and EINTR; 0 or an errno code.  Async-signal-safe. */
extern int PlinthFdWrite(int fd, const unsigned char *p, size_t size, size_t most);

/* PlinthCopyTruncated -- copy the string s into buf, truncating it to
 * fit size bytes (size > 0) */
extern void PlinthCopyTruncated(char *buf, size_t size, const char *s);

/* PlinthStreamStruct -- an output stream: plinthio.c writes it,
 * plinthopen.c opens the files it writes to.  design/plinth.txt .plinth.stream */
enum {
  PlinthStreamSortFd,
  PlinthStreamSortMemory
};


typedef struct PlinthStreamStruct {
  int sort;                     /* PlinthStreamSortFd or ...Memory */
  int fd;                       /* fd streams: the descriptor */
  int closeOnDestroy;           /* fd streams: close fd in PlinthStreamClose */
  int regular;                  /* a regular file PlinthStreamOpenFile opened */
  int pipe;                     /* a FIFO, pipe or socket: EPIPE, not SIGPIPE */
  int mapped;                   /* PlinthStreamMap has been called */
  uint64_t mapEnd;              /* mapped streams: the end of the file */
  _Atomic uintptr_t end;        /* regular files: where the next write goes
                                   (PlinthStreamReserve); a word, as an 8-byte
                                   atomic may need libatomic on 32-bit platforms */
  unsigned char *base;          /* memory streams: the bytes written */
  size_t size;                  /* memory streams: bytes used */
  size_t capacity;              /* memory streams: bytes allocated */
  uint64_t written;             /* bytes written, for faults */
  uint64_t faultAfter;          /* PlinthStreamFault: fail past this many bytes */
  int faultCode;                /* ... with this errno code (0: never) */
  int faultOnce;                /* ... only the write that reaches it */
  size_t faultShort;            /* ... and write() at most this much at once */
  char description[];           /* for PlinthStreamDescribe */
} PlinthStreamStruct;

/* PlinthStreamCreate -- allocate a stream of sort and its description:
 * 0 or an errno code */
extern int PlinthStreamCreate(PlinthStream *streamReturn, int sort, const char *description);

#endif /* plinthint_h */
