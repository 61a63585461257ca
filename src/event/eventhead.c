/* <src/event/eventhead.c> -- the stream header and the registry blocks' contents
 *
 * .design: design/stream.txt .stream.header
 *
 * The stream header, with the registry the program was built with, its
 * spans and counters and the registries after the first
 * (.stream.header); the same for one registry, as a registry block
 * carries it (.stream.block.registry).  Built in memory here; written
 * by eventout.c and eventlive.c.
 */

#include <string.h>

#include "eventint.h"
#include "eventpack.h"
#include "eventdecode.h"

/* HeaderBuf -- a growable byte buffer for building the header */
typedef struct HeaderBufStruct {
  unsigned char *base;
  size_t size, limit;
  int failed;
} HeaderBufStruct;

static void put(HeaderBufStruct *h, const void *p, size_t n)
{
  if (h->failed)
    return;
  if (h->size + n > h->limit) {
    size_t limit = h->limit == 0 ? 4096 : h->limit;
    unsigned char *base;
    while (limit < h->size + n)
      limit *= 2;
    base = PlinthAlloc(limit);
    if (base == NULL) {
      h->failed = 1;
      return;
    }
    if (h->size > 0)
      memcpy(base, h->base, h->size);
    PlinthFree(h->base);
    h->base = base;
    h->limit = limit;
  }
  memcpy(h->base + h->size, p, n);
  h->size += n;
}

static void putLE(HeaderBufStruct *h, uint64_t value, size_t n)
{
  unsigned char bytes[8];
  for (size_t i = 0; i < n; ++i)
    bytes[i] = (unsigned char)(value >> (8 * i));
  put(h, bytes, n);
}

static void putStr(HeaderBufStruct *h, const char *s)
{
  size_t len = s == NULL ? 0 : strlen(s);
  if (len > 0xFFFF)
    len = 0xFFFF;
  putLE(h, len, 2);
  put(h, s, len);
}

/* spansLength, putSpans -- the spans and counters that follow the
 * header's check, and their length.  design/stream.txt .stream.header.span */
static size_t spansLength(const EventRegistryStruct *reg)
{
  size_t n = 4;
  for (unsigned i = 0; i < reg->spanCount; ++i)
    n += 2 + strlen(reg->spans[i].name) + 6;
  for (unsigned i = 0; i < reg->counterCount; ++i)
    n += 2 + strlen(reg->counters[i].name) + 4;
  return n;
}

static void putSpans(HeaderBufStruct *h, const EventRegistryStruct *reg)
{
  putLE(h, reg->spanCount, 2);
  for (unsigned i = 0; i < reg->spanCount; ++i) {
    const EventSpanDescStruct *span = &reg->spans[i];
    putStr(h, span->name);
    putLE(h, span->begin, 2);
    putLE(h, span->end, 2);
    putLE(h, span->beginKey, 1);
    putLE(h, span->endKey, 1);
  }
  putLE(h, reg->counterCount, 2);
  for (unsigned i = 0; i < reg->counterCount; ++i) {
    const EventCounterDescStruct *counter = &reg->counters[i];
    putStr(h, counter->name);
    putLE(h, counter->code, 2);
    putLE(h, counter->value, 1);
    putLE(h, counter->key, 1);
  }
}

/* putRegistry -- a registry's name, kinds and events, as the header's
 * variable part has them.  .stream.header.var */
static void putRegistry(HeaderBufStruct *h, const EventRegistryStruct *reg)
{
  putStr(h, reg->name);
  putLE(h, reg->kindCount, 2);
  for (unsigned i = 0; i < reg->kindCount; ++i) {
    putStr(h, reg->kinds[i].name);
    putStr(h, reg->kinds[i].doc);
  }
  putLE(h, reg->eventCount, 2);
  for (unsigned i = 0; i < reg->eventCount; ++i) {
    const EventDescStruct *e = &reg->events[i];
    putLE(h, e->code, 2);
    putLE(h, e->kind, 1);
    putLE(h, (e->always ? 1u : 0u) | (e->retired ? 2u : 0u), 1);
    putStr(h, e->format);
    putStr(h, e->name);
    putStr(h, e->doc);
    for (unsigned j = 0; j < e->paramCount; ++j) {
      putStr(h, e->paramNames[j]);
      putStr(h, e->paramDocs[j]);
    }
  }
}

/* putSources -- the registries after the first (3.0.6): a count, then
 * each one's number, registry and spans; each as a registry block
 * carries it too.  Lock held.  .stream.header.registries */
static void putSources(HeaderBufStruct *h)
{
  unsigned n = 0;
  AVER_LOCKED();
  for (unsigned i = 0; i < SOURCE_LIMIT; ++i)
    n += eventSources[i] != NULL && eventSources[i]->number != 0;
  putLE(h, n, 2);
  for (unsigned i = 0; i < SOURCE_LIMIT; ++i)
    if (eventSources[i] != NULL && eventSources[i]->number != 0) {
      putLE(h, eventSources[i]->number, 2);
      putRegistry(h, eventSources[i]->registry);
      putSpans(h, eventSources[i]->registry);
    }
}

/* headerBuild -- the stream header.  design/stream.txt .stream.header */
static int headerBuild(HeaderBufStruct *h, size_t padTo)
{
  uint16_t bom = EVENT_BYTE_ORDER_MARK;
  char program[256];
  const EventRegistryStruct *reg = EVENT_SOURCE.registry;   /* number 0: .reg.many */
  memset(h, 0, sizeof *h);
  put(h, EVENT_STREAM_MAGIC, EVENT_STREAM_MAGIC_LEN);
  putLE(h, EventStreamMajor(), 2);      /* .compact.hook */
  putLE(h, EVENT_VERSION_MEDIAN, 2);
  putLE(h, EVENT_VERSION_MINOR, 2);
  put(h, &bom, 2);                      /* data byte order, .stream.header */
  putLE(h, sizeof(EventP), 1);
  putLE(h, sizeof(EventW), 1);
  putLE(h, 1, 1);                       /* IEEE 754 binary64 */
  putLE(h, 0, 1);
  putLE(h, 0, 4);                       /* header length, filled in below */
  putLE(h, PlinthClockFrequency(), 8);
  putLE(h, eventSession.startClock, 8);
  putLE(h, eventSession.startRealtime, 8);
  putLE(h, eventSession.startMonotonic, 8);
  putLE(h, PlinthProcessId(), 4);
  putLE(h, eventSession.id, 4);              /* .stream.check */
  if (PlinthProgramName(program, sizeof program) != 0)
    program[0] = '\0';
  putStr(h, program);
  putRegistry(h, reg);
  /* The header's length, then its check over all before it, flags
   * byte as 0 (a live file's changes), the spans and their check, and
   * the flags' own check, .stream.header.check; a live
   * file's header is padded to a page, its drop counts and regions'
   * count in its last bytes (.sol.dropped, .sol.recover). */
  if (h->failed) {
    PlinthFree(h->base);
    return 12; /* ENOMEM */
  }
  {
    size_t varEnd = h->size, total;
    HeaderBufStruct more;               /* the other registries (3.0.6) */
    memset(&more, 0, sizeof more);
    putSources(&more);
    total = varEnd + 4 + spansLength(reg) + 4 + 4 + more.size + 4;
    if (padTo > 0)
      total = eventRoundUp(total + EVENT_LIVE_PLACES_LEN + EVENT_LIVE_SLOTS_LEN
                           + EVENT_LIVE_DROPS_LEN + EVENT_LIVE_REGIONS_LEN, padTo);
    for (size_t i = 0; i < 4; ++i)
      h->base[20 + i] = (unsigned char)(total >> (8 * i));
    putLE(h, EventHeaderCheck(h->base, varEnd), 4);
    putSpans(h, reg);                   /* 2.0.1, .stream.header.span */
    if (!h->failed) {
      putLE(h, EventHeaderCheck(h->base, h->size), 4);
      putLE(h, EventFlagsCheck(h->base), 4);   /* 3.0.5: flags 0, .stream.header.check */
    }
    h->failed |= more.failed;
    if (!h->failed && more.size > 0)
      put(h, more.base, more.size);
    PlinthFree(more.base);
    if (!h->failed)
      putLE(h, EventHeaderCheck(h->base, h->size), 4);  /* 3.0.6: .stream.header.registries */
    while (h->size < total && !h->failed)
      putLE(h, 0, 1);
  }
  if (h->failed) {
    PlinthFree(h->base);
    return 12; /* ENOMEM */
  }
  return 0;
}

/* eventHeaderBuild -- the stream header, padded to a multiple of padTo
 * if not 0 (the live file's, .sol.live), in memory for PlinthFree: 0
 * or an errno code */
int eventHeaderBuild(size_t padTo, unsigned char **baseReturn, size_t *sizeReturn)
{
  HeaderBufStruct h;
  int res = headerBuild(&h, padTo);
  if (res == 0) {
    *baseReturn = h.base;
    *sizeReturn = h.size;
  }
  return res;
}

/* eventRegistryBlockBuild -- a registry block for source: room for the
 * block's header (eventBlockHeader fills it in), then the registry's
 * number, the registry and its spans, in memory for PlinthFree: 0, or
 * an errno code.  design/stream.txt .stream.block.registry */
int eventRegistryBlockBuild(const EventSourceStruct *source, unsigned char **baseReturn,
                            size_t *sizeReturn)
{
  HeaderBufStruct b;
  memset(&b, 0, sizeof b);
  for (size_t i = 0; i < EVENT_BLOCK_HEADER_LEN; ++i)
    putLE(&b, 0, 1);
  putLE(&b, source->number, 2);
  putRegistry(&b, source->registry);
  putSpans(&b, source->registry);
  if (b.failed) {
    PlinthFree(b.base);
    return 12; /* ENOMEM */
  }
  *baseReturn = b.base;
  *sizeReturn = b.size;
  return 0;
}
