/* <tools/replay/replayexec.c> -- the replay threads, which make the calls
 *
 * .design: design/heap.txt .replay.threads .replay.threads.many
 *
 * Each recorded thread's calls are made on a replay thread of its own,
 * fed through a ring by the reading thread (or, with --serial, made
 * on the reading thread in recorded order).  A replay thread with
 * nothing queued sleeps on its condition variable; a recorded thread
 * with no events left is retired (ReplayExecEventRead); and past WORKER_LIMIT
 * replay threads at once, recorded threads share them.  So a log of
 * thousands of threads costs time in proportion to its events.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <malloc.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "plinthclock.h"
#include "replayint.h"


typedef struct WorkerStruct {
  pthread_t thread;
  OpStruct *ring;
  _Atomic uint64_t head, tail;
  _Atomic int sleeping;         /* waiting on wake for its ring to fill */
  pthread_mutex_t lock;
  pthread_cond_t wake;
  uint64_t cycles, calls, failed;
  /* The reading thread's own: */
  unsigned serials;             /* recorded threads it replays now */
  int running;                  /* its thread started and not yet joined */
  int exiting;                  /* ExecExit queued */
  struct WorkerStruct *next;    /* on the exiting queue */
} WorkerStruct;

/* ThreadEntryStruct -- a recorded thread: its replay thread, if it has
 * one now, and how many of its events are still to be read */
typedef struct ThreadEntryStruct {
  uint32_t serial;
  int used;
  WorkerStruct *worker;
  size_t left;                  /* events still to read; SIZE_MAX: not known */
  int replayed;                 /* it has had a replay thread */
} ThreadEntryStruct;

static WorkerStruct serialWorker;
static WorkerStruct *worker;    /* WORKER_LIMIT of them, workerCount made */
static OpStruct *rings;         /* theirs, one mapping: a mapping a thread
                                   made ReplayRss count them all again */
static size_t workerCount;
static WorkerStruct *exitingFirst, *exitingLast;   /* ExecExit queued, not joined */
static size_t activeCount;      /* workers replaying at least one thread */
static size_t shareNext;        /* where sharing looks next */
static _Atomic unsigned spinLimit = 256;
static unsigned processors = 1;
static size_t pageSize = 4096;

static ThreadEntryStruct *table;
static size_t tableCapacity, tableCount;
static uint64_t threadsReplayed;

/* touch -- write to every page of a new block, as a program would;
 * size is the slot's touch, 0 past ReplayOptions.touchMax (.replay.touch) */
static void touch(void *p, uint64_t size)
{
  unsigned char *b = p;
  if (p == NULL || size == 0)
    return;
  for (uint64_t at = 0; at < size; at += pageSize)
    b[at] = 1;
  b[size - 1] = 1;
}

/* execute -- make one call of the allocator under test, timing it */
static void execute(WorkerStruct *w, const OpStruct *op)
{
  void *p = NULL, *old = NULL;
  uint64_t t0, t1;
  if (op->old != NULL)
    old = ReplaySlotWait(op->old);
  t0 = PlinthClockNow();
  switch ((ExecKind)op->kind) {
  case ExecMalloc: p = malloc(op->size); break;
  case ExecCalloc: p = calloc(1, op->size); break;
  case ExecRealloc: p = realloc(old, op->size); break;
  case ExecFree: free(old); break;
  case ExecMemalign: p = memalign(op->align, op->size); break;
  case ExecAlignedAlloc: p = aligned_alloc(op->align, op->size); break;
  case ExecPosixMemalign:
    if (posix_memalign(&p, op->align, op->size) != 0)
      p = NULL;
    break;
  case ExecExit: return;
  }
  t1 = PlinthClockNow();
  w->cycles += t1 - t0;
  ++w->calls;
  if (op->old != NULL && !(op->kind == ExecRealloc && p == NULL && op->size > 0))
    ReplaySlotRelease(op->old);
  if (op->slot != NULL) {
    if (p == NULL)
      ++w->failed;
    else if (op->kind != ExecCalloc)
      touch(p, op->slot->touch);
    atomic_store_explicit(&op->slot->ptr, (uintptr_t)p, memory_order_release);
  }
}

/* workerSleep -- wait until the ring holds more than head.  sleeping
 * and tail are each stored, then the other loaded, in one total order
 * (seq_cst) here and in submit, so that either this sees the op or
 * submit sees sleeping and signals, under the lock: no wake-up is lost. */
static void workerSleep(WorkerStruct *w, uint64_t head)
{
  pthread_mutex_lock(&w->lock);
  atomic_store(&w->sleeping, 1);
  while (atomic_load(&w->tail) == head)
    pthread_cond_wait(&w->wake, &w->lock);
  atomic_store(&w->sleeping, 0);
  pthread_mutex_unlock(&w->lock);
}

static void *workerRun(void *arg)
{
  WorkerStruct *w = arg;
  uint64_t head = atomic_load_explicit(&w->head, memory_order_relaxed);
  unsigned idle = 0;
  for (;;) {
    uint64_t tail = atomic_load_explicit(&w->tail, memory_order_acquire);
    if (head == tail) {
      /* Some yields first while there are few replay threads
       * (spinUpdate): the next op is then likely here before the
       * cost of a wake-up. */
      if (++idle < atomic_load_explicit(&spinLimit, memory_order_relaxed))
        sched_yield();
      else {
        workerSleep(w, head);
        idle = 0;
      }
      continue;
    }
    idle = 0;
    while (head != tail) {
      OpStruct *op = &w->ring[head & (RING_SIZE - 1)];
      if (op->kind == ExecExit) {
        atomic_store_explicit(&w->head, head + 1, memory_order_release);
        return NULL;
      }
      execute(w, op);
      ++head;
      atomic_store_explicit(&w->head, head, memory_order_release);
    }
  }
}

/* push -- queue op on w's ring, waking it if it sleeps */
static void push(WorkerStruct *w, const OpStruct *op)
{
  uint64_t tail = atomic_load_explicit(&w->tail, memory_order_relaxed);
  while (tail - atomic_load_explicit(&w->head, memory_order_acquire) >= RING_SIZE)
    sched_yield();
  w->ring[tail & (RING_SIZE - 1)] = *op;
  atomic_store(&w->tail, tail + 1);
  if (atomic_load(&w->sleeping)) {
    pthread_mutex_lock(&w->lock);
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
  }
}

/* spinUpdate -- how long an idle replay thread yields before it sleeps:
 * while at most 4 a processor are replaying, 256 yields (a handoff
 * between two threads then costs no wake-up, as polling did); past
 * that, none, as each of them polling took the processors from the
 * ones with calls to make. */
static void spinUpdate(void)
{
  atomic_store_explicit(&spinLimit, activeCount <= 4 * processors ? 256u : 0u, memory_order_relaxed);
}


/* The recorded threads, by serial: open addressing, grown at half full */

static size_t threadHash(uint32_t serial)
{
  return (size_t)(((uint64_t)serial * 0x9E3779B97F4A7C15u) >> 20);
}

static ThreadEntryStruct *threadFind(uint32_t serial)
{
  size_t mask = tableCapacity - 1, i;
  if (tableCount + 1 > tableCapacity / 2) {
    ThreadEntryStruct *old = table;
    size_t oldCapacity = tableCapacity;
    tableCapacity = oldCapacity == 0 ? 1024 : 2 * oldCapacity;
    table = ReplayAnonMap(tableCapacity * sizeof *table);
    mask = tableCapacity - 1;
    for (size_t j = 0; j < oldCapacity; ++j)
      if (old[j].used) {
        for (i = threadHash(old[j].serial) & mask; table[i].used; i = (i + 1) & mask)
          ;
        table[i] = old[j];
      }
    if (old != NULL)
      ReplayAnonUnmap(old);
  }
  for (i = threadHash(serial) & mask; table[i].used; i = (i + 1) & mask)
    if (table[i].serial == serial)
      return &table[i];
  table[i].used = 1;
  table[i].serial = serial;
  table[i].worker = NULL;
  table[i].left = SIZE_MAX;
  table[i].replayed = 0;
  ++tableCount;
  return &table[i];
}


/* Replay threads: made, retired, shared */

/* workerJoin -- w's thread, which has ExecExit queued, once it is done */
static void workerJoin(WorkerStruct *w)
{
  pthread_join(w->thread, NULL);
  w->running = 0;
}

/* workerNew -- a replay thread: the earliest exiting one once it is
 * done (waited for if WORKER_LIMIT are made), or a new one; NULL if
 * WORKER_LIMIT are replaying threads. */
static WorkerStruct *workerNew(void)
{
  WorkerStruct *w = NULL;
  if (exitingFirst != NULL
             && (atomic_load(&exitingFirst->head) == atomic_load(&exitingFirst->tail)
                 || workerCount == WORKER_LIMIT)) {
    w = exitingFirst;
    exitingFirst = w->next;
    workerJoin(w);
  } else if (workerCount < WORKER_LIMIT) {
    w = &worker[workerCount];
    w->ring = rings + workerCount++ * RING_SIZE;
    if (pthread_mutex_init(&w->lock, NULL) != 0 || pthread_cond_init(&w->wake, NULL) != 0)
      ReplayFail("cannot make a replay thread's lock");
  } else {
    return NULL;
  }
  w->exiting = 0;
  w->serials = 0;
  w->running = 1;
  if (pthread_create(&w->thread, NULL, workerRun, w) != 0)
    ReplayFail("cannot start a replay thread");
  ++activeCount;
  spinUpdate();
  return w;
}

/* workerFor -- the replay thread of a recorded thread: its own, started
 * if need be, or, when WORKER_LIMIT replay threads are replaying, one
 * of theirs.  Shared, a replay thread makes the calls of its recorded
 * threads in the order read, so the earliest queued call still depends
 * only on calls made.  .replay.threads.many */
static WorkerStruct *workerFor(ThreadEntryStruct *t)
{
  WorkerStruct *w;
  if (t->worker != NULL)
    return t->worker;
  w = workerNew();
  if (w == NULL) {
    do
      w = &worker[shareNext++ % workerCount];
    while (w->exiting);
  }
  ++w->serials;
  if (!t->replayed)
    ++threadsReplayed;
  t->replayed = 1;
  t->worker = w;
  return w;
}

/* retire -- the recorded thread t has no more calls: its replay thread
 * ends once it has made them, unless it replays others too */
static void retire(ThreadEntryStruct *t)
{
  WorkerStruct *w = t->worker;
  if (w == NULL)
    return;
  t->worker = NULL;
  if (--w->serials > 0)
    return;
  {
    OpStruct op = {ExecExit, 0, 0, NULL, NULL};
    push(w, &op);
  }
  w->exiting = 1;
  w->next = NULL;
  if (exitingLast != NULL && exitingFirst != NULL)
    exitingLast->next = w;
  else
    exitingFirst = w;
  exitingLast = w;
  --activeCount;
  spinUpdate();
}

/* submit -- run op on the replay thread of a recorded thread, or here */
void ReplayExecSubmit(uint32_t thread, const OpStruct *op)
{
  if (ReplayOptions.serial) {
    execute(&serialWorker, op);
    return;
  }
  push(workerFor(threadFind(thread)), op);
}


void ReplayExecDrain(void)
{
  for (size_t i = 0; i < workerCount; ++i)
    while (atomic_load_explicit(&worker[i].head, memory_order_acquire)
           != atomic_load_explicit(&worker[i].tail, memory_order_acquire))
      sched_yield();
}

void ReplayExecThreadExit(uint32_t thread)
{
  if (!ReplayOptions.serial)
    retire(threadFind(thread));
}

void ReplayExecThreadEvents(uint32_t thread, size_t events)
{
  if (!ReplayOptions.serial)
    threadFind(thread)->left = events;
}

/* ReplayExecEventRead -- an event of thread was read and replayed: if it was
 * the thread's last, the thread is retired, as if it had exited (a
 * call skew holds back until later gets a replay thread again).  A
 * program's threads often end without a ThreadExit (still running at
 * exit, or killed), and each would otherwise keep a replay thread to
 * the end.  .replay.threads.many */
void ReplayExecEventRead(uint32_t thread)
{
  ThreadEntryStruct *t;
  if (ReplayOptions.serial)
    return;
  t = threadFind(thread);
  if (t->left != SIZE_MAX && t->left > 0 && --t->left == 0)
    retire(t);
}

/* ReplayExecInit -- before the first call */
void ReplayExecInit(void)
{
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  pageSize = (size_t)sysconf(_SC_PAGESIZE);
  processors = n > 0 ? (unsigned)n : 1;
  worker = ReplayAnonMap(WORKER_LIMIT * sizeof *worker);
  rings = ReplayAnonMap((size_t)WORKER_LIMIT * RING_SIZE * sizeof *rings);
}

void ReplayExecFinish(uint64_t *callsReturn, uint64_t *cyclesReturn, uint64_t *failedReturn,
                      uint64_t *threadsReturn)
{
  uint64_t calls = serialWorker.calls, cycles = serialWorker.cycles, failed = serialWorker.failed;
  for (size_t i = 0; i < tableCapacity; ++i)
    if (table[i].used && table[i].worker != NULL)
      retire(&table[i]);
  for (size_t i = 0; i < workerCount; ++i) {
    if (worker[i].running)
      workerJoin(&worker[i]);
    cycles += worker[i].cycles;
    calls += worker[i].calls;
    failed += worker[i].failed;
  }
  *callsReturn = calls;
  *cyclesReturn = cycles;
  *failedReturn = failed;
  *threadsReturn = ReplayOptions.serial || threadsReplayed == 0 ? 1 : threadsReplayed;
}
