/* <tools/heap/heapstream.c> -- a sound log's events in time order, read
 * as they go, in memory that does not grow with them
 *
 * .design: design/heap.txt .heap.bounded
 *
 * The stream layer (EventStreamOpen) holds the whole log, and every
 * compact block expanded, while it merges: 2 GB for a log of 60 M
 * events.  The heap tool needs each event once, in time order, so for a
 * log that is sound and whole it reads it itself: the header through
 * EventStreamScan given only the file's first bytes (so the registry and
 * layout come from the one parser), then a walk of the block headers
 * (each block read once and checked, its offset kept: 40 bytes a
 * block), then the same merge as the stream's (by clock, then block
 * sequence number, then place; a sequence is a thread, kind and signal
 * level), each sequence holding only its current block, read with
 * pread and expanded into a buffer of its own.  Anything else (a live
 * file beside it, a hole, damage, blocks missing or out of order) makes
 * HeapStreamOpen decline, and the caller
 * reads the log whole, as before, which says what is wrong.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eventread.h"
#include "eventpack.h"
#include "heapint.h"
#include "heapstream.h"

#define HEADER_READ_MAX ((size_t)1 << 20)  /* the most given to the header's parse */

typedef struct HsBlockStruct {
  uint64_t offset, seq;
  uint32_t length, thread;
  uint16_t kind, level;
  int compact, zstd;
} HsBlockStruct;

/* HsSeqStruct -- a sequence's cursor: its blocks are first .. limit of
 * the sorted blocks; data holds the current block's events (expanded,
 * if compact), pos the next event's offset in it */
typedef struct HsSeqStruct {
  size_t block, limit;
  unsigned char *data;
  size_t size, capacity, pos;
  EventClock clock;             /* its next event's */
  EventClock last;              /* the last given: a clock never goes back */
} HsSeqStruct;

struct HeapStreamStruct {
  int fd;
  EventStreamStruct *scan;      /* the header's parse: registry, layout */
  EventStreamInfoStruct info;   /* its info, with what the walk finds */
  HsBlockStruct *blocks;
  size_t blockCount;
  HsSeqStruct *seqs;
  size_t seqCount;
  size_t *heap, heapCount;
  unsigned char *packed;        /* a compact block's bytes, read */
  size_t packedCapacity;
  unsigned char *frame;         /* a zstd block's, decompressed (.malloc.zstd) */
  size_t frameCapacity;
  EventPackStateStruct pack;
  int owed;                     /* the top sequence is owed a step (advance) */
  const EventDescStruct *descs[EVENT_CODE_LIMIT];       /* by code; NULL unknown */
  unsigned char (*plans)[EVENT_PARAM_MAX];      /* by code, in the machine's order */
  uint16_t *fixed;              /* by code: the length its plan decodes, or 0 */
  EventClock syncClock;         /* the ClockRate, else the ClockSync of the highest clock */
  uint64_t syncMonotonic;
  int synced;
};

typedef struct HeaderReadStruct {
  int fd;
  size_t at, limit;
} HeaderReadStruct;

/* headerRead -- EventStreamReadFunction: the file's first bytes only */
static long headerRead(void *closure, unsigned char *buf, size_t size)
{
  HeaderReadStruct *h = closure;
  ssize_t got;
  if (h->at >= h->limit)
    return 0;
  if (size > h->limit - h->at)
    size = h->limit - h->at;
  got = pread(h->fd, buf, size, (off_t)h->at);
  if (got < 0)
    return -1;
  h->at += (size_t)got;
  return (long)got;
}

static int growTo(unsigned char **buf, size_t *capacity, size_t size)
{
  unsigned char *p;
  if (size <= *capacity)
    return 1;
  if ((p = realloc(*buf, size)) == NULL)
    return 0;
  *buf = p;
  *capacity = size;
  return 1;
}

static int readAt(int fd, unsigned char *buf, size_t size, uint64_t offset)
{
  while (size > 0) {
    ssize_t got = pread(fd, buf, size, (off_t)offset);
    if (got <= 0)
      return 0;
    buf += got, size -= (size_t)got, offset += (uint64_t)got;
  }
  return 1;
}

/* walk -- every block's header, each block checked; 0 if the log is not
 * one block after another, whole and sound, indexes 0, 1, 2... */
static int walk(HeapStreamStruct *hs, uint64_t fileSize)
{
  const EventStreamInfoStruct *info = &hs->info;
  unsigned headerLength = info->blockHeaderLength;
  uint64_t pos = info->headerLength;
  unsigned char *buf = NULL;
  size_t capacity = 0, allocated = 0;
  int ok = 1;
  while (ok && pos < fileSize) {
    EventBlockHeaderStruct h;
    HsBlockStruct *b;
    ok = fileSize - pos >= headerLength && growTo(&buf, &capacity, headerLength)
         && readAt(hs->fd, buf, headerLength, pos) && memcmp(buf, EVENT_BLOCK_MAGIC, 4) == 0;
    if (!ok)
      break;
    EventBlockDecode(&h, buf, info->major, info->layout.bigEndian);
    ok = h.length >= headerLength && h.length <= EVENT_BLOCK_LENGTH_MAX && h.length <= fileSize - pos
         && h.kind < info->registry->kindCount && h.session == info->session
         && (h.flags & EVENT_BLOCK_CHECKED) != 0
         && (info->major >= EVENT_VERSION_ZSTD_MAJOR || (h.flags & EVENT_BLOCK_ZSTD) == 0)
         && h.index == hs->blockCount
         && growTo(&buf, &capacity, h.length) && readAt(hs->fd, buf, h.length, pos)
         && EventBlockCheck(buf, h.length) == h.check;
    if (!ok)
      break;
    if (hs->blockCount == allocated) {
      HsBlockStruct *more;
      allocated = allocated == 0 ? 256 : allocated * 2;
      if ((more = realloc(hs->blocks, allocated * sizeof *more)) == NULL) {
        ok = 0;
        break;
      }
      hs->blocks = more;
    }
    b = &hs->blocks[hs->blockCount++];
    *b = (HsBlockStruct){pos, h.seq, h.length, h.thread, h.kind,
                         (uint16_t)(h.flags & EVENT_BLOCK_LEVEL_MASK),
                         (h.flags & EVENT_BLOCK_COMPACT) != 0, (h.flags & EVENT_BLOCK_ZSTD) != 0};
    pos += h.length;
  }
  free(buf);
  return ok;
}

static int blockCompare(const void *a, const void *b)
{
  const HsBlockStruct *x = a, *y = b;
  if (x->thread != y->thread)
    return x->thread < y->thread ? -1 : 1;
  if (x->kind != y->kind)
    return x->kind < y->kind ? -1 : 1;
  if (x->level != y->level)
    return x->level < y->level ? -1 : 1;
  if (x->seq != y->seq)
    return x->seq < y->seq ? -1 : 1;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* seqLoad -- the sequence's current block into its buffer; 0 if it
 * cannot be read or expanded */
static int seqLoad(HeapStreamStruct *hs, HsSeqStruct *seq)
{
  const HsBlockStruct *b = &hs->blocks[seq->block];
  size_t headerLength = hs->info.blockHeaderLength, size = b->length - headerLength, raw;
  const char *why = NULL;
  const unsigned char *in;
  seq->pos = 0;
  if (!b->compact && !b->zstd) {
    seq->size = size;
    return growTo(&seq->data, &seq->capacity, size)
           && readAt(hs->fd, seq->data, size, b->offset + headerLength);
  }
  if (!growTo(&hs->packed, &hs->packedCapacity, size)
      || !readAt(hs->fd, hs->packed, size, b->offset + headerLength))
    return 0;
  in = hs->packed;
  if (b->zstd) {
    if (!EventUnzstd(hs->packed, size, &hs->frame, &hs->frameCapacity, &size))
      return 0;
    in = hs->frame;
    if (!b->compact) {
      seq->size = size;
      if (!growTo(&seq->data, &seq->capacity, size))
        return 0;
      memcpy(seq->data, in, size);
      return 1;
    }
  }
  if (!EventPackRawSize(in, size, &raw) || raw / EVENT_PACK_RATIO_MAX > size
      || !growTo(&seq->data, &seq->capacity, raw))
    return 0;
  return EventPackDecode(&hs->pack, in, size, hs->info.layout.bigEndian, seq->data, raw,
                         &seq->size, &why);
}

/* seqSeek -- the sequence's next event (its clock in seq->clock),
 * loading its next blocks as it needs; 0 if it has none, -1 if a block
 * could not be read */
static int seqSeek(HeapStreamStruct *hs, HsSeqStruct *seq)
{
  const EventLayoutStruct *layout = &hs->info.layout;
  for (;;) {
    while (seq->pos + EVENT_HEADER_LEN <= seq->size) {
      const unsigned char *p = seq->data + seq->pos;
      unsigned length = (unsigned)EventLoad(p + 2, 2, layout->bigEndian);
      unsigned code = (unsigned)EventLoad(p, 2, layout->bigEndian);
      if (code == 0 || length < EVENT_HEADER_LEN || length > seq->size - seq->pos)
        break;                  /* the end of its events */
      seq->clock = EventLoad(p + 4, 8, layout->bigEndian);
      return 1;
    }
    if (++seq->block >= seq->limit)
      return 0;
    if (!seqLoad(hs, seq))
      return -1;
  }
}

static int seqBefore(const HeapStreamStruct *hs, size_t a, size_t b)
{
  const HsSeqStruct *sa = &hs->seqs[a], *sb = &hs->seqs[b];
  if (sa->clock != sb->clock)
    return sa->clock < sb->clock;
  if (hs->blocks[sa->block].seq != hs->blocks[sb->block].seq)
    return hs->blocks[sa->block].seq < hs->blocks[sb->block].seq;
  return hs->blocks[sa->block].offset + sa->pos < hs->blocks[sb->block].offset + sb->pos;
}

static void heapDown(HeapStreamStruct *hs, size_t i)
{
  for (;;) {
    size_t left = 2 * i + 1, right = left + 1, least = i, t;
    if (left < hs->heapCount && seqBefore(hs, hs->heap[left], hs->heap[least]))
      least = left;
    if (right < hs->heapCount && seqBefore(hs, hs->heap[right], hs->heap[least]))
      least = right;
    if (least == i)
      return;
    t = hs->heap[i], hs->heap[i] = hs->heap[least], hs->heap[least] = t;
    i = least;
  }
}

/* mergeStart -- the sequences, each at its first event, heaped */
static int mergeStart(HeapStreamStruct *hs)
{
  if (hs->blockCount > 1)
    qsort(hs->blocks, hs->blockCount, sizeof *hs->blocks, blockCompare);
  hs->seqs = calloc(hs->blockCount + 1, sizeof *hs->seqs);
  hs->heap = calloc(hs->blockCount + 1, sizeof *hs->heap);
  if (hs->seqs == NULL || hs->heap == NULL)
    return 0;
  for (size_t i = 0; i < hs->blockCount; ++i) {
    const HsBlockStruct *b = &hs->blocks[i];
    if (i == 0 || b->thread != b[-1].thread || b->kind != b[-1].kind || b->level != b[-1].level)
      hs->seqs[hs->seqCount++].block = i;
    hs->seqs[hs->seqCount - 1].limit = i + 1;
  }
  for (size_t i = 0; i < hs->seqCount; ++i) {
    HsSeqStruct *seq = &hs->seqs[i];
    int found;
    --seq->block;               /* seqSeek steps onto the first */
    seq->size = seq->pos = 0;
    if ((found = seqSeek(hs, seq)) < 0)
      return 0;
    if (found)
      hs->heap[hs->heapCount++] = i;
  }
  for (size_t i = hs->heapCount / 2; i > 0; --i)
    heapDown(hs, i - 1);
  return 1;
}

int HeapStreamOpen(const char *path, HeapStreamStruct **streamReturn)
{
  HeapStreamStruct *hs;
  HeaderReadStruct h;
  EventLayoutStruct native;
  struct stat st;
  char msg[256], live[4096 + 8];
  *streamReturn = NULL;
  (void)snprintf(live, sizeof live, "%s.live", path);
  if (access(live, F_OK) == 0 || (hs = calloc(1, sizeof *hs)) == NULL)
    return -1;                  /* a live file to recover from: read whole */
  hs->fd = open(path, O_RDONLY | O_CLOEXEC);
  h = (HeaderReadStruct){hs->fd, 0, 0};
  if (hs->fd < 0 || fstat(hs->fd, &st) != 0 || !S_ISREG(st.st_mode))
    goto decline;
  h.limit = (size_t)st.st_size < HEADER_READ_MAX ? (size_t)st.st_size : HEADER_READ_MAX;
  if (EventStreamScan(&hs->scan, headerRead, &h, msg, sizeof msg) != EventStreamOK)
    goto decline;
  hs->info = *EventStreamInfo(hs->scan);
  if (hs->info.major < 2 || hs->info.headerLength > h.limit || hs->info.recoveredInto
      || hs->info.recoveredUnchecked)
    goto decline;
  /* Blocks of several registries (or registry blocks) are decoded each
   * by its own registry's codes: the whole reader does that
   * (design/stream.txt .stream.header.registries). */
  if (hs->info.major >= 3 && hs->info.minor >= EVENT_VERSION_REGISTRIES)
    for (unsigned n = 1; n < 256; ++n)
      if (hs->info.registryOf[n] != NULL)
        goto decline;
  hs->info.blockCount = hs->info.eventCount = hs->info.compactBlocks = 0;
  hs->info.streamEnd = hs->info.streamExec = 0;
  hs->info.firstClock = hs->info.lastClock = 0;
  hs->info.clockSyncCount = 0;
  hs->info.clockRated = 0;
  if (!walk(hs, (uint64_t)st.st_size) || !mergeStart(hs))
    goto decline;
  hs->info.blockCount = hs->blockCount;
  hs->info.clockHz = hs->info.headerHz;
  hs->plans = calloc(EVENT_CODE_LIMIT, sizeof *hs->plans);
  hs->fixed = calloc(EVENT_CODE_LIMIT, sizeof *hs->fixed);
  if (hs->plans == NULL || hs->fixed == NULL)
    goto decline;
  EventLayoutNative(&native);
  for (unsigned i = 0; i < hs->info.registry->eventCount; ++i) {
    const EventDescStruct *desc = &hs->info.registry->events[i];
    if (desc->code >= EVENT_CODE_LIMIT)
      continue;
    hs->descs[desc->code] = desc;
    /* A fixed event not of telltale's own, in this machine's order, by
     * its plan, as the stream decodes one (.eventcnv.reader.plan) */
    if (desc->code >= EVENT_CODE_RESERVED_LIMIT && hs->info.layout.bigEndian == native.bigEndian)
      hs->fixed[desc->code] = (uint16_t)EventDescPlan(desc, &hs->info.layout, hs->plans[desc->code]);
  }
  *streamReturn = hs;
  return 0;
decline:
  HeapStreamClose(hs);
  return -1;
}

const EventStreamInfoStruct *HeapStreamInfo(const HeapStreamStruct *hs)
{
  return &hs->info;
}

/* noteOwn -- what the walk keeps of telltale's own events, as the
 * stream's index does: the end, an exec, the clock's rate */
static void noteOwn(HeapStreamStruct *hs, const EventRecordStruct *rec)
{
  EventStreamInfoStruct *info = &hs->info;
  if (rec->code == EVENT_CODE_STREAM_END) {
    info->streamEnd = 1;
  } else if (rec->code == EVENT_CODE_STREAM_EXEC && rec->desc->paramCount >= 2) {
    info->streamExec = rec->values[1].u == 0;   /* .sol.exec */
  } else if ((rec->code == EVENT_CODE_CLOCK_SYNC || rec->code == EVENT_CODE_CLOCK_RATE)
             && rec->desc->paramCount >= 1) {
    /* ClockRate, else the latest ClockSync: design/runtime.txt .sol.clock.rate */
    int rate = rec->code == EVENT_CODE_CLOCK_RATE;
    ++info->clockSyncCount;
    if (rate ? !info->clockRated || rec->clock < hs->syncClock
             : !info->clockRated && (!hs->synced || rec->clock > hs->syncClock)) {
      hs->syncClock = rec->clock;
      hs->syncMonotonic = rec->values[0].u;
      hs->synced = 1;
      info->clockRated |= rate;
      info->clockHz = EventClockRate(info->headerHz, info->startClock, info->startMonotonic,
                                     hs->syncClock, hs->syncMonotonic);
    }
  }
}

/* advance -- the top sequence past the event just given: owed from the
 * last call, so that the record's strings, in its block, lasted until
 * this one.  0, or -1 if a block could not be read. */
static int advance(HeapStreamStruct *hs)
{
  HsSeqStruct *seq;
  int more;
  if (!hs->owed)
    return 0;
  hs->owed = 0;
  seq = &hs->seqs[hs->heap[0]];
  if ((more = seqSeek(hs, seq)) < 0)
    return -1;
  if (!more)
    hs->heap[0] = hs->heap[--hs->heapCount];
  else if (seq->clock < seq->last)
    seq->clock = seq->last;     /* never back in time: .stream.order.back */
  heapDown(hs, 0);
  return 0;
}

int HeapStreamNext(HeapStreamStruct *hs, EventRecordStruct *rec)
{
  for (;;) {
    HsSeqStruct *seq;
    const HsBlockStruct *b;
    const EventDescStruct *desc;
    const unsigned char *p;
    const char *why = NULL;
    unsigned code, length, big = hs->info.layout.bigEndian;
    if (advance(hs) < 0)
      return -1;
    if (hs->heapCount == 0)
      return 0;
    seq = &hs->seqs[hs->heap[0]];
    b = &hs->blocks[seq->block];
    p = seq->data + seq->pos;   /* seqSeek found its header sound */
    code = (unsigned)EventLoad(p, 2, big);
    length = (unsigned)EventLoad(p + 2, 2, big);
    seq->pos += length;
    hs->owed = 1;
    if ((desc = code < EVENT_CODE_LIMIT ? hs->descs[code] : NULL) == NULL)
      continue;                 /* unknown: .stream.unknown */
    rec->code = code;
    rec->length = length;
    rec->stringLength = 0;
    if (length == hs->fixed[code]) {
      rec->desc = desc;
      rec->kind = desc->kind;
      EventDecodePlanned(hs->plans[code], p + EVENT_HEADER_LEN, rec->values);
    } else if (EventDecodeFields(&hs->info.layout, desc, p, length, rec, &why) != EventDecodeOK)
      return -1;                /* its block's check held: cannot be */
    rec->thread = b->thread;
    rec->offset = b->offset;
    rec->clock = seq->clock;
    seq->last = rec->clock;
    ++hs->info.eventCount;
    if (hs->info.firstClock == 0 || rec->clock < hs->info.firstClock)
      hs->info.firstClock = rec->clock;
    if (rec->clock > hs->info.lastClock)
      hs->info.lastClock = rec->clock;
    noteOwn(hs, rec);
    return 1;
  }
}

void HeapStreamClose(HeapStreamStruct *hs)
{
  if (hs == NULL)
    return;
  for (size_t i = 0; i < hs->seqCount; ++i)
    free(hs->seqs[i].data);
  free(hs->seqs);
  free(hs->heap);
  free(hs->blocks);
  free(hs->plans);
  free(hs->fixed);
  free(hs->packed);
  free(hs->frame);
  if (hs->scan != NULL)
    EventStreamClose(hs->scan);
  if (hs->fd >= 0)
    (void)close(hs->fd);
  free(hs);
}
