/* <src/event/eventrecover.c> -- recover a dead program's last events from its live file
 *
 * .design: design/telemetry.txt .sol.live, .sol.recover
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
 * recovered events are the rest.  Depends on libc only.
 */

#include <stdlib.h>
#include <string.h>

#include "eventread.h"

typedef struct SentStruct {
  uint64_t seq;
  size_t bytes;
} SentStruct;

static uint32_t get32(const unsigned char *p, int big)
{
  return big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
             : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static uint64_t get64(const unsigned char *p, int big)
{
  uint64_t hi = get32(p + (big ? 0 : 4), big), lo = get32(p + (big ? 4 : 0), big);
  return hi << 32 | lo;
}

static void put32(unsigned char *p, uint32_t v, int big)
{
  for (int i = 0; i < 4; ++i)
    p[big ? 3 - i : i] = (unsigned char)(v >> (8 * i));
}

static uint16_t get16(const unsigned char *p, int big)
{
  return big ? (uint16_t)(p[0] << 8 | p[1]) : (uint16_t)(p[1] << 8 | p[0]);
}

static int cmpSent(const void *a, const void *b)
{
  uint64_t x = ((const SentStruct *)a)->seq, y = ((const SentStruct *)b)->seq;
  return x < y ? -1 : x > y;
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

/* headerCheck -- the fixed header of a stream: its length and byte order */
static int headerCheck(const unsigned char *buf, size_t size, uint32_t *lengthReturn, int *bigReturn)
{
  uint32_t length;
  if (size < EVENT_STREAM_FIXED_LEN || memcmp(buf, EVENT_STREAM_MAGIC, EVENT_STREAM_MAGIC_LEN) != 0)
    return 0;
  length = get32(buf + 20, 0);
  if (length < EVENT_STREAM_FIXED_LEN || length > size)
    return 0;
  *lengthReturn = length;
  *bigReturn = buf[14] == 0x01 && buf[15] == 0x02;
  return 1;
}

/* dataEnd -- where the events of a block's data end: at code 0, at an
 * event that cannot be whole, or at the end */
static size_t dataEnd(const unsigned char *data, size_t size, int big)
{
  size_t offset = 0;
  while (offset + EVENT_HEADER_LEN <= size) {
    uint16_t code = get16(data + offset, big), length = get16(data + offset + 2, big);
    if (code == 0 || length < EVENT_HEADER_LEN || length > size - offset)
      break;
    offset += length;
  }
  return offset;
}

/* EventRecover -- the log with the live file's unsent events appended.
 *
 * On success returns 0 and a malloc'd stream in *streamReturn (the
 * caller frees it), the number of events recovered and the number of
 * blocks they came from.  Returns 1 with a message if the two files do
 * not belong together or the live file is not one. */
int EventRecover(const unsigned char *log, size_t logSize,
                 const unsigned char *live, size_t liveSize,
                 unsigned char **streamReturn, size_t *sizeReturn,
                 size_t *eventsReturn, size_t *blocksReturn,
                 char *msg, size_t msgSize)
{
  uint32_t logHeader, liveHeader;
  int big, liveBig;
  SentStruct *sent = NULL;
  size_t sentCount = 0, sentLimit = 0, offset, outSize, events = 0, blocks = 0;
  unsigned char *out;

  if (!headerCheck(log, logSize, &logHeader, &big)) {
    message(msg, msgSize, "the log has no readable header");
    return 1;
  }
  if (!headerCheck(live, liveSize, &liveHeader, &liveBig)) {
    message(msg, msgSize, "the live file has no readable header");
    return 1;
  }
  /* Same program, same session: pid, start clock and start time. */
  if (big != liveBig || memcmp(log + 32, live + 32, 28) != 0) {
    message(msg, msgSize, "the live file belongs to another session than the log");
    return 1;
  }

  /* How many bytes of each block number the log has. */
  for (offset = logHeader; offset + EVENT_BLOCK_HEADER_LEN <= logSize;) {
    uint32_t length = get32(log + offset + 4, big);
    if (memcmp(log + offset, EVENT_BLOCK_MAGIC, 4) != 0 || length < EVENT_BLOCK_HEADER_LEN ||
        length > logSize - offset)
      break;                    /* the reader will report it */
    if (sentCount == sentLimit) {
      size_t limit = sentLimit == 0 ? 256 : 2 * sentLimit;
      SentStruct *bigger = realloc(sent, limit * sizeof *sent);
      if (bigger == NULL) {
        free(sent);
        message(msg, msgSize, "out of memory");
        return 1;
      }
      sent = bigger;
      sentLimit = limit;
    }
    sent[sentCount].seq = get64(log + offset + 16, big);
    sent[sentCount].bytes = dataEnd(log + offset + EVENT_BLOCK_HEADER_LEN,
                                    length - EVENT_BLOCK_HEADER_LEN, big);
    ++sentCount;
    offset += length;
  }
  if (sentCount > 0)
    qsort(sent, sentCount, sizeof *sent, cmpSent);
  /* A program killed in the middle of write() leaves the log's last
   * block cut short: its header, or its data, runs past the end of the
   * file.  That block is left out (its events are all in its live
   * block, which the log then lacks), or the recovered blocks appended
   * after it would be read as its data.  Found by tests/test_death.c
   * death-4.1.  A bad block before the end stays, for the reader to
   * report. */
  if (offset < logSize && (logSize - offset < EVENT_BLOCK_HEADER_LEN ||
                           (memcmp(log + offset, EVENT_BLOCK_MAGIC, 4) == 0 &&
                            get32(log + offset + 4, big) > logSize - offset)))
    logSize = offset;

  out = malloc(logSize + liveSize);
  if (out == NULL) {
    free(sent);
    message(msg, msgSize, "out of memory");
    return 1;
  }
  memcpy(out, log, logSize);
  outSize = logSize;

  /* Each region of the live file: a block (magic), or a free region
   * (magic zero, length kept), or the end. */
  for (offset = liveHeader; offset + EVENT_BLOCK_HEADER_LEN <= liveSize;) {
    const unsigned char *block = live + offset;
    uint32_t length = get32(block + 4, big);
    size_t end, skip = 0;
    uint64_t seq;
    /* A length of 0 is a region claimed (fallocate, mmap) but whose
     * header was never written: the program died in between.  Regions
     * are claimed at the end of the file and given their header under
     * the lock, so such a region can only be the last, and it holds no
     * events: stopping there loses nothing and is not corruption.
     * (tests/test_death.c; design/telemetry.txt .test.death) */
    if (length < EVENT_BLOCK_HEADER_LEN || length > liveSize - offset)
      break;
    offset += length;
    if (memcmp(block, EVENT_BLOCK_MAGIC, 4) != 0)
      continue;
    seq = get64(block + 16, big);
    end = dataEnd(block + EVENT_BLOCK_HEADER_LEN, length - EVENT_BLOCK_HEADER_LEN, big);
    {
      size_t lo = 0, hi = sentCount;
      while (lo < hi) {         /* the first entry with this seq */
        size_t mid = (lo + hi) / 2;
        if (sent[mid].seq < seq)
          lo = mid + 1;
        else
          hi = mid;
      }
      for (; lo < sentCount && sent[lo].seq == seq; ++lo)
        skip += sent[lo].bytes;
    }
    if (skip >= end)
      continue;
    /* A block of the unsent events, with the live block's header. */
    memcpy(out + outSize, block, EVENT_BLOCK_HEADER_LEN);
    put32(out + outSize + 4, (uint32_t)(EVENT_BLOCK_HEADER_LEN + end - skip), big);
    memcpy(out + outSize + EVENT_BLOCK_HEADER_LEN, block + EVENT_BLOCK_HEADER_LEN + skip, end - skip);
    outSize += EVENT_BLOCK_HEADER_LEN + end - skip;
    ++blocks;
    for (size_t e = skip; e < end; e += get16(block + EVENT_BLOCK_HEADER_LEN + e + 2, big))
      ++events;
  }
  free(sent);
  *streamReturn = out;
  *sizeReturn = outSize;
  *eventsReturn = events;
  *blocksReturn = blocks;
  return 0;
}
