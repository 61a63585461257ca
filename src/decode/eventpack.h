/* <src/decode/eventpack.h> -- the compact form of a block's events
 *
 * .design: design/runtime.txt .compact
 *
 * A block's events are written to the log either as they are in the
 * thread's buffer (12-byte header, fixed-width fields) or, with
 * compaction on, re-encoded by the writer into the compact form:
 * small per-block codes, delta clocks and zigzag-delta varint fields
 * (.compact.encoding).  The block header says which by the flag
 * EVENT_BLOCK_COMPACT; its length and check are of the bytes written.
 *
 * The codec is of the event layer: string.h only, no allocation (the
 * caller gives every buffer and the state), safe in a signal handler.
 * The decoder needs no registry: a block names the field widths of
 * each code it uses, so recovery and the reader decode alike, and the
 * reader then checks the expanded events as it checks any block.
 */

#ifndef eventpack_h
#define eventpack_h

#include <stddef.h>
#include <stdint.h>
#include "eventcom.h"

#define EVENT_PACK_CODES     128    /* distinct codes in one compact block */
#define EVENT_PACK_RATIO_MAX 70     /* raw bytes per compact byte, at most */

/* EventPackCodeStruct -- a code the block has defined, with the last
 * value of each of its integer fields (for the deltas) */
typedef struct EventPackCodeStruct {
  unsigned code;
  unsigned tag;                       /* its number in the block (the encoder's) */
  unsigned fieldCount;
  unsigned fixed;                     /* raw length without a string's bytes */
  unsigned string;                    /* the last field is a string */
  unsigned words;                     /* every field is an 8-byte integer */
  unsigned ints;                      /* every field is an integer (INT4, INT8) */
  unsigned char types[EVENT_PARAM_MAX];
  uint64_t last[EVENT_PARAM_MAX];
} EventPackCodeStruct;

/* EventPackStateStruct -- the state of one encode or decode, which
 * the caller keeps (it is about 19 KB: not for a signal stack) */
typedef struct EventPackStateStruct {
  unsigned count;                     /* codes defined */
  uint8_t hash[256];                  /* encoder: code hash -> 1 + index, 0 free */
  EventPackCodeStruct codes[EVENT_PACK_CODES];
} EventPackStateStruct;

/* EventPackEncode -- the compact form of the raw events
 * raw[0 .. rawSize), which are in the machine's byte order and of the
 * registry's codes, into out[0 .. outLimit).  Returns its length, or 0
 * if it is not shorter than the raw events, or an event is not what
 * the registry says (then the block is written raw). */
extern size_t EventPackEncode(EventPackStateStruct *state, const EventRegistryStruct *registry,
                              const unsigned char *raw, size_t rawSize,
                              unsigned char *out, size_t outLimit);

/* EventPackRawSize -- the raw size a compact block's data
 * in[0 .. inSize) says it expands to.  Returns 0 if it cannot be read
 * or is more than EVENT_BLOCK_LENGTH_MAX.  A reader should refuse a
 * raw size of more than EVENT_PACK_RATIO_MAX times inSize before it
 * allocates it: no sound block expands more. */
extern int EventPackRawSize(const unsigned char *in, size_t inSize, size_t *rawSizeReturn);

/* EventPackDecode -- expand a compact block's data in[0 .. inSize)
 * into out[0 .. outLimit), in the byte order big (1: big-endian).
 * *outSizeReturn gets the length of the whole events expanded.
 * Returns 1 if every byte was sound and the events fill the raw size;
 * else 0 with what is wrong in *whyReturn (the events before the fault
 * are in out: for a block cut short, those before the cut). */
extern int EventPackDecode(EventPackStateStruct *state, const unsigned char *in, size_t inSize,
                           unsigned big, unsigned char *out, size_t outLimit,
                           size_t *outSizeReturn, const char **whyReturn);

/* The runtime's side (eventcompact.c): where a block is written, its
 * bytes as written.  EventCompactBlock returns data itself, or its
 * compact form with *sizeIO set to its length and *flagsReturn to
 * EVENT_BLOCK_COMPACT (else 0); EventCompactDone takes back what it
 * returned once it is written.  design/runtime.txt .compact.writer */
extern const unsigned char *EventCompactBlock(const EventRegistryStruct *registry,
                                              const unsigned char *data, size_t *sizeIO,
                                              unsigned *flagsReturn);
extern void EventCompactDone(const unsigned char *written);

/* A block transform, set before EventInit by a tool linked with the
 * runtime (the allocation recorder): given a compact block's bytes, it
 * returns them, or other bytes with *sizeIO and *flagsIO set (adding
 * EVENT_BLOCK_ZSTD), which EventCompactDone gives back to done once
 * written.  It runs where the block is written, as the encoder does,
 * and must not allocate with malloc.  EventStreamMajor is the major the
 * headers then say.  design/runtime.txt .compact.hook */
typedef const unsigned char *(*EventBlockTransform)(const unsigned char *data, size_t *sizeIO,
                                                    unsigned *flagsIO);
typedef void (*EventBlockTransformDone)(const unsigned char *written);
extern void EventBlockTransformSet(EventBlockTransform fn, EventBlockTransformDone done);
extern unsigned EventStreamMajor(void);

#endif /* eventpack_h */
