/* <tools/replay/replayexec.c> -- the replay threads, which make the calls
 *
 * .design: design/telemetry.txt .replay.threads
 *
 * Each recorded thread's calls are made on a replay thread of its own,
 * fed through a ring by the reading thread (or, with --serial, made
 * on the reading thread in recorded order).
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
  uint32_t serial;
  int running, exiting;
  pthread_t thread;
  OpStruct *ring;
  _Atomic uint64_t head, tail;
  uint64_t cycles, calls, failed;
} WorkerStruct;

static WorkerStruct serialWorker;
static WorkerStruct *worker[WORKER_LIMIT];
static size_t workerCount;
static size_t pageSize = 4096;

/* touch -- write to every page of a new block, as a program would;
 * size is the slot's touch, 0 past opt.touchMax (.replay.touch) */
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
    old = slotWait(op->old);
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
    slotRelease(op->old);
  if (op->slot != NULL) {
    if (p == NULL)
      ++w->failed;
    else if (op->kind != ExecCalloc)
      touch(p, op->slot->touch);
    atomic_store_explicit(&op->slot->ptr, (uintptr_t)p, memory_order_release);
  }
}

static void *workerRun(void *arg)
{
  WorkerStruct *w = arg;
  uint64_t head = atomic_load_explicit(&w->head, memory_order_relaxed);
  unsigned idle = 0;
  for (;;) {
    uint64_t tail = atomic_load_explicit(&w->tail, memory_order_acquire);
    if (head == tail) {
      if (++idle < 256)
        sched_yield();
      else {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
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

/* workerFor -- the replay thread of a recorded thread, started if need be */
static WorkerStruct *workerFor(uint32_t serial)
{
  WorkerStruct *w = NULL;
  for (size_t i = 0; i < workerCount; ++i)
    if (worker[i]->serial == serial && !worker[i]->exiting)
      return worker[i];
  for (size_t i = 0; i < workerCount; ++i)
    if (worker[i]->exiting && atomic_load(&worker[i]->head) == atomic_load(&worker[i]->tail)) {
      pthread_join(worker[i]->thread, NULL);
      w = worker[i];
      break;
    }
  if (w == NULL) {
    if (workerCount == WORKER_LIMIT)
      fail("more than %d threads alive at once", WORKER_LIMIT);
    w = worker[workerCount++] = mapAnon(sizeof *w);
    w->ring = mapAnon(RING_SIZE * sizeof(OpStruct));
  }
  w->serial = serial;
  w->exiting = 0;
  w->running = 1;
  if (pthread_create(&w->thread, NULL, workerRun, w) != 0)
    fail("cannot start a replay thread");
  return w;
}

/* submit -- run op on the replay thread of a recorded thread, or here */
void submit(uint32_t thread, const OpStruct *op)
{
  WorkerStruct *w;
  uint64_t tail;
  if (opt.serial) {
    execute(&serialWorker, op);
    return;
  }
  w = workerFor(thread);
  tail = atomic_load_explicit(&w->tail, memory_order_relaxed);
  while (tail - atomic_load_explicit(&w->head, memory_order_acquire) >= RING_SIZE)
    sched_yield();
  w->ring[tail & (RING_SIZE - 1)] = *op;
  atomic_store_explicit(&w->tail, tail + 1, memory_order_release);
  if (op->kind == ExecExit)
    w->exiting = 1;
}


void execDrain(void)
{
  for (size_t i = 0; i < workerCount; ++i)
    while (atomic_load_explicit(&worker[i]->head, memory_order_acquire)
           != atomic_load_explicit(&worker[i]->tail, memory_order_acquire))
      sched_yield();
}

void execThreadExit(uint32_t thread)
{
  for (size_t i = 0; i < workerCount; ++i)
    if (worker[i]->serial == thread && !worker[i]->exiting) {
      OpStruct op = {ExecExit, 0, 0, NULL, NULL};
      submit(thread, &op);
    }
}

/* execInit -- before the first call */
void execInit(void)
{
  pageSize = (size_t)sysconf(_SC_PAGESIZE);
}

void execFinish(uint64_t *callsReturn, uint64_t *cyclesReturn, uint64_t *failedReturn,
                uint64_t *threadsReturn)
{
  uint64_t calls = serialWorker.calls, cycles = serialWorker.cycles, failed = serialWorker.failed;
  for (size_t i = 0; i < workerCount; ++i)
    if (!worker[i]->exiting) {
      OpStruct op = {ExecExit, 0, 0, NULL, NULL};
      submit(worker[i]->serial, &op);
    }
  for (size_t i = 0; i < workerCount; ++i) {
    if (worker[i]->running)
      pthread_join(worker[i]->thread, NULL);
    cycles += worker[i]->cycles;
    calls += worker[i]->calls;
    failed += worker[i]->failed;
  }
  *callsReturn = calls;
  *cyclesReturn = cycles;
  *failedReturn = failed;
  *threadsReturn = opt.serial || workerCount == 0 ? 1 : workerCount;
}
