/* <src/plinth/plinth.h> -- the platform interface of the telltale runtime
 *
 * .design: design/plinth.txt .plinth
 *
 * Everything the runtime needs from the operating system goes through
 * these functions: output streams, clocks, threads, one lock, the
 * environment and process exit.  The rest of the runtime (src/event)
 * includes no OS headers.  A user porting telltale reimplements this
 * file's functions; plinth.c is the POSIX implementation.
 *
 * Functions that can fail return 0 on success and a positive errno-style
 * code on failure; they never print.  The caller decides what to say.
 */

#ifndef plinth_h
#define plinth_h

#include <stddef.h>
#include <stdint.h>

#include "eventapi.h"

/* A program uses the functions marked TELLTALE_API, for the streams it
 * gives EventStreamAddBinary and EventStreamAddText; the shared library
 * exports those only, and the rest are the runtime's own.
 * design/build.txt .pack.export */
TELLTALE_BEGIN_DECLS

/* Output streams.  design/plinth.txt .plinth.stream
 *
 * A stream accepts whole blocks of bytes in order.  PlinthStreamWrite
 * writes all of size bytes or fails; it retries short writes and EINTR.
 */

typedef struct PlinthStreamStruct *PlinthStream;

/* PlinthCoreSharedFiles -- cores of this process hold its shared file
 * mappings (coredump_filter bit 3), where allowed; 0 or an errno code */
extern int PlinthCoreSharedFiles(void);
/* PlinthLogKeep -- keep a log already at path as PATH.1 (and its
 * PATH.live as PATH.1.live) before it is written anew; EEXIST if path is
 * a non-empty file that is not a log (its first bytes are not magic),
 * ELOOP if it is a link, and as PlinthFdRefused for no place for a log.
 * Nothing is moved onto PATH.1 or PATH.1.live if that is not absent, empty
 * or a log: EEXIST (EISDIR, ELOOP) then, and nothing moves.  blame (of
 * blameSize bytes) gets the name of the file at fault. */
extern int PlinthLogKeep(const char *path, const char *magic, size_t magicSize, char *blame,
                         size_t blameSize);
/* PlinthFdRefused -- is the file open on fd no place for a log?  0 (a
 * regular file, FIFO, socket or character device), or EISDIR (a
 * directory), ENODEV (a block device), ENOTSUP (a file of /proc, or of
 * another kind) */
extern int PlinthFdRefused(int fd);
/* PlinthStreamOpenFile -- a stream to the file at path, created or
 * emptied (mode 0644); never through a symbolic link (ELOOP), with
 * close-on-exec, never on descriptors 0-2.  A FIFO is waited on for a
 * reader for at most a second (ENXIO: none came).  A directory, block
 * device or file of /proc is refused (as PlinthFdRefused), unopened
 * where it can be told beforehand.
 * PlinthStreamOpenLog -- the same, but a regular file that holds
 * something not starting with magic is left as it was (EEXIST). */
extern TELLTALE_API int PlinthStreamOpenFile(PlinthStream *streamReturn, const char *path);
extern int PlinthStreamOpenLog(PlinthStream *streamReturn, const char *path, const char *magic,
                               size_t magicSize);
extern TELLTALE_API int PlinthStreamOpenFd(PlinthStream *streamReturn, int fd, int closeOnDestroy);
extern TELLTALE_API int PlinthStreamOpenMemory(PlinthStream *streamReturn);
extern TELLTALE_API int PlinthStreamWrite(PlinthStream stream, const void *buf, size_t size);
extern int PlinthStreamReserve(PlinthStream stream, size_t size, uint64_t *offsetReturn);
extern int PlinthStreamWriteAt(PlinthStream stream, uint64_t offset, const void *buf, size_t size);
extern int PlinthStreamWriteTwoAt(PlinthStream stream, uint64_t offset, const void *a,
                                  size_t aSize, const void *b, size_t bSize);
/* PlinthStreamFault -- for tests: the write that takes the stream past
 * after more bytes writes up to there and fails with code (EIO, ENOSPC),
 * as a full disk cuts a write, and so does every later one, or with once
 * none (the space came back); shortWrite > 0 gives each write() of an fd
 * stream at most that many bytes.  code 0 and shortWrite 0: no faults. */
extern void PlinthStreamFault(PlinthStream stream, uint64_t after, int code, int once,
                              size_t shortWrite);
extern TELLTALE_API int PlinthStreamFlush(PlinthStream stream);
extern TELLTALE_API void PlinthStreamClose(PlinthStream stream);

/* PlinthStreamMemory -- the bytes written so far to a memory stream.
 * The pointer is valid until the next write or close.  NULL and size 0
 * for a stream that is not a memory stream. */
extern TELLTALE_API const unsigned char *PlinthStreamMemory(PlinthStream stream, size_t *sizeReturn);

/* Mapped streams.  design/control.txt .sol.live
 *
 * A stream to a regular file that PlinthStreamOpenFile opened can be
 * mapped: PlinthStreamMap extends the file by size bytes (a multiple of
 * PlinthPageSize) and maps them shared, so that what the program stores
 * there is the kernel's at once and survives the program's death, even
 * by SIGKILL.  The file's current end must be page-aligned at the first
 * map; from then on everything goes through maps.  The blocks are
 * allocated on disk before they are mapped, so a full disk is ENOSPC
 * here rather than SIGBUS later.  Other streams return ENOTSUP. */
extern int PlinthStreamMappable(PlinthStream stream);
extern int PlinthStreamMap(PlinthStream stream, size_t size, void **baseReturn);
extern void PlinthStreamUnmap(PlinthStream stream, void *base, size_t size);
/* PlinthStreamMapAt maps bytes the file has, at a page offset, shared,
 * at a given address (replacing its mapping at once) or anywhere;
 * PlinthMemoryCover replaces a mapping with zeroed private memory, at
 * once, so that a racing store never faults. */
extern int PlinthStreamMapAt(PlinthStream stream, uint64_t offset, size_t size, void *at,
                             void **baseReturn);
extern void PlinthMemoryCover(void *base, size_t size);
extern size_t PlinthPageSize(void);
/* PlinthRemoveFile -- remove a file the runtime made (the live file) */
extern int PlinthRemoveFile(const char *path);

/* PlinthStreamDescribe -- a short name for messages: a path, "fd 3", "memory" */
extern TELLTALE_API const char *PlinthStreamDescribe(PlinthStream stream);

/* Clocks.  design/runtime.txt .sol.clock
 *
 * The cycle counter read on the hot path is inline, in plinthclock.h.
 * PlinthClockFrequency estimates its rate in Hz; the tools refine it
 * from ClockSync events. */
extern uint64_t PlinthClockFrequency(void);
extern TELLTALE_API uint64_t PlinthMonotonicNs(void);
extern uint64_t PlinthRealtimeNs(void);

/* Threads.  design/plinth.txt .plinth.thread */
extern uint64_t PlinthThreadOSId(void);    /* the kernel's id for the calling thread */
extern int PlinthThreadAlive(uint64_t osid);  /* is the thread of this process with that id there? */
/* PlinthThreadOnExit -- arrange for fn(arg) when the calling thread exits;
 * once per thread, with the most recent arg. */
extern int PlinthThreadOnExit(void (*fn)(void *), void *arg);
extern int PlinthThreadName(char *buf, size_t size);  /* the calling thread's name, "" if none */

/* The lock.  One process-wide recursive lock guards the runtime's slow
 * paths; the emitting hot path never takes it. */
extern void PlinthLockClaim(void);
extern void PlinthLockRelease(void);

/* PlinthLockHeld -- does the calling thread hold the lock?  A
 * thread-local load, for the runtime's checks (AVER_LOCKED, eventint.h). */
extern int PlinthLockHeld(void);

/* PlinthLockTry -- claim the lock if no other thread holds it; 1 if claimed.
 * For a signal handler, which must not wait for a thread it interrupted. */
extern int PlinthLockTry(void);

/* Fatal signals.  design/plinth.txt .sol.signal
 *
 * PlinthFatalSignalsInstall installs one handler for SIGSEGV, SIGBUS,
 * SIGILL, SIGFPE and SIGABRT.  Where the program has a handler of its
 * own for the signal (installed before or after), that runs first and
 * may recover (.sol.signal.recover); otherwise, or when the fault comes
 * back unfixed, handler(sig, name) is called once and the signal passed
 * on: to the default, restored and raised again, so the exit status and
 * any core dump are what they would have been.  SIGABRT calls handler
 * first, then the program's.  handler runs on the thread's alternate
 * signal stack if it has one (PlinthAltStackCreate) and must be
 * async-signal-safe. */
typedef void (*PlinthFatalHandler)(int sig, const char *name);
extern int PlinthFatalSignalsInstall(PlinthFatalHandler handler);
/* PlinthFaultClock -- PlinthClockNow when the fatal signal being handled
 * on this thread first came (a program's handler may have run since),
 * or 0 */
extern uint64_t PlinthFaultClock(void);
extern void PlinthFatalSignalsRemove(void);
extern void *PlinthAltStackCreate(void);
extern void PlinthAltStackDestroy(void *stack);
/* PlinthSignalHooks -- enter(low, high, sp) runs before, and
 * leave(token) after, every handler the program installs (through
 * sigaction or signal, which the plinth wraps), with every signal
 * blocked; enter's result is leave's token.  The handler's own frames
 * lie in [low, high): a stack pointer outside it is code the handler
 * left by longjmp.  sp is the interrupted code's stack pointer, or 0 if
 * unknown here.  design/plinth.txt .sol.signal.jump */
typedef int (*PlinthSignalEnterFn)(uintptr_t low, uintptr_t high, uintptr_t sp);
typedef void (*PlinthSignalLeaveFn)(int token);
/* jump(sp): the calling thread is about to longjmp to code whose stack
 * pointer is sp (the plinth defines siglongjmp and longjmp): handlers
 * whose frames sp is outside are being left.  .sol.signal.jump */
typedef void (*PlinthSignalJumpFn)(uintptr_t sp);
extern void PlinthSignalHooks(PlinthSignalEnterFn enter, PlinthSignalLeaveFn leave,
                              PlinthSignalJumpFn jump);
/* PlinthAbort -- abort(): SIGABRT, with its handlers */
extern void PlinthAbort(void) __attribute__((noreturn));

/* The writer.  design/control.txt .sol.writer
 * PlinthWriterStart starts a detached thread running run(), for the
 * asynchronous writer.  The queue lock is a second, plain lock that the
 * writer and the emitters share; it is a leaf: nothing else is claimed
 * while it is held.  PlinthQueueWait (queue lock held) waits for
 * PlinthQueueWake, which wakes every waiter. */
extern int PlinthWriterStart(void (*run)(void));
extern void PlinthWriterJoin(void);
extern void PlinthQueueClaim(void);
extern void PlinthQueueRelease(void);
extern void PlinthQueueWait(void);
extern void PlinthQueueWake(void);
/* PlinthQueueWaitFor -- PlinthQueueWait, for at most ns */
extern void PlinthQueueWaitFor(uint64_t ns);
/* PlinthLastThread -- is the calling thread the process's only one left
 * (others exited, a main thread that called pthread_exit among them)?
 * 0 when it cannot be told.  .sol.writer.last */
extern int PlinthLastThread(void);
/* PlinthThreadOwn -- the calling thread is one of telltale's own, which
 * PlinthLastThread does not count; PlinthThreadOwnEnd, no longer */
extern void PlinthThreadOwn(void);
extern void PlinthThreadOwnEnd(void);
/* PlinthCancelHold, PlinthCancelRelease -- no cancellation of the
 * calling thread between them (they nest); the lock and the queue lock
 * hold it themselves.  .sol.cancel */
extern void PlinthCancelHold(void);
extern void PlinthCancelRelease(void);

/* The control page (plinthctl.c).  design/tools.txt .ctl
 * PlinthCtlDir -- the control directory's path into buf: TELLTALE_CTL_DIR,
 * else $XDG_RUNTIME_DIR/telltale, else /tmp/telltale-UID; made if absent;
 * EACCES (why says it) unless it is a directory of the caller's user
 * that no one else may write.
 * PlinthCtlCreate -- make a control file (0600) of size zeroed bytes in
 * DIR, hold a shared flock on it for the process's life and map it
 * shared, first removing DIR's stale control files; PlinthCtlPublish
 * names it DIR/PID.ctl, once the page is ready.  PlinthCtlRemove removes it (the
 * page stays mapped); PlinthCtlForget, in a fork's child, lets go of the
 * parent's.
 * PlinthCtlFileCheck -- EACCES unless fd is a regular file of the
 * caller's user that no one else may read or write.
 * PlinthCtlStale -- 1 if no process holds a flock on the control file fd.
 * PlinthCtlOpenFile -- open path for writing: made afresh (create; never
 * an existing file), or one that is there; either way not through a
 * link and checked as PlinthCtlFileCheck.
 * PlinthFutexWait -- wait at most ns while *word is value: 0, or
 * ETIMEDOUT, EAGAIN (it was not), EINTR.  PlinthFutexWake wakes every
 * waiter, in any process that maps the word.
 * PlinthCtlThreadStart runs run() on a thread of telltale's own;
 * PlinthCtlThreadJoin waits for it to end (.sol.unload);
 * PlinthCtlThreadDetach lets it end alone (at exit). */
extern int PlinthCtlDir(char *buf, size_t size, char *why, size_t whySize);
extern int PlinthCtlCreate(const char *dir, size_t size, void **pageReturn, char *why,
                           size_t whySize);
extern int PlinthCtlPublish(void);
extern void PlinthCtlRemove(void);
extern void PlinthCtlForget(void);
extern int PlinthCtlFileCheck(int fd);
extern int PlinthCtlStale(int fd);
extern int PlinthCtlOpenFile(const char *path, int create, int *fdReturn);
extern int PlinthFutexWait(uint32_t *word, uint32_t value, uint64_t ns);
extern void PlinthFutexWake(uint32_t *word);
extern int PlinthCtlThreadStart(void (*run)(void));
extern void PlinthCtlThreadJoin(void);
extern void PlinthCtlThreadDetach(void);

/* Memory for the runtime's own structures (never on the hot path). */
extern void *PlinthAlloc(size_t size);
extern void PlinthFree(void *p);
/* Zeroed pages for thread structures and buffers: callable from a
 * signal handler, as malloc is not.  design/plinth.txt .sol.signal.level */
extern void *PlinthPagesAlloc(size_t size);
extern void PlinthPagesFree(void *p, size_t size);

/* Process.  design/plinth.txt .plinth.process */
extern const char *PlinthGetEnv(const char *name);
extern uint64_t PlinthProcessId(void);
extern int PlinthProgramName(char *buf, size_t size);
extern int PlinthAtExit(void (*fn)(void));
extern int PlinthExiting(void);
extern int PlinthLoadedByDlopen(void);
extern int PlinthLoadedByDlopenAt(const void *address);
extern void PlinthExitMark(void);
extern void PlinthObjectName(const void *address, char *buf, size_t size);
extern void PlinthThreadOnExitStop(void);
/* PlinthSignalsUnload -- the fatal handlers removed, and the program's
 * handlers given back their own dispositions, unwrapped: the code is
 * about to be unloaded.  .sol.unload */
extern void PlinthSignalsUnload(void);
/* PlinthAtFork -- fn runs in the child after fork() */
extern int PlinthAtFork(void (*child)(void));
/* PlinthWriteError -- write bytes to the process's standard error */
extern void PlinthWriteError(const char *buf, size_t size);
/* PlinthWriteFd -- write bytes to a descriptor; async-signal-safe */
extern void PlinthWriteFd(int fd, const char *buf, size_t size);
/* PlinthSleepNs -- sleep about ns nanoseconds; async-signal-safe */
extern void PlinthSleepNs(uint64_t ns);
/* PlinthStrError -- a message for a code returned by a plinth function */
extern TELLTALE_API const char *PlinthStrError(int code);

TELLTALE_END_DECLS

#endif /* plinth_h */
