/* <src/plinth/plinthint.h> -- what the plinth's files share, and no one else
 *
 * .design: design/plinth.txt .plinth
 *
 * plinth.c (clocks, memory, the process), plinththread.c (threads, the
 * lock, fork), plinthio.c (streams), plinthsig.c (signals) and
 * plinthctl.c (the control page) are one module split by concern; these
 * are the few facts that cross between them.  The dependence runs one
 * way: the others use plinth.c, never the reverse, so that a program
 * that needs only the clock links none of them.
 */

#ifndef plinthint_h
#define plinthint_h

#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>

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

/* PlinthFdWrite -- write size bytes to fd, at most most in one write(),
 * retrying short writes and EINTR; 0 or an errno code.  Async-signal-safe. */
extern int PlinthFdWrite(int fd, const unsigned char *p, size_t size, size_t most);

/* PlinthCopyTruncated -- copy the string s into buf, truncating it to
 * fit size bytes (size > 0) */
extern void PlinthCopyTruncated(char *buf, size_t size, const char *s);

#endif /* plinthint_h */
