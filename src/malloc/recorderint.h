/* <src/malloc/recorderint.h> -- what the recorder's files share, and no one else
 *
 * .design: design/recorder.txt .malloc
 *
 * recorder.c (the allocation wrappers, re-entry, signal handlers) and
 * recordersession.c (the session: its log, start, fork, unloading and
 * the ends of an image) are one library split by concern; these are the
 * facts that cross between them.  Hidden: the library exports none of
 * them (recorder.map).
 */

#ifndef malloc_recorderint_h
#define malloc_recorderint_h

#include <stdatomic.h>
#include <stdint.h>

#define RECORDER_HIDDEN __attribute__((visibility("hidden")))

/* recorderInside -- set while this thread is in the runtime on the wrapper's
 * behalf: allocations it makes are passed through, not recorded.
 * INSIDE_ENDING: the process is ending, and it stays set.  A signal
 * handler running over an inside section (.malloc.signal):
 * INSIDE_HANDLER, its events are recorded without a stack;
 * INSIDE_LOST, nothing can be recorded, and its allocations are counted
 * as dropped.  INSIDE_STACK: recorder.c takes a call stack. */
extern RECORDER_HIDDEN _Thread_local int recorderInside __attribute__((tls_model("initial-exec")));
enum { INSIDE = 1, INSIDE_ENDING, INSIDE_HANDLER, INSIDE_LOST, INSIDE_STACK };

/* recorderMode -- RECORD_OFF until recorderStart has run, then RECORD_PLAIN,
 * or RECORD_STACKS with TELLTALE_STACKS: one load tells the usual case */
enum { RECORD_OFF, RECORD_PLAIN, RECORD_STACKS };
extern RECORDER_HIDDEN _Atomic int recorderMode;

/* recorderReady -- 1 if the real functions are known; finds them if not
 * (recorder.c) */
extern RECORDER_HIDDEN int recorderReady(void);

/* recorderStart -- find the real functions, choose the log and start
 * telemetry, once (recordersession.c) */
extern RECORDER_HIDDEN __attribute__((noinline, cold)) void recorderStart(void);

/* recorderSignalEnter, recorderSignalLeave -- the hooks around a
 * program's signal handler (recorder.c).  design/recorder.txt .malloc.signal */
extern RECORDER_HIDDEN int recorderSignalEnter(uintptr_t low, uintptr_t high, uintptr_t sp);
extern RECORDER_HIDDEN void recorderSignalLeave(int token);

#endif /* malloc_recorderint_h */
