/* <src/event/eventcompact.c> -- the writer's side of the compact stream
 *
 * .design: design/runtime.txt .compact
 *
 * With compaction on (TELLTALE_COMPACT=1 or EventCompact), whichever
 * thread writes a block to a log (the emitter, or the writer thread)
 * re-encodes its events in the compact form (eventpack.c) just before
 * the block header is made, off the hot path.  The emitters and the
 * buffers, live file included, keep the raw form.
 *
 * The encoder writes into a scratch area with its state.  Up to
 * SCRATCH_LIMIT blocks may be packed at once (an emitter under the
 * lock, the writer thread, a fatal handler that interrupted one): each
 * claims an area by an atomic flag; with none free, or no memory, the
 * block goes raw.  Areas come from mmap (PlinthPagesAlloc), which a
 * handler may call, and grow to the largest block seen.  Depends on
 * the plinth and the event layer only.
 */

#include <stdatomic.h>

#include "event.h"
#include "eventpack.h"
#include "plinth.h"

#define SCRATCH_LIMIT 3

typedef struct ScratchStruct {
  atomic_flag busy;
  unsigned char *_Atomic base;  /* PlinthPagesAlloc'd: the state, then the output;
                                   atomic: EventCompactDone reads every area's */
  size_t size;
} ScratchStruct;

static ScratchStruct scratch[SCRATCH_LIMIT] = {
  {ATOMIC_FLAG_INIT, NULL, 0}, {ATOMIC_FLAG_INIT, NULL, 0}, {ATOMIC_FLAG_INIT, NULL, 0}};

/* On or off: EventCompact, which EventInit calls for TELLTALE_COMPACT
 * (.sol.env) */
static _Atomic int compactOn = 0;

/* The block transform (.compact.hook): a tool linked with the runtime
 * (the allocation recorder) may make a compact block's bytes smaller
 * still, with zstd, which the runtime itself may not link (.compact.zstd).
 * Set once, before EventInit writes a header, never changed. */
static EventBlockTransform transform;
static EventBlockTransformDone transformDone;

/* EventBlockTransformSet -- eventpack.h */
void EventBlockTransformSet(EventBlockTransform fn, EventBlockTransformDone done)
{
  transform = fn;
  transformDone = done;
}

/* EventStreamMajor -- the major the headers say: a transform may flag
 * its blocks zstd, which a 3.0 reader would misread (.zstd.version) */
unsigned EventStreamMajor(void)
{
  return transform != NULL ? EVENT_VERSION_ZSTD_MAJOR : EVENT_VERSION_MAJOR;
}

/* EventCompact -- event.h */
int EventCompact(int on)
{
  return atomic_exchange(&compactOn, on != 0);
}

/* EventCompactBlock -- the bytes to write for a block's events
 * data[0 .. *sizeIO): data itself, or their compact form, with *sizeIO
 * set to its length and *flagsReturn to EVENT_BLOCK_COMPACT.  Give the
 * result to EventCompactDone once it is written. */
const unsigned char *EventCompactBlock(const EventRegistryStruct *registry,
                                       const unsigned char *data, size_t *sizeIO,
                                       unsigned *flagsReturn)
{
  int on = atomic_load_explicit(&compactOn, memory_order_relaxed);
  size_t need, packed;
  unsigned char *out;
  *flagsReturn = 0;
  if (!on || *sizeIO == 0)
    return data;
  need = sizeof(EventPackStateStruct) + *sizeIO;
  for (unsigned i = 0; i < SCRATCH_LIMIT; ++i) {
    ScratchStruct *s = &scratch[i];
    if (atomic_flag_test_and_set(&s->busy))
      continue;
    if (s->size < need) {
      size_t size = (need + 0xFFFF) & ~(size_t)0xFFFF;
      unsigned char *base = PlinthPagesAlloc(size);
      if (base == NULL) {
        atomic_flag_clear(&s->busy);
        return data;
      }
      PlinthPagesFree(atomic_load_explicit(&s->base, memory_order_relaxed), s->size);
      atomic_store_explicit(&s->base, base, memory_order_relaxed);
      s->size = size;
    }
    out = atomic_load_explicit(&s->base, memory_order_relaxed);
    packed = EventPackEncode((EventPackStateStruct *)out, registry, data, *sizeIO,
                             out + sizeof(EventPackStateStruct),
                             s->size - sizeof(EventPackStateStruct));
    if (packed == 0) {
      atomic_flag_clear(&s->busy);
      return data;
    }
    *sizeIO = packed;
    *flagsReturn = EVENT_BLOCK_COMPACT;
    out += sizeof(EventPackStateStruct);
    if (transform != NULL) {
      const unsigned char *made = transform(out, sizeIO, flagsReturn);
      if (made != out) {        /* the compact bytes are spent */
        atomic_flag_clear(&s->busy);
        return made;
      }
    }
    return out;
  }
  return data;
}

/* EventCompactDone -- the bytes EventCompactBlock gave are written */
void EventCompactDone(const unsigned char *written)
{
  for (unsigned i = 0; i < SCRATCH_LIMIT; ++i) {
    unsigned char *base = atomic_load_explicit(&scratch[i].base, memory_order_relaxed);
    if (base != NULL && written == base + sizeof(EventPackStateStruct)) {
      atomic_flag_clear(&scratch[i].busy);
      return;
    }
  }
  if (transformDone != NULL)
    transformDone(written);
}
