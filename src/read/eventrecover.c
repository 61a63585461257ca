/* <src/read/eventrecover.c> -- recover a dead program's last events from its live file
 *
 * .design: design/control.txt .sol.live, .sol.recover
 *
 * While a program runs, the buffers of its output kinds are regions of
 * a live file beside its log (LOG.live), mapped shared, so the kernel
 * keeps what the program stored there even if it is killed.  A clean
 * end removes the live file.  If it is still there, the program died,
 * and the events it emitted after the last time each buffer was sent
 * are only in the live file.
 *
 * EventRecover makes one stream of the two: the log, then, for each
 * block of the live file, the events that the log does not have.  A
 * live block keeps its sequence number through every partial send, so
 * the log's blocks with the same number hold a prefix of it: the
 * recovered events are the rest.  Both files may be damaged, so every
 * walk here moves forward by at least a block header or an event
 * header, and a live block is recovered only if the log's blocks of its
 * number are, byte for byte, a whole-event prefix of it.  Depends on
 * libc and libzstd (the recorder's zstd blocks, .compact.hook).
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "eventpack.h"
#include "eventread.h"

typedef struct SentStruct {
  uint64_t seq;
  size_t at;                    /* offset of its events in the log */
  size_t bytes;                 /* how many */
  const unsigned char *data;    /* they are here: in the log, or expanded
                                   from a compact block (.compact.reader) */
  size_t expandedAt;            /* then: where in the expansion; else SIZE_MAX */
  int filtered;                 /* a filtered block: bytes is what it covers of
                                   its live block, whose events it does not
                                   all hold (.sol.filter) */
} SentStruct;

typedef struct FileStruct {
  const unsigned char *base;
  size_t size;
  uint32_t headerLength;        /* of the stream header */
  unsigned major, minor, big;
  unsigned blockHeaderLength;   /* 36, or 24 in a 1.0 stream */
  uint32_t session;             /* 2.0 on */
} FileStruct;

static int cmpSent(const void *a, const void *b)
{
  const SentStruct *x = a, *y = b;
  if (x->seq != y->seq)
    return x->seq < y->seq ? -1 : 1;
  return x->at < y->at ? -1 : x->at > y->at;   /* in the order written */
}

static void message(char *msg, size_t msgSize, const char *text)
{
  size_t n = strlen(text);
  if (msgSize == 0)
    return;
  if (n >= msgSize)
    n = msgSize - 1;
  memcpy(msg, text, n);
  msg[n] = '\0';
}

/* headerRead -- the fixed header of a stream: its length, version and
 * byte order */
static int headerRead(FileStruct *f, const unsigned char *buf, size_t size)
{
  f->base = buf;
  f->size = size;
  if (size < EVENT_STREAM_FIXED_LEN || memcmp(buf, EVENT_STREAM_MAGIC, EVENT_STREAM_MAGIC_LEN) != 0)
    return 0;
  f->major = (unsigned)EventLoad(buf + 8, 2, 0);
  f->minor = (unsigned)EventLoad(buf + 12, 2, 0);
  if (f->major < 1 || f->major > EVENT_VERSION_ZSTD_MAJOR)   /* .compact.hook */
    return 0;
  f->headerLength = (uint32_t)EventLoad(buf + 20, 4, 0);
  if (f->headerLength < EVENT_STREAM_FIXED_LEN || f->headerLength > size)
    return 0;
  f->big = buf[14] == 0x01 && buf[15] == 0x02;
  f->blockHeaderLength = f->major >= 2 ? EVENT_BLOCK_HEADER_LEN : EVENT_BLOCK_HEADER_LEN_1;
  if (f->major >= 2 && f->headerLength < EVENT_STREAM_FIXED_LEN + EVENT_LIVE_REGIONS_LEN)
    return 0;
  f->session = f->major >= 2 ? (uint32_t)EventLoad(buf + EVENT_STREAM_SESSION_AT, 4, 0) : 0;
  return 1;
}

/* dataEnd -- where the events of a block's data end: at code 0, at an
 * event that cannot be whole, or at the end.  Each step is at least an
 * event header. */
static size_t dataEnd(const unsigned char *data, size_t size, unsigned big)
{
  size_t offset = 0;
  while (size - offset >= EVENT_HEADER_LEN) {
    uint64_t code = EventLoad(data + offset, 2, big), length = EventLoad(data + offset + 2, 2, big);
    if (code == 0 || length < EVENT_HEADER_LEN || length > size - offset)
      break;
    offset += (size_t)length;
  }
  return offset;
}

/* filteredCovered -- the bytes of its live block a filtered block's
 * events stand for: its last event, EventsFiltered, says (its length
 * says the word size: 12 + 4 + 2 words).  SIZE_MAX if it does not.
 * design/control.txt .sol.filter */
static size_t filteredCovered(const unsigned char *data, size_t size, unsigned big)
{
  size_t offset = 0, last = SIZE_MAX, length = 0;
  while (size - offset >= EVENT_HEADER_LEN) {
    uint64_t code = EventLoad(data + offset, 2, big);
    length = (size_t)EventLoad(data + offset + 2, 2, big);
    if (code == 0 || length < EVENT_HEADER_LEN || length > size - offset)
      break;
    last = offset;
    offset += length;
  }
  if (last == SIZE_MAX || EventLoad(data + last, 2, big) != EVENT_CODE_EVENTS_FILTERED)
    return SIZE_MAX;
  length = (size_t)EventLoad(data + last + 2, 2, big);
  if (length != EVENT_HEADER_LEN + 4 + 2 * 4 && length != EVENT_HEADER_LEN + 4 + 2 * 8)
    return SIZE_MAX;
  {
    unsigned word = (unsigned)(length - EVENT_HEADER_LEN - 4) / 2;
    uint64_t covered = EventLoad(data + last + EVENT_HEADER_LEN + 4 + word, word, big);
    return covered > SIZE_MAX / 2 ? SIZE_MAX : (size_t)covered;
  }
}

/* logBlockSound -- is the log's block at offset whole, checked and its
 * own?  (Only 2.0 logs get here: a 1.0 live file is refused.) */
static int logBlockSound(const FileStruct *f, size_t offset, EventBlockHeaderStruct *h)
{
  const unsigned char *p = f->base + offset;
  if (f->size - offset < f->blockHeaderLength || memcmp(p, EVENT_BLOCK_MAGIC, 4) != 0)
    return 0;
  EventBlockDecode(h, p, f->major, f->big);
  return h->length >= f->blockHeaderLength && h->length <= f->size - offset
         && h->session == f->session && (h->flags & EVENT_BLOCK_CHECKED) != 0
         && (EventBlockCheck(p, h->length) == h->check
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
             || (h->flags & EVENT_BLOCK_COMPACT) != 0   /* as the reader: eventindex.c blockRead */
#endif
            );
}

/* The live file's regions start on pages: this is the least page. */
#define LIVE_PAGE 4096u

/* zeros -- are the n bytes at p all zero? */
static int zeros(const unsigned char *p, size_t n)
{
  while (n > 0 && *p == 0)
    ++p, --n;
  return n == 0;
}

/* regionSound -- is the live region's header what the program wrote: its
 * check holds, its length is whole pages within the file, and it is of
 * this session (free regions included: the check leaves out the magic) */
static int regionSound(const FileStruct *f, const unsigned char *p, const EventBlockHeaderStruct *h,
                       size_t left)
{
  return EventLiveCheck(p) == h->check && h->length >= f->blockHeaderLength && h->length <= left
         && h->length % LIVE_PAGE == 0 && h->session == f->session
         /* a live region is always raw: a compact or zstd flag is damage (.zstd.live) */
         && (h->flags & (EVENT_BLOCK_COMPACT | EVENT_BLOCK_ZSTD)) == 0;
}

/* regionPreparing -- is a region whose check fails one the program was
 * making a block of when it died?  Its magic is zero and its data end
 * at once, which the program sees to before it writes the header's
 * fields; the length and session are the ones rewritten.  It holds no
 * event, so it is free.  .sol.recover.free */
static int regionPreparing(const FileStruct *f, const unsigned char *p,
                           const EventBlockHeaderStruct *h, size_t left)
{
  return zeros(p, 4) && h->length >= f->blockHeaderLength + EVENT_HEADER_LEN
         && h->length <= left && h->length % LIVE_PAGE == 0 && h->session == f->session
         && zeros(p + f->blockHeaderLength, 4);     /* the first event's code and length */
}

/* nextMagic -- the next block magic after offset, or the end */
static size_t nextMagic(const FileStruct *f, size_t offset)
{
  for (++offset; f->size - offset >= 4; ++offset)
    if (memcmp(f->base + offset, EVENT_BLOCK_MAGIC, 4) == 0)
      return offset;
  return f->size;
}

/* ExpandedStruct -- the compact blocks of the log, expanded: one
 * buffer for them all */
typedef struct ExpandedStruct {
  EventPackStateStruct *state;
  unsigned char *base;
  size_t size, used;
} ExpandedStruct;

/* room -- x has room for n bytes more at x->used; 0 if out of memory */
static int room(ExpandedStruct *x, size_t n)
{
  if (x->base == NULL || x->size - x->used < n) {   /* even for 0 bytes: base + 0 */
    size_t size = x->size == 0 ? 1u << 20 : x->size;
    unsigned char *bigger;
    while (size - x->used < n)
      size *= 2;
    if ((bigger = realloc(x->base, size)) == NULL)
      return 0;
    x->base = bigger;
    x->size = size;
  }
  return 1;
}

/* expand -- a sound compact block's events, expanded at x->used (then
 * *dataReturn is NULL), *bytesReturn bytes.  A compact block that does
 * not decode gives SIZE_MAX bytes: no live block is a prefix of it,
 * so its live block is not recovered (the reader reports the block).
 * Returns 0 if out of memory.  design/tools.txt .compact.reader */
static int expand(ExpandedStruct *x, const unsigned char *in, size_t inSize, unsigned big,
                  const unsigned char **dataReturn, size_t *bytesReturn)
{
  size_t rawSize, outSize = 0;
  const char *why;
  *bytesReturn = SIZE_MAX;
  *dataReturn = in;
  if (!EventPackRawSize(in, inSize, &rawSize) || rawSize / EVENT_PACK_RATIO_MAX > inSize)
    return 1;
  if (x->state == NULL && (x->state = malloc(sizeof *x->state)) == NULL)
    return 0;
  if (!room(x, rawSize))
    return 0;
  if (EventPackDecode(x->state, in, inSize, big, x->base + x->used, rawSize, &outSize, &why)) {
    *dataReturn = NULL;         /* x->base moves as it grows: the caller sets it after */
    *bytesReturn = outSize;
    x->used += outSize;
  }
  return 1;
}

/* EventUnzstd -- eventread.h.  A frame that is not sound leaves its
 * block matching no live block. */
int EventUnzstd(const unsigned char *in, size_t inSize, unsigned char **buf, size_t *bufSize,
                size_t *sizeReturn)
{
  size_t size, got;
  if (EventZstdFrameCheck(in, inSize, &size) != NULL)
    return 0;
  if (*bufSize < size || *buf == NULL) {
    unsigned char *bigger = realloc(*buf, size > 0 ? size : 1);
    if (bigger == NULL)
      return 0;
    *buf = bigger;
    *bufSize = size;
  }
  got = ZSTD_decompress(*buf, *bufSize, in, inSize);
  if (ZSTD_isError(got) || got != size)
    return 0;
  *sizeReturn = got;
  return 1;
}

/* sentCollect -- what the log holds of each sequence number, from its
 * sound blocks; a damaged block is passed over (the reader reports it).
 * Returns the offset where a block cut short by the end of the log
 * starts (left out of the stream: its events are all in its live
 * block), or the log's size. */
static size_t sentCollect(const FileStruct *f, SentStruct **sentReturn, size_t *countReturn, int *failed,
                          ExpandedStruct *x, int *unsound)
{
  SentStruct *sent = NULL;
  size_t count = 0, limit = 0, offset = f->headerLength, cut = f->size;
  unsigned char *frame = NULL;  /* a zstd block's data, decompressed */
  size_t frameSize = 0;
  while (f->size - offset >= 4) {
    EventBlockHeaderStruct h;
    if (!logBlockSound(f, offset, &h)) {
      /* A block its thread died before writing whole: the live file
       * has its events, so the log is not the less sound for it.
       * design/control.txt .sol.writer.at */
      if (memcmp(f->base + offset, EVENT_BLOCK_MAGIC, 4) == 0 && f->size - offset >= f->blockHeaderLength
          && h.length >= f->blockHeaderLength && h.length <= f->size - offset
          && h.session == f->session
          && EventBlockHole(f->base + offset, h.length, f->blockHeaderLength, offset)) {
        offset += h.length;
        continue;
      }
      /* A program killed in the middle of write() leaves the log's
       * last block cut short: it is left out, or the recovered blocks
       * appended after it would be read as its data (tests/unit/test_death.c
       * death-4.1). */
      if (f->size - offset < f->blockHeaderLength
          || (memcmp(f->base + offset, EVENT_BLOCK_MAGIC, 4) == 0
              && EventLoad(f->base + offset + 4, 4, f->big) > f->size - offset
              && nextMagic(f, offset) == f->size)) {
        cut = offset;
        break;
      }
      *unsound = 1;
      offset = nextMagic(f, offset);
      continue;
    }
    if (count == limit) {
      size_t bigger = limit == 0 ? 256 : 2 * limit;
      SentStruct *more = realloc(sent, bigger * sizeof *sent);
      if (more == NULL) {
        *failed = 1;
        break;
      }
      sent = more;
      limit = bigger;
    }
    sent[count].seq = h.seq;
    sent[count].at = offset + f->blockHeaderLength;
    sent[count].data = f->base + sent[count].at;
    sent[count].expandedAt = SIZE_MAX;
    sent[count].filtered = (h.flags & EVENT_BLOCK_FILTERED) != 0;
    if ((h.flags & EVENT_BLOCK_ZSTD) != 0 && f->major < EVENT_VERSION_ZSTD_MAJOR) {
      sent[count].bytes = SIZE_MAX;     /* damage there (.zstd.version) */
    } else if ((h.flags & EVENT_BLOCK_ZSTD) != 0) {
      /* The recorder's zstd blocks (.compact.hook): what they hold is
       * compared as their compact or raw data would be, so a frame is
       * expanded into x either way. */
      size_t at = x->used, made = 0;
      sent[count].bytes = SIZE_MAX;
      if (EventUnzstd(sent[count].data, h.length - f->blockHeaderLength, &frame, &frameSize, &made)) {
        if ((h.flags & EVENT_BLOCK_COMPACT) != 0) {
          if (!expand(x, frame, made, f->big, &sent[count].data, &sent[count].bytes)) {
            *failed = 1;
            break;
          }
        } else if (room(x, made)) {
          memcpy(x->base + at, frame, made);
          x->used += made;
          sent[count].data = NULL;
          sent[count].bytes = dataEnd(x->base + at, made, f->big);
        } else {
          *failed = 1;
          break;
        }
        if (sent[count].data == NULL)
          sent[count].expandedAt = at;
      }
    } else if ((h.flags & EVENT_BLOCK_COMPACT) != 0 && f->major >= 3) {
      size_t at = x->used;
      if (!expand(x, sent[count].data, h.length - f->blockHeaderLength, f->big,
                  &sent[count].data, &sent[count].bytes)) {
        *failed = 1;
        break;
      }
      if (sent[count].data == NULL)
        sent[count].expandedAt = at;   /* data set when the expansion is whole */
    } else {
      sent[count].bytes = dataEnd(sent[count].data, h.length - f->blockHeaderLength, f->big);
    }
    ++count;
    offset += h.length;
  }
  /* A last block's first bytes alone (a header written in part, as a
   * pwritev cut short by death may leave: .sol.writer.at) are left out
   * too, or the recovered blocks would be read as its header. */
  if (cut == f->size && offset < f->size)
    cut = offset;
  for (size_t i = 0; i < count; ++i) {
    if (sent[i].expandedAt != SIZE_MAX)
      sent[i].data = x->base + sent[i].expandedAt;
    if (sent[i].filtered && sent[i].bytes != SIZE_MAX)
      sent[i].bytes = filteredCovered(sent[i].data, sent[i].bytes, f->big);
  }
  free(frame);
  if (count > 0)
    qsort(sent, count, sizeof *sent, cmpSent);
  *sentReturn = sent;
  *countReturn = count;
  return cut;
}

/* prefixMatch -- are the log's sends of seq a whole-event prefix of the
 * live block's data[0 .. end)?  Sets *skipReturn to its length. */
static int prefixMatch(const SentStruct *sent, size_t sentCount, uint64_t seq,
                       const unsigned char *data, size_t end, unsigned big, size_t *skipReturn)
{
  size_t lo = 0, hi = sentCount, skip = 0, boundary = 0;
  while (lo < hi) {             /* the first send of this seq */
    size_t mid = lo + (hi - lo) / 2;
    if (sent[mid].seq < seq)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (; lo < sentCount && sent[lo].seq == seq; ++lo) {
    if (sent[lo].bytes > end - skip
        || (!sent[lo].filtered && memcmp(sent[lo].data, data + skip, sent[lo].bytes) != 0))
      return 0;
    skip += sent[lo].bytes;     /* a filtered send: what it covers, not compared */
  }
  while (boundary < skip)       /* on an event boundary of the live block */
    boundary += (size_t)EventLoad(data + boundary + 2, 2, big);
  *skipReturn = skip;
  return boundary == skip;
}

static int cmpSeq(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* liveSeqsCollect -- the sequence numbers of the live file's blocks,
 * sorted: a program has one live block of a number at a time, so one
 * found twice is a region copied (damage), and neither is recovered */
static int liveSeqsCollect(const FileStruct *live, uint64_t **seqsReturn, size_t *countReturn)
{
  size_t count = 0, offset, limit = live->size / LIVE_PAGE + 1;
  uint64_t *seqs = malloc(limit * sizeof *seqs);
  if (seqs == NULL)
    return 0;
  for (offset = live->headerLength;
       offset < live->size && live->size - offset >= live->blockHeaderLength;) {
    EventBlockHeaderStruct h;
    EventBlockDecode(&h, live->base + offset, live->major, live->big);
    if (!regionSound(live, live->base + offset, &h, live->size - offset)) {
      offset = (offset / LIVE_PAGE + 1) * LIVE_PAGE;
      continue;
    }
    if (memcmp(h.magic, EVENT_BLOCK_MAGIC, 4) == 0 && count < limit)
      seqs[count++] = h.seq;
    offset += h.length;
  }
  qsort(seqs, count, sizeof *seqs, cmpSeq);
  *seqsReturn = seqs;
  *countReturn = count;
  return 1;
}

/* seqTwice -- is seq in the sorted seqs more than once? */
static int seqTwice(const uint64_t *seqs, size_t count, uint64_t seq)
{
  size_t lo = 0, hi = count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (seqs[mid] < seq)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo + 1 < count && seqs[lo] == seq && seqs[lo + 1] == seq;
}

/* appendUnsent -- at out, a block of the live block's events data[skip
 * .. end), which the log lacks, under the live block's header: checked,
 * and of no index (.stream.check).  Returns its length. */
static size_t appendUnsent(unsigned char *out, EventBlockHeaderStruct *h, const FileStruct *live,
                           const unsigned char *data, size_t skip, size_t end)
{
  h->length = (uint32_t)(live->blockHeaderLength + end - skip);
  h->index = EVENT_BLOCK_INDEX_NONE;
  h->flags = (uint16_t)(h->flags | EVENT_BLOCK_CHECKED);
  h->check = 0;
  EventBlockEncode(out, h, live->big);
  memcpy(out + live->blockHeaderLength, data + skip, end - skip);
  EventStore(out + offsetof(EventBlockHeaderStruct, check), EventBlockCheck(out, h->length), 4,
             live->big);
  return h->length;
}

/* filesRead -- the headers of the log and its live file: both streams,
 * the live file 2.0 on, and of one session.  0, with a message, if not. */
static int filesRead(FileStruct *log, FileStruct *live, const unsigned char *logBytes,
                     size_t logSize, const unsigned char *liveBytes, size_t liveSize,
                     char *msg, size_t msgSize)
{
  if (!headerRead(log, logBytes, logSize)) {
    message(msg, msgSize, "the log has no readable header");
    return 0;
  }
  if (!headerRead(live, liveBytes, liveSize)) {
    message(msg, msgSize, "the live file has no readable header");
    return 0;
  }
  /* A 1.0 live file's regions carry no check: a damaged sequence number
   * could not be told from a block the log lacks, and its events would
   * be shown twice. */
  if (live->major < 2) {
    message(msg, msgSize, "the live file is of stream version 1.0, whose regions are not "
            "checked: its events are not recovered");
    return 0;
  }
  /* Same program, same session: pid, start clock and start time, and
   * from 2.0 the session id. */
  if (log->big != live->big || log->major != live->major
      || memcmp(logBytes + 32, liveBytes + 32, 32) != 0) {
    message(msg, msgSize, "the live file belongs to another session than the log");
    return 0;
  }
  return 1;
}

/* RecoverStruct -- a recovery under way: the two files, what the log
 * holds of each sequence number, the live blocks' numbers, and the
 * stream being made (the log, then what it lacks) */
typedef struct RecoverStruct {
  FileStruct log, live;
  SentStruct *sent;             /* sentCollect */
  size_t sentCount;
  uint64_t *liveSeqs;           /* liveSeqsCollect */
  size_t liveSeqCount;
  unsigned char *out;
  size_t outSize;
  EventRecoverStruct *result;
  int logUnsound;               /* sentCollect passed over a block */
  int retagging;                /* the live file's header says a retag was under way */
} RecoverStruct;

/* liveStart -- where a live block's own events start in its region's
 * data[0 .. end): 0, or its index from 3.0.3, past events emitted while
 * its kind's output was off; end for a region whose output is off now
 * (none to recover).  0 if the index is not an event boundary: damage.
 * .sol.control.cut */
static int liveStart(const FileStruct *live, const EventBlockHeaderStruct *h,
                     const unsigned char *data, size_t end, size_t *startReturn)
{
  size_t at = 0;
  *startReturn = 0;
  if (h->index == EVENT_BLOCK_INDEX_NONE)
    return 1;
  if (h->index == EVENT_LIVE_OUTPUT_OFF) {
    *startReturn = end;
    return 1;
  }
  while (at < h->index && at < end)
    at += (size_t)EventLoad(data + at + 2, 2, live->big);
  *startReturn = at;
  return at == h->index;
}

/* liveBlock -- the live block at offset, of header h: the events the
 * log lacks go to the stream, unless the block cannot be trusted */
static void liveBlock(RecoverStruct *r, size_t offset, EventBlockHeaderStruct h)
{
  const FileStruct *live = &r->live;
  const unsigned char *data = live->base + offset + live->blockHeaderLength;
  size_t end = dataEnd(data, h.length - live->blockHeaderLength, live->big), skip, start;
  if (!liveStart(live, &h, data, end, &start)) {
    if (r->result->rejected++ == 0)
      r->result->rejectedOffset = offset;
    return;
  }
  data += start;
  end -= start;
  if (seqTwice(r->liveSeqs, r->liveSeqCount, h.seq)
      || !prefixMatch(r->sent, r->sentCount, h.seq, data, end, live->big, &skip)) {
    if (r->result->rejected++ == 0)
      r->result->rejectedOffset = offset;
    return;
  }
  if (skip < end) {
    r->outSize += appendUnsent(r->out + r->outSize, &h, live, data, skip, end);
    ++r->result->blocks;
    for (size_t e = skip; e < end; e += (size_t)EventLoad(data + e + 2, 2, live->big))
      ++r->result->events;
  }
}

/* freeSound -- can a checked region that is not a block be a free one?
 * Its magic is zero, and the events it holds, if any, are all in the
 * log under its number: a region is freed or reused only once what it
 * held was written.  Where the log was passed over or failed, they may
 * be missing for that reason, and the region is taken as free.
 * .sol.recover.free */
static int freeSound(const RecoverStruct *r, const unsigned char *block,
                     const EventBlockHeaderStruct *h)
{
  const FileStruct *live = &r->live;
  const unsigned char *data = block + live->blockHeaderLength;
  size_t end, skip, start;
  if (!zeros(block, 4))
    return 0;
  end = dataEnd(data, h->length - live->blockHeaderLength, live->big);
  if (!liveStart(live, h, data, end, &start))
    return 0;
  data += start;
  end -= start;
  return end == 0 || r->logUnsound || r->result->logFailed
         || (prefixMatch(r->sent, r->sentCount, h->seq, data, end, live->big, &skip) && skip == end);
}

/* regionRetagged -- is a region whose check fails the one the program
 * was retagging when it died (the live file's flags say one was)?  Its
 * magic and the fields a retag writes again unchanged are sound: only
 * its number, index and check can be torn.  A retag comes when output is
 * switched, and what the region held before is in the log or was
 * emitted while off, so it holds nothing to recover.  .sol.control.retag */
static int regionRetagged(const RecoverStruct *r, const unsigned char *p,
                          const EventBlockHeaderStruct *h, size_t left)
{
  return r->retagging && r->result->retagged == 0 && memcmp(p, EVENT_BLOCK_MAGIC, 4) == 0
         && h->length >= r->live.blockHeaderLength && h->length <= left
         && h->length % LIVE_PAGE == 0 && h->session == r->live.session
         && (h->flags & (EVENT_BLOCK_COMPACT | EVENT_BLOCK_ZSTD)) == 0;
}

/* liveWalk -- each region of the live file: a block (magic), or a free
 * region (magic zero, length kept), each with its header checked; or a
 * region claimed (fallocate, mmap) whose header was never written
 * (zeros: the program died in between).  At a region that is neither,
 * the walk looks for the next checked header a page on.  Every step
 * moves on by at least a page.  .sol.recover */
static void liveWalk(RecoverStruct *r)
{
  const FileStruct *live = &r->live;
  size_t offset, found = 0;
  size_t regions = (size_t)EventLoad(live->base + live->headerLength - EVENT_LIVE_REGIONS_LEN,
                                     EVENT_LIVE_REGIONS_LEN, 0);
  for (offset = live->headerLength;
       found < regions && offset < live->size && live->size - offset >= live->blockHeaderLength;) {
    const unsigned char *block = live->base + offset;
    EventBlockHeaderStruct h;
    int sound;
    EventBlockDecode(&h, block, live->major, live->big);
    sound = regionSound(live, block, &h, live->size - offset);
    if (!sound && regionRetagged(r, block, &h, live->size - offset)) {
      r->result->retagged = 1;
      ++found;
      offset += h.length;
      continue;
    }
    if (!sound && !regionPreparing(live, block, &h, live->size - offset)) {
      /* Zeros: a region claimed whose header was never written (only
       * ever the last), or zeroed pages; else damage.  Either way its
       * events are not recovered; regions counts what is missing. */
      if (!zeros(block, live->blockHeaderLength) && r->result->damaged++ == 0)
        r->result->damagedOffset = offset;
      offset = (offset / LIVE_PAGE + 1) * LIVE_PAGE;
      continue;
    }
    ++found;
    if (!sound)
      ;                         /* being made a block: free, holding nothing */
    else if (memcmp(h.magic, EVENT_BLOCK_MAGIC, 4) == 0)
      liveBlock(r, offset, h);
    else if (!freeSound(r, block, &h) && r->result->damaged++ == 0)
      r->result->damagedOffset = offset;
    offset += h.length;
  }
  /* A region claimed but never written is not in the count. */
  r->result->missing = found < regions ? regions - found : 0;
}

/* liveDropsRead -- the drop counts in a live file's header, where it
 * keeps them: a word per kind, each first in 8 bytes.  .sol.dropped */
static void liveDropsRead(const FileStruct *live, EventRecoverStruct *result)
{
  unsigned word = live->base[17];
  const unsigned char *counts;
  /* 3.0.6 on: a word per slot, after each slot's kind (a u16, all ones
   * for a free slot); before, a word per kind.  .reg.many */
  int slots = live->major > 3 || (live->major == 3 && live->minor >= EVENT_VERSION_REGISTRIES);
  size_t length = slots ? EVENT_LIVE_SLOTS_LEN + EVENT_LIVE_DROPS_LEN : EVENT_LIVE_DROPS_LEN_5;
  unsigned n = slots ? EVENT_LIVE_SLOTS : 32;
  if ((live->base[EVENT_STREAM_FLAGS_AT] & EVENT_LIVE_DROPS) == 0 || (word != 4 && word != 8)
      || live->headerLength < EVENT_STREAM_FIXED_LEN + length + EVENT_LIVE_REGIONS_LEN)
    return;
  counts = live->base + live->headerLength - EVENT_LIVE_REGIONS_LEN - (length - (slots ? EVENT_LIVE_SLOTS_LEN : 0));
  result->dropsCounted = 1;
  for (unsigned slot = 0; slot < EVENT_LIVE_SLOTS; ++slot) {
    result->dropped[slot] = slot < n ? EventLoad(counts + 8 * slot, word, live->big) : 0;
    result->wire[slot] = (uint16_t)(!slots ? slot
                                    : EventLoad(counts - EVENT_LIVE_SLOTS_LEN + 2 * slot, 2, 0));
  }
}

uint64_t EventDropsUnreported(const EventRecoverStruct *result,
                              const EventStreamInfoStruct *info, unsigned kind)
{
  uint64_t counted = 0;
  if (!result->dropsCounted || kind >= EVENT_STREAM_KIND_LIMIT
      || kind >= info->registry->kindCount)
    return 0;
  for (unsigned slot = 0; slot < EVENT_LIVE_SLOTS; ++slot)
    if (result->wire[slot] == info->kindWire[kind])
      counted += result->dropped[slot];
  return counted <= info->dropped[kind] ? 0 : counted - info->dropped[kind];
}

/* placesPatch -- the headers of blocks the program died before writing
 * (3.0.8): an entry of the live file's places whose header is not in
 * the log, where the log has zeros or that header's own bytes, goes
 * there in a copy of the log (*copyReturn, malloc'd; NULL if none is
 * needed), which makes the block a hole that its live block fills.
 * Returns 0 if memory ran out.  design/control.txt .sol.writer.at */
static int placesPatch(const FileStruct *log, const FileStruct *live, unsigned char **copyReturn)
{
  size_t trailer = EVENT_LIVE_PLACES_LEN + EVENT_LIVE_SLOTS_LEN + EVENT_LIVE_DROPS_LEN
                   + EVENT_LIVE_REGIONS_LEN;
  const unsigned char *places;
  unsigned char *copy = NULL;
  *copyReturn = NULL;
  if (live->major != 3 || live->minor < EVENT_VERSION_PLACES
      || live->headerLength < EVENT_STREAM_FIXED_LEN + trailer)
    return 1;
  places = live->base + live->headerLength - trailer;
  for (unsigned i = 0; i < EVENT_LIVE_PLACES; ++i) {
    const unsigned char *p = places + i * EVENT_LIVE_PLACE_LEN, *header = p + 4;
    const unsigned char *at;
    uint64_t offset = EventLoad(p + 40, 8, live->big);
    EventBlockHeaderStruct h;
    int differs = 0, fits = 1;
    if (EventLoad(p, 4, live->big) == 0 || memcmp(header, EVENT_BLOCK_MAGIC, 4) != 0
        || offset < log->headerLength || offset > log->size
        || log->size - offset < EVENT_BLOCK_HEADER_LEN)
      continue;
    EventBlockDecode(&h, header, live->major, live->big);
    if (h.session != log->session || h.length < EVENT_BLOCK_HEADER_LEN
        || h.length > EVENT_BLOCK_LENGTH_MAX + EVENT_BLOCK_HEADER_LEN)
      continue;
    at = (copy != NULL ? copy : log->base) + offset;
    for (size_t b = 0; b < offsetof(EventBlockHeaderStruct, check); ++b) {
      differs |= at[b] != header[b];
      fits &= at[b] == 0 || at[b] == header[b];
    }
    if (!differs || !fits)
      continue;
    if (copy == NULL) {
      copy = malloc(log->size);
      if (copy == NULL)
        return 0;
      memcpy(copy, log->base, log->size);
    }
    memcpy(copy + offset, header, EVENT_BLOCK_HEADER_LEN);
  }
  *copyReturn = copy;
  return 1;
}

/* EventRecover -- the log with the live file's unsent events appended.
 *
 * On success returns 0 and a malloc'd stream in *streamReturn (the
 * caller frees it), with what was recovered and what was not in
 * *result.  Returns 1 with a message if the two files do not belong
 * together or the live file is not one. */
int EventRecover(const unsigned char *logBytes, size_t logSize,
                 const unsigned char *liveBytes, size_t liveSize,
                 unsigned char **streamReturn, size_t *sizeReturn,
                 EventRecoverStruct *result, char *msg, size_t msgSize)
{
  RecoverStruct r;
  int failed = 0;
  ExpandedStruct x = {NULL, NULL, 0, 0};
  unsigned char *patched;       /* the log with headers put back: placesPatch */

  memset(result, 0, sizeof *result);
  memset(&r, 0, sizeof r);
  r.result = result;
  if (!filesRead(&r.log, &r.live, logBytes, logSize, liveBytes, liveSize, msg, msgSize))
    return 1;
  if (!placesPatch(&r.log, &r.live, &patched)) {
    message(msg, msgSize, "out of memory");
    return 1;
  }
  if (patched != NULL)
    r.log.base = logBytes = patched;
  liveDropsRead(&r.live, result);
  r.log.size = sentCollect(&r.log, &r.sent, &r.sentCount, &failed, &x, &r.logUnsound);
  free(x.state);
  r.out = failed ? NULL : malloc(r.log.size + liveSize);
  if (r.out == NULL) {
    free(x.base);
    free(r.sent);
    free(patched);
    message(msg, msgSize, "out of memory");
    return 1;
  }
  memcpy(r.out, logBytes, r.log.size);
  r.outSize = r.log.size;
  result->logFailed = (liveBytes[EVENT_STREAM_FLAGS_AT] & EVENT_LIVE_LOG_FAILED) != 0;
  r.retagging = (liveBytes[EVENT_STREAM_FLAGS_AT] & EVENT_LIVE_RETAG) != 0;
  if (!liveSeqsCollect(&r.live, &r.liveSeqs, &r.liveSeqCount)) {
    free(x.base);
    free(r.sent);
    free(patched);
    free(r.out);
    message(msg, msgSize, "out of memory");
    return 1;
  }
  liveWalk(&r);
  free(r.liveSeqs);
  free(x.base);
  free(r.sent);
  free(patched);
  *streamReturn = r.out;
  *sizeReturn = r.outSize;
  return 0;
}
