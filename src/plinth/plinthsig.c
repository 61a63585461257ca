/* <src/plinth/plinthsig.c> -- POSIX plinth: fatal signals, the program's
 * handlers, the alternate stack
 *
 * .design: design/plinth.txt .sol.signal
 *
 * Part of the plinth (plinth.c says what it is built with and returns).
 * This file defines sigaction and signal, which wrap the program's own
 * handlers (.sol.signal.level): a program gets them only if it links the
 * runtime's signal handling, never a tool that wants only the clock.
 */

#include "plinth.h"
#include "plinthclock.h"

#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include "plinthint.h"

/* Fatal signals.  design/plinth.txt .sol.signal */

/* realSigaction -- the C library's sigaction, past the program's one below */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PLINTH_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) && !defined(PLINTH_TSAN)
#define PLINTH_TSAN 1
#endif
#ifdef PLINTH_TSAN
/* ThreadSanitizer's own sigaction, which makes handlers run where its
 * books are safe; the C library's would bypass it. */
extern int __interceptor_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
#define realSigaction __interceptor_sigaction
#elif defined(__GLIBC__)
extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);
#define realSigaction __sigaction
#else
#define realSigaction sigaction
#endif

static const int fatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
static const char *const fatalNames[] = {"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT"};
#define FATAL_COUNT (sizeof fatalSignals / sizeof fatalSignals[0])
static struct sigaction fatalOld[FATAL_COUNT];  /* what the signal is passed on to */
static volatile sig_atomic_t fatalInstalled[FATAL_COUNT];
static PlinthFatalHandler fatalHandler;
static volatile sig_atomic_t fatalEntered;

/* Handlers the program installs.  design/plinth.txt .sol.signal.level
 *
 * Every handler the program installs with sigaction or signal is
 * wrapped in a trampoline that tells the runtime a handler is running
 * on this thread (enterHook before, leaveHook after), so that its events
 * go into buffers of their own rather than into the middle of an event
 * the handler interrupted.  The trampoline is installed with every
 * signal blocked, so that the hooks run undisturbed; it sets the mask
 * the program asked for around the program's handler. */
static PlinthSignalEnterFn enterHook;
static PlinthSignalLeaveFn leaveHook;

static PlinthSignalJumpFn jumpHook;
static void jumpsResolve(void);

void PlinthSignalHooks(PlinthSignalEnterFn enter, PlinthSignalLeaveFn leave,
                       PlinthSignalJumpFn jump)
{
  enterHook = enter;
  leaveHook = leave;
  jumpHook = jump;
  jumpsResolve();
}

/* callHandler -- call a program's handler as the kernel would have */
static void callHandler(const struct sigaction *action, int sig, siginfo_t *info, void *context)
{
  if ((action->sa_flags & SA_SIGINFO) != 0) {
    if (action->sa_sigaction != NULL)
      action->sa_sigaction(sig, info, context);
  } else if (action->sa_handler != SIG_DFL && action->sa_handler != SIG_IGN)
    action->sa_handler(sig);
}

/* handlerFrames -- where the frames of a handler called now lie: below
 * the signal frame the kernel made (context is in it), and on the
 * alternate stack if the handler runs there.  .sol.signal.jump */
static int handlerFrames(void *context, uintptr_t *lowReturn, uintptr_t *highReturn)
{
  stack_t ss;
  uintptr_t here = (uintptr_t)__builtin_frame_address(0);
  /* The kernel's frame is below the interrupted stack pointer, and just
   * above this one.  A context elsewhere (ThreadSanitizer delivers a
   * signal later, with a copy of it) says nothing of the frames: the
   * handler is then never taken as left by a stack pointer. */
  if ((uintptr_t)context <= here || (uintptr_t)context - here > ((uintptr_t)1 << 20)) {
    *lowReturn = 0;
    *highReturn = UINTPTR_MAX;
    return 0;
  }
  *highReturn = (uintptr_t)context;
  *lowReturn = 0;
  if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK) != 0)
    *lowReturn = (uintptr_t)ss.ss_sp;
  return 1;
}

/* chainCall -- call a program's handler from one of telltale's, with
 * every signal blocked on entry: enterHook, the mask the program asked
 * for (the interrupted mask, sa_mask, and sig unless SA_NODEFER), the
 * handler, every signal blocked again, leaveHook.  Signals stay blocked
 * until sigreturn puts back the interrupted mask.  A handler that
 * leaves by longjmp skips leaveHook; enterHook is told where its
 * frames lie, so that the runtime sees it left (.sol.signal.jump).
 * design/plinth.txt .sol.signal.level */
static void chainCall(const struct sigaction *action, int sig, siginfo_t *info, void *context)
{
  ucontext_t *uc = context;
  sigset_t mask, all;
  int saved = errno, token = 0;
  if (enterHook != NULL) {
    uintptr_t low, high, sp = 0;
    if (handlerFrames(context, &low, &high)) {
#if defined(__x86_64__) && defined(REG_RSP)
      sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
      sp = (uintptr_t)uc->uc_mcontext.sp;
#endif
    }
    token = enterHook(low, high, sp);
  }
  mask = uc->uc_sigmask;
  for (int s = 1; s < NSIG; ++s)
    if (sigismember(&action->sa_mask, s) == 1)
      sigaddset(&mask, s);
  if ((action->sa_flags & SA_NODEFER) == 0)
    sigaddset(&mask, sig);
  errno = saved;
  (void)pthread_sigmask(SIG_SETMASK, &mask, NULL);
  callHandler(action, sig, info, context);
  saved = errno;
  sigfillset(&all);
  (void)pthread_sigmask(SIG_BLOCK, &all, NULL);
  if (leaveHook != NULL)
    leaveHook(token);
  errno = saved;
}

/* isHandler -- the action calls a function (neither SIG_DFL nor SIG_IGN) */
static int isHandler(const struct sigaction *action)
{
  /* sa_handler and sa_sigaction share their storage */
  return action->sa_handler != SIG_DFL && action->sa_handler != SIG_IGN;
}

/* The fault a program's handler last returned from on this thread, to
 * tell a fault it fixed from one that comes straight back.
 * design/plinth.txt .sol.signal.recover */
#define FAULT_REPEAT_LIMIT 8                    /* returns from one fault in a row */
#define FAULT_REPEAT_NS ((uint64_t)10000000)    /* back within 10 ms of the return */
typedef struct FaultStruct {
  int sig, code;
  void *addr;
  uintptr_t pc;
  uint64_t returned;            /* PlinthMonotonicNs when the handler returned */
  uint64_t first;               /* PlinthClockNow when it first came */
  unsigned repeats;             /* returns in a row from this fault */
} FaultStruct;
static _Thread_local FaultStruct lastFault;

/* faultFirst -- the clock when the fault being handled on this thread
 * first came: a handler the program runs first may take its time, but
 * the traceback shows nothing after the fault.  .sol.traceback */
static _Thread_local uint64_t faultFirst;

uint64_t PlinthFaultClock(void)
{
  return faultFirst;
}

/* faultPc -- the faulting instruction's address, or 0 if unknown here */
static uintptr_t faultPc(void *context)
{
  const ucontext_t *uc = context;
#if defined(__x86_64__) && defined(REG_RIP)
  return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
  return (uintptr_t)uc->uc_mcontext.pc;
#else
  (void)uc;
  return 0;
#endif
}

/* faultRepeats -- the program's handler returned from this very fault
 * (thread, signal, code, address, instruction) FAULT_REPEAT_LIMIT times
 * in a row, each time back within FAULT_REPEAT_NS: it cannot fix it.
 * A handler may fix a fault in steps (a read barrier, then a write
 * barrier on the same page), so one repeat is not enough.  Updates
 * *fault for faultReturned. */
static int faultRepeats(FaultStruct *fault, int sig, const siginfo_t *info, void *context)
{
  fault->sig = sig;
  fault->code = info->si_code;
  fault->addr = info->si_addr;
  fault->pc = faultPc(context);
  fault->repeats = 0;
  if (lastFault.sig == sig && lastFault.code == fault->code && lastFault.addr == fault->addr &&
      lastFault.pc == fault->pc && PlinthMonotonicNs() - lastFault.returned < FAULT_REPEAT_NS)
    fault->repeats = lastFault.repeats;
  return fault->repeats >= FAULT_REPEAT_LIMIT;
}

/* fatalDie -- telltale's dump once, then the signal passed on to what
 * action says (the default, ignored, or a handler) */
static void fatalDie(size_t i, const struct sigaction *action, int sig, siginfo_t *info,
                     void *context)
{
  if (!fatalEntered) {
    fatalEntered = 1;           /* a fault in the dump goes straight on */
    if (fatalHandler != NULL)
      fatalHandler(sig, fatalNames[i]);
  }
  (void)realSigaction(sig, action, NULL);
  fatalInstalled[i] = 0;
  if (!isHandler(action))
    (void)raise(sig);           /* blocked until we return, then default */
  else {
    sigset_t all;
    sigfillset(&all);
    (void)pthread_sigmask(SIG_BLOCK, &all, NULL);
    chainCall(action, sig, info, context);
  }
}

/* fatalSignal -- the handler.  design/plinth.txt .sol.signal
 *
 * Where the program has a handler for the signal, it runs first and
 * may recover (.sol.signal.recover); telltale dumps only when the fault
 * comes back to a default disposition, or comes back unfixed.  SIGABRT
 * dumps first, as glibc's abort() puts the default back behind the
 * wrapper when a handler returns. */
static void fatalSignal(int sig, siginfo_t *info, void *context)
{
  size_t i;
  int saved = errno;
  struct sigaction action;
  FaultStruct fault = {0};
  static const struct sigaction dfl;  /* SIG_DFL, no flags */
  uint64_t now = PlinthClockNow();
  for (i = 0; i < FATAL_COUNT && fatalSignals[i] != sig; ++i)
    ;
  if (i == FATAL_COUNT)
    return;
  /* The same fault as the one a handler last returned from keeps the
   * clock of its first coming. */
  faultFirst = info->si_code > 0 && lastFault.sig == sig && lastFault.addr == info->si_addr
               && lastFault.pc == faultPc(context)
               && PlinthMonotonicNs() - lastFault.returned < FAULT_REPEAT_NS
               ? lastFault.first : now;
  action = fatalOld[i];
  if (!isHandler(&action) || sig == SIGABRT) {
    if (action.sa_handler == SIG_IGN && info->si_code <= 0)
      ;                         /* sent by kill or raise, and ignored */
    else
      fatalDie(i, &action, sig, info, context);
  } else if (info->si_code > 0 && faultRepeats(&fault, sig, info, context)) {
    /* The handler cannot fix it: it would loop for ever.  Die as
     * without a handler, with the traceback and a core dump. */
    fatalDie(i, &dfl, sig, info, context);
  } else {
    sigset_t all;
    if ((action.sa_flags & SA_RESETHAND) != 0) {
      /* The kernel would have put SIG_DFL back; so does the program's view. */
      memset(&fatalOld[i], 0, sizeof fatalOld[i]);
      fatalOld[i].sa_handler = SIG_DFL;
    }
    sigfillset(&all);
    (void)pthread_sigmask(SIG_BLOCK, &all, NULL);
    errno = saved;
    chainCall(&action, sig, info, context);
    saved = errno;
    if (info->si_code > 0) {
      /* Returned: fixed, or the fault comes straight back to faultRepeats,
       * or to the default the handler put back (fatalDie above). */
      fault.returned = PlinthMonotonicNs();
      fault.first = faultFirst;
      ++fault.repeats;
      lastFault = fault;
    }
  }
  errno = saved;
}

/* PlinthFatalSignalsInstall -- call handler on a fatal signal, then chain */

int PlinthFatalSignalsInstall(PlinthFatalHandler handler)
{
  struct sigaction action;
  assert(handler != NULL);
  memset(&action, 0, sizeof action);
  action.sa_sigaction = fatalSignal;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  fatalHandler = handler;
  fatalEntered = 0;
  for (size_t i = 0; i < FATAL_COUNT; ++i)
    if (realSigaction(fatalSignals[i], &action, &fatalOld[i]) != 0)
      return errno;
    else
      fatalInstalled[i] = 1;
  return 0;
}

/* PlinthFatalSignalsRemove -- put back the dispositions found at install */

void PlinthFatalSignalsRemove(void)
{
  if (fatalHandler == NULL)
    return;
  for (size_t i = 0; i < FATAL_COUNT; ++i) {
    struct sigaction current;
    /* Only if ours is still there: a handler installed later stays. */
    if (realSigaction(fatalSignals[i], NULL, &current) == 0 &&
        (current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == fatalSignal)
      (void)realSigaction(fatalSignals[i], &fatalOld[i], NULL);
    fatalInstalled[i] = 0;
  }
  fatalHandler = NULL;
}

#ifdef __GLIBC__

/* PLINTH_SIGNAL_API -- sigaction and signal are visible wherever the
 * plinth is linked, even where TELLTALE_API_HIDDEN hides the rest */
#define PLINTH_SIGNAL_API __attribute__((visibility("default")))

static struct sigaction userAction[NSIG];   /* the program's, for wrapped signals */

static void trampoline(int sig, siginfo_t *info, void *context)
{
  struct sigaction action = userAction[sig];  /* the program may change it meanwhile */
  if ((action.sa_flags & SA_RESETHAND) != 0) {
    /* The kernel has put SIG_DFL back; so does the program's view. */
    memset(&userAction[sig], 0, sizeof userAction[sig]);
    userAction[sig].sa_handler = SIG_DFL;
  }
  chainCall(&action, sig, info, context);
}

/* sigaction -- the program's sigaction, so that a handler it installs for
 * a fatal signal while telltale's is installed is chained to rather than
 * put in its place: telltale's stays, and the program's becomes the one
 * the signal is passed on to.  The program sees what it would have seen:
 * old is the handler that would have been there.  Other signals, and all
 * signals once telltale's handlers are removed, go straight through.
 * design/plinth.txt .sol.signal.after */
/* passThrough -- TELLTALE_SIGNALS=none: the program's handlers are not
 * wrapped or chained; sigaction and signal are the C library's.  Read at
 * the first call, which may come before main.  .sol.signal.none */
static int passThrough(void)
{
  static _Atomic int state;     /* 0: not read yet; 1: wrap; 2: pass through */
  int s = atomic_load_explicit(&state, memory_order_relaxed);
  if (s == 0) {
    const char *value = getenv("TELLTALE_SIGNALS");
    s = value != NULL && strcmp(value, "none") == 0 ? 2 : 1;
    atomic_store_explicit(&state, s, memory_order_relaxed);
  }
  return s == 2;
}

/* Exported from the shared library, in front of the C library's
 * (design/build.txt .pack.export), and from the allocation
 * recorder too, whose runtime is otherwise hidden: a handler's events
 * must go to a level of their own there as anywhere (.malloc.signal). */
PLINTH_SIGNAL_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
  size_t i;
  struct sigaction kernelOld, previous, wrapped;
  sigset_t all, mask;
  int res;
  if (passThrough())
    return realSigaction(sig, act, old);
  for (i = 0; i < FATAL_COUNT && fatalSignals[i] != sig; ++i)
    ;
  if (i < FATAL_COUNT && fatalInstalled[i]) {
    if (old != NULL)
      *old = fatalOld[i];
    if (act != NULL)
      fatalOld[i] = *act;
    return 0;
  }
  if (sig <= 0 || sig >= NSIG || sig == SIGKILL || sig == SIGSTOP)
    return realSigaction(sig, act, old);
  /* A handler is wrapped (.sol.signal.level); SIG_DFL and SIG_IGN are
   * not.  Signals are blocked while the kernel's action and userAction
   * change together, so that the trampoline sees them agree. */
  sigfillset(&all);
  (void)pthread_sigmask(SIG_BLOCK, &all, &mask);
  previous = userAction[sig];
  if (act != NULL && (act->sa_flags & SA_SIGINFO) == 0 &&
      (act->sa_handler == SIG_DFL || act->sa_handler == SIG_IGN))
    res = realSigaction(sig, act, &kernelOld);
  else if (act != NULL) {
    wrapped = *act;
    wrapped.sa_sigaction = trampoline;
    wrapped.sa_flags |= SA_SIGINFO;
    sigfillset(&wrapped.sa_mask);
    userAction[sig] = *act;
    atomic_store(&PlinthWrapActive, 1);
    res = realSigaction(sig, &wrapped, &kernelOld);
    if (res != 0)
      userAction[sig] = previous;
  } else
    res = realSigaction(sig, NULL, &kernelOld);
  (void)pthread_sigmask(SIG_SETMASK, &mask, NULL);
  if (res == 0 && old != NULL) {
    /* What the program installed, if the trampoline stands for it */
    int ours = (kernelOld.sa_flags & SA_SIGINFO) != 0 && kernelOld.sa_sigaction == trampoline;
    *old = ours ? previous : kernelOld;
  }
  return res;
}

/* PlinthSignalsUnload -- plinth.h */
void PlinthSignalsUnload(void)
{
  PlinthFatalSignalsRemove();
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction current;
    if (realSigaction(sig, NULL, &current) == 0 && (current.sa_flags & SA_SIGINFO) != 0 &&
        current.sa_sigaction == trampoline)
      (void)realSigaction(sig, &userAction[sig], NULL);
  }
}

/* signal -- the same for signal(): glibc's own signal() does not call
 * sigaction through the symbol, so it is here too, with its BSD meaning */
PLINTH_SIGNAL_API void (*signal(int sig, void (*handler)(int)))(int)
{
  struct sigaction action, old;
  memset(&action, 0, sizeof action);
  action.sa_handler = handler;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(sig, &action, &old) != 0)
    return SIG_ERR;
  return (old.sa_flags & SA_SIGINFO) != 0 ? (void (*)(int))(void *)old.sa_sigaction : old.sa_handler;
}

#else

void PlinthSignalsUnload(void)
{
  PlinthFatalSignalsRemove();
}

#endif

/* Leaving a handler by longjmp.  design/plinth.txt .sol.signal.jump
 *
 * siglongjmp, longjmp, _longjmp and __longjmp_chk (which _FORTIFY_SOURCE
 * calls) are the plinth's: each tells the runtime where the jump lands,
 * so that the handlers it leaves are seen left exactly, then calls the
 * C library's.  Where the landing cannot be read from the jmp_buf (glibc
 * keeps its stack pointer mangled; only x86-64's is read here), the
 * runtime sees the handler left later, by the stack pointers it meets. */
#ifdef __GLIBC__
typedef void (*RealJumpFn)(struct __jmp_buf_tag *env, int val) __attribute__((noreturn));
static RealJumpFn realSiglongjmp, realLongjmp, realUnderLongjmp, realLongjmpChk;

static void jumpsResolve(void)
{
  if (realSiglongjmp == NULL)
    realSiglongjmp = (RealJumpFn)dlsym(RTLD_NEXT, "siglongjmp");
  if (realLongjmp == NULL)
    realLongjmp = (RealJumpFn)dlsym(RTLD_NEXT, "longjmp");
  if (realUnderLongjmp == NULL)
    realUnderLongjmp = (RealJumpFn)dlsym(RTLD_NEXT, "_longjmp");
  if (realLongjmpChk == NULL)
    realLongjmpChk = (RealJumpFn)dlsym(RTLD_NEXT, "__longjmp_chk");
}

/* jumpLanding -- the stack pointer a jmp_buf restores, or 0 if unknown */
static uintptr_t jumpLanding(const struct __jmp_buf_tag *env)
{
#if defined(__x86_64__) && !defined(PLINTH_TSAN)
  /* glibc's PTR_MANGLE: xor with the thread's pointer guard (%fs:0x30),
   * then rotate left 17; JB_RSP is the 7th word */
  uintptr_t guard, v = (uintptr_t)env->__jmpbuf[6], here = (uintptr_t)__builtin_frame_address(0);
  stack_t ss;
  __asm__("mov %%fs:0x30, %0" : "=r"(guard));
  v = ((v >> 17) | (v << 47)) ^ guard;
  /* A landing is up this stack, or off the alternate one this runs on;
   * anything else is not believed. */
  if (v > here)
    return v;
  if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK) != 0
      && (v < (uintptr_t)ss.ss_sp || v >= (uintptr_t)ss.ss_sp + ss.ss_size))
    return v;
  return 0;
#else
  (void)env;
  return 0;
#endif
}

static void jumpSeen(const struct __jmp_buf_tag *env)
{
  uintptr_t sp;
  if (jumpHook != NULL && (sp = jumpLanding(env)) != 0)
    jumpHook(sp);
}

PLINTH_SIGNAL_API void siglongjmp(sigjmp_buf env, int val)
{
  jumpSeen(env);
  jumpsResolve();
  realSiglongjmp(env, val);
}

PLINTH_SIGNAL_API void longjmp(jmp_buf env, int val)
{
  jumpSeen(env);
  jumpsResolve();
  realLongjmp(env, val);
}

PLINTH_SIGNAL_API void _longjmp(jmp_buf env, int val)
{
  jumpSeen(env);
  jumpsResolve();
  realUnderLongjmp(env, val);
}

extern void __longjmp_chk(struct __jmp_buf_tag *env, int val) __attribute__((noreturn));
PLINTH_SIGNAL_API void __longjmp_chk(struct __jmp_buf_tag *env, int val)
{
  jumpSeen(env);
  jumpsResolve();
  realLongjmpChk(env, val);
}
#else
static void jumpsResolve(void)
{
}
#endif

#define ALT_STACK_SIZE ((size_t)64 * 1024)

/* PlinthAltStackCreate -- an alternate signal stack for the calling
 * thread, so that the fatal-signal handler runs after a stack overflow */

void *PlinthAltStackCreate(void)
{
  stack_t ss, old;
  void *base;
  if (sigaltstack(NULL, &old) == 0 && (old.ss_flags & SS_DISABLE) == 0)
    return NULL;                /* the program gave the thread one */
  base = mmap(NULL, ALT_STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    return NULL;
  ss.ss_sp = base;
  ss.ss_size = ALT_STACK_SIZE;
  ss.ss_flags = 0;
  if (sigaltstack(&ss, NULL) != 0) {
    (void)munmap(base, ALT_STACK_SIZE);
    return NULL;
  }
  return base;
}

/* PlinthAltStackDestroy -- stop using and free the calling thread's stack */

void PlinthAltStackDestroy(void *stack)
{
  stack_t ss;
  if (stack == NULL)
    return;
  memset(&ss, 0, sizeof ss);
  ss.ss_flags = SS_DISABLE;
  (void)sigaltstack(&ss, NULL);
  (void)munmap(stack, ALT_STACK_SIZE);
}

/* PlinthAbort -- abort() */

void PlinthAbort(void)
{
  abort();
}
