/* <src/event/eventread.c> -- the one decoder of telltale streams
 *
 * .design: design/telemetry.txt .req.share .stream
 *
 * See eventread.h for the interface.  The event layer (EventDecode,
 * EventFormat) uses string.h only: no allocation, no stdio, no OS, small
 * stack buffers, so a signal handler may call it.  The stream layer
 * (EventStream*) allocates with malloc and sorts with qsort.
 *
 * Every read of the input goes through a check against the number of
 * bytes left, so that no input, however malformed, makes this code read
 * outside the buffer it was given.  Faults are reported as
 * "offset N: what is wrong", N counting bytes from the start of the
 * stream.
 */

#include "eventread.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Telltale's own events that the reader acts on.  design/telemetry.txt .stream.own */
#define CODE_STREAM_END  0x0002u
#define CODE_CLOCK_SYNC  0x0003u
#define CODE_INTERN      0x0004u
#define CODE_LABEL       0x0005u
#define CODE_EVENTS_DROPPED 0x0006u
#define CODE_THREAD_START 0x0007u
#define CODE_THREAD_EXIT  0x0009u
#define CODE_OWN_LIMIT   0x0100u         /* codes below are telltale's own */

#define NS_PER_SECOND    1000000000u

/* Widths of the columns of a formatted line.  See EventFormat. */
#define ELAPSED_WIDTH    15              /* "    0.000000000" */
#define THREAD_WIDTH     3               /* "T1 " */


/* MulDiv -- floor(a * b / c), for c > 0 and a quotient below 2^64
 *
 * Exact, with a 128-bit product and long division, so that times are
 * the same on every platform and compiler.
 */

static uint64_t MulDiv(uint64_t a, uint64_t b, uint64_t c)
{
  uint64_t aLo, aHi, bLo, bHi, p0, p1, p2, p3, mid, lo, hi, q, r;
  int i;
  if (b == 0 || a <= UINT64_MAX / b)    /* the product fits: the same quotient, at once */
    return a * b / c;
  aLo = a & 0xFFFFFFFFu, aHi = a >> 32;
  bLo = b & 0xFFFFFFFFu, bHi = b >> 32;
  p0 = aLo * bLo, p1 = aLo * bHi, p2 = aHi * bLo, p3 = aHi * bHi;
  mid = (p0 >> 32) + (p1 & 0xFFFFFFFFu) + (p2 & 0xFFFFFFFFu);
  lo = (p0 & 0xFFFFFFFFu) | mid << 32;
  hi = p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32);
  q = 0, r = 0;
  for (i = 127; i >= 0; --i) {
    uint64_t carry = r >> 63;
    uint64_t bit = i >= 64 ? hi >> (i - 64) & 1 : lo >> i & 1;
    r = r << 1 | bit;
    q <<= 1;
    if (carry || r >= c) {
      r -= c;
      q |= 1;
    }
  }
  return q;
}


/* THE EVENT LAYER */


/* EventLayoutNative -- the layout of the running program */

void EventLayoutNative(EventLayoutStruct *layoutReturn)
{
  const uint16_t mark = EVENT_BYTE_ORDER_MARK;
  unsigned char bytes[2];
  memcpy(bytes, &mark, sizeof bytes);
  layoutReturn->bigEndian = bytes[0] == 0x01;
  layoutReturn->pointerSize = (unsigned)sizeof(EventA);
  layoutReturn->wordSize = (unsigned)sizeof(EventW);
}


/* EventRegistryLookup -- binary search of a registry sorted by code */

const EventDescStruct *EventRegistryLookup(const EventRegistryStruct *registry, unsigned code)
{
  size_t lo, hi;
  if (registry == NULL || registry->events == NULL)
    return NULL;
  lo = 0;
  hi = registry->eventCount;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    unsigned midCode = registry->events[mid].code;
    if (midCode == code)
      return &registry->events[mid];
    if (midCode < code)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}


static EventDecodeRes DecodeFields(const EventLayoutStruct *layout, const EventDescStruct *desc,
                                   const unsigned char *p, size_t length,
                                   EventRecordStruct *rec, const char **whyReturn);

/* EventDecode -- decode one event.  design/telemetry.txt .stream.event
 *
 * Each check comes before the read it guards: avail for the header,
 * then length (now known to be within avail) for every field.
 */

EventDecodeRes EventDecode(const EventLayoutStruct *layout,
                           const EventRegistryStruct *registry,
                           const unsigned char *p, size_t avail,
                           EventRecordStruct *rec, const char **whyReturn)
{
  const char *whyDummy;
  const EventDescStruct *desc;
  unsigned bigEndian = layout->bigEndian;
  size_t length;

  if (whyReturn == NULL)
    whyReturn = &whyDummy;
  memset(rec, 0, sizeof *rec);

  if (avail < 2) {
    *whyReturn = "event header truncated";
    return EventDecodeTRUNCATED;
  }
  rec->code = (unsigned)EventLoad(p, 2, bigEndian);
  if (rec->code == 0)           /* design/telemetry.txt .stream.block */
    return EventDecodeEND;
  if (avail < EVENT_HEADER_LEN) {
    *whyReturn = "event header truncated";
    return EventDecodeTRUNCATED;
  }
  length = (size_t)EventLoad(p + 2, 2, bigEndian);
  rec->length = (unsigned)length;
  rec->clock = EventLoad(p + 4, 8, bigEndian);
  if (length < EVENT_HEADER_LEN) {
    *whyReturn = "event length is less than the 12-byte event header";
    return EventDecodeCORRUPT;
  }
  if (length > avail) {
    *whyReturn = "event runs past the end of the data";
    return EventDecodeTRUNCATED;
  }

  desc = EventRegistryLookup(registry, rec->code);
  if (desc == NULL)             /* design/telemetry.txt .stream.unknown */
    return EventDecodeUNKNOWN;
  return DecodeFields(layout, desc, p, length, rec, whyReturn);
}

/* DecodeFields -- the fields of an event whose header EventDecode (or
 * the stream's index) has read: desc is its code's descriptor and
 * length, at least EVENT_HEADER_LEN, bytes at p are readable.  Sets
 * rec->desc, rec->kind and the values; rec's header fields are the
 * caller's. */
static EventDecodeRes DecodeFields(const EventLayoutStruct *layout, const EventDescStruct *desc,
                                   const unsigned char *p, size_t length,
                                   EventRecordStruct *rec, const char **whyReturn)
{
  unsigned bigEndian = layout->bigEndian;
  size_t offset;
  unsigned i;

  rec->desc = desc;
  rec->kind = desc->kind;
  offset = EVENT_HEADER_LEN;
  for (i = 0; desc->format != NULL && desc->format[i] != '\0'; ++i) {
    size_t size;
    if (i >= EVENT_PARAM_MAX) {
      *whyReturn = "the event's format has more than 16 parameters";
      return EventDecodeCORRUPT;
    }
    switch (desc->format[i]) {
    case 'P': case 'A': size = layout->pointerSize; break;
    case 'W': size = layout->wordSize; break;
    case 'U': size = 4; break;
    case 'D': size = 8; break;
    case 'S': {                 /* design/telemetry.txt .reg.format .stream.event */
      size_t chars;
      if (desc->format[i + 1] != '\0') {
        *whyReturn = "the event's format has a string that is not last";
        return EventDecodeCORRUPT;
      }
      if (length - offset < 1) {
        *whyReturn = "event is too short for its format";
        return EventDecodeCORRUPT;
      }
      chars = length - offset - 1;
      if (p[length - 1] != '\0') {
        *whyReturn = "string does not end with a NUL at the end of the event";
        return EventDecodeCORRUPT;
      }
      if (memchr(p + offset, '\0', chars) != NULL) {
        *whyReturn = "string has a NUL before the end of the event";
        return EventDecodeCORRUPT;
      }
      if (chars > EVENT_STRING_MAX) {
        *whyReturn = "string is longer than EVENT_STRING_MAX (1023)";
        return EventDecodeCORRUPT;
      }
      rec->values[i].s = (const char *)(p + offset);
      rec->stringLength = chars;
      offset = length;
      continue;
    }
    default:
      *whyReturn = "the event's format has an unknown letter";
      return EventDecodeCORRUPT;
    }
    if (size != 4 && size != 8) {
      *whyReturn = "pointer or word size is not 4 or 8";
      return EventDecodeCORRUPT;
    }
    if (length - offset < size) {
      *whyReturn = "event is too short for its format";
      return EventDecodeCORRUPT;
    }
    if (desc->format[i] == 'D') {
      uint64_t bits = EventLoad(p + offset, 8, bigEndian);
      memcpy(&rec->values[i].d, &bits, sizeof bits);
    } else {
      rec->values[i].u = EventLoad(p + offset, (unsigned)size, bigEndian);
    }
    offset += size;
  }
  if (offset != length) {
    *whyReturn = "event is longer than its format";
    return EventDecodeCORRUPT;
  }
  return EventDecodeOK;
}


/* WriterStruct -- text into a fixed buffer, counting what does not fit
 *
 * Characters are stored while there is room for them and a NUL; len
 * counts them all, so the caller learns the length the text needed.
 */

typedef struct WriterStruct {
  char *buf;
  size_t size;
  size_t len;
} WriterStruct;

static void PutChar(WriterStruct *w, char c)
{
  if (w->len + 1 < w->size)
    w->buf[w->len] = c;
  ++w->len;
}

static void PutChars(WriterStruct *w, const char *s, size_t n)
{
  size_t i;
  if (w->len < w->size && w->size - w->len > n) {   /* room for them and a NUL */
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    return;
  }
  for (i = 0; i < n; ++i)
    PutChar(w, s[i]);
}

/* PutString -- s, measured as it is copied (names are short: one pass,
 * no calls); returns its length */
static size_t PutString(WriterStruct *w, const char *s)
{
  size_t start = w->len;
  for (; *s != '\0'; ++s) {
    if (w->len + 1 < w->size)
      w->buf[w->len] = *s;
    ++w->len;
  }
  return w->len - start;
}

static void PutSpaces(WriterStruct *w, size_t n)
{
  if (w->len < w->size && w->size - w->len > n) {
    memset(w->buf + w->len, ' ', n);
    w->len += n;
    return;
  }
  while (n-- > 0)
    PutChar(w, ' ');
}

/* PutUnsigned -- value in decimal, at least minDigits digits (zero-padded).
 * Two digits at a time, from the end of a small buffer, then put at once. */
static void PutUnsigned(WriterStruct *w, uint64_t value, unsigned minDigits)
{
  static const char pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";
  char digits[24];
  unsigned n = sizeof digits;
  if (w->len < w->size && w->size - w->len > sizeof digits) {
    /* Room for any number: write it in place, from its last digit. */
    unsigned count = 1;
    uint64_t rest = value;
    char *end;
    while (rest >= 10) {
      rest /= 10;
      ++count;
    }
    if (count < minDigits)
      count = minDigits < sizeof digits ? minDigits : (unsigned)sizeof digits;
    end = w->buf + w->len + count;
    w->len += count;
    while (value >= 100) {
      unsigned pair = (unsigned)(value % 100);
      value /= 100;
      end -= 2;
      memcpy(end, pairs + 2 * pair, 2);
    }
    if (value >= 10) {
      end -= 2;
      memcpy(end, pairs + 2 * value, 2);
    } else {
      *--end = (char)('0' + value);
    }
    while (end > w->buf + w->len - count)
      *--end = '0';
    return;
  }
  while (value >= 100) {
    unsigned pair = (unsigned)(value % 100);
    value /= 100;
    n -= 2;
    memcpy(digits + n, pairs + 2 * pair, 2);
  }
  if (value >= 10) {
    n -= 2;
    memcpy(digits + n, pairs + 2 * value, 2);
  } else {
    digits[--n] = (char)('0' + value);
  }
  while (sizeof digits - n < minDigits && n > 0)
    digits[--n] = '0';
  PutChars(w, digits + n, sizeof digits - n);
}

/* PutHex -- "0x" and value in lower-case hex, at least minDigits digits */
static void PutHex(WriterStruct *w, uint64_t value, unsigned minDigits)
{
  char digits[20];
  unsigned n = sizeof digits;
  if (w->len < w->size && w->size - w->len > sizeof digits) {
    /* Room for any number: write it in place, from its last digit. */
    unsigned count = 1;
    char *end;
    while (count < 16 && value >> 4 * count != 0)
      ++count;
    if (count < minDigits)
      count = minDigits < 16 ? minDigits : 16;
    w->buf[w->len] = '0';
    w->buf[w->len + 1] = 'x';
    end = w->buf + w->len + 2 + count;
    w->len += 2 + count;
    while (count-- > 0) {
      *--end = "0123456789abcdef"[value & 0xF];
      value >>= 4;
    }
    return;
  }
  do {
    digits[--n] = "0123456789abcdef"[value & 0xF];
    value >>= 4;
  } while (value != 0);
  while (sizeof digits - n < minDigits && n > 2)
    digits[--n] = '0';
  digits[--n] = 'x';
  digits[--n] = '0';
  PutChars(w, digits + n, sizeof digits - n);
}

/* PutEscaped -- n bytes with C escapes for quotes, backslashes and
 * non-printable bytes (octal, three digits, so never ambiguous) */
static void PutEscaped(WriterStruct *w, const char *s, size_t n)
{
  size_t i;
  for (i = 0; i < n; ++i) {
    unsigned char c = (unsigned char)s[i];
    switch (c) {
    case '"':  PutChars(w, "\\\"", 2); break;
    case '\\': PutChars(w, "\\\\", 2); break;
    case '\n': PutChars(w, "\\n", 2); break;
    case '\t': PutChars(w, "\\t", 2); break;
    case '\r': PutChars(w, "\\r", 2); break;
    default:
      if (c < 0x20 || c >= 0x7F) {
        PutChar(w, '\\');
        PutChar(w, (char)('0' + (c >> 6)));
        PutChar(w, (char)('0' + (c >> 3 & 7)));
        PutChar(w, (char)('0' + (c & 7)));
      } else {
        PutChar(w, (char)c);
      }
      break;
    }
  }
}

/* WriterFinish -- terminate the text and return its whole length */
static size_t WriterFinish(WriterStruct *w)
{
  if (w->size > 0)
    w->buf[w->len < w->size ? w->len : w->size - 1] = '\0';
  return w->len;
}


/* PutDouble -- d as printf's "%.17g" would print it, but "nan" for NaN
 *
 * A finite double is m * 2^e exactly, which is a finite decimal: with a
 * big integer in base 10^9 this finds every digit, then rounds to 17
 * significant digits half-to-even, as glibc does.  The big integer is
 * on the stack: at most 767 digits (the smallest subnormal), in 384
 * bytes; of its digits only the first 18 are kept, and whether any
 * after them is not 0.
 */

#define BIG_LIMBS   96                   /* base 10^9 limbs: 864 digits */
#define BIG_BASE    1000000000u
#define SIGNIFICANT 17

static unsigned BigMultiply(uint32_t *limbs, unsigned n, uint32_t factor)
{
  uint64_t carry = 0;
  unsigned i;
  for (i = 0; i < n; ++i) {
    uint64_t t = (uint64_t)limbs[i] * factor + carry;
    limbs[i] = (uint32_t)(t % BIG_BASE);
    carry = t / BIG_BASE;
  }
  while (carry != 0 && n < BIG_LIMBS) {
    limbs[n++] = (uint32_t)(carry % BIG_BASE);
    carry /= BIG_BASE;
  }
  return n;
}

static void PutDouble(WriterStruct *w, double d)
{
  uint64_t bits, mantissa;
  unsigned expField, n, nd, i;
  int e, decExp, x;
  uint32_t limbs[BIG_LIMBS];
  char digits[SIGNIFICANT + 1];       /* the first digits; then sticky */
  int sticky = 0;                     /* a digit after them is not 0 */

  memcpy(&bits, &d, sizeof bits);
  expField = (unsigned)(bits >> 52 & 0x7FF);
  mantissa = bits & (((uint64_t)1 << 52) - 1);
  if (expField == 0x7FF) {
    if (mantissa != 0)
      PutString(w, "nan");
    else
      PutString(w, bits >> 63 ? "-inf" : "inf");
    return;
  }
  if (bits >> 63)
    PutChar(w, '-');
  if (expField == 0) {
    e = -1074;
  } else {
    mantissa |= (uint64_t)1 << 52;
    e = (int)expField - 1075;
  }
  if (mantissa == 0) {
    PutChar(w, '0');
    return;
  }

  /* The exact value as a big integer times 10^decExp. */
  limbs[0] = (uint32_t)(mantissa % BIG_BASE);
  limbs[1] = (uint32_t)(mantissa / BIG_BASE % BIG_BASE);
  limbs[2] = (uint32_t)(mantissa / BIG_BASE / BIG_BASE);
  n = limbs[2] != 0 ? 3 : limbs[1] != 0 ? 2 : 1;
  decExp = 0;
  if (e > 0) {
    int left = e;
    while (left > 0) {
      int step = left < 29 ? left : 29;
      n = BigMultiply(limbs, n, (uint32_t)1 << step);
      left -= step;
    }
  } else if (e < 0) {
    int left = -e;              /* m * 2^e = m * 5^-e / 10^-e */
    while (left > 0) {
      int step = left < 13 ? left : 13;
      uint32_t factor = 1;
      int j;
      for (j = 0; j < step; ++j)
        factor *= 5;
      n = BigMultiply(limbs, n, factor);
      left -= step;
    }
    decExp = e;
  }

  /* Decimal digits, most significant first. */
  nd = 0;
  for (i = n; i > 0; --i) {
    uint32_t limb = limbs[i - 1];
    char group[9];
    unsigned j, start;
    for (j = 9; j > 0; --j) {
      group[j - 1] = (char)('0' + limb % 10);
      limb /= 10;
    }
    start = 0;
    if (i == n)
      while (start < 8 && group[start] == '0')
        ++start;
    for (j = start; j < 9; ++j) {
      if (nd < sizeof digits)
        digits[nd] = group[j];
      else if (group[j] != '0')
        sticky = 1;
      ++nd;
    }
  }
  x = (int)nd - 1 + decExp;     /* exponent of the first digit */

  /* Round to SIGNIFICANT digits, half to even. */
  if (nd > SIGNIFICANT) {
    int up;
    if (digits[SIGNIFICANT] > '5') {
      up = 1;
    } else if (digits[SIGNIFICANT] < '5') {
      up = 0;
    } else {
      up = sticky || ((digits[SIGNIFICANT - 1] - '0') & 1);
    }
    nd = SIGNIFICANT;
    if (up) {
      i = nd;
      while (i > 0 && digits[i - 1] == '9') {
        digits[i - 1] = '0';
        --i;
      }
      if (i > 0) {
        ++digits[i - 1];
      } else {
        digits[0] = '1';        /* 99...9 became 100...0 */
        ++x;
      }
    }
  }
  while (nd > 1 && digits[nd - 1] == '0')
    --nd;

  /* %g: scientific if the exponent is below -4 or at least the precision. */
  if (x < -4 || x >= SIGNIFICANT) {
    unsigned ex = (unsigned)(x < 0 ? -x : x);
    PutChar(w, digits[0]);
    if (nd > 1) {
      PutChar(w, '.');
      PutChars(w, digits + 1, nd - 1);
    }
    PutChar(w, 'e');
    PutChar(w, x < 0 ? '-' : '+');
    PutUnsigned(w, ex, 2);
  } else if (x >= 0) {
    for (i = 0; i <= (unsigned)x; ++i)
      PutChar(w, i < nd ? digits[i] : '0');
    if (nd > (unsigned)x + 1) {
      PutChar(w, '.');
      PutChars(w, digits + x + 1, nd - (unsigned)x - 1);
    }
  } else {
    PutChars(w, "0.", 2);
    for (i = 0; i < (unsigned)(-x - 1); ++i)
      PutChar(w, '0');
    PutChars(w, digits, nd);
  }
}


/* EventFormatDouble -- d as "%.17g" into buf */

size_t EventFormatDouble(char *buf, size_t size, double d)
{
  WriterStruct w;
  w.buf = buf;
  w.size = size;
  w.len = 0;
  PutDouble(&w, d);
  return WriterFinish(&w);
}


/* EventFormatContextInit -- widths from the registry's names */

void EventFormatContextInit(EventFormatContextStruct *ctx, const EventRegistryStruct *registry)
{
  unsigned i;
  memset(ctx, 0, sizeof *ctx);
  ctx->registry = registry;
  if (registry == NULL)
    return;
  for (i = 0; i < registry->kindCount && registry->kinds != NULL; ++i) {
    const char *name = registry->kinds[i].name;
    size_t len = name != NULL ? strlen(name) : 0;
    if (len > ctx->kindWidth && len <= EVENT_NAME_MAX)
      ctx->kindWidth = (unsigned)len;
  }
  for (i = 0; i < registry->eventCount && registry->events != NULL; ++i) {
    const char *name = registry->events[i].name;
    size_t len = name != NULL ? strlen(name) : 0;
    if (len > ctx->nameWidth && len <= EVENT_NAME_MAX)
      ctx->nameWidth = (unsigned)len;
  }
}


/* PutTimes -- the elapsed and the wall-clock columns
 *
 * Elapsed time is (clock - startClock) / clockHz, truncated to whole
 * nanoseconds, exactly.  A clock before startClock is negative.  The
 * wall clock is startRealtime plus elapsed, as a UTC time of day.
 */

static void PutTimes(WriterStruct *w, EventClock clock, const EventFormatContextStruct *ctx)
{
  uint64_t delta, seconds, ns, total, realtime, secondOfDay;
  int negative = clock < ctx->startClock;
  char elapsed[40];
  WriterStruct ew;
  size_t elapsedLen;

  delta = negative ? ctx->startClock - clock : clock - ctx->startClock;
  if (ctx->clockHz == 0) {
    seconds = delta / NS_PER_SECOND;
    ns = delta % NS_PER_SECOND;
  } else {
    seconds = delta / ctx->clockHz;
    ns = MulDiv(delta % ctx->clockHz, NS_PER_SECOND, ctx->clockHz);
  }

  ew.buf = elapsed;
  ew.size = sizeof elapsed;
  ew.len = 0;
  if (negative)
    PutChar(&ew, '-');
  PutUnsigned(&ew, seconds, 1);
  PutChar(&ew, '.');
  PutUnsigned(&ew, ns, 9);
  elapsedLen = WriterFinish(&ew);
  if (elapsedLen < ELAPSED_WIDTH)
    PutSpaces(w, ELAPSED_WIDTH - elapsedLen);
  PutString(w, elapsed);
  PutChar(w, ' ');

  total = seconds * NS_PER_SECOND + ns;   /* wraps only for absurd clocks */
  realtime = negative ? ctx->startRealtime - total : ctx->startRealtime + total;
  secondOfDay = realtime / NS_PER_SECOND % 86400;
  PutUnsigned(w, secondOfDay / 3600, 2);
  PutChar(w, ':');
  PutUnsigned(w, secondOfDay / 60 % 60, 2);
  PutChar(w, ':');
  PutUnsigned(w, secondOfDay % 60, 2);
  PutChar(w, '.');
  PutUnsigned(w, realtime % NS_PER_SECOND, 9);
}


/* EventFormatTimes -- the first two columns of EventFormat's line */

/* EventClockRate -- the clock's rate: the header's, or the rate between
 * the start pair and a later ClockSync pair at least EVENT_SYNC_SPAN_NS
 * after it.  The traceback and the reader use this one rule, so they
 * agree on every event's time.  design/telemetry.txt .sol.clock */
uint64_t EventClockRate(uint64_t headerHz, EventClock startClock, uint64_t startMonotonic,
                        EventClock clock, uint64_t monotonic)
{
  uint64_t ticks, ns, hz;
  if (clock <= startClock || monotonic <= startMonotonic
      || (headerHz != 0 && monotonic - startMonotonic < EVENT_SYNC_SPAN_NS))
    return headerHz;
  ticks = clock - startClock;
  ns = monotonic - startMonotonic;
  if (ticks / ns >= UINT64_MAX / NS_PER_SECOND)
    return headerHz;
  hz = MulDiv(ticks, NS_PER_SECOND, ns);
  return hz != 0 ? hz : headerHz;
}

size_t EventFormatTimes(char *buf, size_t size, EventClock clock,
                        const EventFormatContextStruct *ctx)
{
  WriterStruct w;
  w.buf = buf;
  w.size = size;
  w.len = 0;
  PutTimes(&w, clock, ctx);
  return WriterFinish(&w);
}


/* PutPadded -- s, then spaces to width */

static void PutPadded(WriterStruct *w, const char *s, unsigned width)
{
  size_t len = PutString(w, s);
  if (len < width)
    PutSpaces(w, width - len);
}


/* EventFormat -- one line of text for an event
 *
 *   ELAPSED WALLCLOCK THREAD KIND EVENT name=value ...
 */

size_t EventFormat(char *buf, size_t size, const EventRecordStruct *rec,
                   const EventFormatContextStruct *ctx)
{
  WriterStruct w;
  const EventDescStruct *desc = rec->desc;
  const EventRegistryStruct *registry = ctx->registry;
  size_t before;
  unsigned i;

  w.buf = buf;
  w.size = size;
  w.len = 0;

  PutTimes(&w, rec->clock, ctx);
  PutChar(&w, ' ');

  before = w.len;
  PutChar(&w, 'T');
  PutUnsigned(&w, rec->thread, 1);
  if (w.len - before < THREAD_WIDTH)
    PutSpaces(&w, THREAD_WIDTH - (w.len - before));
  PutChar(&w, ' ');

  if (registry != NULL && registry->kinds != NULL && rec->kind < registry->kindCount
      && registry->kinds[rec->kind].name != NULL) {
    PutPadded(&w, registry->kinds[rec->kind].name, ctx->kindWidth);
  } else {
    before = w.len;
    PutChar(&w, 'K');
    PutUnsigned(&w, rec->kind, 1);
    if (w.len - before < ctx->kindWidth)
      PutSpaces(&w, ctx->kindWidth - (w.len - before));
  }
  PutChar(&w, ' ');

  if (desc == NULL) {
    PutString(&w, "? code=");
    PutHex(&w, rec->code, 4);
    PutString(&w, " length=");
    PutUnsigned(&w, rec->length, 1);
    return WriterFinish(&w);
  }

  if (desc->format == NULL || desc->format[0] == '\0') {
    PutString(&w, desc->name != NULL ? desc->name : "?");
    return WriterFinish(&w);
  }
  PutPadded(&w, desc->name != NULL ? desc->name : "?", ctx->nameWidth);

  for (i = 0; i < EVENT_PARAM_MAX && desc->format[i] != '\0'; ++i) {
    const EventValueUnion *value = &rec->values[i];
    PutChar(&w, ' ');
    if (desc->paramNames != NULL && desc->paramNames[i] != NULL) {
      PutString(&w, desc->paramNames[i]);
    } else {
      PutChar(&w, 'p');
      PutUnsigned(&w, i, 1);
    }
    PutChar(&w, '=');
    switch (desc->format[i]) {
    case 'P':                   /* labels name objects too: a pool, an arena */
    case 'A': {
      const char *label = ctx->label != NULL ? ctx->label(ctx->labelClosure, value->u) : NULL;
      PutHex(&w, value->u, 1);
      if (label != NULL) {
        PutChar(&w, '[');
        PutEscaped(&w, label, strlen(label));
        PutChar(&w, ']');
      }
      break;
    }
    case 'W': case 'U':
      PutUnsigned(&w, value->u, 1);
      break;
    case 'D':
      PutDouble(&w, value->d);
      break;
    case 'S':
      PutChar(&w, '"');
      if (value->s != NULL)
        PutEscaped(&w, value->s, rec->stringLength);
      PutChar(&w, '"');
      break;
    default:
      PutChar(&w, '?');
      break;
    }
  }
  return WriterFinish(&w);
}


/* THE STREAM LAYER */


/* TableStruct -- a hash table from 64-bit keys to 64-bit values, for
 * the Intern and Label tables.  design/telemetry.txt .req.intern */

typedef struct TableEntryStruct {
  uint64_t key;
  uint64_t value;
  int used;
} TableEntryStruct;

typedef struct TableStruct {
  TableEntryStruct *entries;
  size_t capacity;              /* a power of 2, or 0 */
  size_t count;
} TableStruct;

static size_t TableHash(uint64_t key, size_t capacity)
{
  key ^= key >> 33;
  key *= 0xFF51AFD7ED558CCDu;
  key ^= key >> 33;
  return (size_t)key & (capacity - 1);
}

static TableEntryStruct *TableFind(const TableStruct *table, uint64_t key)
{
  size_t i;
  if (table->capacity == 0)
    return NULL;
  for (i = TableHash(key, table->capacity);; i = (i + 1) & (table->capacity - 1)) {
    TableEntryStruct *entry = &table->entries[i];
    if (!entry->used || entry->key == key)
      return entry;
  }
}

/* TableSet -- returns 0 on success, 1 if out of memory */
static int TableSet(TableStruct *table, uint64_t key, uint64_t value)
{
  TableEntryStruct *entry;
  if ((table->count + 1) * 2 > table->capacity) {
    size_t newCapacity = table->capacity == 0 ? 64 : table->capacity * 2;
    TableStruct bigger;
    size_t i;
    bigger.entries = calloc(newCapacity, sizeof *bigger.entries);
    if (bigger.entries == NULL)
      return 1;
    bigger.capacity = newCapacity;
    bigger.count = table->count;
    for (i = 0; i < table->capacity; ++i)
      if (table->entries[i].used)
        *TableFind(&bigger, table->entries[i].key) = table->entries[i];
    free(table->entries);
    *table = bigger;
  }
  entry = TableFind(table, key);
  if (!entry->used) {
    entry->used = 1;
    entry->key = key;
    ++table->count;
  }
  entry->value = value;
  return 0;
}


/* BlockStruct -- a block found by the index.  design/telemetry.txt .stream.block */

typedef struct IndexEntryStruct {
  uint32_t index;               /* a block's index in the log (.stream.check) */
  size_t offset;                /* and where it is */
} IndexEntryStruct;

typedef struct BlockStruct {
  size_t offset;                /* of the block header */
  size_t dataEnd;               /* end of its sound events: code 0, end, or a fault */
  uint32_t thread;
  unsigned kind;
  unsigned level;               /* signal level, from the flags (.sol.signal.level) */
  uint64_t seq;
  uint32_t index;               /* its place in the log (2.0 on), or NONE */
  uint32_t length;              /* as its header says */
  int cut;                      /* it runs past the end of the stream */
  size_t events;                /* known events in it */
} BlockStruct;

/* SeqStruct -- the blocks of one (thread, kind), and a cursor in them.
 * Only the clock of the current event is read: its fields are decoded
 * when it is returned.  design/telemetry.txt .stream.order .eventcnv.reader */

typedef struct SeqStruct {
  size_t block;                 /* current block: index into blocks */
  size_t blockLimit;            /* one past its last block */
  size_t pos;                   /* stream offset of the current event */
  EventClock clock;             /* its clock */
  const EventDescStruct *desc;  /* its descriptor */
} SeqStruct;

/* CodeStruct -- what the index knows of a code, in a table of all
 * 65536, so that checking an event is a load, not a search.
 * design/telemetry.txt .eventcnv.reader */

typedef struct CodeStruct {
  uint16_t event;               /* 1 + its index in the registry's events; 0: unknown */
  uint16_t length;              /* the length of all its events, if that is fixed and
                                   the index need not look inside them; 0: decode each */
} CodeStruct;

/* ThreadStruct -- a thread with events, for EventStreamThread */

typedef struct ThreadStruct {
  uint32_t thread;
  size_t events;
} ThreadStruct;

struct EventStreamStruct {
  const unsigned char *base;    /* the stream; for a scan, its window */
  size_t size;                  /* bytes at base */
  unsigned options;

  /* A scan (EventStreamScan) holds a window of the stream, bytes
   * origin to origin + size, and reads more as the index needs them.
   * design/telemetry.txt .eventcnv.scan */
  size_t origin;                /* stream offset of base[0]; 0 if not a scan */
  int eof;                      /* the stream ends at origin + size */
  unsigned char *window;
  size_t windowCapacity;
  EventStreamReadFunction read; /* NULL if not a scan */
  void *readClosure;

  EventStreamInfoStruct info;

  /* The registry the stream carries, and the memory behind it. */
  EventRegistryStruct registry;
  EventKindDescStruct *kinds;
  EventDescStruct *events;
  const char **paramStrings;    /* paramNames and paramDocs of every event */
  char *strings;                /* NUL-terminated copies of the header's strs */
  size_t stringsSize, stringsUsed;

  CodeStruct *codes;            /* 65536 of them, by code */
  unsigned swap;                /* the data's byte order is not the machine's */
  size_t *counts;               /* known events by kind and event: [kind * eventCount + i] */
  ThreadStruct *threads;        /* sorted by serial */
  size_t threadCount;

  BlockStruct *blocks;
  size_t blockCount, blockCapacity;
  IndexEntryStruct *indexes;    /* the log's block indexes, for IndexCheck */
  size_t indexCount, indexCapacity;
  int merging;                  /* MergeStart has run */
  SeqStruct *seqs;
  size_t seqCount;
  size_t *heap;                 /* indexes of seqs, a min-heap by EventBefore */
  size_t heapCount;

  TableStruct interns;          /* string id -> offset of the string in the stream */
  TableStruct labels;           /* address -> string id */

  char **problems;
  size_t problemCount, problemCapacity;
  int outOfMemory;
};


/* Formatted messages.
 *
 * FormatV understands %s (const char *), %q (const char *, quoted with
 * escapes), %u (uint64_t, decimal), %x (uint64_t, 0x-hex, at least 4
 * digits) and %%.  Every number must be passed as uint64_t.
 */

static void FormatV(WriterStruct *w, const char *format, va_list args)
{
  const char *f;
  for (f = format; *f != '\0'; ++f) {
    if (*f != '%') {
      PutChar(w, *f);
      continue;
    }
    ++f;
    switch (*f) {
    case 's': PutString(w, va_arg(args, const char *)); break;
    case 'q': {
      const char *s = va_arg(args, const char *);
      PutChar(w, '"');
      PutEscaped(w, s, strlen(s));
      PutChar(w, '"');
      break;
    }
    case 'u': PutUnsigned(w, va_arg(args, uint64_t), 1); break;
    case 'x': PutHex(w, va_arg(args, uint64_t), 4); break;
    case '%': PutChar(w, '%'); break;
    default: return;            /* a bad format: stop */
    }
  }
}

/* FormatMessage -- into a caller's buffer */
static void FormatMessage(char *buf, size_t size, const char *format, ...)
{
  WriterStruct w;
  va_list args;
  w.buf = buf;
  w.size = size;
  w.len = 0;
  va_start(args, format);
  FormatV(&w, format, args);
  va_end(args);
  (void)WriterFinish(&w);
}

/* AddProblem -- record a fault of the stream */
static void AddProblem(EventStreamStruct *stream, const char *format, ...)
{
  WriterStruct w;
  va_list args;
  char *text;

  w.buf = NULL;
  w.size = 0;
  w.len = 0;
  va_start(args, format);
  FormatV(&w, format, args);
  va_end(args);

  text = malloc(w.len + 1);
  if (text == NULL) {
    stream->outOfMemory = 1;
    return;
  }
  w.buf = text;
  w.size = w.len + 1;
  w.len = 0;
  va_start(args, format);
  FormatV(&w, format, args);
  va_end(args);
  (void)WriterFinish(&w);

  if (stream->problemCount == stream->problemCapacity) {
    size_t newCapacity = stream->problemCapacity == 0 ? 4 : stream->problemCapacity * 2;
    char **bigger = realloc(stream->problems, newCapacity * sizeof *bigger);
    if (bigger == NULL) {
      free(text);
      stream->outOfMemory = 1;
      return;
    }
    stream->problems = bigger;
    stream->problemCapacity = newCapacity;
  }
  stream->problems[stream->problemCount++] = text;
}


/* Reading the header.  design/telemetry.txt .stream.header .stream.header.var
 *
 * A ParseStruct is a cursor over the header's variable part; pos never
 * passes end (the header length), which was checked against the file.
 */

typedef struct ParseStruct {
  EventStreamStruct *stream;
  size_t pos;
  size_t end;
  char *msg;
  size_t msgSize;
} ParseStruct;

static int ParseFail(ParseStruct *ps, size_t at, const char *what)
{
  FormatMessage(ps->msg, ps->msgSize,
                "offset %u: header truncated: %s runs past the end of the header (header length %u)",
                (uint64_t)at, what, (uint64_t)ps->end);
  return 0;
}

static int ParseU8(ParseStruct *ps, unsigned *valueReturn, const char *what)
{
  if (ps->end - ps->pos < 1)
    return ParseFail(ps, ps->pos, what);
  *valueReturn = ps->stream->base[ps->pos];
  ps->pos += 1;
  return 1;
}

static int ParseU16(ParseStruct *ps, unsigned *valueReturn, const char *what)
{
  if (ps->end - ps->pos < 2)
    return ParseFail(ps, ps->pos, what);
  *valueReturn = (unsigned)EventLoad(ps->stream->base + ps->pos, 2, 0);
  ps->pos += 2;
  return 1;
}

/* ParseStr -- a str (u16 length, bytes) copied with a NUL */
static int ParseStr(ParseStruct *ps, const char **strReturn, size_t *lengthReturn, const char *what)
{
  EventStreamStruct *stream = ps->stream;
  size_t at = ps->pos;
  unsigned length;
  char *copy;
  if (!ParseU16(ps, &length, what))
    return 0;
  if (ps->end - ps->pos < length)
    return ParseFail(ps, at, what);
  if (stream->stringsSize - stream->stringsUsed < (size_t)length + 1) {
    /* Cannot happen: the strings area is sized for the whole header. */
    FormatMessage(ps->msg, ps->msgSize, "offset %u: %s: internal error: string area full",
                  (uint64_t)at, what);
    return 0;
  }
  copy = stream->strings + stream->stringsUsed;
  memcpy(copy, stream->base + ps->pos, length);
  copy[length] = '\0';
  stream->stringsUsed += (size_t)length + 1;
  ps->pos += length;
  *strReturn = copy;
  if (lengthReturn != NULL)
    *lengthReturn = length;
  return 1;
}

/* IsName -- a C identifier of at most EVENT_NAME_MAX characters.
 * design/telemetry.txt .reg.limits */
static int IsName(const char *s, size_t length)
{
  size_t i;
  if (length == 0 || length > EVENT_NAME_MAX || strlen(s) != length)
    return 0;
  for (i = 0; i < length; ++i) {
    char c = s[i];
    int letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    int digit = c >= '0' && c <= '9';
    if (!letter && !(digit && i > 0))
      return 0;
  }
  return 1;
}

/* ParseName -- a str that must be a name */
static int ParseName(ParseStruct *ps, const char **nameReturn, const char *what)
{
  size_t at = ps->pos, length;
  if (!ParseStr(ps, nameReturn, &length, what))
    return 0;
  if (!IsName(*nameReturn, length)) {
    FormatMessage(ps->msg, ps->msgSize,
                  "offset %u: %s %q is not a name (a C identifier of 1 to 63 characters)",
                  (uint64_t)at, what, *nameReturn);
    return 0;
  }
  return 1;
}

/* CheckFormat -- letters from PAWUSD, at most 16, S only last.
 * design/telemetry.txt .reg.format .reg.limits */
static const char *CheckFormat(const char *format, size_t length)
{
  size_t i;
  if (length > EVENT_PARAM_MAX)
    return "has more than 16 parameters";
  if (strlen(format) != length)
    return "has a NUL in it";
  for (i = 0; i < length; ++i) {
    if (strchr("PAWUSD", format[i]) == NULL)
      return "has a letter other than P, A, W, U, S and D";
    if (format[i] == 'S' && i + 1 != length)
      return "has a string that is not last";
  }
  return NULL;
}

typedef struct SortDescStruct {
  EventDescStruct desc;
  size_t offset;                /* of its entry in the header */
} SortDescStruct;

static int SortDescCompare(const void *a, const void *b)
{
  const SortDescStruct *da = a, *db = b;
  if (da->desc.code != db->desc.code)
    return da->desc.code < db->desc.code ? -1 : 1;
  return da->offset < db->offset ? -1 : da->offset > db->offset;
}

/* ParseRegistry -- the variable part of the header */
static int ParseRegistry(ParseStruct *ps)
{
  EventStreamStruct *stream = ps->stream;
  SortDescStruct *sorted = NULL;
  unsigned kindCount, eventCount, i;
  size_t paramSlots, paramUsed = 0;
  const char *registryName;

  if (!ParseStr(ps, &stream->info.program, NULL, "the program name"))
    return 0;
  if (!ParseStr(ps, &registryName, NULL, "the registry name"))
    return 0;
  stream->registry.name = registryName;

  if (!ParseU16(ps, &kindCount, "the kind count"))
    return 0;
  if (kindCount > EVENT_KIND_LIMIT) {
    FormatMessage(ps->msg, ps->msgSize,
                  "offset %u: kind count %u is more than EVENT_KIND_LIMIT (32)",
                  (uint64_t)(ps->pos - 2), (uint64_t)kindCount);
    return 0;
  }
  stream->kinds = calloc(kindCount + 1, sizeof *stream->kinds);
  if (stream->kinds == NULL)
    goto failMemory;
  for (i = 0; i < kindCount; ++i) {
    if (!ParseName(ps, &stream->kinds[i].name, "a kind name"))
      return 0;
    if (!ParseStr(ps, &stream->kinds[i].doc, NULL, "a kind doc"))
      return 0;
  }
  stream->registry.kindCount = kindCount;
  stream->registry.kinds = stream->kinds;

  if (!ParseU16(ps, &eventCount, "the event count"))
    return 0;
  /* Each event entry takes at least 10 bytes: check before allocating. */
  if ((size_t)eventCount * 10 > ps->end - ps->pos) {
    ParseFail(ps, ps->pos, "the event table");
    goto fail;
  }
  sorted = calloc((size_t)eventCount + 1, sizeof *sorted);
  stream->events = calloc((size_t)eventCount + 1, sizeof *stream->events);
  /* Each parameter takes at least 4 bytes: two str lengths. */
  paramSlots = 2 * ((ps->end - ps->pos) / 4) + 2;
  stream->paramStrings = calloc(paramSlots, sizeof *stream->paramStrings);
  if (sorted == NULL || stream->events == NULL || stream->paramStrings == NULL)
    goto failMemory;

  for (i = 0; i < eventCount; ++i) {
    SortDescStruct *entry = &sorted[i];
    EventDescStruct *desc = &entry->desc;
    unsigned code, kind, flags, p;
    size_t formatLength;
    const char *why;

    entry->offset = ps->pos;
    if (!ParseU16(ps, &code, "an event code") || !ParseU8(ps, &kind, "an event kind")
        || !ParseU8(ps, &flags, "an event's flags")
        || !ParseStr(ps, &desc->format, &formatLength, "an event format"))
      goto fail;
    if (code == 0) {
      FormatMessage(ps->msg, ps->msgSize, "offset %u: event code 0 is not allowed (it ends a block)",
                    (uint64_t)entry->offset);
      goto fail;
    }
    if (kind >= kindCount) {
      FormatMessage(ps->msg, ps->msgSize,
                    "offset %u: event code %x has kind %u, but there are %u kinds",
                    (uint64_t)entry->offset, (uint64_t)code, (uint64_t)kind, (uint64_t)kindCount);
      goto fail;
    }
    why = CheckFormat(desc->format, formatLength);
    if (why != NULL) {
      FormatMessage(ps->msg, ps->msgSize, "offset %u: event code %x: format %q %s",
                    (uint64_t)entry->offset, (uint64_t)code, desc->format, why);
      goto fail;
    }
    if (!ParseName(ps, &desc->name, "an event name")
        || !ParseStr(ps, &desc->doc, NULL, "an event doc"))
      goto fail;
    desc->code = code;
    desc->kind = kind;
    desc->always = flags & 1u;
    desc->retired = flags >> 1 & 1u;
    desc->paramCount = (unsigned)formatLength;
    if (paramSlots - paramUsed < 2 * formatLength) {
      ParseFail(ps, ps->pos, "an event's parameters");
      goto fail;
    }
    desc->paramNames = stream->paramStrings + paramUsed;
    desc->paramDocs = stream->paramStrings + paramUsed + formatLength;
    for (p = 0; p < formatLength; ++p) {
      if (!ParseName(ps, &stream->paramStrings[paramUsed + p], "a parameter name")
          || !ParseStr(ps, &stream->paramStrings[paramUsed + formatLength + p], NULL,
                       "a parameter doc"))
        goto fail;
    }
    paramUsed += 2 * formatLength;
  }

  /* Sort by code for EventRegistryLookup; a code may appear once. */
  qsort(sorted, eventCount, sizeof *sorted, SortDescCompare);
  for (i = 0; i < eventCount; ++i) {
    if (i > 0 && sorted[i].desc.code == sorted[i - 1].desc.code) {
      FormatMessage(ps->msg, ps->msgSize,
                    "offset %u: event code %x appears twice in the registry",
                    (uint64_t)sorted[i].offset, (uint64_t)sorted[i].desc.code);
      goto fail;
    }
    stream->events[i] = sorted[i].desc;
  }
  stream->registry.eventCount = eventCount;
  stream->registry.events = stream->events;
  free(sorted);
  return 1;

failMemory:
  FormatMessage(ps->msg, ps->msgSize, "offset %u: out of memory reading the registry",
                (uint64_t)ps->pos);
fail:
  free(sorted);
  return 0;
}

/* ParseHeader -- the fixed part, then the registry.  design/telemetry.txt .stream.header */
static EventStreamRes ParseHeader(EventStreamStruct *stream, char *msg, size_t msgSize)
{
  const unsigned char *b = stream->base;
  size_t size = stream->size;
  EventStreamInfoStruct *info = &stream->info;
  unsigned mark;
  uint32_t headerLength;
  ParseStruct ps;

  if (size == 0) {
    FormatMessage(msg, msgSize, "offset 0: empty file: not a telltale stream");
    return EventStreamREFUSED;
  }
  if (memcmp(b, EVENT_STREAM_MAGIC, size < EVENT_STREAM_MAGIC_LEN ? size : EVENT_STREAM_MAGIC_LEN) != 0) {
    FormatMessage(msg, msgSize, "offset 0: bad magic: not a telltale stream (it does not start with %q)",
                  EVENT_STREAM_MAGIC);
    return EventStreamREFUSED;
  }
  /* The version first: another major may have another header. */
  if (size >= 14) {
    info->major = (unsigned)EventLoad(b + 8, 2, 0);
    info->median = (unsigned)EventLoad(b + 10, 2, 0);
    info->minor = (unsigned)EventLoad(b + 12, 2, 0);
    if ((info->major != EVENT_VERSION_MAJOR && info->major != 1) || info->median != EVENT_VERSION_MEDIAN) {
      /* design/telemetry.txt .sol.version .req.back: 1.0.x too */
      FormatMessage(msg, msgSize,
                    "offset 8: stream version %u.%u.%u is not supported: this reader reads 1.0.x and %u.%u.x",
                    (uint64_t)info->major, (uint64_t)info->median, (uint64_t)info->minor,
                    (uint64_t)EVENT_VERSION_MAJOR, (uint64_t)EVENT_VERSION_MEDIAN);
      return EventStreamREFUSED;
    }
  }
  if (size < EVENT_STREAM_FIXED_LEN) {
    FormatMessage(msg, msgSize,
                  "offset 0: header truncated: the file is %u bytes, the fixed header is 64",
                  (uint64_t)size);
    return EventStreamREFUSED;
  }

  mark = (unsigned)EventLoad(b + 14, 2, 0);
  if (mark == EVENT_BYTE_ORDER_MARK) {
    info->layout.bigEndian = 0;
  } else if (mark == 0x0201u) {
    info->layout.bigEndian = 1;
  } else {
    FormatMessage(msg, msgSize,
                  "offset 14: bad byte-order mark: bytes %u %u (expected 2 1 or 1 2)",
                  (uint64_t)b[14], (uint64_t)b[15]);
    return EventStreamREFUSED;
  }
  info->layout.pointerSize = b[16];
  info->layout.wordSize = b[17];
  if (b[16] != 4 && b[16] != 8) {
    FormatMessage(msg, msgSize, "offset 16: pointer size %u is not supported (4 or 8)", (uint64_t)b[16]);
    return EventStreamREFUSED;
  }
  if (b[17] != 4 && b[17] != 8) {
    FormatMessage(msg, msgSize, "offset 17: word size %u is not supported (4 or 8)", (uint64_t)b[17]);
    return EventStreamREFUSED;
  }
  info->doubleFormat = b[18];
  if (b[18] != 1) {
    FormatMessage(msg, msgSize,
                  "offset 18: double format %u is not supported (1: IEEE 754 binary64)", (uint64_t)b[18]);
    return EventStreamREFUSED;
  }
  headerLength = (uint32_t)EventLoad(b + 20, 4, 0);
  info->headerLength = headerLength;
  if (headerLength < EVENT_STREAM_FIXED_LEN) {
    FormatMessage(msg, msgSize, "offset 20: header length %u is less than the 64-byte fixed header",
                  (uint64_t)headerLength);
    return EventStreamREFUSED;
  }
  if (headerLength > size) {
    FormatMessage(msg, msgSize, "offset 20: header length %u runs past end of file (size %u)",
                  (uint64_t)headerLength, (uint64_t)size);
    return EventStreamREFUSED;
  }
  info->headerHz = EventLoad(b + 24, 8, 0);
  info->startClock = EventLoad(b + 32, 8, 0);
  info->startRealtime = EventLoad(b + 40, 8, 0);
  info->startMonotonic = EventLoad(b + 48, 8, 0);
  info->pid = (uint32_t)EventLoad(b + 56, 4, 0);
  info->session = info->major >= 2 ? (uint32_t)EventLoad(b + EVENT_STREAM_SESSION_AT, 4, 0) : 0;
  info->blockHeaderLength = info->major >= 2 ? EVENT_BLOCK_HEADER_LEN : EVENT_BLOCK_HEADER_LEN_1;

  /* Every str copy takes its bytes plus a NUL, and at least 2 bytes of
   * header per str: this is room for all of them. */
  stream->stringsSize = 2 * (size_t)(headerLength - EVENT_STREAM_FIXED_LEN) + 16;
  stream->strings = malloc(stream->stringsSize);
  if (stream->strings == NULL) {
    FormatMessage(msg, msgSize, "offset 64: out of memory reading the registry");
    return EventStreamERROR;
  }
  ps.stream = stream;
  ps.pos = EVENT_STREAM_FIXED_LEN;
  ps.end = headerLength;
  ps.msg = msg;
  ps.msgSize = msgSize;
  if (!ParseRegistry(&ps))
    return EventStreamREFUSED;
  /* A newer minor may add fields: skip them.  design/telemetry.txt .stream.header.var */
  info->registry = &stream->registry;
  return EventStreamOK;
}


/* Indexing the blocks.  design/telemetry.txt .stream.block
 *
 * IndexBlocks walks the blocks in file order and every event in them,
 * so that faults are found before any event is returned, and gathers
 * what must be known before events are shown in time order: the
 * ClockSync events, StreamEnd, the unknown codes.
 */

typedef struct SyncStruct {
  EventClock clock;
  uint64_t monotonic;
} SyncStruct;

typedef struct IndexStruct {
  SyncStruct first, last;       /* ClockSyncs with the lowest and highest clock */
} IndexStruct;

/* FindBlockMagic -- the offset of the next "TTBK" at or after from, or size */
static size_t FindBlockMagic(const EventStreamStruct *stream, size_t from)
{
  size_t pos = from;
  while (pos < stream->size && stream->size - pos >= 4) {
    const unsigned char *t = memchr(stream->base + pos, 'T', stream->size - pos - 3);
    if (t == NULL)
      break;
    pos = (size_t)(t - stream->base);
    if (memcmp(t, EVENT_BLOCK_MAGIC, 4) == 0)
      return pos;
    ++pos;
  }
  return stream->size;
}

/* Fill -- for a scan: make the window hold need bytes from *pos on,
 * or all there are to the end of the stream.  The window moves: *pos
 * is where the same byte is after.  design/telemetry.txt .eventcnv.scan */
static void Fill(EventStreamStruct *stream, size_t *pos, size_t need)
{
  if (stream->read == NULL || stream->eof || stream->size - *pos >= need)
    return;
  if (*pos > 0) {
    memmove(stream->window, stream->window + *pos, stream->size - *pos);
    stream->origin += *pos;
    stream->size -= *pos;
    *pos = 0;
  }
  stream->base = stream->window;
  while (stream->size < need) {
    long n;
    /* The window grows as the bytes come, not to what a length field
     * claims: a corrupt length costs no more memory than the stream's
     * own size.  design/telemetry.txt .eventcnv.scan */
    if (stream->size == stream->windowCapacity) {
      size_t capacity = stream->windowCapacity * 2 < need ? stream->windowCapacity * 2 : need;
      unsigned char *bigger = realloc(stream->window, capacity);
      if (bigger == NULL) {     /* read no further: what is left is truncated */
        stream->outOfMemory = 1;
        stream->eof = 1;
        return;
      }
      stream->window = bigger;
      stream->base = bigger;
      stream->windowCapacity = capacity;
    }
    n = stream->read(stream->readClosure, stream->window + stream->size,
                     stream->windowCapacity - stream->size);
    if (n <= 0) {
      if (n < 0)
        AddProblem(stream, "offset %u: the stream could not be read further",
                   (uint64_t)(stream->origin + stream->size));
      stream->eof = 1;
      return;
    }
    stream->size += (size_t)n;
  }
}

/* AddBlock -- note a block, at its stream offset */
static int AddBlock(EventStreamStruct *stream, const BlockStruct *block)
{
  if (stream->blockCount == stream->blockCapacity) {
    size_t newCapacity = stream->blockCapacity == 0 ? 64 : stream->blockCapacity * 2;
    BlockStruct *bigger = realloc(stream->blocks, newCapacity * sizeof *bigger);
    if (bigger == NULL)
      return 0;
    stream->blocks = bigger;
    stream->blockCapacity = newCapacity;
  }
  stream->blocks[stream->blockCount] = *block;
  stream->blocks[stream->blockCount].offset += stream->origin;
  stream->blocks[stream->blockCount].dataEnd += stream->origin;
  ++stream->blockCount;
  return 1;
}

static int IsFormat(const EventDescStruct *desc, const char *format)
{
  return desc != NULL && desc->format != NULL && strcmp(desc->format, format) == 0;
}

/* Loading in the data's byte order, for the index and the merge: swap
 * is 1 if it is not the machine's. */

static uint16_t Load16(const unsigned char *p, unsigned swap)
{
  uint16_t v;
  memcpy(&v, p, sizeof v);
  return swap ? (uint16_t)(v >> 8 | v << 8) : v;
}

static uint64_t Load64(const unsigned char *p, unsigned swap)
{
  unsigned char bytes[8];
  uint64_t v;
  unsigned i;
  if (!swap) {
    memcpy(&v, p, sizeof v);
    return v;
  }
  for (i = 0; i < 8; ++i)
    bytes[i] = p[7 - i];
  memcpy(&v, bytes, sizeof v);
  return v;
}

/* FixedLength -- the length of every event of desc in this layout, or
 * 0 if it has a string (its length varies) */
static unsigned FixedLength(const EventDescStruct *desc, const EventLayoutStruct *layout)
{
  unsigned length = EVENT_HEADER_LEN, i;
  for (i = 0; desc->format[i] != '\0'; ++i)
    switch (desc->format[i]) {
    case 'P': case 'A': length += layout->pointerSize; break;
    case 'W': length += layout->wordSize; break;
    case 'U': length += 4; break;
    case 'D': length += 8; break;
    default: return 0;          /* S, or a letter ParseRegistry refused */
    }
  return length;
}

/* CodesInit -- the direct table of codes, and the counts.  An event of
 * a fixed length and not one of telltale's own (which the index reads)
 * is sound if its length is that length: its fields need no look. */
static int CodesInit(EventStreamStruct *stream)
{
  const EventRegistryStruct *registry = &stream->registry;
  EventLayoutStruct native;
  unsigned i;
  EventLayoutNative(&native);
  stream->swap = native.bigEndian != stream->info.layout.bigEndian;
  stream->codes = calloc(0x10000, sizeof *stream->codes);
  stream->counts = calloc((size_t)registry->kindCount * registry->eventCount + 1,
                          sizeof *stream->counts);
  if (stream->codes == NULL || stream->counts == NULL)
    return 0;
  for (i = 0; i < registry->eventCount; ++i) {
    const EventDescStruct *desc = &registry->events[i];
    CodeStruct *c = &stream->codes[desc->code & 0xFFFF];
    c->event = (uint16_t)(i + 1);
    c->length = desc->code < CODE_OWN_LIMIT ? 0 : (uint16_t)FixedLength(desc, &stream->info.layout);
  }
  return 1;
}

/* IndexEvents -- check the events of one block and note what matters.
 * Returns 1 if the block is sound; else reports the fault.
 *
 * Most events take the first path: a code in the table with a fixed
 * length, and that length.  Every other event (a string, one of
 * telltale's own, an unknown code, a fault) is decoded in full.
 * design/telemetry.txt .eventcnv.reader */
static int IndexEvents(EventStreamStruct *stream, IndexStruct *index, BlockStruct *block, size_t end)
{
  EventStreamInfoStruct *info = &stream->info;
  const unsigned char *base = stream->base;
  const CodeStruct *codes = stream->codes;
  size_t *counts = stream->counts + (size_t)block->kind * stream->registry.eventCount;
  unsigned swap = stream->swap;
  size_t pos = block->offset + info->blockHeaderLength;
  size_t events = 0;
  EventClock first = info->firstClock, last = info->lastClock;
  int sound = 1;

  block->dataEnd = end;
  while (pos < end) {
    EventRecordStruct rec;
    const char *why = "?";
    EventDecodeRes res;
    if (end - pos >= EVENT_HEADER_LEN) {
      const unsigned char *p = base + pos;
      unsigned length = Load16(p + 2, swap);
      CodeStruct c = codes[Load16(p, swap)];
      if (length == c.length && length != 0 && length <= end - pos) {
        EventClock clock = Load64(p + 4, swap);
        ++counts[c.event - 1];
        ++events;
        first = clock < first ? clock : first;
        last = clock > last ? clock : last;
        pos += length;
        continue;
      }
    }
    res = EventDecode(&info->layout, &stream->registry, base + pos, end - pos, &rec, &why);
    if (res == EventDecodeEND && info->major < 2) {
      block->dataEnd = pos;     /* 1.0: code 0 ends the data early */
      break;
    }
    if (res == EventDecodeTRUNCATED && block->cut) {
      block->dataEnd = pos;     /* the end of a block cut short: said once, by the caller */
      break;
    }
    if (res == EventDecodeEND) {        /* 2.0: a block holds whole events only */
      res = EventDecodeCORRUPT;
      why = "event code 0 inside a block's data";
    }
    if (res == EventDecodeUNKNOWN) {    /* design/telemetry.txt .stream.unknown */
      ++info->unknownCount;
      pos += rec.length;
      continue;
    }
    if (res == EventDecodeOK) {
      ++counts[rec.desc - stream->registry.events];
      ++events;
      first = rec.clock < first ? rec.clock : first;
      last = rec.clock > last ? rec.clock : last;
      if (rec.code == CODE_STREAM_END && IsFormat(rec.desc, "W")) {
        info->streamEnd = 1;
      } else if (rec.code == CODE_CLOCK_SYNC && IsFormat(rec.desc, "WW")) {
        SyncStruct sync;
        sync.clock = rec.clock;
        sync.monotonic = rec.values[0].u;
        if (info->clockSyncCount == 0 || sync.clock < index->first.clock)
          index->first = sync;
        if (info->clockSyncCount == 0 || sync.clock > index->last.clock)
          index->last = sync;
        ++info->clockSyncCount;
      } else if (rec.code == CODE_EVENTS_DROPPED && rec.desc->paramCount == 2
                 && rec.values[0].u < EVENT_KIND_LIMIT) {   /* design/telemetry.txt .sol.dropped */
        info->dropped[rec.values[0].u] += rec.values[1].u;
      } else if (rec.code == CODE_THREAD_START) {
        ++info->threadStarts;
      } else if (rec.code == CODE_THREAD_EXIT) {
        ++info->threadExits;
      }
      pos += rec.length;
      continue;
    }
    /* EventDecodeTRUNCATED, EventDecodeCORRUPT */
    block->dataEnd = pos;
    if (end - pos >= EVENT_HEADER_LEN)
      AddProblem(stream, "offset %u: event code %x length %u: %s (%u bytes left in the block at offset %u)",
                 (uint64_t)(stream->origin + pos), (uint64_t)rec.code, (uint64_t)rec.length, why,
                 (uint64_t)(end - pos), (uint64_t)(stream->origin + block->offset));
    else
      AddProblem(stream, "offset %u: %s (%u bytes left in the block at offset %u)",
                 (uint64_t)(stream->origin + pos), why, (uint64_t)(end - pos),
                 (uint64_t)(stream->origin + block->offset));
    sound = 0;
    break;
  }
  block->events = events;
  info->eventCount += events;
  info->firstClock = first;
  info->lastClock = last;
  return sound;
}

static int ThreadCompare(const void *a, const void *b)
{
  const ThreadStruct *ta = a, *tb = b;
  return ta->thread < tb->thread ? -1 : ta->thread > tb->thread;
}

/* IndexThreads -- the threads with events, and how many each has */
static int IndexThreads(EventStreamStruct *stream)
{
  size_t i, n = 0;
  if (stream->blockCount == 0)
    return 1;
  stream->threads = malloc(stream->blockCount * sizeof *stream->threads);
  if (stream->threads == NULL)
    return 0;
  for (i = 0; i < stream->blockCount; ++i)
    if (stream->blocks[i].events > 0) {
      stream->threads[n].thread = stream->blocks[i].thread;
      stream->threads[n].events = stream->blocks[i].events;
      ++n;
    }
  qsort(stream->threads, n, sizeof *stream->threads, ThreadCompare);
  stream->threadCount = 0;
  for (i = 0; i < n; ++i) {
    if (stream->threadCount > 0
        && stream->threads[stream->threadCount - 1].thread == stream->threads[i].thread)
      stream->threads[stream->threadCount - 1].events += stream->threads[i].events;
    else
      stream->threads[stream->threadCount++] = stream->threads[i];
  }
  return 1;
}

/* BlockRead -- read the header of the block at pos into *block.
 * Returns 1 if it is sound; else 0, with what is wrong in what.  A
 * block running past the end of the stream is also marked cut.
 * design/telemetry.txt .stream.check */
static int BlockRead(EventStreamStruct *stream, size_t pos, BlockStruct *block, char *what,
                     size_t whatSize)
{
  const EventStreamInfoStruct *info = &stream->info;
  const unsigned char *p = stream->base + pos;
  size_t left = stream->size - pos;
  unsigned headerLength = info->blockHeaderLength;
  EventBlockHeaderStruct h;

  memset(block, 0, sizeof *block);
  block->offset = pos;
  if (left < headerLength) {
    FormatMessage(what, whatSize, "block header cut short: %u bytes left, a block header is %u",
                  (uint64_t)left, (uint64_t)headerLength);
    return 0;
  }
  if (memcmp(p, EVENT_BLOCK_MAGIC, 4) != 0) {
    char found[5];
    memcpy(found, p, 4);
    found[4] = '\0';
    FormatMessage(what, whatSize, "bad block magic %q (expected %q)", found, EVENT_BLOCK_MAGIC);
    return 0;
  }
  EventBlockDecode(&h, p, info->major, info->layout.bigEndian);
  block->thread = h.thread;
  block->kind = h.kind;
  block->level = h.flags & EVENT_BLOCK_LEVEL_MASK;
  block->seq = h.seq;
  block->index = h.index;
  block->length = h.length;
  block->cut = h.length > left;
  if (h.length < headerLength)
    FormatMessage(what, whatSize, "block length %u is less than the %u-byte block header",
                  (uint64_t)h.length, (uint64_t)headerLength);
  else if (h.length > EVENT_BLOCK_LENGTH_MAX)
    FormatMessage(what, whatSize, "block length %u is more than any block's (%u)",
                  (uint64_t)h.length, (uint64_t)EVENT_BLOCK_LENGTH_MAX);
  else if (h.kind >= stream->registry.kindCount)
    FormatMessage(what, whatSize, "block kind %u is not in the registry (%u kinds)",
                  (uint64_t)h.kind, (uint64_t)stream->registry.kindCount);
  else if (info->major >= 2 && h.session != info->session)
    FormatMessage(what, whatSize, "block of another session: id %x, the stream's is %x",
                  (uint64_t)h.session, (uint64_t)info->session);
  else if (block->cut)
    FormatMessage(what, whatSize, "block cut short: its length is %u, the stream has %u of its bytes",
                  (uint64_t)h.length, (uint64_t)left);
  else if (info->major >= 2 && (h.flags & EVENT_BLOCK_CHECKED) == 0)
    FormatMessage(what, whatSize, "block has no check");
  else if (info->major >= 2 && EventBlockCheck(p, h.length) != h.check)
    FormatMessage(what, whatSize, "block damaged (thread %u, kind %u, %u bytes): its check is %x, "
                  "its bytes give %x, so none of its events are shown", (uint64_t)h.thread,
                  (uint64_t)h.kind, (uint64_t)h.length, (uint64_t)h.check,
                  (uint64_t)EventBlockCheck(p, h.length));
  else
    return 1;
  block->cut = block->cut && h.length >= headerLength && h.length <= EVENT_BLOCK_LENGTH_MAX
               && h.kind < stream->registry.kindCount
               && (info->major < 2 || h.session == info->session);
  return 0;
}

/* IndexNote -- note a block's index and offset, for IndexCheck */
static void IndexNote(EventStreamStruct *stream, const BlockStruct *block)
{
  if (block->index == EVENT_BLOCK_INDEX_NONE)
    return;
  if (stream->indexCount == stream->indexCapacity) {
    size_t capacity = stream->indexCapacity == 0 ? 64 : stream->indexCapacity * 2;
    IndexEntryStruct *bigger = realloc(stream->indexes, capacity * sizeof *bigger);
    if (bigger == NULL) {
      stream->outOfMemory = 1;
      return;
    }
    stream->indexes = bigger;
    stream->indexCapacity = capacity;
  }
  stream->indexes[stream->indexCount].index = block->index;
  stream->indexes[stream->indexCount].offset = stream->origin + block->offset;
  ++stream->indexCount;
}

static int IndexEntryCompare(const void *a, const void *b)
{
  const IndexEntryStruct *x = a, *y = b;
  if (x->index != y->index)
    return x->index < y->index ? -1 : 1;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* IndexCheck -- every block the log was written with is there once:
 * the indexes read are 0 to the highest, none twice.  Only where the
 * walk read to the end: a walk stopped at damage reports that.
 * design/telemetry.txt .stream.check */
static void IndexCheck(EventStreamStruct *stream)
{
  EventStreamInfoStruct *info = &stream->info;
  IndexEntryStruct *e = stream->indexes;
  size_t n = stream->indexCount, reports = 0;
  uint64_t expect = 0;
  if (n == 0)
    return;
  qsort(e, n, sizeof *e, IndexEntryCompare);
  for (size_t i = 0; i < n; ++i) {
    if (e[i].index < expect) {
      ++info->duplicateBlocks;
      if (++reports <= 8)
        AddProblem(stream, "offset %u: block %u of the log again (first at offset %u): not read twice",
                   (uint64_t)e[i].offset, (uint64_t)e[i].index, (uint64_t)e[i - 1].offset);
      continue;
    }
    if (e[i].index > expect) {
      info->missingBlocks += e[i].index - expect;
      if (++reports <= 8) {
        if (e[i].index == expect + 1)
          AddProblem(stream, "block %u of the log is missing: between offsets %u and %u",
                     (uint64_t)expect, expect == 0 ? (uint64_t)info->headerLength : (uint64_t)e[i - 1].offset,
                     (uint64_t)e[i].offset);
        else if (expect == 0)
          AddProblem(stream, "blocks 0 to %u of the log are missing: the first block there is at offset %u",
                     (uint64_t)e[i].index - 1, (uint64_t)e[i].offset);
        else
          AddProblem(stream, "blocks %u to %u of the log are missing: between offsets %u and %u",
                     (uint64_t)expect, (uint64_t)e[i].index - 1, (uint64_t)e[i - 1].offset,
                     (uint64_t)e[i].offset);
      }
    }
    expect = (uint64_t)e[i].index + 1;
  }
  if (reports > 8)
    AddProblem(stream, "%u more faults in the order of blocks not listed", (uint64_t)reports - 8);
}

/* BlockFault -- report a bad block at pos; with resync, skip to the
 * next block magic and return where it is, else return 0 (stop). */
static size_t BlockFault(EventStreamStruct *stream, size_t pos, const char *what)
{
  EventStreamInfoStruct *info = &stream->info;
  size_t next, size = stream->size;
  ++info->badBlocks;
  if ((stream->options & EVENT_STREAM_RESYNC) == 0) {
    AddProblem(stream, "offset %u: %s", (uint64_t)(stream->origin + pos), what);
    return 0;
  }
  next = FindBlockMagic(stream, pos + 1);
  info->skippedBytes += next - pos;
  if (next < size)
    AddProblem(stream, "offset %u: %s; skipped %u bytes to the next block at offset %u",
               (uint64_t)(stream->origin + pos), what, (uint64_t)(next - pos),
               (uint64_t)(stream->origin + next));
  else
    AddProblem(stream, "offset %u: %s; skipped the last %u bytes of the file",
               (uint64_t)(stream->origin + pos), what, (uint64_t)(next - pos));
  return next;
}

/* BlockCut -- the sound events of a block cut short by the end of the
 * stream (a full disk, a program killed in write()): shown, unchecked,
 * and the rest said lost.  The walk ends here. */
static void BlockCut(EventStreamStruct *stream, IndexStruct *index, BlockStruct *block,
                     const char *what)
{
  EventStreamInfoStruct *info = &stream->info;
  ++info->badBlocks;
  (void)IndexEvents(stream, index, block, stream->size);
  AddProblem(stream, "offset %u: %s: the %u whole events before the cut are shown, unchecked; the rest of the block is lost",
             (uint64_t)(stream->origin + block->offset), what, (uint64_t)block->events);
  if (block->dataEnd > block->offset + info->blockHeaderLength && !AddBlock(stream, block))
    stream->outOfMemory = 1;
}

/* IndexBlocks -- walk the blocks in file order.  Each is checked
 * (BlockRead), then its events (IndexEvents).  At damage the walk stops,
 * or with resync goes on at the next block.  design/telemetry.txt
 * .eventcnv.reader, .stream.check */
static void IndexBlocks(EventStreamStruct *stream)
{
  EventStreamInfoStruct *info = &stream->info;
  size_t pos = info->headerLength;
  unsigned headerLength = info->blockHeaderLength;
  int resync = (stream->options & EVENT_STREAM_RESYNC) != 0;
  IndexStruct index;
  int complete = 1;

  memset(&index, 0, sizeof index);
  info->firstClock = UINT64_MAX;
  info->lastClock = 0;
  for (;;) {
    BlockStruct block;
    char what[200];

    /* A scan reads the block header, then the whole block. */
    Fill(stream, &pos, headerLength);
    if (stream->size - pos >= headerLength
        && memcmp(stream->base + pos, EVENT_BLOCK_MAGIC, 4) == 0) {
      uint64_t length = EventLoad(stream->base + pos + 4, 4, info->layout.bigEndian);
      if (length <= EVENT_BLOCK_LENGTH_MAX)
        Fill(stream, &pos, (size_t)length);
    }
    if (pos >= stream->size)
      break;
    if (!BlockRead(stream, pos, &block, what, sizeof what)) {
      if (block.cut) {
        BlockCut(stream, &index, &block, what);
        complete = 0;
        break;
      }
      pos = BlockFault(stream, pos, what);
      if (pos == 0) {
        complete = 0;
        break;
      }
      continue;
    }
    ++info->blockCount;
    IndexNote(stream, &block);
    if (!IndexEvents(stream, &index, &block, pos + block.length)) {
      ++info->badBlocks;
      if (!resync) {
        if (block.dataEnd > pos + headerLength && !AddBlock(stream, &block))
          stream->outOfMemory = 1;
        complete = 0;
        break;
      }
      info->skippedBytes += pos + block.length - block.dataEnd;
    }
    if (block.dataEnd > pos + headerLength && !AddBlock(stream, &block)) {
      stream->outOfMemory = 1;
      break;
    }
    pos += block.length;
  }
  if (complete)
    IndexCheck(stream);
  if (stream->read != NULL) {   /* the scan is over: its window goes */
    free(stream->window);
    stream->window = NULL;
    stream->base = NULL;
    stream->size = 0;
    stream->merging = 1;        /* and it has no events to merge */
  }
  if (info->eventCount == 0)
    info->firstClock = 0;
  if (!IndexThreads(stream))
    stream->outOfMemory = 1;

  /* The clock frequency: the header's, or from the header's start pair
   * and the last ClockSync by clock (so the result does not depend on
   * the order of blocks), by the rule the traceback uses too.
   * design/telemetry.txt .sol.clock */
  info->clockHz = info->headerHz;
  if (info->clockSyncCount >= 1)
    info->clockHz = EventClockRate(info->headerHz, info->startClock, info->startMonotonic,
                                   index.last.clock, index.last.monotonic);
}


/* Merging the sequences.  design/telemetry.txt .stream.order */

static int BlockCompare(const void *a, const void *b)
{
  const BlockStruct *ba = a, *bb = b;
  if (ba->thread != bb->thread)
    return ba->thread < bb->thread ? -1 : 1;
  if (ba->kind != bb->kind)
    return ba->kind < bb->kind ? -1 : 1;
  if (ba->level != bb->level)
    return ba->level < bb->level ? -1 : 1;
  if (ba->seq != bb->seq)
    return ba->seq < bb->seq ? -1 : 1;
  return ba->offset < bb->offset ? -1 : ba->offset > bb->offset;
}

/* SeqSeek -- move a cursor to the next known event at or after its
 * position, reading only its header.  Returns 0 if the sequence has no
 * more events.  IndexEvents checked every event before dataEnd: each
 * has a code other than 0 and a length from 12 to what is left. */
static int SeqSeek(EventStreamStruct *stream, SeqStruct *seq)
{
  while (seq->block < seq->blockLimit) {
    const BlockStruct *block = &stream->blocks[seq->block];
    if (seq->pos < block->dataEnd) {
      const unsigned char *p = stream->base + seq->pos;
      unsigned event = stream->codes[Load16(p, stream->swap)].event;
      unsigned length = Load16(p + 2, stream->swap);
      if (event != 0) {
        seq->clock = Load64(p + 4, stream->swap);
        seq->desc = &stream->registry.events[event - 1];
        return 1;
      }
      if (length >= EVENT_HEADER_LEN) {   /* unknown: skip it */
        seq->pos += length;
        continue;
      }
      seq->pos = block->dataEnd;          /* cannot happen */
      continue;
    }
    ++seq->block;
    if (seq->block < seq->blockLimit)
      seq->pos = stream->blocks[seq->block].offset + stream->info.blockHeaderLength;
  }
  return 0;
}

/* SeqBefore -- whether sequence a's event comes before b's: by clock,
 * then block sequence number, then offset, so the order is total. */
static int SeqBefore(const EventStreamStruct *stream, size_t a, size_t b)
{
  const SeqStruct *sa = &stream->seqs[a], *sb = &stream->seqs[b];
  uint64_t seqA, seqB;
  if (sa->clock != sb->clock)
    return sa->clock < sb->clock;
  seqA = stream->blocks[sa->block].seq;
  seqB = stream->blocks[sb->block].seq;
  if (seqA != seqB)
    return seqA < seqB;
  return sa->pos < sb->pos;
}

static void HeapDown(EventStreamStruct *stream, size_t i)
{
  size_t *heap = stream->heap, n = stream->heapCount;
  for (;;) {
    size_t left = 2 * i + 1, right = left + 1, least = i;
    size_t t;
    if (left < n && SeqBefore(stream, heap[left], heap[least]))
      least = left;
    if (right < n && SeqBefore(stream, heap[right], heap[least]))
      least = right;
    if (least == i)
      return;
    t = heap[i];
    heap[i] = heap[least];
    heap[least] = t;
    i = least;
  }
}

/* SeqStarts -- whether block i starts a sequence: a (thread, kind,
 * signal level) of its own.  Blocks sorted by BlockCompare. */
static int SeqStarts(const EventStreamStruct *stream, size_t i)
{
  const BlockStruct *b = &stream->blocks[i];
  return i == 0 || b->thread != b[-1].thread || b->kind != b[-1].kind || b->level != b[-1].level;
}

/* MergeStart -- group the blocks into sequences and heap them */
static int MergeStart(EventStreamStruct *stream)
{
  size_t i, count = 0;
  stream->merging = 1;
  if (stream->blockCount == 0)
    return 1;
  qsort(stream->blocks, stream->blockCount, sizeof *stream->blocks, BlockCompare);
  for (i = 0; i < stream->blockCount; ++i)
    if (SeqStarts(stream, i))
      ++count;
  stream->seqs = calloc(count, sizeof *stream->seqs);
  stream->heap = calloc(count, sizeof *stream->heap);
  if (stream->seqs == NULL || stream->heap == NULL)
    return 0;
  for (i = 0; i < stream->blockCount; ++i) {
    SeqStruct *seq;
    if (SeqStarts(stream, i)) {
      seq = &stream->seqs[stream->seqCount++];
      seq->block = i;
      seq->pos = stream->blocks[i].offset + stream->info.blockHeaderLength;
    }
    stream->seqs[stream->seqCount - 1].blockLimit = i + 1;
  }
  for (i = 0; i < stream->seqCount; ++i)
    if (SeqSeek(stream, &stream->seqs[i]))
      stream->heap[stream->heapCount++] = i;
  for (i = stream->heapCount / 2; i > 0; --i)
    HeapDown(stream, i - 1);
  return 1;
}


/* StreamIndex -- read the header, then index the blocks.  On failure,
 * closes the stream. */
static EventStreamRes StreamIndex(EventStreamStruct *stream, char *msg, size_t msgSize)
{
  EventStreamRes res = ParseHeader(stream, msg, msgSize);
  if (res != EventStreamOK) {
    EventStreamClose(stream);
    return res;
  }
  if (!CodesInit(stream)) {
    FormatMessage(msg, msgSize, "offset %u: out of memory", (uint64_t)stream->info.headerLength);
    EventStreamClose(stream);
    return EventStreamERROR;
  }
  IndexBlocks(stream);
  return EventStreamOK;
}

/* EventStreamOpen -- read the header, index the blocks */

EventStreamRes EventStreamOpen(EventStreamStruct **streamReturn,
                               const unsigned char *buf, size_t size,
                               unsigned options, char *msg, size_t msgSize)
{
  EventStreamStruct *stream;
  EventStreamRes res;

  *streamReturn = NULL;
  if (msgSize > 0)
    msg[0] = '\0';
  stream = calloc(1, sizeof *stream);
  if (stream == NULL) {
    FormatMessage(msg, msgSize, "offset 0: out of memory");
    return EventStreamERROR;
  }
  stream->base = buf;
  stream->size = buf != NULL ? size : 0;
  stream->options = options;
  stream->eof = 1;
  res = StreamIndex(stream, msg, msgSize);
  if (res == EventStreamOK)
    *streamReturn = stream;
  return res;
}


/* EventStreamScan -- read the header and index the blocks, reading the
 * stream through a window that moves on, so that it is read once, in
 * file order, into memory that stays warm.  design/telemetry.txt .eventcnv.scan */

#define SCAN_WINDOW (256u * 1024u)      /* fastest of 64K to 4M, measured */

EventStreamRes EventStreamScan(EventStreamStruct **streamReturn, EventStreamReadFunction read,
                               void *closure, char *msg, size_t msgSize)
{
  EventStreamStruct *stream;
  EventStreamRes res;
  size_t pos = 0;

  *streamReturn = NULL;
  if (msgSize > 0)
    msg[0] = '\0';
  stream = calloc(1, sizeof *stream);
  if (stream != NULL)
    stream->window = malloc(SCAN_WINDOW);
  if (stream == NULL || stream->window == NULL) {
    FormatMessage(msg, msgSize, "offset 0: out of memory");
    EventStreamClose(stream);
    return EventStreamERROR;
  }
  stream->base = stream->window;
  stream->windowCapacity = SCAN_WINDOW;
  stream->read = read;
  stream->readClosure = closure;
  /* The fixed header, then the whole header, for ParseHeader. */
  Fill(stream, &pos, EVENT_STREAM_FIXED_LEN);
  if (stream->size >= EVENT_STREAM_FIXED_LEN)
    Fill(stream, &pos, (size_t)EventLoad(stream->base + 20, 4, 0));
  if (stream->problemCount > 0 || stream->outOfMemory) {
    FormatMessage(msg, msgSize, "%s", stream->problemCount > 0 ? stream->problems[0] : "offset 0: out of memory");
    EventStreamClose(stream);
    return EventStreamERROR;
  }
  res = StreamIndex(stream, msg, msgSize);
  if (res == EventStreamOK)
    *streamReturn = stream;
  return res;
}


void EventStreamClose(EventStreamStruct *stream)
{
  size_t i;
  if (stream == NULL)
    return;
  for (i = 0; i < stream->problemCount; ++i)
    free(stream->problems[i]);
  free(stream->problems);
  free(stream->interns.entries);
  free(stream->labels.entries);
  free(stream->heap);
  free(stream->seqs);
  free(stream->blocks);
  free(stream->indexes);
  free(stream->window);
  free(stream->threads);
  free(stream->counts);
  free(stream->codes);
  free(stream->strings);
  free(stream->paramStrings);
  free(stream->events);
  free(stream->kinds);
  free(stream);
}


const EventStreamInfoStruct *EventStreamInfo(const EventStreamStruct *stream)
{
  return &stream->info;
}


/* EventStreamNext -- the event that comes first of all the sequences',
 * decoded now.  The first call starts the merge. */

EventStreamRes EventStreamNext(EventStreamStruct *stream, EventRecordStruct *recReturn)
{
  SeqStruct *seq;
  const EventRecordStruct *rec = recReturn;
  const BlockStruct *block;
  const unsigned char *p;
  const char *why;

  if (!stream->merging && !MergeStart(stream))
    stream->outOfMemory = 1;
  if (stream->heapCount == 0)
    return stream->problemCount > 0 || stream->outOfMemory ? EventStreamERROR : EventStreamEND;
  seq = &stream->seqs[stream->heap[0]];
  block = &stream->blocks[seq->block];
  p = stream->base + seq->pos;
  memset(recReturn, 0, sizeof *recReturn);
  recReturn->code = Load16(p, stream->swap);
  recReturn->length = Load16(p + 2, stream->swap);
  recReturn->clock = seq->clock;
  /* IndexEvents checked it: this cannot fail. */
  (void)DecodeFields(&stream->info.layout, seq->desc, p, recReturn->length, recReturn, &why);
  recReturn->thread = block->thread;
  recReturn->kind = block->kind;
  recReturn->offset = seq->pos;

  seq->pos += recReturn->length;
  if (!SeqSeek(stream, seq))
    stream->heap[0] = stream->heap[--stream->heapCount];
  HeapDown(stream, 0);

  /* design/telemetry.txt .req.intern */
  if (rec->code == CODE_INTERN && IsFormat(rec->desc, "WS")) {
    if (TableSet(&stream->interns, rec->values[0].u,
                 (uint64_t)((const unsigned char *)rec->values[1].s - stream->base)))
      stream->outOfMemory = 1;
  } else if (rec->code == CODE_LABEL && IsFormat(rec->desc, "AW")) {
    if (TableSet(&stream->labels, rec->values[0].u, rec->values[1].u))
      stream->outOfMemory = 1;
  }
  return EventStreamOK;
}


const char *EventStreamLabel(void *closure, uint64_t address)
{
  const EventStreamStruct *stream = closure;
  const TableEntryStruct *label, *string;
  label = TableFind(&stream->labels, address);
  if (label == NULL || !label->used)
    return NULL;
  string = TableFind(&stream->interns, label->value);
  if (string == NULL || !string->used)
    return NULL;
  return (const char *)stream->base + string->value;
}


void EventStreamFormatContext(EventStreamStruct *stream, EventFormatContextStruct *ctxReturn)
{
  EventFormatContextInit(ctxReturn, &stream->registry);
  ctxReturn->startClock = stream->info.startClock;
  ctxReturn->clockHz = stream->info.clockHz;
  ctxReturn->startRealtime = stream->info.startRealtime;
  ctxReturn->label = EventStreamLabel;
  ctxReturn->labelClosure = stream;
}


size_t EventStreamCount(const EventStreamStruct *stream, unsigned kind, unsigned code)
{
  const CodeStruct *c = &stream->codes[code & 0xFFFF];
  if (kind >= stream->registry.kindCount || c->event == 0 || code > 0xFFFF)
    return 0;
  return stream->counts[(size_t)kind * stream->registry.eventCount + c->event - 1];
}


size_t EventStreamThreadCount(const EventStreamStruct *stream)
{
  return stream->threadCount;
}

void EventStreamThread(const EventStreamStruct *stream, size_t i, uint32_t *threadReturn,
                       size_t *eventsReturn)
{
  *threadReturn = i < stream->threadCount ? stream->threads[i].thread : 0;
  *eventsReturn = i < stream->threadCount ? stream->threads[i].events : 0;
}


size_t EventStreamProblemCount(const EventStreamStruct *stream)
{
  return stream->problemCount + (stream->outOfMemory ? 1 : 0);
}

const char *EventStreamProblem(const EventStreamStruct *stream, size_t i)
{
  if (i < stream->problemCount)
    return stream->problems[i];
  if (i == stream->problemCount && stream->outOfMemory)
    return "out of memory";
  return NULL;
}
