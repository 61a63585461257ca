/* <tools/common/skew.h> -- a malloc log's events on one address, put
 * back in causal order
 *
 * .design: design/heap.txt .replay.skew design/recorder.txt .malloc.order
 *
 * The cycle counter is not ordered with the stores that pass a block to
 * another thread, so a block freed on one thread right after another
 * allocated it can carry a free time a few ns before its allocation
 * time; and so can an address's reuse.  An event that would be an
 * anomaly (a free of a block not live, an allocation of an address
 * still live) waits up to SKEW_NS of the log's clock for the event that
 * explains it; when that comes, the two are applied in causal order,
 * and only what is still unexplained then is applied as it is.  A
 * thread's later events on an address wait behind its held one, so
 * that a thread that frees a block and is given its address again does
 * not force its held free out before the other thread's explaining
 * event.
 *
 * The reader says what live means and what applying is (two callbacks),
 * so that replay and the heap report order a log alike.
 */

#ifndef skew_h
#define skew_h

#include <stddef.h>
#include <stdint.h>
#include "eventread.h"

#define SKEW_NS 1000u
#define SKEW_PENDING_LIMIT 1024
#define SKEW_ADDRESS_LIMIT 8     /* held on one address: a forged log's cost */

/* SkewEventStruct -- an allocation or a free, as the reader saw it */
typedef struct SkewEventStruct {
  EventRecordStruct rec;
  int free;                     /* a free, or an allocation */
  uint64_t address;             /* never 0 */
  uint64_t data[3];             /* the reader's: what to apply */
  uint64_t serial;              /* the order events came in */
} SkewEventStruct;

/* SkewLiveFunction -- whether a block is live at address now */
typedef int (*SkewLiveFunction)(void *closure, uint64_t address);

/* SkewApplyFunction -- apply the event now; 1 if the address changed
 * state (a block was made or freed), 0 if it was an anomaly after all */
typedef int (*SkewApplyFunction)(void *closure, const SkewEventStruct *event);

typedef struct SkewStruct {
  SkewLiveFunction live;
  SkewApplyFunction apply;
  void *closure;
  uint64_t ticks;               /* SKEW_NS in the log's clock */
  SkewEventStruct *pending;     /* SKEW_PENDING_LIMIT of them, the reader's */
  size_t count;
  uint64_t serial;              /* the next event's */
} SkewStruct;

/* SkewInit -- clockHz is the stream's (0: the clock counts ns);
 * pending has room for SKEW_PENDING_LIMIT events */
extern void SkewInit(SkewStruct *skew, uint64_t clockHz, SkewLiveFunction live,
                     SkewApplyFunction apply, void *closure, SkewEventStruct *pending);

/* SkewEvent -- an allocation or a free of address (not 0) read from the
 * log, with the reader's data to apply it: applied now, or held until
 * another thread's event explains it */
extern void SkewEvent(SkewStruct *skew, const EventRecordStruct *rec, int isFree,
                      uint64_t address, uint64_t data0, uint64_t data1, uint64_t data2);

/* SkewFirst -- before a thread's other event on address that the
 * reader applies itself (a realloc), its own held events there, which
 * it made first, are applied */
extern void SkewFirst(SkewStruct *skew, uint64_t address, uint32_t thread);

/* SkewExpire -- events held long enough before clock are applied as
 * they are (all of them, at the end of the log, if all) */
extern void SkewExpire(SkewStruct *skew, EventClock clock, int all);

#endif /* skew_h */
