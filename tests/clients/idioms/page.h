/* <tests/clients/idioms/page.h> -- the counts page the idioms programs share
 *
 * .design: design/tests.txt .test.trust
 *
 * The client (client.c), the plugin (plugin.c) and its host (host.c)
 * count every event they emit in a page kept outside telltale: a file
 * mapped shared (IDIOMS_PAGE), so the counts survive any death and are
 * shared with children, forked or exec'd.  tests/clients/idioms/check.py reads
 * it with the offsets asserted below.
 *
 * Each emitting thread (and each signal handler that emits) takes a slot
 * and numbers its events from 0, across every kind.  Before an event it
 * stores attempts = seq + 1, after the emitter returns done = seq + 1:
 * every seq below done whose emitter returned is in the log, and the
 * one at done may be there too (committed, not yet counted) when the
 * thread died or was cancelled inside it.  A handler that siglongjmps
 * out of an event records it as a hole: that event may be missing.
 *
 * Everything here is async-signal-safe: no stdio, no malloc.
 */

#ifndef idioms_page_h
#define idioms_page_h

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define IDIOMS_SLOTS 256
#define IDIOMS_HOLES 4096
#define IDIOMS_PROCS 64
#define IDIOMS_PATH 480

typedef struct IdiomsSlot {
  _Atomic uint64_t attempts;    /* events begun */
  _Atomic uint64_t done;        /* events whose emitter returned */
  uint64_t pid;                 /* the process that owns the slot */
  uint64_t tid;                 /* its thread, for the reader */
  char role[32];                /* what the thread is, for messages */
} IdiomsSlot;

typedef struct IdiomsHole {
  uint32_t slot;
  uint32_t pad;
  uint64_t seq;                 /* an event a handler left by siglongjmp */
} IdiomsHole;

/* A process's log, as it found it through /proc/self/fd: the file open
 * whose stream header names this process.  Recorded once its first
 * events are written (start) and again at its end. */
typedef struct IdiomsProc {
  uint64_t pid;
  uint64_t startIno;            /* the log's inode at the start */
  uint64_t endIno;              /* at the end (0: no log found) */
  uint64_t atPathIno;           /* the inode at startPath at the end (0: none) */
  uint64_t startSize;
  uint64_t endSize;
  uint64_t slot;                /* the process's main slot */
  uint64_t pad;
  char startPath[IDIOMS_PATH];  /* what /proc/self/fd said at the start */
  char endPath[IDIOMS_PATH];    /* and at the end ("... (deleted)" if unlinked) */
} IdiomsProc;

typedef struct IdiomsPage {
  char magic[8];                /* "IDIOMS01" */
  _Atomic uint32_t nslots;
  _Atomic uint32_t nholes;
  _Atomic uint32_t nprocs;
  _Atomic uint32_t faultSlot;   /* overflow: the slot of the thread that recursed */
  _Atomic uint64_t lastAliveNs; /* overflow: CLOCK_MONOTONIC in its deepest frame */
  char pad[4096 - 32];
  IdiomsSlot slots[IDIOMS_SLOTS];
  IdiomsHole holes[IDIOMS_HOLES];
  IdiomsProc procs[IDIOMS_PROCS];
} IdiomsPage;

_Static_assert(sizeof(IdiomsSlot) == 64, "check.py: slot size");
_Static_assert(sizeof(IdiomsHole) == 16, "check.py: hole size");
_Static_assert(sizeof(IdiomsProc) == 1024, "check.py: proc size");
_Static_assert(offsetof(IdiomsPage, slots) == 4096, "check.py: slots offset");
_Static_assert(offsetof(IdiomsPage, holes) == 4096 + 256 * 64, "check.py: holes offset");
_Static_assert(offsetof(IdiomsPage, procs) == 4096 + 256 * 64 + 4096 * 16, "check.py: procs offset");

/* idiomsCheck -- the check field: a hash of slot and seq (check.py's check) */
static inline uint64_t idiomsCheck(uint64_t slot, uint64_t seq)
{
  uint64_t z = (slot << 40 ^ seq) + UINT64_C(0x9E3779B97F4A7C15);
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return (z ^ (z >> 31)) & 0xFFFFFFFFu;
}

/* idiomsText -- the string field of event seq of slot: a tag, the slot
 * and seq in decimal, then (seq * 7 + slot * 3) % 53 characters of an
 * alphabet from seq % 36 (check.py's text).  buf holds at least 96. */
static inline void idiomsText(char *buf, uint64_t slot, uint64_t seq)
{
  static const char *const tags[4] = {"peer", "path", "key", "text"};
  static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  const char *tag = tags[seq & 3];
  uint64_t nums[2] = {slot, seq};
  size_t n = 0, fill = (size_t)((seq * 7 + slot * 3) % 53);
  while (*tag != '\0')
    buf[n++] = *tag++;
  for (int k = 0; k < 2; ++k) {
    char digits[24];
    size_t d = 0;
    uint64_t v = nums[k];
    buf[n++] = '-';
    do
      digits[d++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (d > 0)
      buf[n++] = digits[--d];
  }
  buf[n++] = ':';
  for (size_t i = 0; i < fill; ++i)
    buf[n++] = alphabet[(seq + i) % 36];
  buf[n] = '\0';
}

/* IDIOMS_EMIT -- emit slot's next event, counting it: the kind by seq
 * modulo 4, with the four event names of the registry in use.  The
 * signal fences keep the counts' stores on either side of the emitter
 * as a handler on the same thread sees them. */
#define IDIOMS_EMIT(page, slotIndex, ACCEPT, REQUEST, STORE, NOTE) \
  do { \
    IdiomsSlot *_slot = &(page)->slots[(slotIndex)]; \
    uint64_t _seq = atomic_load_explicit(&_slot->attempts, memory_order_relaxed); \
    uint64_t _check = idiomsCheck((slotIndex), _seq); \
    char _text[96]; \
    idiomsText(_text, (slotIndex), _seq); \
    atomic_store_explicit(&_slot->attempts, _seq + 1, memory_order_relaxed); \
    atomic_signal_fence(memory_order_seq_cst); \
    switch (_seq & 3) { \
    case 0: EVENT_UWWS(ACCEPT, (slotIndex), _seq, _check, _text); break; \
    case 1: EVENT_UWWWS(REQUEST, (slotIndex), _seq, _check, 200 + _seq % 300, _text); break; \
    case 2: EVENT_UWWWS(STORE, (slotIndex), _seq, _check, _seq * 3, _text); break; \
    default: EVENT_UWWS(NOTE, (slotIndex), _seq, _check, _text); break; \
    } \
    atomic_signal_fence(memory_order_seq_cst); \
    atomic_store_explicit(&_slot->done, _seq + 1, memory_order_release); \
  } while (0)

/* The functions below need _GNU_SOURCE and the headers they use. */
#ifdef IDIOMS_PAGE_FUNCTIONS
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* idiomsPageOpen -- map IDIOMS_PAGE, emptied first if create */
static IdiomsPage *idiomsPageOpen(int create)
{
  const char *path = getenv("IDIOMS_PAGE");
  IdiomsPage *page;
  int fd;
  if (path == NULL) {
    fprintf(stderr, "idioms: IDIOMS_PAGE is not set\n");
    exit(99);
  }
  fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0), 0644);
  if (fd < 0 || (create && ftruncate(fd, sizeof *page) != 0) ||
      (page = mmap(NULL, sizeof *page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
    perror(path);
    exit(99);
  }
  (void)close(fd);
  if (create)
    memcpy(page->magic, "IDIOMS01", 8);
  return page;
}

/* idiomsSlotNew -- a slot for the calling thread (or handler) */
static unsigned idiomsSlotNew(IdiomsPage *page, const char *role)
{
  unsigned s = atomic_fetch_add(&page->nslots, 1);
  if (s >= IDIOMS_SLOTS) {
    static const char msg[] = "idioms: out of slots\n";
    (void)write(2, msg, sizeof msg - 1);
    _exit(99);
  }
  page->slots[s].pid = (uint64_t)getpid();
  page->slots[s].tid = (uint64_t)gettid();
  strncpy(page->slots[s].role, role, sizeof page->slots[s].role - 1);
  return s;
}

/* idiomsHoleAdd -- event seq of slot was left by siglongjmp */
static void idiomsHoleAdd(IdiomsPage *page, unsigned slot, uint64_t seq)
{
  unsigned h = atomic_fetch_add(&page->nholes, 1);
  if (h < IDIOMS_HOLES) {
    page->holes[h].slot = slot;
    page->holes[h].seq = seq;
  }
}

/* idiomsLeave -- a handler about to siglongjmp out of slot's thread:
 * an event begun and not returned from is a hole */
static void idiomsLeave(IdiomsPage *page, unsigned slot)
{
  uint64_t a = atomic_load(&page->slots[slot].attempts);
  if (atomic_load(&page->slots[slot].done) < a)
    idiomsHoleAdd(page, slot, a - 1);
}

/* idiomsProcNew -- a record of the calling process's log */
static unsigned idiomsProcNew(IdiomsPage *page, unsigned slot)
{
  unsigned p = atomic_fetch_add(&page->nprocs, 1);
  if (p >= IDIOMS_PROCS) {
    fprintf(stderr, "idioms: out of process records\n");
    exit(99);
  }
  page->procs[p].pid = (uint64_t)getpid();
  page->procs[p].slot = slot;
  return p;
}

/* idiomsProcRecord -- find the log this process writes, among its open
 * files: the one whose stream header (offset 56, the pid) names it, and
 * record its name, inode and size, at the start or at the end */
static void idiomsProcRecord(IdiomsPage *page, unsigned p, int end)
{
  IdiomsProc *proc = &page->procs[p];
  DIR *dir = opendir("/proc/self/fd");
  struct dirent *de;
  if (dir == NULL)
    return;
  while ((de = readdir(dir)) != NULL) {
    char link[64], target[IDIOMS_PATH];
    unsigned char head[64];
    struct stat st;
    ssize_t n;
    int fd = atoi(de->d_name);
    if (de->d_name[0] == '.' || fd == dirfd(dir))
      continue;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, target, sizeof target - 1);
    if (n <= 0)
      continue;
    target[n] = '\0';
    if (strstr(target, ".live") != NULL)   /* a live file, kept or deleted */
      continue;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head ||
        memcmp(head, "TELLTALE", 8) != 0 || head[19] != 0 ||
        (uint32_t)(head[56] | head[57] << 8 | head[58] << 16 | (uint32_t)head[59] << 24)
          != (uint32_t)getpid())
      continue;
    if (!end) {
      memcpy(proc->startPath, target, (size_t)n + 1);
      proc->startIno = (uint64_t)st.st_ino;
      proc->startSize = (uint64_t)st.st_size;
    } else {
      struct stat at;
      memcpy(proc->endPath, target, (size_t)n + 1);
      proc->endIno = (uint64_t)st.st_ino;
      proc->endSize = (uint64_t)st.st_size;
      proc->atPathIno = proc->startPath[0] != '\0' && stat(proc->startPath, &at) == 0
                        ? (uint64_t)at.st_ino : 0;
    }
  }
  (void)closedir(dir);
}
#endif /* IDIOMS_PAGE_FUNCTIONS */

#endif /* idioms_page_h */
