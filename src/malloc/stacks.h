/* <src/malloc/stacks.h> -- the recorder's call stacks (TELLTALE_STACKS)
 *
 * .design: design/recorder.txt .stacks
 */

#ifndef malloc_stacks_h
#define malloc_stacks_h

#include "event.h"

#define STACKS_HIDDEN __attribute__((visibility("hidden")))

/* stacksDepth -- frames recorded per allocation; 0: stacks are off */
extern STACKS_HIDDEN unsigned stacksDepth;

/* StacksSay -- "libtelltale-malloc: NAME='VALUE" and WHAT on stderr:
 * a bad setting is said, and the program carries on */
extern STACKS_HIDDEN void StacksSay(const char *name, const char *value, const char *what);

/* StacksStart -- read TELLTALE_STACKS; if on, make the table and emit
 * the executable mappings.  Called once, inside the recorder. */
extern STACKS_HIDDEN void StacksStart(void);

/* StacksAfterFork -- in a forked child, which writes a log of its own:
 * the table emptied and the mappings emitted again */
extern STACKS_HIDDEN void StacksAfterFork(void);

/* StackHere -- the id of the call stack of the interposed function
 * whose frame (__builtin_frame_address(0)) is frame, its caller first,
 * interned: StackFrames is emitted the first time a stack is seen.  0
 * if it cannot be recorded.  The frame-pointer walk starts at frame,
 * not at the recorder's own frames above it.  Called inside the
 * recorder, never between EVENT_BEGIN and EVENT_END. */
extern STACKS_HIDDEN EventU StackHere(void *frame);

/* StacksCloseBegin, StacksCloseEnd -- around the real dlclose: while
 * one is under way stacks are interned by the dynamic linker's count of
 * changes; after it, if the count moved since Begin returned it
 * (before), the mappings are read again (if record: the caller may
 * emit), MapUnmap said for those gone, and a new epoch begun.
 * design/recorder.txt .stacks.unmap */
extern STACKS_HIDDEN uint64_t StacksCloseBegin(void);
extern STACKS_HIDDEN void StacksCloseEnd(int record, uint64_t before);

#endif /* malloc_stacks_h */
