/* <src/event/eventlive.c> -- the live file
 *
 * .design: design/telemetry.txt .sol.live
 *
 * The live file, beside the log: its header, padded to a page, whose
 * last page holds the drop counts (.sol.dropped) and the count of
 * regions (.sol.recover); and its regions, which the buffers of output
 * kinds live in, so that a death loses nothing (.sol.live).
 *
 * Locking: the plinth's lock guards the live file's state; the drop
 * counts are atomic, for signal handlers, and the flags byte is written
 * by the writer thread too (liveFlagsSet).
 */

#include <string.h>

#include "eventint.h"

/* LiveRegionStruct -- a region of the live file no thread is using */
typedef struct LiveRegionStruct {
  struct LiveRegionStruct *next;
  unsigned char *base;
  size_t size;
} LiveRegionStruct;


/* The live file's drop counts: the page of its header that holds them
 * is mapped, so that a drop is counted there at once, and a program
 * killed before it reports its drops (EventsDropped) leaves the count
 * for recovery.  One address serves every session: a session's end
 * covers the page with private memory (PlinthMemoryCover), and the
 * next maps its own there, so a drop racing with the end never
 * faults.  design/telemetry.txt .sol.dropped */
static void *liveDropsPage;                 /* the address, once mapped */
static _Atomic uintptr_t *_Atomic liveDrops;  /* the counts, while mapped */
static _Atomic unsigned char liveFlags;     /* the live file's flags byte */

/* liveFlagsSet -- set and clear flags of the live file's header, in
 * place.  The writer thread (a failed write) and a control call (a
 * retag) may race: each writes the byte, then writes again until what
 * it wrote is the byte as it stands, so the last write is right. */
static void liveFlagsSet(unsigned set, unsigned clear)
{
  unsigned char now, wrote;
  if (set != 0)
    atomic_fetch_or(&liveFlags, (unsigned char)set);
  if (clear != 0)
    atomic_fetch_and(&liveFlags, (unsigned char)~clear);
  now = atomic_load(&liveFlags);
  do {
    wrote = now;
    (void)PlinthStreamWriteAt(eventSession.live, EVENT_STREAM_FLAGS_AT, &wrote, 1);
    now = atomic_load(&liveFlags);
  } while (now != wrote);
}

static void liveDropsMap(void)
{
  size_t page = PlinthPageSize(), length = eventSession.liveHeaderLength;
  void *base;
  atomic_store(&liveFlags, 0);
  if (length < page
      || PlinthStreamMapAt(eventSession.live, length - page, page, liveDropsPage, &base) != 0)
    return;                     /* then the header says nothing of drops */
  liveDropsPage = base;
  atomic_store(&liveDrops, (_Atomic uintptr_t *)((unsigned char *)base + page
                                                 - EVENT_LIVE_REGIONS_LEN - EVENT_LIVE_DROPS_LEN));
  eventLiveSlotsSay();
  liveFlagsSet(EVENT_LIVE_DROPS, 0);
}

/* liveDropsUnmap -- the live file's counts are not this process's to
 * keep (the session ended, or this is the child of fork) */
static void liveDropsUnmap(void)
{
  atomic_store(&liveDrops, NULL);
  PlinthMemoryCover(liveDropsPage, PlinthPageSize());
}

/* eventLiveSlotsSay -- each slot's kind, as blocks carry it, before the
 * drop counts, so that recovery knows whose they are; written again
 * when a registry joins or leaves.  Lock held.  .reg.many */
void eventLiveSlotsSay(void)
{
  unsigned char *map;
  if (atomic_load(&liveDrops) == NULL)
    return;
  map = (unsigned char *)atomic_load(&liveDrops) - EVENT_LIVE_SLOTS_LEN;
  _Static_assert(EVENT_LIVE_SLOTS == SLOT_LIMIT, "the live file has a word for every slot");
  for (unsigned slot = 0; slot < SLOT_LIMIT; ++slot) {
    unsigned wire = eventSlots[slot].source != NULL ? eventSlotWire(slot) : 0xFFFFu;
    map[2 * slot] = (unsigned char)wire;              /* little-endian, as the header */
    map[2 * slot + 1] = (unsigned char)(wire >> 8);
  }
}

/* eventLiveSlotsLeft -- slots a registry gave up: their counts go,
 * and the map says they are free.  Lock held. */
void eventLiveSlotsLeft(unsigned base, unsigned count)
{
  _Atomic uintptr_t *counts = atomic_load(&liveDrops);
  if (counts == NULL)
    return;
  for (unsigned slot = base; slot < base + count; ++slot)
    for (unsigned w = 0; w < 8 / sizeof(uintptr_t); ++w)
      atomic_store(&counts[slot * (8 / sizeof(uintptr_t)) + w], 0);
  eventLiveSlotsSay();
}

/* eventLiveDropped -- an event of the kind was dropped: counted in the
 * live file, if there is one, before the count that EventsDropped
 * reports, so that the live file never counts fewer.  Signal-safe. */
void eventLiveDropped(unsigned kind)
{
  _Atomic uintptr_t *counts = atomic_load(&liveDrops);
  if (counts != NULL)
    atomic_fetch_add_explicit(&counts[kind * (8 / sizeof(uintptr_t))], 1, memory_order_relaxed);
}

/* eventLiveStart -- open the live file beside log, a binary stream
 * that is a regular file (logFailed: a write to it failed already): its
 * header, padded to a page, then the regions that the buffers of output
 * kinds live in.  Lock held.  design/telemetry.txt .sol.live */
void eventLiveStart(PlinthStream log, int logFailed)
{
  unsigned char *header;
  size_t headerSize;
  const char *name;
  size_t n;
  int res;
  if (!eventSession.mapAllowed || eventSession.live != NULL)
    return;
  name = PlinthStreamDescribe(log);
  n = strlen(name);
  if (n + sizeof ".live" > sizeof eventSession.liveName)
    return;
  memcpy(eventSession.liveName, name, n);
  memcpy(eventSession.liveName + n, ".live", sizeof ".live");
  eventSession.liveLog = log;
  res = PlinthStreamOpenLog(&eventSession.live, eventSession.liveName, EVENT_STREAM_MAGIC,
                            EVENT_STREAM_MAGIC_LEN);
  if (res != 0) {
    eventSession.live = NULL;
    eventStreamOpenFailed(eventSession.liveName, res,
                     "; events emitted just before a crash may be lost");
    return;
  }
  res = eventHeaderBuild(PlinthPageSize(), &header, &headerSize);
  if (res == 0) {
    eventSession.liveHeaderLength = headerSize;
    eventSession.liveRegions = eventSession.liveRegionsSaid = 0;
    res = PlinthStreamWrite(eventSession.live, header, headerSize);
    PlinthFree(header);
  }
  if (res == 0)
    liveDropsMap();
  if (res == 0 && logFailed)
    eventLiveLogFailed(log);
  if (res != 0) {
    eventSay("cannot write ", eventSession.liveName, ": ", PlinthStrError(res), NULL);
    PlinthStreamClose(eventSession.live);
    (void)PlinthRemoveFile(eventSession.liveName);
    eventSession.live = NULL;
  }
}

/* eventLiveLogFailed -- the log beside the live file lost a write: say so in
 * the live file's header (a write in place, which a full disk allows),
 * and keep the live file at the end, so that a reader knows the log is
 * incomplete.  .sol.recover */
void eventLiveLogFailed(PlinthStream stream)
{
  if (eventSession.live == NULL || stream != eventSession.liveLog)
    return;
  eventSession.liveKeep = 1;
  liveFlagsSet(EVENT_LIVE_LOG_FAILED, 0);
}

/* eventLiveRetagging -- live regions' headers are being rewritten in
 * place (on nonzero) or no longer: a kill in between may leave one
 * torn, which the flag tells recovery to take as holding nothing.
 * Lock held.  .sol.control.retag */
void eventLiveRetagging(int on)
{
  if (eventSession.live != NULL)
    liveFlagsSet(on ? EVENT_LIVE_RETAG : 0, on ? 0 : EVENT_LIVE_RETAG);
}

/* eventLiveEnd -- the session ends cleanly: every event is in the streams,
 * so the live file goes, unless the log lost writes.  Lock held. */
void eventLiveEnd(void)
{
  liveDropsUnmap();
  ++eventSession.liveGen;       /* its regions that threads hold are stale: .sol.live.session */
  while (eventSession.liveFree != NULL) {
    LiveRegionStruct *region = eventSession.liveFree;
    eventSession.liveFree = region->next;
    PlinthStreamUnmap(eventSession.live, region->base, region->size);
    PlinthFree(region);
  }
  if (eventSession.live != NULL) {
    PlinthStreamClose(eventSession.live);
    if (!eventSession.liveKeep)
      (void)PlinthRemoveFile(eventSession.liveName);
    eventSession.live = NULL;
  }
  eventSession.liveFailed = 0;
  eventSession.liveKeep = 0;
}
/* The live file's regions ------------------------------------------ */

/* eventLiveRegion -- a region of the live file of the given size */
int eventLiveRegion(size_t size, unsigned char **baseReturn)
{
  void *base;
  int res;
  for (LiveRegionStruct **p = &eventSession.liveFree; *p != NULL; p = &(*p)->next)
    if ((*p)->size == size) {
      LiveRegionStruct *region = *p;
      *p = region->next;
      *baseReturn = region->base;
      PlinthFree(region);
      return 0;
    }
  res = PlinthStreamMap(eventSession.live, size, &base);
  if (res == 0) {
    memset(base, 0, EVENT_BLOCK_HEADER_LEN);
    *baseReturn = base;
    ++eventSession.liveRegions;
  }
  return res;
}

/* eventLiveRegionRelease -- a slot's region is given up: it goes on the
 * free list, marked free (magic zeroed, length kept) so that recovery
 * passes over it.  Lock held. */
void eventLiveRegionRelease(unsigned char *base, size_t size)
{
  LiveRegionStruct *region = NULL;
  /* Without a live file (after EventFinish, or in the child of fork,
   * where the region is the parent's) the region is only unmapped. */
  if (eventSession.live != NULL) {
    memset(base, 0, 4);
    region = PlinthAlloc(sizeof *region);
  }
  if (region == NULL)
    PlinthStreamUnmap(eventSession.live, base, size);
  else {
    region->base = base;
    region->size = size;
    region->next = eventSession.liveFree;
    eventSession.liveFree = region;
  }
}

/* eventLiveRegionsSay -- the count of regions, in the live file's header's
 * last bytes, once a new region has its header: a reader knows how many
 * to find, so a live file cut short or zeroed is not taken for a whole
 * one.  A write in place: a full disk allows it.  .sol.recover */
void eventLiveRegionsSay(void)
{
  unsigned char bytes[EVENT_LIVE_REGIONS_LEN];
  if (eventSession.liveRegions == eventSession.liveRegionsSaid)
    return;
  for (size_t i = 0; i < sizeof bytes; ++i)
    bytes[i] = (unsigned char)(eventSession.liveRegions >> (8 * i));
  if (PlinthStreamWriteAt(eventSession.live, eventSession.liveHeaderLength - sizeof bytes, bytes,
                          sizeof bytes) == 0)
    eventSession.liveRegionsSaid = eventSession.liveRegions;
}

/* eventLiveAfterFork -- in the child of fork(): the live file is the
 * parent's.  design/telemetry.txt .sol.fork */
void eventLiveAfterFork(void)
{
  /* The parent's live file is the parent's: unmap its regions (in the
   * child only) rather than reuse them, and let go of the stream. */
  liveDropsUnmap();
  if (eventSession.live != NULL) {
    PlinthStreamClose(eventSession.live);
    eventSession.live = NULL;
  }
  while (eventSession.liveFree != NULL) {
    LiveRegionStruct *region = eventSession.liveFree;
    eventSession.liveFree = region->next;
    PlinthStreamUnmap(NULL, region->base, region->size);
    PlinthFree(region);
  }
}
