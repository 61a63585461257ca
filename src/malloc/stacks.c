/* <src/malloc/stacks.c> -- the recorder's call stacks (TELLTALE_STACKS=N)
 *
 * .design: design/recorder.txt .stacks
 *
 * Capture (.stacks.capture): the frame-pointer chain, from the
 * interposed function's frame outwards, each frame pointer checked to be
 * inside this thread's stack and above the last before it is read, so a
 * walk through code built without frame pointers stops or skips frames,
 * and never faults.  The recorder itself is built with frame pointers,
 * so the first frame (the caller of malloc) is always right.
 *
 * Interning (.stacks.intern): a stack is hashed (64 bits) into a
 * lock-free open-addressing table, mmap'd outside the heap.  The first
 * thread to insert a hash takes the next id, emits StackFrames and then
 * publishes the id; others wait for it.  Two stacks with the same hash
 * would share an id (at 64 bits, about one chance in 10^7 for a million
 * stacks).  A full table records id 0 (unknown) from then on.
 *
 * Mappings (.stacks.map): the executable mappings of /proc/self/maps are
 * emitted as MapExec when stacks start; they are read again before a new
 * stack if a library may have been loaded or unloaded since, and after
 * each dlclose that unloaded one, and only the change is emitted:
 * MapUnmap for a mapping gone, MapExec for one new.  A mapping gone
 * starts a new epoch of stack ids (.stacks.unmap), so that a library
 * loaded where another was never shares its stacks' ids.
 */

#define _GNU_SOURCE
#include <stdio.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stacks.h"

#define STACK_MAX 128                   /* frames at most, whatever N says */
#define TABLE_SIZE ((size_t)1 << 20)    /* slots: 16 MiB of address space */
#define TABLE_FULL (TABLE_SIZE / 4 * 3)
#define PROBE_LIMIT 64

unsigned stacksDepth;

/* The libunwind mode (TELLTALE_STACKS=N:dwarf): unw_backtrace, found
 * with dlopen (libunwind8), its caching per thread */
static int (*unwBacktrace)(void **, int);

/* The recorder's own code: leading frames in it are not the program's */
static uintptr_t selfLo, selfHi;

typedef struct SlotStruct {
  _Atomic uint64_t key;                 /* the stack's hash; 0: free */
  _Atomic uint32_t id;                  /* 0 until published */
} SlotStruct;

static SlotStruct *table;
static _Atomic uint32_t stackCount;

/* This thread's stack, found on its first stack: [stackLo, stackHi) */
static _Thread_local uintptr_t stackLo __attribute__((tls_model("initial-exec")));
static _Thread_local uintptr_t stackHi __attribute__((tls_model("initial-exec")));


/* Mappings ----------------------------------------------------------- */

/* RangeStruct -- an executable mapping: known (range) or just read
 * (fresh); path points into mapsText, good only while it is read */
typedef struct RangeStruct {
  uintptr_t lo, hi, offset;
  uint64_t pathHash;
  const char *path;
  size_t pathLength;
} RangeStruct;

#define RANGE_LIMIT 8192
static RangeStruct range[RANGE_LIMIT], fresh[RANGE_LIMIT];
static size_t rangeCount, freshCount;
static pthread_mutex_t mapLock = PTHREAD_MUTEX_INITIALIZER;
static char mapsText[(size_t)1 << 20];
static uint64_t syncedChanges;          /* dlChanges() of before the latest read */

/* Unloading (.stacks.unmap): the epoch's salt (the low 32 bits), a
 * step of EPOCH_STEP after each read of the mappings that found one
 * gone, and the dlclose calls in progress (the high): one word, so that
 * interning reads both with one load.  The step is odd, so no salt
 * recurs for 2^32 epochs, and large, so that each starts its stacks'
 * probes at other slots. */
#define CLOSE_ONE ((uint64_t)1 << 32)
#define EPOCH_STEP 0x9E3779B9u
static _Atomic uint64_t unloading;
static _Thread_local unsigned closeDepth __attribute__((tls_model("initial-exec")));

/* hex -- a hexadecimal number at *p, which moves past it */
static uintptr_t hex(const char **p)
{
  uintptr_t v = 0;
  for (;; ++*p) {
    char c = **p;
    unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                 : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16u;
    if (d == 16)
      return v;
    v = v << 4 | d;
  }
}

/* mapLine -- one line of /proc/self/maps: if executable, into fresh */
static void mapLine(const char *p, const char *end)
{
  RangeStruct r = {0};
  uint64_t h = 0xCBF29CE484222325u;
  r.lo = hex(&p);
  if (*p++ != '-')
    return;
  r.hi = hex(&p);
  if (p + 5 > end || p[3] != 'x')
    return;
  p += 6;
  r.offset = hex(&p);
  for (int field = 0; field < 2 && p < end; ++field) {   /* device, inode */
    while (p < end && *p == ' ')
      ++p;
    while (p < end && *p != ' ')
      ++p;
  }
  while (p < end && *p == ' ')
    ++p;
  r.path = p;
  r.pathLength = (size_t)(end - p) < 511 ? (size_t)(end - p) : 511;
  for (size_t i = 0; i < r.pathLength; ++i)
    h = (h ^ (unsigned char)p[i]) * 0x100000001B3u;
  r.pathHash = h;
  if (freshCount < RANGE_LIMIT)
    fresh[freshCount++] = r;
}

static int sameRange(const RangeStruct *a, const RangeStruct *b)
{
  return a->lo == b->lo && a->hi == b->hi && a->offset == b->offset && a->pathHash == b->pathHash;
}

/* mapsDiff -- walk range (known) and fresh (just read), both sorted by
 * address: emit MapUnmap for each known one gone, or MapExec for each
 * fresh one new; the count emitted */
static size_t mapsDiff(int emitNew)
{
  size_t i = 0, j = 0, emitted = 0;
  while (i < rangeCount || j < freshCount) {
    int gone = j == freshCount || (i < rangeCount && range[i].lo < fresh[j].lo);
    int added = i == rangeCount || (j < freshCount && fresh[j].lo < range[i].lo);
    if (!gone && !added && !sameRange(&range[i], &fresh[j]))
      gone = added = 1;           /* another file, or part of one, at the same address */
    if (gone && !emitNew) {
      EVENT_PP(MapUnmap, (void *)range[i].lo, (void *)range[i].hi);
      ++emitted;
    }
    if (added && emitNew) {
      char path[512];
      memcpy(path, fresh[j].path, fresh[j].pathLength);
      path[fresh[j].pathLength] = '\0';
      EVENT_PPWS(MapExec, (void *)fresh[j].lo, (void *)fresh[j].hi, fresh[j].offset, path);
      ++emitted;
    }
    i += gone || !added;
    j += added || !gone;
  }
  return emitted;
}

/* mapsSync -- read the executable mappings and emit how they changed
 * since last read: MapUnmap for those gone, then MapExec for those new;
 * a mapping gone starts a new epoch.  changes is dlChanges() of before
 * the read.  mapLock held.  design/recorder.txt .stacks.unmap */
static void mapsSync(uint64_t changes)
{
  size_t size = 0;
  ssize_t got;
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  while (size < sizeof mapsText - 1 &&
         (got = read(fd, mapsText + size, sizeof mapsText - 1 - size)) > 0)
    size += (size_t)got;
  (void)close(fd);
  freshCount = 0;
  for (const char *p = mapsText, *end = mapsText + size; p < end; ) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (nl == NULL)
      nl = end;
    mapLine(p, nl);
    p = nl + 1;
  }
  if (mapsDiff(0) > 0) {
    uint64_t u = atomic_load(&unloading);
    while (!atomic_compare_exchange_weak(&unloading, &u,
                                         (u & ~(CLOSE_ONE - 1)) | (uint32_t)(u + EPOCH_STEP)))
      ;                         /* the salt steps on, the dlclose count stays */
  }
  (void)mapsDiff(1);
  memcpy(range, fresh, freshCount * sizeof *fresh);
  rangeCount = freshCount;
  if (changes > syncedChanges)
    syncedChanges = changes;    /* the count only grows: a slower thread's is older */
}

/* mapped -- is pc in an executable mapping known?  mapLock held */
static int mapped(uintptr_t pc)
{
  size_t lo = 0, hi = rangeCount;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (pc < range[mid].lo)
      hi = mid;
    else if (pc >= range[mid].hi)
      lo = mid + 1;
    else
      return 1;
  }
  return 0;
}

/* phdrChanges -- dl_iterate_phdr's callback: the first object's counts */
static int phdrChanges(struct dl_phdr_info *info, size_t size, void *data)
{
  (void)size;
  *(uint64_t *)data = info->dlpi_adds + info->dlpi_subs;
  return 1;
}

/* dlChanges -- how many objects the dynamic linker has loaded and
 * unloaded: it changes whenever the set of objects does.  It takes the
 * dynamic linker's lock, whose holder may be allocating: so never
 * called with mapLock held, nor while a slot of the table awaits its id. */
static uint64_t dlChanges(void)
{
  uint64_t changes = 0;
  (void)dl_iterate_phdr(phdrChanges, &changes);
  return changes;
}

/* mapsCover -- before a new stack's frames are emitted: read the
 * mappings again if its innermost frame (always a true return address)
 * is in none known, or if an object has been loaded or unloaded since
 * they were read (changes, dlChanges() of before the stack's slot was
 * taken): so at most once a change, whatever junk a walk without frame
 * pointers gives */
static void mapsCover(const uintptr_t *pc, unsigned n, uint64_t changes)
{
  if (n == 0)
    return;
  (void)pthread_mutex_lock(&mapLock);
  if (!mapped(pc[0]) || changes > syncedChanges)
    mapsSync(changes);
  (void)pthread_mutex_unlock(&mapLock);
}

uint64_t StacksCloseBegin(void)
{
  ++closeDepth;
  atomic_fetch_add(&unloading, CLOSE_ONE);
  return table != NULL ? dlChanges() : 0;
}

void StacksCloseEnd(int record, uint64_t before)
{
  uint64_t changes = table != NULL && record ? dlChanges() : before;
  /* An object unloaded moves the count: if it did not move during the
   * call, this dlclose only dropped a reference, and no mapping went. */
  if (changes != before) {
    (void)pthread_mutex_lock(&mapLock);
    mapsSync(changes);          /* any mapping gone: a new epoch, before closing drops */
    (void)pthread_mutex_unlock(&mapLock);
  }
  --closeDepth;
  atomic_fetch_sub(&unloading, CLOSE_ONE);
}


/* Capture and interning ---------------------------------------------- */

/* threadStack -- this thread's stack bounds, once */
static void threadStack(void)
{
  pthread_attr_t attr;
  void *base;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    if (pthread_attr_getstack(&attr, &base, &size) == 0) {
      stackLo = (uintptr_t)base;
      stackHi = (uintptr_t)base + size;
    }
    (void)pthread_attr_destroy(&attr);
  }
  if (stackHi == 0)
    stackHi = 1;                /* unknown: no frame is walked */
}

/* hashStack -- the key of a stack of n frames in the epoch salt.  The
 * salt goes in after the frames are mixed, as one mixed in with the
 * first frame cancels against an address's difference (the same stack
 * of two libraries, in two epochs, took one key so). */
static uint64_t hashStack(const uintptr_t *pc, unsigned n, uint64_t salt)
{
  uint64_t h = 0x9E3779B97F4A7C15u ^ n;
  for (unsigned i = 0; i < n; ++i) {
    h ^= pc[i];
    h *= 0xBF58476D1CE4E5B9u;
    h ^= h >> 31;
  }
  h ^= salt;
  return h != 0 ? h : 1;
}

/* define -- emit the StackFrames events of a new stack id */
static void define(EventU id, const uintptr_t *pc, unsigned n, uint64_t changes)
{
  mapsCover(pc, n, changes);
  for (unsigned i = 0; i < n || i == 0; i += 8) {
    void *f[8] = {0};
    for (unsigned j = 0; j < 8 && i + j < n; ++j)
      f[j] = (void *)pc[i + j];
    EVENT_BEGIN(StackFrames)
      _event->id = id;
      _event->depth = n;
      _event->index = i;
      _event->f0 = f[0], _event->f1 = f[1], _event->f2 = f[2], _event->f3 = f[3];
      _event->f4 = f[4], _event->f5 = f[5], _event->f6 = f[6], _event->f7 = f[7];
    EVENT_END(StackFrames)
  }
}

/* intern -- the id of a stack, defined if new.  Its key has the epoch
 * in it, so a stack is defined again after a mapping went away; while a
 * dlclose is under way the epoch may not have moved yet, so the key has
 * the dynamic linker's count of changes instead (salts never an
 * epoch's).  The frames were captured before unloading is read: code
 * loaded where an unloaded library was ran after that dlclose began, so
 * no dlclose under way here means its epoch is seen.  design/recorder.txt .stacks.unmap */
static EventU intern(const uintptr_t *pc, unsigned n)
{
  uint64_t u = atomic_load(&unloading), salt = (uint32_t)u, changes = 0, h;
  int closingNow = u >= CLOSE_ONE;
  if (__builtin_expect(closingNow, 0)) {
    changes = dlChanges();
    salt = changes * 0xD6E8FEB86659FD93u | (uint64_t)1 << 63;  /* never an epoch's salt */
  }
  h = hashStack(pc, n, salt);
  for (size_t probe = 0; probe < PROBE_LIMIT; ++probe) {
    SlotStruct *s = &table[(h + probe) & (TABLE_SIZE - 1)];
    uint64_t key = atomic_load_explicit(&s->key, memory_order_acquire);
    uint32_t id;
    if (key == 0) {
      if (atomic_load_explicit(&stackCount, memory_order_relaxed) >= TABLE_FULL)
        return 0;
      if (!closingNow)
        changes = dlChanges();  /* before the slot is taken: others may wait on it */
      if (atomic_compare_exchange_strong(&s->key, &key, h)) {
        id = atomic_fetch_add(&stackCount, 1) + 1;
        define(id, pc, n, changes);
        atomic_store_explicit(&s->id, id, memory_order_release);
        return id;
      }
    }
    if (key == h) {
      while ((id = atomic_load_explicit(&s->id, memory_order_acquire)) == 0)
        (void)sched_yield();    /* another thread is defining it */
      return id;
    }
  }
  return 0;
}

/* fpWalk -- up to limit return addresses by the frame-pointer chain from
 * fp, each frame pointer checked before it is read */
static unsigned fpWalk(uintptr_t *fp, uintptr_t *pc, unsigned limit)
{
  unsigned n = 0;
  uintptr_t lo, span;
  if (stackHi == 0)
    threadStack();
  if (stackHi < stackLo + 16)
    return 0;                   /* unknown */
  lo = stackLo;
  span = stackHi - 16 - lo;     /* fp may be lo .. hi - 16: one compare, by wrapping */
  while (n < limit && (uintptr_t)fp - lo <= span && ((uintptr_t)fp & 7) == 0) {
    uintptr_t *next = (uintptr_t *)fp[0];
    if (fp[1] < 4096)
      break;
    pc[n++] = fp[1];
    if (next <= fp)
      break;
    fp = next;
  }
  return n;
}

EventU StackHere(void *frame)
{
  uintptr_t pc[STACK_MAX + 8];
  unsigned n, skip = 0;
  if (table == NULL)
    return 0;
  if (unwBacktrace != NULL)     /* from here: StackHere, the wrapper's frames... */
    n = (unsigned)unwBacktrace((void **)pc, (int)stacksDepth + 8);
  else                          /* from the wrapper's frame: at most one more of ours */
    n = fpWalk((uintptr_t *)frame, pc, stacksDepth + 2);
  while (skip < n && pc[skip] - selfLo < selfHi - selfLo)
    ++skip;                     /* the recorder's frames */
  n -= skip;
  return intern(pc + skip, n < stacksDepth ? n : stacksDepth);
}

void StacksAfterFork(void)
{
  if (table == NULL)
    return;
  (void)pthread_mutex_init(&mapLock, NULL);
  /* the child's log defines its own stacks: the table starts empty, and
   * every mapping is new to it; only this thread's dlcloses go on */
  (void)madvise(table, TABLE_SIZE * sizeof *table, MADV_DONTNEED);
  atomic_store(&stackCount, 0);
  atomic_store(&unloading, (uint32_t)atomic_load(&unloading) | (uint64_t)closeDepth << 32);
  rangeCount = 0;
  mapsSync(0);                  /* no dynamic-linker lock here: a thread gone may hold it;
                                 * syncedChanges stays the parent's */
}

/* selfRange -- the executable mapping that holds this code */
static void selfRange(void)
{
  uintptr_t here = (uintptr_t)&StackHere;
  for (size_t i = 0; i < rangeCount; ++i)
    if (here >= range[i].lo && here < range[i].hi) {
      selfLo = range[i].lo;
      selfHi = range[i].hi;
    }
}

/* unwindStart -- the libunwind mode, if libunwind8 is there; 0 if so */
static int unwindStart(void)
{
  void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  int (*policy)(void *, int);
  void **space;
  if (h == NULL)
    return -1;
  *(void **)&unwBacktrace = dlsym(h, "unw_backtrace");
  *(void **)&policy = dlsym(h, "_ULx86_64_set_caching_policy");
  space = dlsym(h, "_ULx86_64_local_addr_space");
  if (unwBacktrace == NULL)
    return -1;
  if (policy != NULL && space != NULL)
    (void)policy(*space, 2);    /* UNW_CACHE_PER_THREAD */
  return 0;
}

/* StacksSay -- "libtelltale-malloc: NAME='VALUE' WHAT" on stderr: a bad
 * setting is said, and the program carries on */
void StacksSay(const char *name, const char *value, const char *what)
{
  char line[256];
  int n = snprintf(line, sizeof line, "libtelltale-malloc: %s='%.64s%s", name, value, what);
  if (n > 0)
    (void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

void StacksStart(void)
{
  const char *s = getenv("TELLTALE_STACKS");
  uint64_t changes;
  char *rest;
  unsigned long n;
  void *t;
  if (s == NULL || s[0] == '\0')
    return;
  n = s[0] >= '0' && s[0] <= '9' ? strtoul(s, &rest, 10) : 0;
  if (s[0] < '0' || s[0] > '9' || (rest[0] != '\0' && strcmp(rest, ":dwarf") != 0)) {
    StacksSay("TELLTALE_STACKS", s, "' must be N or N:dwarf (N frames, 1 to 128); no stacks are recorded\n");
    return;
  }
  if (n == 0)
    return;
  if (n > STACK_MAX)
    StacksSay("TELLTALE_STACKS", s, "' is more than 128 frames: 128 are recorded\n");
  if (strcmp(rest, ":dwarf") == 0 && unwindStart() != 0) {
    static const char msg[] = "libtelltale-malloc: TELLTALE_STACKS=N:dwarf needs libunwind.so.8 "
                              "(Debian libunwind8): using frame pointers\n";
    (void)!write(2, msg, sizeof msg - 1);
  }
  t = mmap(NULL, TABLE_SIZE * sizeof *table, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (t == MAP_FAILED)
    return;
  table = t;
  stacksDepth = n < STACK_MAX ? (unsigned)n : STACK_MAX;
  changes = dlChanges();        /* else the first stack reads the mappings again */
  (void)pthread_mutex_lock(&mapLock);
  mapsSync(changes);
  selfRange();
  (void)pthread_mutex_unlock(&mapLock);
}
