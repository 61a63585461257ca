/* <src/malloc/zstdblock.h> -- the recorder's blocks, made zstd frames
 *
 * .design: design/recorder.txt .malloc.zstd
 */

#ifndef malloc_zstdblock_h
#define malloc_zstdblock_h

#include "stacks.h"

/* ZSTD_BLOCK_LEVEL -- the level unless TELLTALE_ZSTD says (0: off) */
#define ZSTD_BLOCK_LEVEL 3

/* ZstdBlocksStart -- read TELLTALE_ZSTD and, unless it is 0, install
 * the block transform: before EventInit, whose headers then say the
 * major of a stream that may hold zstd blocks (.compact.hook) */
extern STACKS_HIDDEN void ZstdBlocksStart(void);

#endif /* malloc_zstdblock_h */
