/* <tools/eventcnv/archive.c> -- eventcnv --format telltale: a log
 * rewritten block by block, compact, and with --zstd each block's data
 * zstd-compressed, for archives
 *
 * .design: design/tools.txt .zstd .zstd.writer design/stream.txt .compact.encoding
 *
 * The runtime depends on libc and pthreads alone, so zstd is an archive
 * step here, not in the writer.  The output is the input's header (its
 * major made EVENT_VERSION_ZSTD_MAJOR with --zstd, and its checks
 * made again), then the input's blocks in their order: each sound one
 * with its thread, kind, flags, sequence number, session and index, its
 * data compact if they were raw and in this machine's layout, then
 * zstd if that is shorter, and its check made again over the bytes
 * written; a hole (a block death cut short, .sol.writer.hole) as its
 * header and zeros; anything else (a damaged block, bytes between
 * blocks, a block cut short) as it was, so that a reader finds the
 * same faults.
 */

#define _POSIX_C_SOURCE 200809L   /* fdopen */

#include "archive.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "eventpack.h"
#include "outpath.h"
#include "report.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define NATIVE_BIG 1u
#else
#define NATIVE_BIG 0u
#endif

/* ArchiveStruct -- a rewrite under way: the buffers grow to the
 * largest block */
typedef struct ArchiveStruct {
  FILE *out;
  const EventStreamInfoStruct *info;
  int level;                    /* zstd level, or ARCHIVE_NO_ZSTD */
  int recovered;                /* the log's live file was recovered into it */
  int native;                   /* the log's layout is this machine's: it can be compacted */
  EventPackStateStruct *pack;
  ZSTD_CCtx *cctx;
  ZSTD_DCtx *dctx;              /* for an archive's zstd blocks, made again */
  unsigned char *packed, *zipped, *unzipped, *block;
  size_t packedSize, zippedSize, unzippedSize, blockSize;
} ArchiveStruct;

/* grow -- *buf holds at least size bytes; 0 if out of memory */
static int grow(unsigned char **buf, size_t *bufSize, size_t size)
{
  unsigned char *bigger;
  if (*bufSize >= size)
    return 1;
  if ((bigger = realloc(*buf, size)) == NULL)
    return 0;
  *buf = bigger;
  *bufSize = size;
  return 1;
}

/* blockSound -- is the block at p (left bytes on) whole, checked and
 * of a stream that may hold compact blocks: one this step rewrites */
static int blockSound(const EventStreamInfoStruct *info, const unsigned char *p, size_t left,
                      EventBlockHeaderStruct *h)
{
  if (info->major < 3 || left < EVENT_BLOCK_HEADER_LEN || memcmp(p, EVENT_BLOCK_MAGIC, 4) != 0)
    return 0;
  EventBlockDecode(h, p, info->major, info->layout.bigEndian);
  return h->length >= EVENT_BLOCK_HEADER_LEN && h->length <= EVENT_BLOCK_LENGTH_MAX
         && h->length <= left && (h->flags & EVENT_BLOCK_CHECKED) != 0
         && EventBlockCheck(p, h->length) == h->check;
}

/* nextMagic -- the next block magic after pos, or size */
static size_t nextMagic(const unsigned char *p, size_t pos, size_t size)
{
  for (++pos; size - pos >= 4; ++pos)
    if (memcmp(p + pos, EVENT_BLOCK_MAGIC, 4) == 0)
      return pos;
  return size;
}

/* blockWrite -- a sound block, its data made compact and zstd where
 * that makes them shorter; 0 if out of memory or the output fails */
static int blockWrite(ArchiveStruct *a, const unsigned char *p, EventBlockHeaderStruct h)
{
  const unsigned char *data = p + EVENT_BLOCK_HEADER_LEN;
  size_t size = h.length - EVENT_BLOCK_HEADER_LEN;
  unsigned big = a->info->layout.bigEndian;
  const EventRegistryStruct *registry = a->info->registryOf[(h.kind >> EVENT_BLOCK_REGISTRY_SHIFT) & 0xFF];
  if (a->info->major < 3 || a->info->minor < EVENT_VERSION_REGISTRIES)
    registry = a->info->registryOf[0];   /* before 3.0.6, a kind is the registry's */

  /* An archive's zstd block is made again: its data decompressed, then
   * zstd at this run's level, or none (.zstd.again).  A frame the
   * reader would refuse is written as it is, for the reader to report. */
  if ((h.flags & EVENT_BLOCK_ZSTD) != 0) {
    unsigned long long raw = ZSTD_getFrameContentSize(data, size);
    size_t got;
    if (raw != ZSTD_CONTENTSIZE_ERROR && raw != ZSTD_CONTENTSIZE_UNKNOWN
        && raw <= EVENT_BLOCK_LENGTH_MAX && raw / EVENT_ZSTD_RATIO_MAX <= size) {
      if ((a->dctx == NULL && (a->dctx = ZSTD_createDCtx()) == NULL)
          || !grow(&a->unzipped, &a->unzippedSize, raw > 0 ? (size_t)raw : 1))
        return 0;
      got = ZSTD_decompressDCtx(a->dctx, a->unzipped, (size_t)raw, data, size);
      if (!ZSTD_isError(got) && got == raw) {
        data = a->unzipped;
        size = got;
        h.flags = (uint16_t)(h.flags & ~EVENT_BLOCK_ZSTD);
      }
    }
  }
  /* A registry block is copied as it is: the reader reads it raw
   * (.stream.block.registry).  Events are packed by their own
   * registry's codes (.stream.header.registries). */
  if (h.kind == EVENT_BLOCK_KIND_REGISTRY && a->info->major >= 3
      && a->info->minor >= EVENT_VERSION_REGISTRIES)
    registry = NULL;
  if (registry != NULL && (h.flags & (EVENT_BLOCK_COMPACT | EVENT_BLOCK_ZSTD)) == 0 && a->native
      && size > 0) {
    size_t packed;
    if (!grow(&a->packed, &a->packedSize, size))
      return 0;
    packed = EventPackEncode(a->pack, registry, data, size, a->packed, size);
    if (packed > 0) {           /* else not shorter, or not the registry's: raw */
      data = a->packed;
      size = packed;
      h.flags = (uint16_t)(h.flags | EVENT_BLOCK_COMPACT);
    }
  }
  if (registry != NULL && a->level != ARCHIVE_NO_ZSTD && (h.flags & EVENT_BLOCK_ZSTD) == 0
      && size > 0) {
    size_t zipped;
    if (!grow(&a->zipped, &a->zippedSize, ZSTD_compressBound(size)))
      return 0;
    zipped = ZSTD_compressCCtx(a->cctx, a->zipped, a->zippedSize, data, size, a->level);
    /* Kept only if shorter, and within what a reader accepts
     * (EVENT_ZSTD_RATIO_MAX): else the block is as it was. */
    if (!ZSTD_isError(zipped) && zipped < size && size / EVENT_ZSTD_RATIO_MAX <= zipped) {
      data = a->zipped;
      size = zipped;
      h.flags = (uint16_t)(h.flags | EVENT_BLOCK_ZSTD);
    }
  }
  /* design/stream.txt .stream.check: the check of the bytes written */
  if (!grow(&a->block, &a->blockSize, EVENT_BLOCK_HEADER_LEN + size))
    return 0;
  h.length = (uint32_t)(EVENT_BLOCK_HEADER_LEN + size);
  h.check = 0;
  EventBlockEncode(a->block, &h, big);
  memcpy(a->block + EVENT_BLOCK_HEADER_LEN, data, size);
  EventStore(a->block + offsetof(EventBlockHeaderStruct, check), EventBlockCheck(a->block, h.length),
             4, big);
  return fwrite(a->block, 1, h.length, a->out) == h.length;
}

/* holeLength -- the length of the block at pos if the log's reader
 * takes it as a hole (a write cut short by death: its data zeros from
 * their start or from a page boundary of the log, EventBlockHole), else
 * 0.  .sol.writer.hole */
static size_t holeLength(const EventStreamInfoStruct *info, const unsigned char *base, size_t pos,
                         size_t size)
{
  EventBlockHeaderStruct h;
  if (info->major < 3 || size - pos < EVENT_BLOCK_HEADER_LEN
      || memcmp(base + pos, EVENT_BLOCK_MAGIC, 4) != 0)
    return 0;
  EventBlockDecode(&h, base + pos, info->major, info->layout.bigEndian);
  return h.length >= EVENT_BLOCK_HEADER_LEN && h.length <= size - pos
         && EventBlockHole(base + pos, h.length, EVENT_BLOCK_HEADER_LEN, pos) ? h.length : 0;
}

/* holeWrite -- such a hole, its header and then zeros: zeros from their
 * start are a hole at any offset, as the archive's blocks before it
 * are of other lengths than the log's.  0 if the output fails */
static int holeWrite(ArchiveStruct *a, const unsigned char *p, size_t length)
{
  if (!grow(&a->block, &a->blockSize, length))
    return 0;
  memcpy(a->block, p, EVENT_BLOCK_HEADER_LEN);
  memset(a->block + EVENT_BLOCK_HEADER_LEN, 0, length - EVENT_BLOCK_HEADER_LEN);
  return fwrite(a->block, 1, length, a->out) == length;
}

/* headerInsert -- n zero bytes at at in the header h of *length bytes
 * (room for them after it), its length field made the new length */
static void headerInsert(unsigned char *h, uint32_t *length, size_t at, size_t n)
{
  memmove(h + at + n, h + at, *length - at);
  memset(h + at, 0, n);
  *length += (uint32_t)n;
  EventStore(h + 20, *length, 4, 0);
}

/* headerWrite -- the log's header, of major EVENT_VERSION_ZSTD_MAJOR
 * (from 3.0: older blocks are copied as they are) and at least minor
 * EVENT_VERSION_FLAGS_CHECKED, its flags saying whether the live file
 * was recovered into it, and its checks made again: the flags' own,
 * which that minor added after the spans' (which minor 1 added: two
 * counts of 0 for a 3.0.0 log), is made for an older log.  0 if out of
 * memory or the output fails.  design/stream.txt .zstd.version
 * .zstd.live .stream.header.check */
static int headerWrite(ArchiveStruct *a, const unsigned char *base)
{
  const EventStreamInfoStruct *info = a->info;
  uint32_t length = info->headerLength;
  uint32_t checks[4] = {info->headerChecks[0], info->headerChecks[1], info->headerChecks[2],
                        info->headerChecks[3]};
  unsigned char *h = malloc((size_t)length + 12);
  int ok;
  if (h == NULL)
    return 0;
  memcpy(h, base, length);
  if (info->major >= 3) {
    EventStore(h + 8, EVENT_VERSION_ZSTD_MAJOR, 2, 0);
    if (info->minor < EVENT_VERSION_FLAGS_CHECKED)
      EventStore(h + 12, EVENT_VERSION_FLAGS_CHECKED, 2, 0);
    if (checks[1] == 0) {       /* no spans: none, after the registry's check */
      headerInsert(h, &length, (size_t)checks[0] + 4, 8);
      checks[1] = checks[0] + 8;
    }
    if (checks[2] == 0) {       /* the flags' check, after the spans' */
      headerInsert(h, &length, (size_t)checks[1] + 4, 4);
      checks[2] = checks[1] + 4;
    }
    h[EVENT_STREAM_FLAGS_AT] = a->recovered ? EVENT_ARCHIVE_RECOVERED : 0;
    for (unsigned i = 0; i < 2; ++i)
      EventStore(h + checks[i], EventHeaderCheck(h, checks[i]), 4, 0);
    EventStore(h + checks[2], EventFlagsCheck(h), 4, 0);
    if (checks[3] != 0)         /* the other registries' (3.0.6) */
      EventStore(h + checks[3], EventHeaderCheck(h, checks[3]), 4, 0);
  }
  ok = fwrite(h, 1, length, a->out) == length;
  free(h);
  return ok;
}

/* laundered -- the offset of a block that the log's reader takes as
 * damage but the archive's would take as sound, or 0: a checked block
 * marked zstd in a stream older than 4.0, which has no zstd (.zstd.version).
 * Copied as it is into a 4.0 archive, its frame would read as sound
 * events, so no archive is made of such a log (.zstd.damage). */
static size_t laundered(const unsigned char *base, size_t size, const EventStreamInfoStruct *info)
{
  size_t pos = info->headerLength;
  if (info->major >= EVENT_VERSION_ZSTD_MAJOR)
    return 0;
  while (pos < size) {
    EventBlockHeaderStruct h;
    if (blockSound(info, base + pos, size - pos, &h)) {
      if ((h.flags & EVENT_BLOCK_ZSTD) != 0)
        return pos;
      pos += h.length;
    } else
      pos = nextMagic(base, pos, size);
  }
  return 0;
}

/* ArchiveWrite -- archive.h */
int ArchiveWrite(const unsigned char *base, size_t size, const EventStreamInfoStruct *info,
                 int recovered, const char *path, int level, const char *logName)
{
  ArchiveStruct a;
  size_t pos = info->headerLength;
  int ok, fd = -1;

  memset(&a, 0, sizeof a);
  a.info = info;
  a.level = level;
  a.recovered = recovered;
  a.native = info->layout.bigEndian == NATIVE_BIG
             && info->layout.pointerSize == sizeof(void *) && info->layout.wordSize == sizeof(EventW);
  a.pack = malloc(sizeof *a.pack);
  a.cctx = ZSTD_createCCtx();
  if (a.pack == NULL || a.cctx == NULL) {
    Report("out of memory");
    ok = 0;
    goto done;
  }
  if (info->major >= 3 && info->headerChecks[0] == 0) {
    Report("the header's checks were not found");
    ok = 0;
    goto done;
  }
  if ((pos = laundered(base, size, info)) != 0) {
    ReportFile(logName, "offset %zu: a block marked zstd in a stream of version %u, which has "
               "none, is damage that an archive (version %u) would read as sound events: no "
               "archive is made of this log", pos, (unsigned)info->major,
               (unsigned)EVENT_VERSION_ZSTD_MAJOR);
    ok = 0;
    goto done;
  }
  pos = info->headerLength;
  /* design/tools.txt .tools.output */
  if ((fd = OutPathOpen(ReportToolName(), path, 0)) < 0 || (a.out = fdopen(fd, "wb")) == NULL) {
    if (fd >= 0) {
      Report("cannot write %s: %s", path, strerror(errno));
      (void)close(fd);
    }
    ok = 0;
    goto done;
  }
  ok = headerWrite(&a, base);
  while (ok && pos < size) {
    EventBlockHeaderStruct h;
    size_t hole;
    if (blockSound(info, base + pos, size - pos, &h)) {
      ok = blockWrite(&a, base + pos, h);
      pos += h.length;
    } else if ((hole = holeLength(info, base, pos, size)) != 0) {
      ok = holeWrite(&a, base + pos, hole);
      pos += hole;
    } else {                    /* as it is: the reader finds the same fault */
      size_t next = nextMagic(base, pos, size);
      ok = fwrite(base + pos, 1, next - pos, a.out) == next - pos;
      pos = next;
    }
  }
  if (fclose(a.out) != 0)
    ok = 0;
  if (!ok)
    Report("cannot write %s: %s", path, errno != 0 ? strerror(errno) : "out of memory");
done:
  ZSTD_freeCCtx(a.cctx);
  ZSTD_freeDCtx(a.dctx);
  free(a.pack);
  free(a.packed);
  free(a.zipped);
  free(a.unzipped);
  free(a.block);
  return ok ? 0 : 1;
}
