/* <src/event/eventcom.h> -- types and constants shared by emitters, runtime and tools
 *
 * .design: design/telemetry.txt
 *
 * This header is included by generated code (eventgen.h), by the runtime
 * and by the tools.  It includes no OS headers: only the freestanding
 * C11 headers.  Everything here is either a type, a constant of the
 * stream format (design/telemetry.txt .stream), or a descriptor of a
 * registry (design/telemetry.txt .reg).
 */

#ifndef eventcom_h
#define eventcom_h

#include <stddef.h>
#include <stdint.h>

/* Parameter types, one per format letter.  design/telemetry.txt .reg.format */
typedef void *EventP;               /* P -- any pointer */
typedef uintptr_t EventA;           /* A -- an address (may be labelled) */
typedef uintptr_t EventW;           /* W -- a word: sizes, counts, ids */
typedef uint32_t EventU;            /* U -- unsigned 32-bit: sets, small ints */
typedef const char *EventS;         /* S -- a string, at most one, last */
typedef double EventD;              /* D -- a double */

typedef uint64_t EventClock;        /* cycle counter value */

/* Stream format version.  design/telemetry.txt .sol.version */
#define EVENT_VERSION_MAJOR  1      /* the file format changed */
#define EVENT_VERSION_MEDIAN 0      /* an existing telltale event changed */
#define EVENT_VERSION_MINOR  1      /* a telltale event or header field was added */

/* Stream header and blocks.  design/telemetry.txt .stream.header, .stream.block */
#define EVENT_STREAM_MAGIC      "TELLTALE"   /* 8 bytes, first in the stream */
#define EVENT_STREAM_MAGIC_LEN  8
#define EVENT_STREAM_FIXED_LEN  64           /* fixed part of the header */
#define EVENT_BYTE_ORDER_MARK   0x0102u      /* written in data byte order */
#define EVENT_BLOCK_MAGIC       "TTBK"       /* 4 bytes, first in every block */
#define EVENT_BLOCK_HEADER_LEN  24
#define EVENT_BLOCK_LEVEL_MASK  0x000Fu      /* flags: the signal level (1.0.1) */

/* The clock.  A reader takes the clock's rate from the stream header,
 * unless a ClockSync is at least this long (CLOCK_MONOTONIC) after the
 * header's start pair: the rate between the two pairs is better then.
 * design/telemetry.txt .sol.clock */
#define EVENT_SYNC_SPAN_NS   100000000u

/* Limits.  design/telemetry.txt .reg.limits */
#define EVENT_CODE_LIMIT     0x10000u        /* codes are 16 bits, 0x0001-0xFFFF */
#define EVENT_CODE_RESERVED_LIMIT 0x0100u    /* codes below are telltale's own */
#define EVENT_PARAM_MAX      16     /* parameters per event */
#define EVENT_KIND_LIMIT     32     /* kinds per registry, core and client */
#define EVENT_NAME_MAX       63     /* characters in an event or kind name */
#define EVENT_STRING_MAX     1023   /* characters in an S parameter; longer is truncated */
#define EVENT_HEADER_LEN     12     /* code (2) + length (2) + clock (8) */
#define EVENT_SIZE_MAX       (EVENT_HEADER_LEN + EVENT_PARAM_MAX * 8 + EVENT_STRING_MAX + 1)

/* telltale's own events (eventdef.h), which the runtime and the reader
 * know by code.  Every eventgen.c asserts that its registry agrees, and
 * that gen's copied limits are the ones above.  design/telemetry.txt
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

/* EventHeaderStruct -- first 12 bytes of every event.  design/telemetry.txt .stream.event
 *
 * code and length share one 32-bit store on the hot path: codeLength is
 * code | length << 16, in data byte order.  length counts the whole event.
 */
typedef struct __attribute__((packed)) EventHeaderStruct {
  uint32_t codeLength;
  EventClock clock;
} EventHeaderStruct;

_Static_assert(sizeof(EventHeaderStruct) == EVENT_HEADER_LEN, "event header is 12 bytes");
_Static_assert(EVENT_SIZE_MAX <= 0xFFFF, "event length fits 16 bits");

#define EVENT_CODE_LENGTH(code, length) ((uint32_t)(code) | (uint32_t)(length) << 16)

/* Registry descriptors.  design/telemetry.txt .reg
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

typedef struct EventRegistryStruct {
  const char *name;             /* a name for the registry, e.g. "pool example" */
  unsigned kindCount;
  const EventKindDescStruct *kinds;
  unsigned eventCount;          /* sorted by code */
  const EventDescStruct *events;
} EventRegistryStruct;

typedef uint32_t EventKindSet;  /* one bit per kind index */

#define EVENT_KIND_BIT(kind) ((EventKindSet)1 << (kind))

#endif /* eventcom_h */
