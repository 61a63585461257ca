/* <tools/common/skew.c> -- a malloc log's events on one address, put
 * back in causal order: skew.h
 *
 * .design: design/heap.txt .replay.skew
 */

#include "skew.h"

void SkewInit(SkewStruct *skew, uint64_t clockHz, SkewLiveFunction live,
              SkewApplyFunction apply, void *closure, SkewEventStruct *pending)
{
  skew->live = live;
  skew->apply = apply;
  skew->closure = closure;
  skew->ticks = clockHz != 0 ? clockHz / (1000000000u / SKEW_NS) : SKEW_NS;
  skew->pending = pending;
  skew->count = 0;
}

static void applyNow(SkewStruct *skew, const SkewEventStruct *event);

/* take -- apply the held event i now and drop it */
static void take(SkewStruct *skew, size_t i)
{
  SkewEventStruct event = skew->pending[i];
  skew->pending[i] = skew->pending[--skew->count];
  applyNow(skew, &event);
}

/* explained -- a held event for address that is no anomaly now (a free,
 * now that its block is live; an allocation, now that the address is
 * free): apply it.  Only another thread's event explains one: a
 * thread's own events are in the order it made them. */
static void explained(SkewStruct *skew, uint64_t address, uint32_t thread)
{
  for (size_t i = 0; i < skew->count; ++i)
    if (skew->pending[i].address == address
        && skew->pending[i].free == skew->live(skew->closure, address)
        && skew->pending[i].rec.thread != thread) {
      take(skew, i);
      return;
    }
}

static void applyNow(SkewStruct *skew, const SkewEventStruct *event)
{
  if (skew->apply(skew->closure, event))
    explained(skew, event->address, event->rec.thread);
}

void SkewFirst(SkewStruct *skew, uint64_t address, uint32_t thread)
{
  for (size_t i = 0; i < skew->count; ++i)
    if (skew->pending[i].address == address && skew->pending[i].rec.thread == thread) {
      take(skew, i);
      return;
    }
}

void SkewExpire(SkewStruct *skew, EventClock clock, int all)
{
  for (size_t i = 0; i < skew->count; )
    if (all || skew->pending[i].rec.clock + skew->ticks < clock)
      take(skew, i);
    else
      ++i;
}

void SkewEvent(SkewStruct *skew, const EventRecordStruct *rec, int isFree,
               uint64_t address, uint64_t data0, uint64_t data1, uint64_t data2)
{
  SkewEventStruct event;
  event.rec = *rec;
  event.free = isFree;
  event.address = address;
  event.data[0] = data0, event.data[1] = data1, event.data[2] = data2;
  if (skew->count > 0)
    SkewFirst(skew, address, rec->thread);
  if (skew->live(skew->closure, address) == isFree) {
    applyNow(skew, &event);
    return;
  }
  if (skew->count == SKEW_PENDING_LIMIT)
    take(skew, 0);
  skew->pending[skew->count++] = event;
}
