/* <src/event/eventlive.c> -- the live file
 *
 * .design: design/control.txt .sol.live
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

/* liveFile -- the live file's state: this file's alone, which the
 * others ask through its functions (eventLive*).  Its name is in
 * eventSession.liveName, written only here, where the gdb extension
 * reads it (.gdb).  Lock held.  design/control.txt .sol.live */
static struct {
  PlinthStream stream;          /* the live file, or NULL: .sol.live */
  int allowed;                  /* TELLTALE_MAP is not off */
  int failed;                   /* mapping failed; reported once */
  int keep;                     /* the log lost writes: keep the live file */
  size_t headerLength;          /* its header, a page or more */
  uint64_t regions, regionsSaid;  /* regions made; the count in its header */
  unsigned gen;                 /* its generation: one more at each end */
  PlinthStream log;             /* the log the live file is beside */
  LiveRegionStruct *free;       /* regions to reuse */
} liveFile;


/* The live file's drop counts: the page of its header that holds them
 * is mapped, so that a drop is counted there at once, and a program
 * killed before it reports its drops (EventsDropped) leaves the count
 * for recovery.  One address serves every session: a session's end
 * covers the page with private memory (PlinthMemoryCover), and the
 * next maps its own there, so a drop racing with the end never
 * faults.  design/control.txt .sol.dropped */
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
    (void)PlinthStreamWriteAt(liveFile.stream, EVENT_STREAM_FLAGS_AT, &wrote, 1);
    now = atomic_load(&liveFlags);
  } while (now != wrote);
}

static void liveDropsMap(void)
{
  size_t page = PlinthPageSize(), length = liveFile.headerLength;
  void *base;
  atomic_store(&liveFlags, 0);
  if (length < page
      || PlinthStreamMapAt(liveFile.stream, length - page, page, liveDropsPage, &base) != 0)
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
  AVER_LOCKED();
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
  AVER_LOCKED();
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

/* The places of blocks written after the lock (.sol.writer.at): a
 * thread that gets a block's place in the log under the lock notes it
 * here, header and offset, in the mapped page, where a store costs no
 * write; it frees the entry when its write is done.  A death in
 * between leaves the entry, from which recovery puts the header back
 * where the log has zeros.  The ticket, stored last, says an entry is
 * used and whose it is, so that a late free cannot free another's; its
 * low bits are the entry's index. */
EVENT_STATIC_ASSERT(EVENT_LIVE_PLACES_LEN + EVENT_LIVE_SLOTS_LEN + EVENT_LIVE_DROPS_LEN
                    + EVENT_LIVE_REGIONS_LEN <= 4096, "the live file's counts fit its last page");
EVENT_STATIC_ASSERT(EVENT_BLOCK_HEADER_LEN + 4 <= 40, "a place's header is before its offset");

#define PLACE_BITS 5            /* a ticket's low bits: its entry */
EVENT_STATIC_ASSERT(EVENT_LIVE_PLACES <= 1u << PLACE_BITS, "a ticket names its entry");

static uint32_t placeCount;     /* places given, the tickets' high bits; lock held */

static unsigned char *livePlaces(void)
{
  _Atomic uintptr_t *counts = atomic_load(&liveDrops);
  return counts == NULL ? NULL
         : (unsigned char *)counts - EVENT_LIVE_SLOTS_LEN - EVENT_LIVE_PLACES_LEN;
}

/* eventLivePlace -- a block of stream, whose header is header, has its
 * place at offset: noted, if the stream is the live file's log and an
 * entry is free.  Returns its ticket, or 0: then the caller writes the
 * header there now.  Lock held. */
uint32_t eventLivePlace(PlinthStream stream, uint64_t offset, const unsigned char *header)
{
  unsigned char *places = livePlaces();
  AVER_LOCKED();
  if (places == NULL || stream != liveFile.log)
    return 0;
  for (unsigned i = 0; i < EVENT_LIVE_PLACES; ++i) {
    unsigned char *p = places + i * EVENT_LIVE_PLACE_LEN;
    _Atomic uint32_t *ticket = (_Atomic uint32_t *)p;
    if (atomic_load_explicit(ticket, memory_order_acquire) != 0)
      continue;
    uint32_t given;
    if ((++placeCount & (UINT32_MAX >> PLACE_BITS)) == 0)
      ++placeCount;             /* never 0 above the index: 0 is free */
    given = placeCount << PLACE_BITS | i;
    memcpy(p + 4, header, EVENT_BLOCK_HEADER_LEN);
    memcpy(p + 40, &offset, sizeof offset);
    atomic_store_explicit(ticket, given, memory_order_release);
    return given;
  }
  return 0;
}

/* eventLivePlaced -- the block of that ticket is written: its entry is
 * free.  Async-signal-safe; the lock not held. */
void eventLivePlaced(uint32_t ticket)
{
  unsigned char *places = livePlaces();
  unsigned i = ticket & ((1u << PLACE_BITS) - 1);
  if (places != NULL && ticket != 0 && i < EVENT_LIVE_PLACES)
    (void)atomic_compare_exchange_strong((_Atomic uint32_t *)(places + i * EVENT_LIVE_PLACE_LEN),
                                         &ticket, 0);
}

/* eventLiveStart -- open the live file beside log, a binary stream
 * that is a regular file (logFailed: a write to it failed already): its
 * header, padded to a page, then the regions that the buffers of output
 * kinds live in.  Lock held.  design/control.txt .sol.live */
void eventLiveStart(PlinthStream log, int logFailed)
{
  unsigned char *header;
  size_t headerSize;
  const char *name;
  size_t n;
  int res;
  AVER_LOCKED();
  if (!liveFile.allowed || liveFile.stream != NULL)
    return;
  name = PlinthStreamDescribe(log);
  n = strlen(name);
  if (n + sizeof ".live" > sizeof eventSession.liveName)
    return;
  memcpy(eventSession.liveName, name, n);
  memcpy(eventSession.liveName + n, ".live", sizeof ".live");
  liveFile.log = log;
  res = PlinthStreamOpenLog(&liveFile.stream, eventSession.liveName, EVENT_STREAM_MAGIC,
                            EVENT_STREAM_MAGIC_LEN);
  if (res != 0) {
    liveFile.stream = NULL;
    eventStreamOpenFailed(eventSession.liveName, res,
                     "; events emitted just before a crash may be lost");
    return;
  }
  res = eventHeaderBuild(PlinthPageSize(), &header, &headerSize);
  if (res == 0) {
    liveFile.headerLength = headerSize;
    liveFile.regions = liveFile.regionsSaid = 0;
    res = PlinthStreamWrite(liveFile.stream, header, headerSize);
    PlinthFree(header);
  }
  if (res == 0)
    liveDropsMap();
  if (res == 0 && logFailed)
    eventLiveLogFailed(log);
  if (res != 0) {
    eventSay("cannot write ", eventSession.liveName, ": ", PlinthStrError(res), NULL);
    PlinthStreamClose(liveFile.stream);
    (void)PlinthRemoveFile(eventSession.liveName);
    liveFile.stream = NULL;
  }
}

/* eventLiveLogFailed -- the log beside the live file lost a write: say so in
 * the live file's header (a write in place, which a full disk allows),
 * and keep the live file at the end, so that a reader knows the log is
 * incomplete.  .sol.recover */
void eventLiveLogFailed(PlinthStream stream)
{
  if (liveFile.stream == NULL || stream != liveFile.log)
    return;
  liveFile.keep = 1;
  liveFlagsSet(EVENT_LIVE_LOG_FAILED, 0);
}

/* eventLiveRetagging -- live regions' headers are being rewritten in
 * place (on nonzero) or no longer: a kill in between may leave one
 * torn, which the flag tells recovery to take as holding nothing.
 * Lock held.  .sol.control.retag */
void eventLiveRetagging(int on)
{
  AVER_LOCKED();
  if (liveFile.stream != NULL)
    liveFlagsSet(on ? EVENT_LIVE_RETAG : 0, on ? 0 : EVENT_LIVE_RETAG);
}

/* eventLiveEnd -- the session ends cleanly: every event is in the streams,
 * so the live file goes, unless the log lost writes.  Lock held. */
void eventLiveEnd(void)
{
  AVER_LOCKED();
  liveDropsUnmap();
  ++liveFile.gen;       /* its regions that threads hold are stale: .sol.live.session */
  while (liveFile.free != NULL) {
    LiveRegionStruct *region = liveFile.free;
    liveFile.free = region->next;
    PlinthStreamUnmap(liveFile.stream, region->base, region->size);
    PlinthFree(region);
  }
  if (liveFile.stream != NULL) {
    PlinthStreamClose(liveFile.stream);
    if (!liveFile.keep)
      (void)PlinthRemoveFile(eventSession.liveName);
    liveFile.stream = NULL;
  }
  liveFile.failed = 0;
  liveFile.keep = 0;
}
/* The live file's regions ------------------------------------------ */

/* liveRegion -- a region of the live file of the given size */
static int liveRegion(size_t size, unsigned char **baseReturn)
{
  void *base;
  int res;
  AVER_LOCKED();
  for (LiveRegionStruct **p = &liveFile.free; *p != NULL; p = &(*p)->next)
    if ((*p)->size == size) {
      LiveRegionStruct *region = *p;
      *p = region->next;
      *baseReturn = region->base;
      PlinthFree(region);
      return 0;
    }
  res = PlinthStreamMap(liveFile.stream, size, &base);
  if (res == 0) {
    memset(base, 0, EVENT_BLOCK_HEADER_LEN);
    *baseReturn = base;
    ++liveFile.regions;
  }
  return res;
}

/* eventLiveRegionRelease -- a slot's region is given up: it goes on the
 * free list, marked free (magic zeroed, length kept) so that recovery
 * passes over it.  Lock held. */
void eventLiveRegionRelease(unsigned char *base, size_t size)
{
  LiveRegionStruct *region = NULL;
  AVER_LOCKED();
  AVER(base != NULL && size > 0);
  /* Without a live file (after EventFinish, or in the child of fork,
   * where the region is the parent's) the region is only unmapped. */
  if (liveFile.stream != NULL) {
    memset(base, 0, 4);
    region = PlinthAlloc(sizeof *region);
  }
  if (region == NULL)
    PlinthStreamUnmap(liveFile.stream, base, size);
  else {
    region->base = base;
    region->size = size;
    region->next = liveFile.free;
    liveFile.free = region;
  }
}

/* liveRegionsSay -- the count of regions, in the live file's header's
 * last bytes, once a new region has its header: a reader knows how many
 * to find, so a live file cut short or zeroed is not taken for a whole
 * one.  A write in place: a full disk allows it.  .sol.recover */
static void liveRegionsSay(void)
{
  unsigned char bytes[EVENT_LIVE_REGIONS_LEN];
  AVER_LOCKED();
  if (liveFile.regions == liveFile.regionsSaid)
    return;
  for (size_t i = 0; i < sizeof bytes; ++i)
    bytes[i] = (unsigned char)(liveFile.regions >> (8 * i));
  if (PlinthStreamWriteAt(liveFile.stream, liveFile.headerLength - sizeof bytes, bytes,
                          sizeof bytes) == 0)
    liveFile.regionsSaid = liveFile.regions;
}


/* The slots that are regions -------------------------------------- */

/* eventLiveSlot -- is slot s a region of this session's live file?  A
 * thread still emitting when EventFinish ended the session keeps the
 * ended one's regions until it prepares its slots again: until then its
 * sends are numbered as memory slots' are, each afresh in the new
 * session, so that they read in order there, and such a region is
 * neither reused nor handed to the writer.  Lock held.
 * design/control.txt .sol.live.session */
int eventLiveSlot(const EventKindBufStruct *kb, unsigned s)
{
  AVER_LOCKED();
  return kb->mapped[s] && kb->liveGen[s] == liveFile.gen;
}

/* eventLiveGen -- the live file's generation, for a slot that takes a
 * region of it (kb->liveGen).  Lock held.  .sol.live.session */
unsigned eventLiveGen(void)
{
  AVER_LOCKED();
  return liveFile.gen;
}

/* eventSlotRelease -- give up a slot: a region of the live file goes on
 * the free list, marked free (magic zeroed, length kept) so that
 * recovery passes over it; memory is freed.  Lock held. */
void eventSlotRelease(EventKindBufStruct *kb, unsigned s)
{
  AVER_LOCKED();
  AVER(s < 2);
  if (kb->slot[s] == NULL)
    return;
  (void)eventSlotBusy(kb, s, 1);     /* the writer may still read it */
  if (!kb->mapped[s])
    PlinthPagesFree(kb->slot[s], kb->slotSize[s]);
  else if (!eventLiveSlot(kb, s))
    PlinthStreamUnmap(NULL, kb->slot[s], kb->slotSize[s]);  /* an ended session's */
  else
    eventLiveRegionRelease(kb->slot[s], kb->slotSize[s]);
  kb->slot[s] = NULL;
  kb->mapped[s] = 0;
}

/* eventLiveSlotPrepare -- make slot s of a kind a region of the live
 * file, ready to fill: reused if the slot has one, its old events, all
 * sent or passed over, cleared, under a fresh block header that says
 * whether the kind's output is on.  0, or nonzero if the session has no
 * live file or it cannot grow: then the caller makes the slot memory.
 * Lock held.  design/control.txt .sol.live, .sol.control.cut */
int eventLiveSlotPrepare(EventThreadStruct *thread, unsigned level, unsigned kind, unsigned s,
                         int output)
{
  EventKindBufStruct *kb = &thread->levels[level][kind];
  size_t size;
  AVER_LOCKED();
  AVER(s < 2 && thread->bufferSize > 0);
  if (liveFile.stream == NULL || liveFile.failed)
    return 1;
  size = eventRoundUp(thread->bufferSize, PlinthPageSize());
  if (eventLiveSlot(kb, s) && kb->slotSize[s] == size) {
    /* Reused: its old events were all sent.  They stay, but the data
     * end at the first zero code, which slotUse puts at the start and
     * every EVENT_END moves along.  .sol.live */
    memset(kb->slot[s], 0, 4);              /* not a block until its new header */
  } else {
    unsigned char *base;
    int res = liveRegion(size, &base);
    if (res != 0) {
      liveFile.failed = 1;
      eventSay("cannot extend ", eventSession.liveName, ": ", PlinthStrError(res),
               "; events emitted just before a crash may be lost", NULL);
      return res;
    }
    eventSlotRelease(kb, s);
    kb->slot[s] = base;
    kb->slotSize[s] = size;
    kb->mapped[s] = 1;
    kb->liveGen[s] = liveFile.gen;
  }
  kb->seq[s] = eventSession.blocks++;
  /* The data end at once, before the header makes this a block; the
   * header's magic goes last, after its checked fields.  .sol.recover */
  memset(kb->slot[s] + EVENT_BLOCK_HEADER_LEN, 0, EVENT_END_SLACK);
  {
    unsigned char header[EVENT_BLOCK_HEADER_LEN];
    uint32_t check;
    eventBlockHeader(header, size, thread->serial, kind, level, kb->seq[s]);
    if (!output) {
      uint32_t off = EVENT_LIVE_OUTPUT_OFF;
      memcpy(header + offsetof(EventBlockHeaderStruct, index), &off, sizeof off);
    }
    check = EventLiveCheck(header);
    memcpy(header + offsetof(EventBlockHeaderStruct, check), &check, sizeof check);
    atomic_signal_fence(memory_order_release);
    memcpy(kb->slot[s] + 4, header + 4, EVENT_BLOCK_HEADER_LEN - 4);
    atomic_signal_fence(memory_order_release);
    memcpy(kb->slot[s], header, 4);
  }
  liveRegionsSay();
  return 0;
}

/* eventLiveRetag -- a live slot's block starts afresh at data offset
 * from (a new number, as its events before were not output), or holds
 * nothing to recover (EVENT_LIVE_OUTPUT_OFF).  Lock held.
 * .sol.control.cut */
void eventLiveRetag(EventThreadStruct *thread, unsigned level, unsigned kind, unsigned s,
                    uint32_t from)
{
  EventKindBufStruct *kb = &thread->levels[level][kind];
  unsigned char header[EVENT_BLOCK_HEADER_LEN];
  uint32_t check;
  AVER_LOCKED();
  kb->seq[s] = eventSession.blocks++;
  eventBlockHeader(header, kb->slotSize[s], thread->serial, kind, level, kb->seq[s]);
  memcpy(header + offsetof(EventBlockHeaderStruct, index), &from, sizeof from);
  check = EventLiveCheck(header);
  memcpy(header + offsetof(EventBlockHeaderStruct, check), &check, sizeof check);
  memcpy(kb->slot[s] + 4, header + 4, EVENT_BLOCK_HEADER_LEN - 4);  /* the magic stays */
}

/* eventLiveAllow -- TELLTALE_MAP: may the session have a live file? */
void eventLiveAllow(int allowed)
{
  liveFile.allowed = allowed;
}

/* eventLiveName -- the live file's name, or NULL if the session has
 * none.  Async-signal-safe (the traceback's). */
const char *eventLiveName(void)
{
  return liveFile.stream != NULL ? eventSession.liveName : NULL;
}

/* eventLiveAfterFork -- in the child of fork(): the live file is the
 * parent's.  design/plinth.txt .sol.fork */
void eventLiveAfterFork(void)
{
  /* The parent's live file is the parent's: unmap its regions (in the
   * child only) rather than reuse them, and let go of the stream. */
  liveDropsUnmap();
  if (liveFile.stream != NULL) {
    PlinthStreamClose(liveFile.stream);
    liveFile.stream = NULL;
  }
  while (liveFile.free != NULL) {
    LiveRegionStruct *region = liveFile.free;
    liveFile.free = region->next;
    PlinthStreamUnmap(NULL, region->base, region->size);
    PlinthFree(region);
  }
}
