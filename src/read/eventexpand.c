/* <src/read/eventexpand.c> -- the stream layer: a block's data expanded
 *
 * .design: design/tools.txt .compact.reader design/stream.txt .zstd.block design/tools.txt .zstd.held
 *
 * A compact block's events expanded to the form the runtime wrote, and
 * a zstd block's data decompressed, each into a buffer the stream
 * keeps (or a scan's one buffer), for the index (eventindex.c
 * blockEvents) to check and the reader to decode.
 */

#include "eventstreamint.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* EVENT_EXPAND_HELD_MAX -- the expanded events a mapped stream holds at
 * most: 256 MiB, or 256 times the stream's bytes if that is more.
 * design/tools.txt .zstd.held */
#define EVENT_EXPAND_HELD_MAX(size) \
  ((size) > ((size_t)1 << 20) ? (size) * 256 : ((size_t)256 << 20))

/* rawBuffer -- a buffer of size bytes for a block's events, expanded:
 * its own, kept until the stream is closed, or a scan's one buffer,
 * reused.  NULL if out of memory (said), or if it would take what the
 * stream holds past EVENT_EXPAND_HELD_MAX (said once, as the block's
 * fault). */
static unsigned char *rawBuffer(EventStreamStruct *stream, const BlockStruct *block, size_t size)
{
  unsigned char *raw;
  if (stream->read != NULL) {           /* a scan: one buffer, reused */
    if (size > stream->scanRawSize) {
      free(stream->scanRaw);
      stream->scanRawSize = 0;
      if ((stream->scanRaw = malloc(size)) == NULL) {
        stream->outOfMemory = 1;
        return NULL;
      }
      stream->scanRawSize = size;
    }
    return stream->scanRaw;
  }
  if (size > EVENT_EXPAND_HELD_MAX(stream->size) - stream->rawHeld
      || stream->rawHeld > EVENT_EXPAND_HELD_MAX(stream->size)) {
    if (!stream->expandCapped)
      eventProblemAdd(stream, "offset %" PRIu64 ": expanding this block (thread %" PRIu64 ", kind %" PRIu64 ") would take the events held past %" PRIu64 " MiB, the most a reader holds of a log this size (256 MiB, or 256 times its bytes): none of its events are shown, nor those of later blocks that would",
                      (uint64_t)(stream->origin + block->offset), (uint64_t)block->thread,
                      (uint64_t)block->kind, (uint64_t)(EVENT_EXPAND_HELD_MAX(stream->size) >> 20));
    stream->expandCapped = 1;
    return NULL;
  }
  if (stream->rawCount == stream->rawCapacity) {
    size_t capacity = stream->rawCapacity == 0 ? 64 : 2 * stream->rawCapacity;
    unsigned char **bigger = realloc(stream->raws, capacity * sizeof *bigger);
    if (bigger == NULL) {
      stream->outOfMemory = 1;
      return NULL;
    }
    stream->raws = bigger;
    stream->rawCapacity = capacity;
  }
  if ((raw = malloc(size > 0 ? size : 1)) == NULL) {
    stream->outOfMemory = 1;
    return NULL;
  }
  stream->raws[stream->rawCount++] = raw;
  stream->rawHeld += size;
  stream->rawLastSize = size;
  return raw;
}

/* eventRawTrim -- a block's own expanded buffer cut to the events indexed:
 * a damaged block's expansion (a zstd bomb's 64 MiB of nothing) is not
 * held while the rest is read.  design/tools.txt .zstd.held */
void eventRawTrim(EventStreamStruct *stream, BlockStruct *block)
{
  size_t allocated = stream->rawLastSize;
  size_t start = block->offset + stream->info.blockHeaderLength;
  size_t used = block->dataEnd > start ? block->dataEnd - start : 0;
  unsigned char *smaller;
  if (stream->read != NULL || block->raw == NULL || stream->rawCount == 0
      || stream->raws[stream->rawCount - 1] != block->raw || used >= allocated)
    return;
  smaller = realloc(stream->raws[stream->rawCount - 1], used > 0 ? used : 1);
  if (smaller == NULL)
    return;
  block->raw = stream->raws[stream->rawCount - 1] = smaller;
  stream->rawHeld -= allocated - used;
}

/* eventBlockExpand -- a compact block's events, in[0 .. inSize) (in the
 * stream, or a zstd block's output), expanded into a buffer of their
 * own (rawBuffer) at block->raw.  Returns the end of its expanded
 * events in the block's positions, for indexEvents.  If its data are
 * not sound (cut short is for the caller to say), reports it and sets
 * *sound to 0: the events before the fault are still expanded.
 * design/tools.txt .compact.reader */
size_t eventBlockExpand(EventStreamStruct *stream, BlockStruct *block, const unsigned char *in,
                          size_t inSize, int *sound)
{
  size_t start = block->offset + stream->info.blockHeaderLength, rawSize, limit, outSize = 0;
  unsigned char *raw;
  const char *why = NULL;

  if (stream->pack == NULL && (stream->pack = malloc(sizeof *stream->pack)) == NULL) {
    stream->outOfMemory = 1;
    *sound = 0;
    return start;
  }
  if (!EventPackRawSize(in, inSize, &rawSize)) {
    why = "its raw size is unreadable or more than a block's";
    limit = 0;
  } else if (rawSize / EVENT_PACK_RATIO_MAX > inSize) {
    /* No sound block expands so much: refused before it is allocated,
     * unless it is cut short (then what its bytes can hold). */
    if (!block->cut)
      why = "its raw size is more than its bytes could expand to";
    limit = block->cut ? inSize * EVENT_PACK_RATIO_MAX : 0;
  } else {
    limit = rawSize;
  }
  if ((raw = rawBuffer(stream, block, limit)) == NULL) {
    *sound = 0;
    return start;
  }
  block->raw = raw;
  if (why == NULL && !EventPackDecode(stream->pack, in, inSize, stream->info.layout.bigEndian,
                                      raw, limit, &outSize, &why) && block->cut)
    why = NULL;                         /* cut short: blockCut says so */
  if (why != NULL && !block->cut) {
    eventProblemAdd(stream, "offset %" PRIu64 ": %s (thread %" PRIu64 ", kind %" PRIu64 "): the events before the fault are shown",
               (uint64_t)(stream->origin + block->offset), why, (uint64_t)block->thread,
               (uint64_t)block->kind);
    *sound = 0;
  }
  return start + outSize;
}

/* eventBlockUnzstd -- a zstd block's data, in[0 .. inSize), decompressed:
 * into a buffer of the block's own (rawBuffer, at block->raw) if they
 * are raw events, else into the stream's one buffer for eventBlockExpand.
 * The frame must say its size, at most a block's and at most
 * EVENT_ZSTD_RATIO_MAX times its bytes, which is checked before
 * anything is allocated.  Returns the output, with *sizeReturn its
 * length; NULL, having said why unless the block is cut short (no
 * event of a frame cut short is shown), if it is not sound.
 * design/stream.txt .zstd.reader */
/* EventZstdFrameCheck -- eventread.h: the one rule for what a zstd
 * block's frame may expand to (.zstd.reader) */
const char *EventZstdFrameCheck(const unsigned char *in, size_t inSize, size_t *sizeReturn)
{
  unsigned long long size = ZSTD_getFrameContentSize(in, inSize);
  if (size == ZSTD_CONTENTSIZE_ERROR)
    return "its data are not a zstd frame";
  if (size == ZSTD_CONTENTSIZE_UNKNOWN)
    return "its zstd frame does not say its size";
  if (size > EVENT_BLOCK_LENGTH_MAX || size / EVENT_ZSTD_RATIO_MAX > inSize)
    return "its zstd frame's size is more than its bytes could expand to";
  *sizeReturn = (size_t)size;
  return NULL;
}

const unsigned char *eventBlockUnzstd(EventStreamStruct *stream, BlockStruct *block,
                                        const unsigned char *in, size_t inSize, size_t *sizeReturn)
{
  size_t size = 0;
  const char *why = EventZstdFrameCheck(in, inSize, &size);
  unsigned char *out = NULL;
  size_t got = 0;
  if (why != NULL)
    ;
  else if (stream->zstd == NULL && (stream->zstd = ZSTD_createDCtx()) == NULL)
    why = "out of memory";
  else if (!block->compact)
    block->raw = out = rawBuffer(stream, block, (size_t)size);
  else {
    if (size > stream->unzstdSize || stream->unzstd == NULL) {
      free(stream->unzstd);
      stream->unzstdSize = (size_t)size;
      stream->unzstd = malloc(size > 0 ? (size_t)size : 1);
    }
    out = stream->unzstd;
  }
  if (why == NULL && out == NULL && stream->expandCapped) {
    block->raw = NULL;
    return NULL;                /* said by rawBuffer */
  }
  if (why == NULL && out == NULL) {
    stream->outOfMemory = 1;
    why = "out of memory";
  }
  if (why == NULL) {
    got = ZSTD_decompressDCtx(stream->zstd, out, (size_t)size, in, inSize);
    if (ZSTD_isError(got))
      why = ZSTD_getErrorName(got);
    else if (got != size)
      why = "its zstd frame is shorter than it says";
  }
  if (why == NULL) {
    *sizeReturn = got;
    return out;
  }
  if (!block->cut)
    eventProblemAdd(stream, "offset %" PRIu64 ": zstd block (thread %" PRIu64 ", kind %" PRIu64 "): %s, so none of its events are shown",
                    (uint64_t)(stream->origin + block->offset), (uint64_t)block->thread,
                    (uint64_t)block->kind, why);
  block->raw = NULL;
  return NULL;
}
