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
  skew->serial = 0;
}

static void applyNow(SkewStruct *skew, const SkewEventStruct *event);

/* oldest -- the index of the earliest held event on address (of
 * thread's alone unless anyThread), or count if none; *heldReturn, if
 * not NULL, how many there are */
static size_t oldest(const SkewStruct *skew, uint64_t address, int anyThread, uint32_t thread,
                     size_t *heldReturn)
{
  size_t found = skew->count, held = 0;
  for (size_t i = 0; i < skew->count; ++i)
    if (skew->pending[i].address == address && (anyThread || skew->pending[i].rec.thread == thread)
        && (held++ == 0 || skew->pending[i].serial < skew->pending[found].serial))
      found = i;
  if (heldReturn != NULL)
    *heldReturn = held;
  return found;
}

/* first -- the index of thread's earliest held event on address, or
 * count if it has none */
static size_t first(const SkewStruct *skew, uint64_t address, uint32_t thread)
{
  return oldest(skew, address, 0, thread, NULL);
}

/* take -- apply the held event i now and drop it, after its thread's
 * earlier held events on its address (its own order) */
static void take(SkewStruct *skew, size_t i)
{
  SkewEventStruct event = skew->pending[i];
  size_t j;
  while ((j = first(skew, event.address, event.rec.thread)) != skew->count
         && skew->pending[j].serial < event.serial)
    take(skew, j);
  for (j = 0; j < skew->count && skew->pending[j].serial != event.serial; ++j)
    continue;
  if (j == skew->count)
    return;                     /* applied meanwhile, in its turn */
  skew->pending[j] = skew->pending[--skew->count];
  applyNow(skew, &event);
}

/* explained -- after an event on address, each thread's earliest held
 * event there that is no anomaly now (a free, now that its block is
 * live; an allocation, now that the address is free) is applied: the
 * event explained another thread's, or let the thread's own next one
 * go, which waited behind it */
static void explained(SkewStruct *skew, uint64_t address)
{
  for (size_t i = 0; i < skew->count; ++i)
    if (skew->pending[i].address == address
        && skew->pending[i].free == skew->live(skew->closure, address)
        && first(skew, address, skew->pending[i].rec.thread) == i) {
      take(skew, i);            /* which looks again, after it */
      return;
    }
}

static void applyNow(SkewStruct *skew, const SkewEventStruct *event)
{
  (void)skew->apply(skew->closure, event);
  if (skew->count > 0)
    explained(skew, event->address);
}

void SkewFirst(SkewStruct *skew, uint64_t address, uint32_t thread)
{
  size_t i;
  while ((i = first(skew, address, thread)) != skew->count)
    take(skew, i);
}

void SkewExpire(SkewStruct *skew, EventClock clock, int all)
{
  for (size_t i = 0; i < skew->count; )
    if (all || skew->pending[i].rec.clock + skew->ticks < clock) {
      take(skew, i);
      i = 0;                    /* take may have applied others: look again */
    } else
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
  event.serial = skew->serial++;
  if (skew->count == SKEW_PENDING_LIMIT)
    take(skew, 0);
  if (skew->count > 0) {        /* a bound on explained's work */
    size_t held, i = oldest(skew, address, 1, 0, &held);
    if (held >= SKEW_ADDRESS_LIMIT)
      take(skew, i);
  }
  if (first(skew, address, rec->thread) == skew->count
      && skew->live(skew->closure, address) == isFree) {
    applyNow(skew, &event);
    return;
  }
  skew->pending[skew->count++] = event;
}
