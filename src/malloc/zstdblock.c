/* <src/malloc/zstdblock.c> -- the recorder's blocks, made zstd frames
 *
 * .design: design/runtime.txt .compact.hook, design/recorder.txt .malloc.zstd
 *
 * The runtime may not link libzstd (.compact.zstd), but the recorder is
 * a tool: it installs a block transform (eventpack.h) that makes each
 * compact block one zstd frame, flagged EVENT_BLOCK_ZSTD, as an archive's
 * blocks are (.zstd.block), so every reader reads the log as it is.  It
 * runs where the block is written, the writer thread when there is one
 * (.malloc.writer), so the program's threads do not pay for it; the
 * live file keeps raw buffers, so a death loses nothing (.zstd.live).
 *
 * No malloc here: a context's workspace and output come from mmap, the
 * compressor is ZSTD_initStaticCCtx'd into the workspace, and up to
 * CONTEXT_LIMIT blocks are compressed at once (the writer thread, an
 * emitter, a fatal handler), each claiming a context by an atomic flag;
 * with none free or no memory a block stays compact, which is sound.
 */

#define ZSTD_STATIC_LINKING_ONLY        /* ZSTD_initStaticCCtx: no malloc */

#include <stdatomic.h>
#include <stdlib.h>

#include <zstd.h>

#include "event.h"
#include "eventpack.h"
#include "plinth.h"
#include "stacks.h"
#include "zstdblock.h"

#define CONTEXT_LIMIT 3

typedef struct ContextStruct {
  atomic_flag busy;
  void *work;                   /* the static CCtx's workspace */
  size_t workSize;
  unsigned char *_Atomic out;   /* the frame written; atomic: done reads every one's */
  size_t outSize;
} ContextStruct;

static ContextStruct context[CONTEXT_LIMIT] = {
  {ATOMIC_FLAG_INIT, NULL, 0, NULL, 0}, {ATOMIC_FLAG_INIT, NULL, 0, NULL, 0},
  {ATOMIC_FLAG_INIT, NULL, 0, NULL, 0}};

static int level;

/* blockZstd -- EventBlockTransform: data[0 .. *sizeIO) as one zstd frame,
 * or data itself if it would not be shorter or cannot be made now */
static const unsigned char *blockZstd(const unsigned char *data, size_t *sizeIO,
                                      unsigned *flagsIO)
{
  size_t bound = ZSTD_compressBound(*sizeIO), made;
  for (unsigned i = 0; i < CONTEXT_LIMIT; ++i) {
    ContextStruct *c = &context[i];
    unsigned char *out;
    ZSTD_CCtx *cctx;
    if (atomic_flag_test_and_set(&c->busy))
      continue;
    if (c->work == NULL) {
      size_t size = ZSTD_estimateCCtxSize(level);
      if ((c->work = PlinthPagesAlloc(size)) != NULL)
        c->workSize = size;
    }
    out = atomic_load_explicit(&c->out, memory_order_relaxed);
    if (c->outSize < bound) {
      size_t size = (bound + 0xFFFF) & ~(size_t)0xFFFF;
      unsigned char *bigger = PlinthPagesAlloc(size);
      if (bigger != NULL) {
        PlinthPagesFree(out, c->outSize);
        atomic_store_explicit(&c->out, out = bigger, memory_order_relaxed);
        c->outSize = size;
      }
    }
    cctx = c->work == NULL ? NULL : ZSTD_initStaticCCtx(c->work, c->workSize);
    if (cctx == NULL || c->outSize < bound) {
      atomic_flag_clear(&c->busy);
      return data;
    }
    made = ZSTD_compressCCtx(cctx, out, c->outSize, data, *sizeIO, level);
    /* The reader refuses a frame that would expand more than
     * EVENT_ZSTD_RATIO_MAX times (.zstd.reader): such a block stays
     * compact. */
    if (ZSTD_isError(made) || made >= *sizeIO || *sizeIO / EVENT_ZSTD_RATIO_MAX >= made) {
      atomic_flag_clear(&c->busy);
      return data;
    }
    *sizeIO = made;
    *flagsIO |= EVENT_BLOCK_ZSTD;
    return out;
  }
  return data;
}

/* blockZstdDone -- EventBlockTransformDone: the frame is written */
static void blockZstdDone(const unsigned char *written)
{
  for (unsigned i = 0; i < CONTEXT_LIMIT; ++i)
    if (written != NULL && written == atomic_load_explicit(&context[i].out, memory_order_relaxed)) {
      atomic_flag_clear(&context[i].busy);
      return;
    }
}

/* ZstdBlocksStart -- zstdblock.h */
void ZstdBlocksStart(void)
{
  const char *value = getenv("TELLTALE_ZSTD");
  char *end;
  long asked = ZSTD_BLOCK_LEVEL;
  if (value != NULL && value[0] != '\0') {
    asked = strtol(value, &end, 10);
    if (*end != '\0' || asked < 0 || asked > ZSTD_maxCLevel()) {
      StacksSay("TELLTALE_ZSTD", value, "' is not 0 (off) or a zstd level: level 1 is used\n");
      asked = 1;
    }
  }
  if (asked == 0)
    return;
  level = (int)asked;
  EventBlockTransformSet(blockZstd, blockZstdDone);
}
