/* <src/event/eventcom.h> -- types and constants shared by emitters, runtime and tools
 *
 * .design: design/stream.txt
 *
 * This header is included by generated code (eventgen.h), by the runtime
 * and by the tools.  It includes no OS headers: only the freestanding
 * C11 headers.  Everything here is either a type, a constant of the
 * stream format (design/stream.txt .stream), or a descriptor of a
 * registry (design/registry.txt .reg).
 */

#ifndef eventcom_h
#define eventcom_h

#include <stddef.h>
#include <stdint.h>

#include "eventapi.h"

TELLTALE_BEGIN_DECLS

/* Parameter types, one per format letter.  design/registry.txt .reg.format */
typedef void *EventP;               /* P -- any pointer */
typedef uintptr_t EventA;           /* A -- an address (may be labelled) */
typedef uintptr_t EventW;           /* W -- a word: sizes, counts, ids */
typedef uint32_t EventU;            /* U -- unsigned 32-bit: sets, small ints */
typedef const char *EventS;         /* S -- a string, at most one, last */
typedef double EventD;              /* D -- a double */

typedef uint64_t EventClock;        /* cycle counter value */

/* Stream format version.  design/stream.txt .sol.version */
#define EVENT_VERSION_MAJOR  3      /* the file format changed (2: checked blocks,
                                       3: compact blocks, .compact.version) */
#define EVENT_VERSION_MEDIAN 0      /* an existing telltale event changed */
#define EVENT_VERSION_MINOR  10     /* a telltale event or header field was added
                                       (1: spans and counters, .stream.header.span;
                                       2: StreamExec, .sol.exec; 3: a live region's
                                       index says where its block starts, or that
                                       its kind's output is off, .sol.control.cut;
                                       4: StreamSnapshot, .ctl.snapshot;
                                       EventsFiltered and filtered blocks,
                                       .sol.filter; 5: the header's flags have a
                                       check of their own, .stream.header.check;
                                       6: several registries, .stream.header.registries;
                                       7: a live file's retag flag; 8: a live file's
                                       places of blocks, .sol.writer.at;
                                       9: RegistryRefused, .reg.many;
                                       10: ClockRate, .sol.clock.rate) */
#define EVENT_VERSION_FLAGS_CHECKED 5  /* the minor from which they do */
#define EVENT_VERSION_REGISTRIES 6  /* the minor from which a stream has several registries */
#define EVENT_VERSION_PLACES 8      /* the minor from which a live file has places */
#define EVENT_VERSION_RATE 10       /* the minor from which ClockRate fixes the clock's rate */
#define EVENT_VERSION_ZSTD_MAJOR 4  /* an archive's major: its blocks may be zstd
                                       (eventcnv --zstd, .zstd.version); the runtime
                                       writes it only under a block transform
                                       (.compact.hook) */

/* Stream header and blocks.  design/stream.txt .stream.header, .stream.block */
#define EVENT_STREAM_MAGIC      "TELLTALE"   /* 8 bytes, first in the stream */
#define EVENT_STREAM_MAGIC_LEN  8
#define EVENT_STREAM_FIXED_LEN  64           /* fixed part of the header */
#define EVENT_BYTE_ORDER_MARK   0x0102u      /* written in data byte order */
#define EVENT_STREAM_SESSION_AT 60           /* the session id in the fixed part (2.0) */
#define EVENT_STREAM_FLAGS_AT   19           /* the flags byte in the fixed part */
#define EVENT_LIVE_LOG_FAILED   0x01u        /* flags of a live file: its log lost writes (2.0) */
#define EVENT_ARCHIVE_RECOVERED 0x02u        /* flags of an archive: its log's live file was
                                                recovered into it (4.0, .zstd.live) */
#define EVENT_LIVE_DROPS        0x04u        /* flags of a live file: its header counts drops (3.0.1,
                                                .sol.dropped) */
#define EVENT_LIVE_RETAG        0x08u        /* flags of a live file: a region's header is being
                                                rewritten in place (3.0.7, .sol.control.retag) */
#define EVENT_LIVE_REGIONS_LEN  8            /* a live file's header ends with its region count */
#define EVENT_LIVE_SLOTS        64           /* the runtime's slots: a kind of a registry */
#define EVENT_LIVE_DROPS_LEN    (8 * EVENT_LIVE_SLOTS)  /* ... after its drop counts: per slot a
                                                word, first in 8 bytes (3.0.6; .sol.dropped) */
#define EVENT_LIVE_SLOTS_LEN    (2 * EVENT_LIVE_SLOTS)  /* ... after each slot's kind, as blocks
                                                carry it, a u16 (3.0.6; .reg.many) */
#define EVENT_LIVE_DROPS_LEN_5  (8 * 32)     /* before 3.0.6: per kind a word, no slots */
#define EVENT_LIVE_PLACES       32           /* ... after the places of blocks being written
                                                after the lock (3.0.8; .sol.writer.at): */
#define EVENT_LIVE_PLACE_LEN    48           /* each a u32 ticket (0: free), the block's
                                                header, and its offset in the log (a u64 at 40) */
#define EVENT_LIVE_PLACES_LEN   (EVENT_LIVE_PLACES * EVENT_LIVE_PLACE_LEN)
#define EVENT_BLOCK_MAGIC       "TTBK"       /* 4 bytes, first in every block */
#define EVENT_BLOCK_LEVEL_MASK  0x000Fu      /* flags: the signal level (1.0.1) */
#define EVENT_BLOCK_CHECKED     0x0010u      /* flags: check holds the block's CRC32C (2.0) */
#define EVENT_BLOCK_COMPACT     0x0020u      /* flags: the data are compact (2.1, eventpack.h) */
#define EVENT_BLOCK_ZSTD        0x0040u      /* flags: the data are a zstd frame of what they
                                                would be without it (4.0, .zstd.block) */
#define EVENT_BLOCK_FILTERED    0x0080u      /* flags: a dynamic filter left events out; the
                                                last event is EventsFiltered (3.0.4,
                                                .sol.filter) */
#define EVENT_ZSTD_RATIO_MAX    1024         /* bytes a zstd block's data expand to, per byte */
#define EVENT_BLOCK_INDEX_NONE  0xFFFFFFFFu  /* index of a block not written to a log (2.0) */
#define EVENT_BLOCK_KIND_REGISTRY 0xFFFFu    /* kind of a block that carries a registry that
                                                joined after the header (3.0.6,
                                                .stream.block.registry) */
#define EVENT_BLOCK_REGISTRY_SHIFT 8         /* a block's kind: its registry's number above
                                                its kind index (3.0.6) */
#define EVENT_LIVE_OUTPUT_OFF   0xFFFFFFFEu  /* index of a live region whose events from here
                                                on are of a kind with output off: none to
                                                recover (3.0.3, .sol.control.cut) */
/* A live region's index below EVENT_LIVE_OUTPUT_OFF is where, in its
 * data, its block (its seq) starts: the events before were output off
 * (3.0.3, .sol.control.cut). */
#define EVENT_BLOCK_HEADER_LEN_1 24          /* a block header in streams of major 1 */
#define EVENT_BLOCK_LENGTH_MAX  (64u << 20)  /* the largest block: a buffer of 64 MiB */

/* EventBlockHeaderStruct -- first bytes of every block, in data byte
 * order.  design/stream.txt .stream.block, .stream.check */
typedef struct __attribute__((packed)) EventBlockHeaderStruct {
  char magic[4];                /* EVENT_BLOCK_MAGIC */
  uint32_t length;              /* of the block, this header included */
  uint32_t thread;              /* the thread's serial: 1, 2, ... */
  uint16_t kind;                /* kind index */
  uint16_t flags;               /* signal level, EVENT_BLOCK_CHECKED */
  uint64_t seq;                 /* the buffer's sequence number (.sol.recover) */
  /* 2.0 on: */
  uint32_t session;             /* the stream header's session id */
  uint32_t index;               /* 0, 1, ... in the order written to this log */
  uint32_t check;               /* CRC32C of the block, with check taken as 0 */
} EventBlockHeaderStruct;

#define EVENT_BLOCK_HEADER_LEN  36

EVENT_STATIC_ASSERT(sizeof(EventBlockHeaderStruct) == EVENT_BLOCK_HEADER_LEN, "block header is 36 bytes");
EVENT_STATIC_ASSERT(offsetof(EventBlockHeaderStruct, seq) == 16, "sequence number at 16");
EVENT_STATIC_ASSERT(offsetof(EventBlockHeaderStruct, session) == EVENT_BLOCK_HEADER_LEN_1,
               "2.0's fields follow 1.0's header");
EVENT_STATIC_ASSERT(offsetof(EventBlockHeaderStruct, check) == 32, "check at 32");

/* Byte order.  Loads and stores of n bytes (1 to 8) in either order,
 * for the reader, recovery and the stream header: the one set.  big is
 * nonzero for big-endian.  design/stream.txt .stream */
static inline uint64_t EventLoad(const unsigned char *p, unsigned n, unsigned big)
{
  uint64_t v = 0;
#if defined(__GNUC__) && defined(__BYTE_ORDER__)
  /* The reader's inner loop: a whole load, swapped if need be. */
  const unsigned hostBig = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
  if (n == 8) {
    __builtin_memcpy(&v, p, 8);
    return (big != 0) == hostBig ? v : __builtin_bswap64(v);
  }
  if (n == 4) {
    uint32_t w;
    __builtin_memcpy(&w, p, 4);
    return (big != 0) == hostBig ? w : __builtin_bswap32(w);
  }
  if (n == 2) {
    uint16_t h;
    __builtin_memcpy(&h, p, 2);
    return (big != 0) == hostBig ? h : __builtin_bswap16(h);
  }
#endif
  for (unsigned i = 0; i < n; ++i)
    v |= (uint64_t)p[big ? n - 1 - i : i] << (8 * i);
  return v;
}

static inline void EventStore(unsigned char *p, uint64_t v, unsigned n, unsigned big)
{
  for (unsigned i = 0; i < n; ++i)
    p[big ? n - 1 - i : i] = (unsigned char)(v >> (8 * i));
}

/* EventBlockDecode -- a block header read from p in a stream of the
 * given major version: the fields 1.0 lacks are 0 (session, check) and
 * EVENT_BLOCK_INDEX_NONE (index).  The magic is copied, not checked. */
static inline void EventBlockDecode(EventBlockHeaderStruct *h, const unsigned char *p,
                                    unsigned major, unsigned big)
{
  for (unsigned i = 0; i < 4; ++i)
    h->magic[i] = (char)p[i];
  h->length = (uint32_t)EventLoad(p + 4, 4, big);
  h->thread = (uint32_t)EventLoad(p + 8, 4, big);
  h->kind = (uint16_t)EventLoad(p + 12, 2, big);
  h->flags = (uint16_t)EventLoad(p + 14, 2, big);
  h->seq = EventLoad(p + 16, 8, big);
  h->session = major >= 2 ? (uint32_t)EventLoad(p + 24, 4, big) : 0;
  h->index = major >= 2 ? (uint32_t)EventLoad(p + 28, 4, big) : EVENT_BLOCK_INDEX_NONE;
  h->check = major >= 2 ? (uint32_t)EventLoad(p + 32, 4, big) : 0;
}

/* EventBlockEncode -- a 2.0 block header stored at p */
static inline void EventBlockEncode(unsigned char *p, const EventBlockHeaderStruct *h, unsigned big)
{
  for (unsigned i = 0; i < 4; ++i)
    p[i] = (unsigned char)h->magic[i];
  EventStore(p + 4, h->length, 4, big);
  EventStore(p + 8, h->thread, 4, big);
  EventStore(p + 12, h->kind, 2, big);
  EventStore(p + 14, h->flags, 2, big);
  EventStore(p + 16, h->seq, 8, big);
  EventStore(p + 24, h->session, 4, big);
  EventStore(p + 28, h->index, 4, big);
  EventStore(p + 32, h->check, 4, big);
}

/* EventCheck -- CRC32C (Castagnoli) of size bytes, continuing crc (0 to
 * start).  SSE4.2's crc32 instruction where the processor has it, else
 * a table.  Signal-safe.  design/stream.txt .stream.check */
extern TELLTALE_API uint32_t EventCheck(uint32_t crc, const void *data, size_t size);

/* EventCrcBy -- EventCheck by one way, for the tests that compare
 * them: 0 a table, 1 the crc32 instruction, 2 that and VPCLMULQDQ
 * together.  Returns 0, leaving *crc, if this processor cannot. */
extern int EventCrcBy(int how, uint32_t *crc, const void *data, size_t size);

/* EventHeaderCheck -- the check of a stream header's first length
 * bytes, its flags byte (which a live file's writer changes) taken as
 * 0: stored after the variable part (2.0).  design/stream.txt
 * .stream.header.check */
extern TELLTALE_API uint32_t EventHeaderCheck(const unsigned char *header, size_t length);

/* EventFlagsCheck -- the check of a stream header's flags byte alone,
 * stored after the spans' check (3.0.5): an archive's flags say whether
 * its log's live file was recovered into it.  design/stream.txt
 * .stream.header.check */
static inline uint32_t EventFlagsCheck(const unsigned char *header)
{
  return EventCheck(0, header + EVENT_STREAM_FLAGS_AT, 1);
}

/* EventLiveCheck -- the check of a live region's header: of bytes 4
 * to 32 (not the magic, which a free region clears), stored at 32.  The
 * data of a live region change while the program runs, so only its
 * header is checked.  design/control.txt .sol.recover */
extern TELLTALE_API uint32_t EventLiveCheck(const unsigned char *header);

/* EventBlockCheck -- the check of a whole block at p, of length bytes,
 * header included, with its check field (bytes 32-35) taken as 0 */
extern TELLTALE_API uint32_t EventBlockCheck(const unsigned char *p, size_t length);

/* EventBlockHole -- are a block's data, from headerLength to length
 * bytes at p, which begins at byte offset in its file, what a write cut
 * short by death leaves: zeros from their start, or from a page
 * boundary of the file on?  design/control.txt .sol.writer.at */
extern int EventBlockHole(const unsigned char *p, size_t length, size_t headerLength,
                          uint64_t offset);

/* The clock.  A reader takes the clock's rate from the stream header,
 * unless the stream's ClockRate (before 3.0.10, its latest ClockSync)
 * is at least EVENT_SYNC_SPAN_NS (CLOCK_MONOTONIC) after the header's
 * start pair: the rate between the two pairs is better then.  The
 * runtime emits ClockRate once EVENT_RATE_SPAN_NS have passed, or at
 * the end.  design/runtime.txt .sol.clock .sol.clock.rate */
#define EVENT_SYNC_SPAN_NS   100000000u
#define EVENT_RATE_SPAN_NS   1000000000u

/* Limits.  design/registry.txt .reg.limits */
#define EVENT_CODE_LIMIT     0x10000u        /* codes are 16 bits, 0x0001-0xFFFF */
#define EVENT_CODE_RESERVED_LIMIT 0x0100u    /* codes below are telltale's own */
#define EVENT_PARAM_MAX      16     /* parameters per event */
#define EVENT_KIND_LIMIT     32     /* kinds per registry, core and client */
/* EVENT_STREAM_KIND_LIMIT -- kinds in a stream's registry: the reader's
 * merge of every registry the stream carries (design/stream.txt
 * .stream.header.registries); the runtime records no more in a
 * process's life (design/registry.txt .reg.many) */
#define EVENT_STREAM_KIND_LIMIT 256
#define EVENT_NAME_MAX       63     /* characters in an event or kind name */
#define EVENT_STRING_MAX     1023   /* characters in an S parameter; longer is truncated */
#define EVENT_HEADER_LEN     12     /* code (2) + length (2) + clock (8) */
#define EVENT_SIZE_MAX       (EVENT_HEADER_LEN + EVENT_PARAM_MAX * 8 + EVENT_STRING_MAX + 1)

/* telltale's own events (eventdef.h), which the runtime and the reader
 * know by code.  Every eventgen.c asserts that its registry agrees, and
 * that gen's copied limits are the ones above.  design/registry.txt
 * .gen.assert */
#define EVENT_CODE_STREAM_START    0x0001u
#define EVENT_CODE_STREAM_END      0x0002u
#define EVENT_CODE_CLOCK_SYNC      0x0003u
#define EVENT_CODE_INTERN          0x0004u
#define EVENT_CODE_LABEL           0x0005u
#define EVENT_CODE_EVENTS_DROPPED  0x0006u
#define EVENT_CODE_THREAD_START    0x0007u
#define EVENT_CODE_THREAD_NAME     0x0008u
#define EVENT_CODE_THREAD_EXIT     0x0009u
#define EVENT_CODE_STREAM_EXEC     0x000Au
#define EVENT_CODE_STREAM_SNAPSHOT 0x000Bu
#define EVENT_CODE_EVENTS_FILTERED 0x000Cu
#define EVENT_CODE_REGISTRY_REFUSED 0x000Du
#define EVENT_CODE_CLOCK_RATE      0x000Eu

/* EventHeaderStruct -- first 12 bytes of every event.  design/stream.txt .stream.event
 *
 * code and length share one 32-bit store on the hot path: codeLength is
 * EVENT_CODE_LENGTH(code, length), in data byte order.  length counts the whole event.
 */
typedef struct __attribute__((packed)) EventHeaderStruct {
  uint32_t codeLength;
  EventClock clock;
} EventHeaderStruct;

EVENT_STATIC_ASSERT(sizeof(EventHeaderStruct) == EVENT_HEADER_LEN, "event header is 12 bytes");
EVENT_STATIC_ASSERT(EVENT_SIZE_MAX <= 0xFFFF, "event length fits 16 bits");

/* The code is the first 2 bytes in memory and the length the next 2,
 * in either byte order: which half of the word each is depends on it. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define EVENT_CODE_LENGTH(code, length) ((uint32_t)(code) << 16 | (uint32_t)(length))
#define EVENT_CODE_OF(codeLength)   ((unsigned)((codeLength) >> 16))
#define EVENT_LENGTH_OF(codeLength) ((unsigned)((codeLength) & 0xFFFFu))
#else
#define EVENT_CODE_LENGTH(code, length) ((uint32_t)(code) | (uint32_t)(length) << 16)
#define EVENT_CODE_OF(codeLength)   ((unsigned)((codeLength) & 0xFFFFu))
#define EVENT_LENGTH_OF(codeLength) ((unsigned)((codeLength) >> 16))
#endif

/* Registry descriptors.  design/registry.txt .reg
 *
 * gen writes these tables for a program's registry (eventgen.c); the
 * stream reader builds the same structures from a stream header, so the
 * decoder (eventread.h) works the same way in the runtime and in tools.
 */

typedef struct EventKindDescStruct {
  const char *name;
  const char *doc;
} EventKindDescStruct;

typedef struct EventDescStruct {
  unsigned code;                /* 16-bit wire code */
  unsigned kind;                /* index into the kind table */
  unsigned always;              /* 1 if in every variety that has telemetry */
  unsigned retired;             /* 1 if kept only so that old logs decode */
  unsigned paramCount;          /* strlen(format), or 0 for format "0" */
  const char *name;
  const char *format;           /* letters from PAWUSD, "" for none */
  const char *doc;
  const char *const *paramNames;
  const char *const *paramDocs;
} EventDescStruct;

/* EventSpanDescStruct -- a span: an event of code begin opens it, the
 * next event of code end whose parameter endKey has the value of the
 * begin's parameter beginKey closes it.  design/registry.txt .reg.span */
typedef struct EventSpanDescStruct {
  const char *name;
  unsigned begin, end;          /* event codes */
  unsigned beginKey, endKey;    /* parameter indexes */
} EventSpanDescStruct;

/* EventCounterDescStruct -- a counter: each event of code sets it to
 * its parameter value, one counter per value of its parameter key.
 * design/registry.txt .reg.counter */
typedef struct EventCounterDescStruct {
  const char *name;
  unsigned code;
  unsigned value;               /* parameter index */
  unsigned key;                 /* parameter index, or EVENT_COUNTER_NO_KEY */
} EventCounterDescStruct;

#define EVENT_COUNTER_NO_KEY 0xFFu
#define EVENT_SPAN_LIMIT     256    /* spans, and counters, per registry */

typedef struct EventRegistryStruct {
  const char *name;             /* a name for the registry, e.g. "pool example" */
  unsigned kindCount;
  const EventKindDescStruct *kinds;
  unsigned eventCount;          /* sorted by code */
  const EventDescStruct *events;
  unsigned spanCount;           /* 2.0.1 on; none in older streams */
  const EventSpanDescStruct *spans;
  unsigned counterCount;
  const EventCounterDescStruct *counters;
} EventRegistryStruct;

typedef uint32_t EventKindSet;  /* one bit per kind index */

#define EVENT_KIND_BIT(kind) ((EventKindSet)1 << (kind))

TELLTALE_END_DECLS

#endif /* eventcom_h */
