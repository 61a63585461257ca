/* <src/decode/eventclock.c> -- the event layer: clock ticks as nanoseconds
 *
 * .design: design/runtime.txt .sol.clock design/tools.txt .eventcnv.text.fast
 *
 * The arithmetic of event times, exact on every platform: the clock's
 * rate (EventClockRate) and a clock delta split into seconds and
 * nanoseconds (EventClockSplit, for EventFormat's time columns).  See
 * eventdecode.h for the interface.  It calls no library function (the
 * event layer may call only string.h's): the traceback formats events
 * inside a signal handler.
 */

#include "eventdecode.h"

#define NS_PER_SECOND    1000000000u


/* mulDiv -- floor(a * b / c), for c > 0 and a quotient below 2^64
 *
 * Exact, with a 128-bit product and long division, so that times are
 * the same on every platform and compiler.
 */

static uint64_t mulDiv(uint64_t a, uint64_t b, uint64_t c)
{
  uint64_t aLo, aHi, bLo, bHi, p0, p1, p2, p3, mid, lo, hi, q, r;
  int i;
  if (b == 0 || a <= UINT64_MAX / b)    /* the product fits: the same quotient, at once */
    return a * b / c;
  aLo = a & 0xFFFFFFFFu, aHi = a >> 32;
  bLo = b & 0xFFFFFFFFu, bHi = b >> 32;
  p0 = aLo * bLo, p1 = aLo * bHi, p2 = aHi * bLo, p3 = aHi * bHi;
  mid = (p0 >> 32) + (p1 & 0xFFFFFFFFu) + (p2 & 0xFFFFFFFFu);
  lo = (p0 & 0xFFFFFFFFu) | mid << 32;
  hi = p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32);
  q = 0, r = 0;
  for (i = 127; i >= 0; --i) {
    uint64_t carry = r >> 63;
    uint64_t bit = i >= 64 ? hi >> (i - 64) & 1 : lo >> i & 1;
    r = r << 1 | bit;
    q <<= 1;
    if (carry || r >= c) {
      r -= c;
      q |= 1;
    }
  }
  return q;
}

/* EventClockSplit -- delta clock ticks as whole seconds and nanoseconds.
 * A cache remembers the clock range of the latest second, so that
 * events within it cost one division, not two. */
void EventClockSplit(uint64_t delta, uint64_t hz, EventFormatCacheStruct *cache,
                     uint64_t *secondsReturn, uint64_t *nsReturn)
{
  uint64_t rest;
  if (hz == 0) {
    *secondsReturn = delta / NS_PER_SECOND;
    *nsReturn = delta % NS_PER_SECOND;
    return;
  }
  if (cache != NULL && cache->secondValid && cache->hz == hz && delta >= cache->secondStart
      && delta - cache->secondStart < hz) {
    *secondsReturn = cache->seconds;
    rest = delta - cache->secondStart;
  } else {
    *secondsReturn = delta / hz;
    rest = delta % hz;
    if (cache != NULL) {
      cache->secondValid = 1;
      cache->hz = hz;
      cache->seconds = *secondsReturn;
      cache->secondStart = delta - rest;
    }
  }
  *nsReturn = mulDiv(rest, NS_PER_SECOND, hz);
}

/* EventClockRate -- the clock's rate: the header's, or the rate between
 * the start pair and a later ClockSync pair at least EVENT_SYNC_SPAN_NS
 * after it.  The traceback and the reader use this one rule, so they
 * agree on every event's time.  design/runtime.txt .sol.clock */
uint64_t EventClockRate(uint64_t headerHz, EventClock startClock, uint64_t startMonotonic,
                        EventClock clock, uint64_t monotonic)
{
  uint64_t ticks, ns, hz;
  if (clock <= startClock || monotonic <= startMonotonic
      || (headerHz != 0 && monotonic - startMonotonic < EVENT_SYNC_SPAN_NS))
    return headerHz;
  ticks = clock - startClock;
  ns = monotonic - startMonotonic;
  if (ticks / ns >= UINT64_MAX / NS_PER_SECOND)
    return headerHz;
  hz = mulDiv(ticks, NS_PER_SECOND, ns);
  return hz != 0 ? hz : headerHz;
}
