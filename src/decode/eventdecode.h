/* <src/decode/eventdecode.h> -- the event layer: decode and format one event
 *
 * .design: design/index.txt .req.share design/stream.txt .stream
 *
 * Every reader of telltale events uses this decoder: eventcnv, the
 * runtime's text mirror and crash dump, the tests and the replay tool.
 * (design/index.txt .req.share)  It depends on string.h only: it
 * never allocates, never uses stdio and keeps only small buffers on the
 * stack, so the runtime's crash dump may call it from a signal handler.
 * It reads only inside the buffer it is given, on any input: a
 * malformed event is an error, never a crash.  The stream layer that
 * reads whole streams is src/read/eventread.h.
 */

#ifndef eventdecode_h
#define eventdecode_h

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "eventcom.h"


/* EventLayoutStruct -- how a stream's data is laid out.
 * design/stream.txt .stream.header design/index.txt .req.port */
typedef struct EventLayoutStruct {
  unsigned bigEndian;           /* 1 if data are big-endian, 0 if little */
  unsigned pointerSize;         /* bytes in a P or A field: 4 or 8 */
  unsigned wordSize;            /* bytes in a W field: 4 or 8 */
} EventLayoutStruct;

/* EventLayoutNative -- the layout of the running program */
extern void EventLayoutNative(EventLayoutStruct *layoutReturn);

/* EventTypeStruct -- the facts of one type letter of a format: the one
 * table of them is EventTypes, and gen's LETTERS states the same facts
 * (tests/tools/gen.sh letters-agree checks that the two agree).  Fields are
 * packed on the wire, so a letter has no alignment.
 * design/registry.txt .reg.format design/stream.txt .stream.event design/registry.txt .gen.letters */
typedef struct EventTypeStruct {
  char letter;                  /* P, A, W, U, S or D; '\0' in a free entry */
  unsigned char size;           /* bytes on the wire: 4 or 8, or one of: */
  unsigned char form;           /* EventTypeUNSIGNED, DOUBLE or STRING */
  unsigned char hex;            /* 1: shown in hex and may be labelled (P, A) */
  unsigned char key;            /* 1: may key a span or counter (P, A, W, U) */
  unsigned char value;          /* 1: may be a counter's value (W, U, D) */
  const char *ctype;            /* the emitter's C type (eventcom.h) */
  const char *name;             /* what it is, as tools name it */
} EventTypeStruct;

#define EVENT_TYPE_POINTER 1    /* size: the stream's pointer size (P, A) */
#define EVENT_TYPE_WORD 2       /* size: the stream's word size (W) */
#define EVENT_TYPE_REST 0       /* size: the rest of the event, with a NUL (S) */

enum {
  EventTypeUNSIGNED,            /* P, A, W, U: an unsigned integer, values[].u */
  EventTypeDOUBLE,              /* D: an IEEE 754 double, values[].d */
  EventTypeSTRING               /* S: the last field, values[].s */
};

/* EventTypes -- the type letters, each at its letter & 31 (the six are
 * distinct there); the other entries are zero */
extern const EventTypeStruct EventTypes[32];

/* EventTypeOf -- the facts of letter, or NULL if it is not a type letter */
static inline const EventTypeStruct *EventTypeOf(int letter)
{
  const EventTypeStruct *type = &EventTypes[(unsigned)letter & 31u];
  return letter != '\0' && type->letter == letter ? type : NULL;
}

/* EventTypeSize -- the bytes of a field of type in a stream of these
 * pointer and word sizes; 0 for S, whose length varies */
static inline unsigned EventTypeSize(const EventTypeStruct *type, unsigned pointerSize,
                                     unsigned wordSize)
{
  return type->size == EVENT_TYPE_POINTER ? pointerSize
         : type->size == EVENT_TYPE_WORD ? wordSize : type->size;
}

/* EventValueUnion -- one decoded parameter.
 * P, A, W, U: u (zero-extended); D: d; S: s (points into the event,
 * NUL-terminated, stringLength characters). */
typedef union EventValueUnion {
  uint64_t u;
  int64_t i;
  double d;
  const char *s;
} EventValueUnion;

/* EventRecordStruct -- one decoded event.  design/stream.txt .stream.event */
typedef struct EventRecordStruct {
  const EventDescStruct *desc;  /* NULL if the code is not in the registry */
  unsigned code;
  unsigned length;              /* of the whole event, in bytes */
  EventClock clock;
  uint32_t thread;              /* thread serial, from the block (0 if unknown) */
  unsigned kind;                /* kind index, from the block (desc's if unknown) */
  size_t offset;                /* of the event in the stream (0 if unknown) */
  EventValueUnion values[EVENT_PARAM_MAX];
  size_t stringLength;          /* characters in the S parameter, if any */
} EventRecordStruct;

/* EventDecodeRes -- the result of EventDecode */
typedef enum EventDecodeRes {
  EventDecodeOK = 0,            /* decoded: desc, header and values are set */
  EventDecodeEND,               /* code 0: no more events in this block */
  EventDecodeUNKNOWN,           /* code not in the registry: header set, skip by length */
  EventDecodeTRUNCATED,         /* the event runs past the bytes available */
  EventDecodeCORRUPT            /* the event cannot be right */
} EventDecodeRes;

/* EventRegistryLookup -- the descriptor of a code, or NULL.
 * The registry's events must be sorted by code (eventcom.h). */
extern const EventDescStruct *EventRegistryLookup(const EventRegistryStruct *registry,
                                                  unsigned code);

/* EventDecode -- decode the event at p, with avail bytes readable there.
 *
 * Reads only p[0 .. avail-1].  On EventDecodeOK and EventDecodeUNKNOWN,
 * rec->length bytes make up the event.  On TRUNCATED and CORRUPT,
 * *whyReturn (if whyReturn is not NULL) is a static sentence saying what
 * is wrong; rec->code and rec->length are set if avail allowed reading
 * them.  rec->thread and rec->offset are set to 0 and rec->kind to the
 * descriptor's kind: a caller that knows better sets them.
 * registry may be NULL: then every code is unknown. */
extern EventDecodeRes EventDecode(const EventLayoutStruct *layout,
                                  const EventRegistryStruct *registry,
                                  const unsigned char *p, size_t avail,
                                  EventRecordStruct *rec, const char **whyReturn);

/* EventDecodeFields -- the fields of an event of desc, whose code and
 * length (length bytes at p) are known to be sound: the second half of
 * EventDecode, for a reader that checked the header itself */
extern EventDecodeRes EventDecodeFields(const EventLayoutStruct *layout, const EventDescStruct *desc,
                                        const unsigned char *p, size_t length,
                                        EventRecordStruct *rec, const char **whyReturn);

/* EventDescPlan -- the length of every event of desc in this layout,
 * with each field's size (4 or 8) in plan and 0 after the last; 0 if
 * its length varies (a string) or a letter is unknown.  With a plan, an
 * event of that length in the machine's byte order decodes without a
 * look at the format (EventDecodePlanned).  design/tools.txt
 * .eventcnv.reader.plan */
extern unsigned EventDescPlan(const EventDescStruct *desc, const EventLayoutStruct *layout,
                              unsigned char plan[EVENT_PARAM_MAX]);

/* EventDecodePlanned -- the fields at p (after the event header), in
 * the machine's byte order, by plan, into values */
static inline void EventDecodePlanned(const unsigned char *plan, const unsigned char *p,
                                      EventValueUnion *values)
{
  for (unsigned i = 0; i < EVENT_PARAM_MAX && plan[i] != 0; p += plan[i++]) {
    uint32_t narrow;
    if (plan[i] == 8) {
      memcpy(&values[i], p, 8);
    } else {
      memcpy(&narrow, p, 4);
      values[i].u = narrow;
    }
  }
}

/* EventLabelFunction -- the label of an address, or NULL if it has none */
typedef const char *(*EventLabelFunction)(void *closure, uint64_t address);

/* EventFormatCacheStruct -- what EventFormat may remember between the
 * lines of one reader: the latest elapsed second's clock range and the
 * latest wall-clock second's "HH:MM:SS.".  One per thread that formats;
 * zero it before use. */
typedef struct EventFormatCacheStruct {
  int secondValid, wallValid;
  uint64_t hz;                  /* the rate secondStart was found with */
  uint64_t seconds;             /* whole elapsed seconds ... */
  uint64_t secondStart;         /* ... from this many ticks after the start */
  uint64_t wallSecond;          /* realtime / 10^9 that wall shows */
  char wall[9];
  int elapsedValid;
  uint64_t elapsedSeconds;      /* the elapsed second elapsed shows ... */
  unsigned elapsedLen;          /* ... in this many characters, up to its "." */
  char elapsed[24];
  int nsValid[2];               /* the elapsed and the wall clock's nanoseconds: */
  uint32_t nsHigh[2];           /* ns / 10^4 ... */
  char nsText[2][16];           /* ... and the 9 digits of a ns with it */
  /* The latest line's text from after the times to its first value
   * (" T1  Kind  Event  name="), then each later field's " name=", for
   * the next event of the same thread, kind and descriptor. */
  int headValid;
  const void *headDesc, *headRegistry;
  uint32_t headThread;
  unsigned headKind, headKindWidth, headNameWidth;
  unsigned short headEnd[EVENT_PARAM_MAX];   /* where field i's " name=" ends */
  char head[1280 + 16];          /* and 16 that a copy by 16 bytes may read */
} EventFormatCacheStruct;

/* EventFormatContextStruct -- what EventFormat needs besides the record */
typedef struct EventFormatContextStruct {
  const EventRegistryStruct *registry;  /* for kind names; may be NULL */
  EventClock startClock;        /* clock value at the start of the stream */
  uint64_t clockHz;             /* clock frequency; 0: the clock counts ns */
  uint64_t startRealtime;       /* CLOCK_REALTIME at startClock, ns since the epoch */
  EventLabelFunction label;     /* may be NULL: no labels */
  void *labelClosure;
  unsigned kindWidth;           /* kind names are padded to this width */
  unsigned nameWidth;           /* event names are padded to this width */
  EventFormatCacheStruct *cache; /* may be NULL: nothing remembered */
} EventFormatContextStruct;

/* EventFormatContextInit -- a context for registry: widths from its
 * names, the clock counting ns from 0, no labels.  The caller then sets
 * the clock fields and the label function. */
extern void EventFormatContextInit(EventFormatContextStruct *ctx,
                                   const EventRegistryStruct *registry);

/* EventFormat -- one line of text for rec, without a newline.
 *
 *   ELAPSED WALLCLOCK THREAD KIND EVENT name=value ...
 *       0.000500000 22:13:20.123956789 T1  Telltale StreamStart   major=1 ...
 *
 * ELAPSED is seconds since ctx->startClock with 9 decimals; WALLCLOCK
 * is the UTC time of day HH:MM:SS.nnnnnnnnn.  P and A values are hex,
 * a P or A value followed by [label] if ctx->label knows it; W and U are
 * decimal; D is like printf's %.17g ("nan", "inf", "-inf"); S is quoted
 * with C escapes.  An unknown code gives "? code=0x1234 length=N".
 *
 * Writes at most size bytes including a terminating NUL (if size > 0)
 * and returns the length of the whole line, like snprintf: a result of
 * size or more means the line was cut short. */
extern size_t EventFormat(char *buf, size_t size, const EventRecordStruct *rec,
                          const EventFormatContextStruct *ctx);

/* EventFormatTimes -- the ELAPSED and WALLCLOCK columns of EventFormat's
 * line for clock, "    0.000500000 22:13:20.123956789".  Returns the
 * length, like EventFormat. */
extern size_t EventFormatTimes(char *buf, size_t size, EventClock clock,
                               const EventFormatContextStruct *ctx);

/* EventClockRate -- the clock's rate in Hz: headerHz, unless the pair
 * (clock, monotonic), a ClockSync, is at least EVENT_SYNC_SPAN_NS after
 * the stream's start pair, when the rate between the two is used (and
 * at any span when headerHz is 0, unknown). */
extern uint64_t EventClockRate(uint64_t headerHz, EventClock startClock,
                               uint64_t startMonotonic, EventClock clock, uint64_t monotonic);

/* EventClockSplit -- delta clock ticks at hz (0: nanoseconds) as whole
 * seconds and nanoseconds, truncated, exactly; cache, if not NULL,
 * remembers the latest second's range.  EventFormat's time columns use
 * it (eventclock.c). */
extern void EventClockSplit(uint64_t delta, uint64_t hz, EventFormatCacheStruct *cache,
                            uint64_t *secondsReturn, uint64_t *nsReturn);

/* EventUtf8Length -- the length of the valid UTF-8 sequence at s (of
 * at most avail bytes) whose first byte is >= 0x80, or 0 if it is not
 * one: no overlong forms, surrogates or code points above U+10FFFF.
 * The one test of UTF-8 for the text line and the tools' textsafe.c. */
static inline size_t EventUtf8Length(const unsigned char *s, size_t avail)
{
  unsigned c = s[0];
  size_t n, i;
  unsigned lo = 0x80, hi = 0xBF;       /* the second byte's range */
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else
    return 0;
  if (avail < n || s[1] < lo || s[1] > hi)
    return 0;
  for (i = 2; i < n; ++i)
    if (s[i] < 0x80 || s[i] > 0xBF)
      return 0;
  return n;
}

/* EventEscape -- n bytes of s with C escapes (\" \\ \n \t \r, \ooo for
 * other controls, DEL, C1 controls and bytes of invalid UTF-8; valid
 * UTF-8 as itself), as an S field is shown, into buf (NUL-terminated,
 * truncated); returns the length it needed.  design/export.txt
 * .export.text */
extern size_t EventEscape(char *buf, size_t size, const char *s, size_t n);

/* EventFormatDouble -- d as printf's "%.17g" would, into buf
 * (eventdouble.c).  Returns the length, like EventFormat: at most
 * EVENT_DOUBLE_TEXT_MAX - 1 ("-2.2250738585072014e-308" is 24). */
#define EVENT_DOUBLE_TEXT_MAX 32
extern size_t EventFormatDouble(char *buf, size_t size, double d);

/* EventDecimalPairs, EventHexPairs -- "00" to "99", and "00" to "ff":
 * the two digits of each number below 100, of each byte */
extern const char EventDecimalPairs[200], EventHexPairs[512];

#endif /* eventdecode_h */
