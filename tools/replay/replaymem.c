/* <tools/replay/replaymem.c> -- memory outside the heap under test
 *
 * .design: design/heap.txt .replay.map .replay.threads
 *
 * Everything replay keeps (the pointer map, the slots, the queues and
 * the samples) is mapped with mmap, outside the heap under test, and its
 * resident pages are subtracted from the RSS figures.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "replayint.h"


#define REGION_LIMIT 65536
static struct { void *base; size_t size; } region[REGION_LIMIT];
static size_t regionCount;
static int ownDirty = 1;        /* regions changed since ownResident */


/* ReplayAnonMap -- size bytes of zeroed memory, not from the heap under test */
void *ReplayAnonMap(size_t size)
{
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    ReplayFail("out of memory mapping %zu bytes", size);
  for (size_t i = 0; i < REGION_LIMIT; ++i)
    if (region[i].base == NULL) {
      region[i].base = p;
      region[i].size = size;
      if (i >= regionCount)
        regionCount = i + 1;
      ownDirty = 1;
      return p;
    }
  ReplayFail("too many regions");
}

void ReplayAnonUnmap(void *p)
{
  for (size_t i = 0; i < regionCount; ++i)
    if (region[i].base == p) {
      munmap(p, region[i].size);
      region[i].base = NULL;
      ownDirty = 1;
      return;
    }
}

/* ownResident -- bytes of replay's own mapped memory that are resident */
static size_t ownResident(void)
{
  static unsigned char vec[16384];
  size_t page = 4096, total = 0;
  for (size_t i = 0; i < regionCount; ++i) {
    unsigned char *base = region[i].base;
    size_t pages = region[i].size / page;
    if (base == NULL)
      continue;
    for (size_t at = 0; at < pages; at += sizeof vec) {
      size_t n = pages - at < sizeof vec ? pages - at : sizeof vec;
      if (mincore(base + at * page, n * page, vec) != 0)
        break;
      for (size_t j = 0; j < n; ++j)
        total += vec[j] & 1;
    }
  }
  return total * page;
}

/* ReplayRss -- the process's anonymous resident bytes, less replay's own.
 * File pages (the log, mapped to read it) are not counted.  Replay's
 * own resident bytes are counted again when fresh is set (at each
 * sample) or a region was mapped or unmapped: between, they grow by at
 * most a slot chunk (512 KiB), and counting them costs a mincore of
 * every region. */
static int statmFd = -1;      /* /proc/self/statm, opened by ReplayRssInit */
static size_t ownCached;
size_t ReplayRss(int fresh)
{
  char buf[256];
  unsigned long size, resident, shared;
  ssize_t n = pread(statmFd, buf, sizeof buf - 1, 0);
  size_t own;
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  if (sscanf(buf, "%lu %lu %lu", &size, &resident, &shared) != 3)
    return 0;
  if (fresh || ownDirty) {
    ownCached = ownResident();
    ownDirty = 0;
  }
  own = ownCached;
  resident = resident > shared ? resident - shared : 0;
  resident *= (unsigned long)sysconf(_SC_PAGESIZE);
  return resident > own ? resident - own : 0;
}


/* Slots: one per replayed block.  design/heap.txt .replay.threads
 *
 * A slot holds the replayed pointer of a recorded block.  It is PENDING
 * until the thread that allocates it has done so; a thread that frees a
 * block another thread allocated waits for that.  That is the only
 * synchronisation between replay threads.  Slots are recycled through a
 * stack that any thread pushes onto and only the reading thread takes
 * from, all at once, so there is no ABA problem. */

#define SLOT_CHUNK ((size_t)1 << 14)
static _Atomic(SlotStruct *) slotReturned;     /* pushed by any thread */
static SlotStruct *slotFree;                   /* the reader's own */
static SlotStruct *slotChunk;
static size_t slotChunkUsed = SLOT_CHUNK;

SlotStruct *ReplaySlotNew(uint64_t size)
{
  SlotStruct *s = slotFree;
  if (s == NULL)
    s = slotFree = atomic_exchange(&slotReturned, NULL);
  if (s != NULL)
    slotFree = s->next;
  else {
    if (slotChunkUsed == SLOT_CHUNK) {
      slotChunk = ReplayAnonMap(SLOT_CHUNK * sizeof(SlotStruct));
      slotChunkUsed = 0;
    }
    s = &slotChunk[slotChunkUsed++];
  }
  atomic_store_explicit(&s->ptr, PENDING, memory_order_relaxed);
  s->size = size;
  s->touch = 0;                 /* made() says: .replay.touch */
  return s;
}

void ReplaySlotRelease(SlotStruct *s)
{
  SlotStruct *head = atomic_load_explicit(&slotReturned, memory_order_relaxed);
  do
    s->next = head;
  while (!atomic_compare_exchange_weak_explicit(&slotReturned, &head, s,
                                                memory_order_release, memory_order_relaxed));
}

void *ReplaySlotWait(SlotStruct *s)
{
  uintptr_t p;
  unsigned spins = 0;
  while ((p = atomic_load_explicit(&s->ptr, memory_order_acquire)) == PENDING)
    if (++spins > 64)
      sched_yield();
  return (void *)p;
}


/* The pointer map: recorded address -> slot.  design/heap.txt .replay.map
 * Open addressing, only the reading thread touches it.  An entry whose
 * block was freed keeps its key with the slot FREED, so that a second
 * free is told from a free of something never allocated. */

static size_t mapHash(uint64_t key)
{
  return (size_t)((key >> 3) * 0x9E3779B97F4A7C15u >> 16);
}

void ReplayMapInit(MapStruct *map, size_t capacity)
{
  map->entries = ReplayAnonMap(capacity * sizeof(EntryStruct));
  map->capacity = capacity;
  map->count = 0;
}

/* ReplayMapFind -- the entry for key: found, or the empty one where it would go */
EntryStruct *ReplayMapFind(MapStruct *map, uint64_t key)
{
  size_t mask = map->capacity - 1, i = mapHash(key) & mask;
  while (map->entries[i].key != 0 && map->entries[i].key != key)
    i = (i + 1) & mask;
  return &map->entries[i];
}

/* ReplayMapPut -- the entry for key, made if new */
EntryStruct *ReplayMapPut(MapStruct *map, uint64_t key)
{
  EntryStruct *e;
  if ((map->count + 1) * 2 > map->capacity) {
    MapStruct bigger;
    ReplayMapInit(&bigger, map->capacity * 2);
    for (size_t i = 0; i < map->capacity; ++i)
      if (map->entries[i].key != 0) {
        EntryStruct *n = ReplayMapFind(&bigger, map->entries[i].key);
        *n = map->entries[i];
        ++bigger.count;
      }
    ReplayAnonUnmap(map->entries);
    *map = bigger;
  }
  e = ReplayMapFind(map, key);
  if (e->key == 0) {
    e->key = key;
    e->slot = NULL;
    ++map->count;
  }
  return e;
}


/* ReplayRssInit -- open what ReplayRss reads */
void ReplayRssInit(void)
{
  statmFd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
}
