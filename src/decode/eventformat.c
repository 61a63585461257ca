/* <src/decode/eventformat.c> -- the event layer: a decoded event as a line of text
 *
 * .design: design/index.txt .req.share design/tools.txt .eventcnv.line .eventcnv.text.fast
 *
 * See eventread.h for the interface.  string.h only, as eventdecode.c:
 * the traceback formats events inside a signal handler (and the
 * compiler's SSE2 intrinsics, which call nothing).
 */

#include "eventdecode.h"

#include <string.h>

#if defined(__SSE2__) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <emmintrin.h>
#endif

#define NS_PER_SECOND    1000000000u

/* Widths of the columns of a formatted line.  See EventFormat. */
#define ELAPSED_WIDTH    15              /* "    0.000000000" */
#define THREAD_WIDTH     3               /* "T1 " */
#define TIMES_ROOM       64              /* the longest time columns (50), and more */
#define COPY_BLOCK       16              /* formatFast copies the head in blocks of this */
#define HEAD_LIMIT       (sizeof ((EventFormatCacheStruct *)0)->head - COPY_BLOCK)
#define VALUE_ROOM       64              /* a P, A (no label), W, U or D value (at most 25
                                            characters), a head's last block and the NUL */


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

static void writerInit(WriterStruct *w, char *buf, size_t size)
{
  w->buf = buf;
  w->size = size;
  w->len = 0;
}

static void putChar(WriterStruct *w, char c)
{
  if (w->len + 1 < w->size)
    w->buf[w->len] = c;
  ++w->len;
}

static void putChars(WriterStruct *w, const char *s, size_t n)
{
  size_t i;
  if (w->len < w->size && w->size - w->len > n) {   /* room for them and a NUL */
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    return;
  }
  for (i = 0; i < n; ++i)
    putChar(w, s[i]);
}

/* putString -- s, measured as it is copied (names are short: one pass,
 * no calls); returns its length */
static size_t putString(WriterStruct *w, const char *s)
{
  size_t start = w->len;
  for (; *s != '\0'; ++s) {
    if (w->len + 1 < w->size)
      w->buf[w->len] = *s;
    ++w->len;
  }
  return w->len - start;
}

static void putSpaces(WriterStruct *w, size_t n)
{
  if (w->len < w->size && w->size - w->len > n) {
    memset(w->buf + w->len, ' ', n);
    w->len += n;
    return;
  }
  while (n-- > 0)
    putChar(w, ' ');
}

/* Two decimal digits at a time, and two hex digits: a table lookup and
 * one store each, so a number costs a few instructions a digit pair.
 * eventcnv's exports use them too (eventread.h). */
const char EventDecimalPairs[200] =
  "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
  "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
  "8081828384858687888990919293949596979899";
const char EventHexPairs[512] =
  "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
  "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
  "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
  "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
  "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
  "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
  "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
  "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";

/* bitLength -- bits needed for value, at least 1 */
static unsigned bitLength(uint64_t value)
{
  unsigned n = 1;
#if defined(__GNUC__) || defined(__clang__)
  if (value != 0)
    n = 64u - (unsigned)__builtin_clzll(value);
#else
  while (n < 64 && value >> n != 0)
    ++n;
#endif
  return n;
}

/* decimalDigits -- digits in value's decimal form: the bit length
 * gives the count to within one (1233/4096 is just over log10(2)), and
 * one comparison settles it */
static unsigned decimalDigits(uint64_t value)
{
  static const uint64_t powers[20] = {
    1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u, 10000000u, 100000000u,
    1000000000u, 10000000000u, 100000000000u, 1000000000000u, 10000000000000u,
    100000000000000u, 1000000000000000u, 10000000000000000u, 100000000000000000u,
    1000000000000000000u, 10000000000000000000u
  };
  unsigned t = bitLength(value) * 1233u >> 12;
  unsigned n = t + (value >= powers[t]);
  return n != 0 ? n : 1;
}

/* fillDecimal -- value's last count digits, ending at end (zero-padded) */
static void fillDecimal(char *end, uint64_t value, unsigned count)
{
  char *start = end - count;
  while (value > UINT32_MAX && end - start >= 2) {
    unsigned pair = (unsigned)(value % 100);
    value /= 100;
    end -= 2;
    memcpy(end, EventDecimalPairs + 2 * pair, 2);
  }
  {
    uint32_t small = (uint32_t)value;    /* 32-bit division is cheaper */
    while (end - start >= 2) {
      unsigned pair = small % 100;
      small /= 100;
      end -= 2;
      memcpy(end, EventDecimalPairs + 2 * pair, 2);
    }
    if (end > start)
      *--end = (char)('0' + small % 10);
  }
}

/* decimalWord -- the 8 decimal digits of value (below 10^8), each a
 * byte from 0 to 9, the first in the lowest byte: the halves, their
 * halves and theirs split in the lanes of one word at once, each
 * division a multiplication and a shift (exact below 10^4, 100 and 10).
 * With '0' added to each byte, it is the text a little-endian memcpy
 * stores. */
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define DECIMAL_WORD 1
#define DECIMAL_ZEROS 0x3030303030303030u
static inline uint64_t decimalWord(uint32_t value)
{
  uint64_t y = (uint64_t)(value / 10000) | (uint64_t)(value % 10000) << 32;
  uint64_t z = (y * 10486 >> 20) & 0x0000007F0000007Fu;
  y = z | (y - 100 * z) << 16;
  z = (y * 103 >> 10) & 0x000F000F000F000Fu;
  return z | (y - 10 * z) << 8;
}
#endif

/* fillNanoseconds -- the 9 digits of ns (below 10^9) at p, with no loop */
static void fillNanoseconds(char *p, uint32_t ns)
{
#ifdef DECIMAL_WORD
  uint32_t first = ns / 100000000;
  uint64_t word = decimalWord(ns - first * 100000000) + DECIMAL_ZEROS;
  p[0] = (char)('0' + first);
  memcpy(p + 1, &word, 8);
#else
  uint32_t hi = ns / 100000, lo = ns % 100000;   /* 4 digits, 5 digits */
  memcpy(p, EventDecimalPairs + 2 * (hi / 100), 2);
  memcpy(p + 2, EventDecimalPairs + 2 * (hi % 100), 2);
  p[4] = (char)('0' + lo / 10000);
  lo %= 10000;
  memcpy(p + 5, EventDecimalPairs + 2 * (lo / 100), 2);
  memcpy(p + 7, EventDecimalPairs + 2 * (lo % 100), 2);
#endif
}

/* nanosecondsAt -- fillNanoseconds, with a cache: its first 5 digits
 * are kept in slot (0 elapsed, 1 wall clock) for the next ns in the same
 * 10 us, and the last 4 are two digit pairs */
static void nanosecondsAt(char *p, uint32_t ns, EventFormatCacheStruct *cache, unsigned slot)
{
  uint32_t high = ns / 10000, low = ns - high * 10000;
  if (cache == NULL) {
    fillNanoseconds(p, ns);
    return;
  }
  if (!cache->nsValid[slot] || cache->nsHigh[slot] != high) {
    fillNanoseconds(cache->nsText[slot], ns);
    cache->nsValid[slot] = 1;
    cache->nsHigh[slot] = high;
  }
  memcpy(p, cache->nsText[slot], 8);     /* the last 3 are written over */
  memcpy(p + 5, EventDecimalPairs + 2 * (low / 100), 2);
  memcpy(p + 7, EventDecimalPairs + 2 * (low % 100), 2);
}

/* putUnsigned -- value in decimal, at least minDigits digits (zero-padded) */
static void putUnsigned(WriterStruct *w, uint64_t value, unsigned minDigits)
{
  char digits[24];
  unsigned count = decimalDigits(value);
  if (count < minDigits)
    count = minDigits < sizeof digits ? minDigits : (unsigned)sizeof digits;
  if (w->len < w->size && w->size - w->len > count) {   /* in place */
    fillDecimal(w->buf + w->len + count, value, count);
    w->len += count;
    return;
  }
  fillDecimal(digits + count, value, count);
  putChars(w, digits, count);
}

/* hexWord -- the 8 hex digits of value, most significant first, as the
 * 8 bytes that memcpy stores: each nibble spread to a byte of its own,
 * then made a digit, all at once (on a machine whose byte order is known) */
#if defined(__GNUC__) && defined(__BYTE_ORDER__) \
    && (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ || __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
#define HEX_WORD 1
static uint64_t hexWord(uint32_t value)
{
  uint64_t x = value;
  x = (x & 0xFFFF0000u) << 16 | (x & 0xFFFFu);
  x = (x & 0x0000FF000000FF00u) << 8 | (x & 0x000000FF000000FFu);
  x = (x & 0x00F000F000F000F0u) << 4 | (x & 0x000F000F000F000Fu);
  /* each byte a nibble, the most significant in the highest byte:
   * '0' + n, and 'a' - '0' - 10 more where n > 9 */
  x += 0x3030303030303030u + ((x + 0x0606060606060606u) >> 4 & 0x0101010101010101u) * 39u;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  x = __builtin_bswap64(x);
#endif
  return x;
}
#endif

/* hexEight -- the 8 hex digits of value, most significant first, at p */
static void hexEight(char *p, uint32_t value)
{
#ifdef HEX_WORD
  uint64_t x = hexWord(value);
  memcpy(p, &x, 8);
#else
  for (unsigned i = 0; i < 8; ++i)
    p[i] = "0123456789abcdef"[value >> (28 - 4 * i) & 0xF];
#endif
}

/* putHex -- "0x" and value in lower-case hex, at least minDigits digits */
static void putHex(WriterStruct *w, uint64_t value, unsigned minDigits)
{
  char digits[18];
  unsigned count = (bitLength(value) + 3) / 4;
  if (count < minDigits)
    count = minDigits < 16 ? minDigits : 16;
  hexEight(digits + 2, (uint32_t)(value >> 32));
  hexEight(digits + 10, (uint32_t)value);
  digits[16 - count] = '0';
  digits[17 - count] = 'x';
  putChars(w, digits + 16 - count, 2 + count);
}

/* hexAt -- "0x" and value in lower-case hex at p, as putHex(w, value,
 * 1) writes it; stores up to 18 bytes.  The value is shifted so that its
 * first digit is the word's first, and all 16 are made at once, with
 * SSE2's byte lanes where there are any.  Returns the end. */
static char *hexAt(char *p, uint64_t value)
{
  unsigned count = (bitLength(value) + 3) / 4;
  uint64_t top = value << (64 - 4 * count);
  memcpy(p, "0x", 2);
#if defined(__SSE2__) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  {
    __m128i x = _mm_cvtsi64_si128((long long)__builtin_bswap64(top));   /* first byte first */
    __m128i low = _mm_set1_epi8(0x0F);
    __m128i nibbles = _mm_unpacklo_epi8(_mm_and_si128(_mm_srli_epi16(x, 4), low),
                                        _mm_and_si128(x, low));
    __m128i letters = _mm_and_si128(_mm_cmpgt_epi8(nibbles, _mm_set1_epi8(9)),
                                    _mm_set1_epi8('a' - '0' - 10));
    _mm_storeu_si128((__m128i *)(void *)(p + 2),
                     _mm_add_epi8(nibbles, _mm_add_epi8(letters, _mm_set1_epi8('0'))));
  }
#else
  hexEight(p + 2, (uint32_t)(top >> 32));
  if (count > 8)
    hexEight(p + 10, (uint32_t)top);
#endif
  return p + 2 + count;
}

/* decimalAt -- value in decimal at p; stores up to 20 bytes.  Returns
 * the end. */
static char *decimalAt(char *p, uint64_t value)
{
  unsigned count;
#ifdef DECIMAL_WORD
  if (value < 100000000u) {     /* its leading zero digits are the word's low zero bytes */
    uint64_t word = decimalWord((uint32_t)value);
    unsigned zeros = word != 0 ? (unsigned)__builtin_ctzll(word) / 8 : 7;
    word = (word + DECIMAL_ZEROS) >> 8 * zeros;
    memcpy(p, &word, 8);
    return p + 8 - zeros;
  }
#endif
  count = decimalDigits(value);
  fillDecimal(p + count, value, count);
  return p + count;
}

/* putEscaped -- n bytes with C escapes for quotes, backslashes and
 * non-printable bytes (octal, three digits, so never ambiguous): C0
 * controls, DEL, C1 controls and each byte of invalid UTF-8, which
 * would drive a terminal or make the text unreadable as UTF-8.  Valid
 * UTF-8 is itself, so a name in any script reads as written.
 * design/export.txt .export.text */
static void putEscaped(WriterStruct *w, const char *s, size_t n)
{
  size_t i;
  for (i = 0; i < n; ++i) {
    unsigned char c = (unsigned char)s[i];
    size_t len;
    if (c >= 0x80 && (len = EventUtf8Length((const unsigned char *)s + i, n - i)) > 0
        && !(c == 0xC2 && (unsigned char)s[i + 1] < 0xA0)) {   /* not C1 */
      putChars(w, s + i, len);
      i += len - 1;
      continue;
    }
    switch (c) {
    case '"':  putChars(w, "\\\"", 2); break;
    case '\\': putChars(w, "\\\\", 2); break;
    case '\n': putChars(w, "\\n", 2); break;
    case '\t': putChars(w, "\\t", 2); break;
    case '\r': putChars(w, "\\r", 2); break;
    default:
      if (c < 0x20 || c >= 0x7F) {
        putChar(w, '\\');
        putChar(w, (char)('0' + (c >> 6)));
        putChar(w, (char)('0' + (c >> 3 & 7)));
        putChar(w, (char)('0' + (c & 7)));
      } else {
        putChar(w, (char)c);
      }
      break;
    }
  }
}

/* writerFinish -- terminate the text and return its whole length */
static size_t writerFinish(WriterStruct *w)
{
  if (w->size > 0)
    w->buf[w->len < w->size ? w->len : w->size - 1] = '\0';
  return w->len;
}

/* EventEscape -- s[0 .. n-1] with C escapes, as EventFormat writes an S
 * field, into buf (NUL-terminated, truncated to size); returns the
 * length it needed */
size_t EventEscape(char *buf, size_t size, const char *s, size_t n)
{
  WriterStruct w;
  writerInit(&w, buf, size);
  putEscaped(&w, s, n);
  return writerFinish(&w);
}


/* putDouble -- d as EventFormatDouble (eventdouble.c) writes it */
static void putDouble(WriterStruct *w, double d)
{
  char text[EVENT_DOUBLE_TEXT_MAX];
  putChars(w, text, EventFormatDouble(text, sizeof text, d));
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


/* timesAt, putTimes -- the elapsed and the wall-clock columns, at p
 * (at most TIMES_ROOM bytes) or to a writer
 *
 * Elapsed time is (clock - startClock) / clockHz, truncated to whole
 * nanoseconds, exactly.  A clock before startClock is negative.  The
 * wall clock is startRealtime plus elapsed, as a UTC time of day; its
 * "HH:MM:SS." is remembered in the cache, if there is one, and so is
 * the elapsed column up to its nanoseconds ("      12.").
 */

static inline char *timesAt(char *p, EventClock clock, const EventFormatContextStruct *ctx)
{
  EventFormatCacheStruct *cache = ctx->cache;
  uint64_t delta, seconds, ns, total, realtime, wallSecond;
  int negative = clock < ctx->startClock;
  char *text = p;
  unsigned digits, elapsedLen;

  delta = negative ? ctx->startClock - clock : clock - ctx->startClock;
  EventClockSplit(delta, ctx->clockHz, negative ? NULL : cache, &seconds, &ns);

  if (!negative && cache != NULL && cache->elapsedValid && cache->elapsedSeconds == seconds) {
    memcpy(p, cache->elapsed, sizeof cache->elapsed);   /* the rest is written over */
    p += cache->elapsedLen;
  } else {
    digits = decimalDigits(seconds);
    elapsedLen = (unsigned)negative + digits + 1 + 9;
    if (elapsedLen < ELAPSED_WIDTH) {
      memset(p, ' ', ELAPSED_WIDTH - elapsedLen);
      p += ELAPSED_WIDTH - elapsedLen;
    }
    if (negative)
      *p++ = '-';
    fillDecimal(p + digits, seconds, digits);
    p += digits;
    *p++ = '.';
    if (!negative && cache != NULL) {
      cache->elapsedValid = 1;
      cache->elapsedSeconds = seconds;
      cache->elapsedLen = (unsigned)(p - text);
      memcpy(cache->elapsed, text, cache->elapsedLen);
    }
  }
  nanosecondsAt(p, (uint32_t)ns, cache, 0);
  p += 9;
  *p++ = ' ';

  total = seconds * NS_PER_SECOND + ns;   /* wraps only for absurd clocks */
  realtime = negative ? ctx->startRealtime - total : ctx->startRealtime + total;
  wallSecond = realtime / NS_PER_SECOND;
  if (cache == NULL || !cache->wallValid || cache->wallSecond != wallSecond) {
    uint64_t secondOfDay = wallSecond % 86400;
    char *wall = cache != NULL ? cache->wall : p;
    fillDecimal(wall + 2, secondOfDay / 3600, 2);
    wall[2] = ':';
    fillDecimal(wall + 5, secondOfDay / 60 % 60, 2);
    wall[5] = ':';
    fillDecimal(wall + 8, secondOfDay % 60, 2);
    wall[8] = '.';
    if (cache != NULL) {
      cache->wallValid = 1;
      cache->wallSecond = wallSecond;
    }
  }
  if (cache != NULL)
    memcpy(p, cache->wall, 9);
  p += 9;
  nanosecondsAt(p, (uint32_t)(realtime - wallSecond * NS_PER_SECOND), cache, 1);
  return p + 9;
}

static void putTimes(WriterStruct *w, EventClock clock, const EventFormatContextStruct *ctx)
{
  char text[TIMES_ROOM];
  putChars(w, text, (size_t)(timesAt(text, clock, ctx) - text));
}


/* EventFormatTimes -- the first two columns of EventFormat's line */

size_t EventFormatTimes(char *buf, size_t size, EventClock clock,
                        const EventFormatContextStruct *ctx)
{
  WriterStruct w;
  writerInit(&w, buf, size);
  putTimes(&w, clock, ctx);
  return writerFinish(&w);
}


/* putPadded -- s, then spaces to width */

static void putPadded(WriterStruct *w, const char *s, unsigned width)
{
  size_t len = putString(w, s);
  if (len < width)
    putSpaces(w, width - len);
}


/* putThreadKind -- the thread and kind columns: T3, and the kind's
 * name (K9 for a kind the registry lacks), each padded */

static void putThreadKind(WriterStruct *w, const EventRecordStruct *rec,
                          const EventFormatContextStruct *ctx)
{
  const EventRegistryStruct *registry = ctx->registry;
  size_t before = w->len;
  putChar(w, 'T');
  putUnsigned(w, rec->thread, 1);
  if (w->len - before < THREAD_WIDTH)
    putSpaces(w, THREAD_WIDTH - (w->len - before));
  putChar(w, ' ');

  if (registry != NULL && registry->kinds != NULL && rec->kind < registry->kindCount
      && registry->kinds[rec->kind].name != NULL) {
    putPadded(w, registry->kinds[rec->kind].name, ctx->kindWidth);
  } else {
    before = w->len;
    putChar(w, 'K');
    putUnsigned(w, rec->kind, 1);
    if (w->len - before < ctx->kindWidth)
      putSpaces(w, ctx->kindWidth - (w->len - before));
  }
}


/* putValue -- field i's value, as its format letter says */

static void putValue(WriterStruct *w, const EventRecordStruct *rec, unsigned i,
                     const EventFormatContextStruct *ctx)
{
  const EventValueUnion *value = &rec->values[i];
  switch (rec->desc->format[i]) {
  case 'P':                     /* labels name objects too: a pool, an arena */
  case 'A': {
    const char *label = ctx->label != NULL ? ctx->label(ctx->labelClosure, value->u) : NULL;
    putHex(w, value->u, 1);
    if (label != NULL) {
      putChar(w, '[');
      putEscaped(w, label, strlen(label));
      putChar(w, ']');
    }
    break;
  }
  case 'W': case 'U':
    putUnsigned(w, value->u, 1);
    break;
  case 'D':
    putDouble(w, value->d);
    break;
  case 'S':
    putChar(w, '"');
    if (value->s != NULL)
      putEscaped(w, value->s, rec->stringLength);
    putChar(w, '"');
    break;
  default:
    putChar(w, '?');
    break;
  }
}


/* putParamName -- " name=" of field i */

static void putParamName(WriterStruct *w, const EventDescStruct *desc, unsigned i)
{
  putChar(w, ' ');
  if (desc->paramNames != NULL && desc->paramNames[i] != NULL) {
    putString(w, desc->paramNames[i]);
  } else {
    putChar(w, 'p');
    putUnsigned(w, i, 1);
  }
  putChar(w, '=');
}


/* headCache -- the cache's head for rec, made now if it is another
 * (thread, kind, descriptor) than the latest; 0 if rec's line has no
 * fields or its head does not fit, and the line is made in full.
 * design/tools.txt .eventcnv.text.head */

static int headCache(EventFormatCacheStruct *cache, const EventRecordStruct *rec,
                     const EventFormatContextStruct *ctx)
{
  const EventDescStruct *desc = rec->desc;
  WriterStruct w;
  unsigned i;
  if (cache->headValid && cache->headDesc == desc && cache->headThread == rec->thread
      && cache->headKind == rec->kind && cache->headRegistry == ctx->registry
      && cache->headKindWidth == ctx->kindWidth && cache->headNameWidth == ctx->nameWidth)
    return 1;
  cache->headValid = 0;
  if (desc == NULL || desc->format == NULL || desc->format[0] == '\0')
    return 0;
  writerInit(&w, cache->head, HEAD_LIMIT);
  putChar(&w, ' ');
  putThreadKind(&w, rec, ctx);
  putChar(&w, ' ');
  putPadded(&w, desc->name != NULL ? desc->name : "?", ctx->nameWidth);
  for (i = 0; i < EVENT_PARAM_MAX && desc->format[i] != '\0'; ++i) {
    putParamName(&w, desc, i);
    cache->headEnd[i] = (unsigned short)(w.len < HEAD_LIMIT ? w.len : 0);
  }
  if (w.len >= HEAD_LIMIT)
    return 0;
  cache->headValid = 1;
  cache->headDesc = desc;
  cache->headRegistry = ctx->registry;
  cache->headThread = rec->thread;
  cache->headKind = rec->kind;
  cache->headKindWidth = ctx->kindWidth;
  cache->headNameWidth = ctx->nameWidth;
  return 1;
}


/* roomFor -- whether p to end holds len bytes escaped (4 each at most)
 * and VALUE_ROOM more */
static int roomFor(const char *p, const char *end, size_t len)
{
  size_t room = (size_t)(end - p);
  return room >= VALUE_ROOM && len <= (room - VALUE_ROOM) / 4;
}

/* formatFast -- EventFormat's line with the cache's head, written at p
 * without a writer's checks a character: each piece checks once that
 * the buffer has room for the most it can write (a head block or a hex
 * word is stored whole, past where the text ends).  Returns the line's
 * end, or NULL if the buffer might be too small: then the writer makes
 * the line.  design/tools.txt .eventcnv.text.fast */

static char *formatFast(char *p, char *end, const EventRecordStruct *rec,
                        const EventFormatContextStruct *ctx, const EventFormatCacheStruct *cache)
{
  const char *format = rec->desc->format;
  unsigned i, from = 0;
  if (end - p < TIMES_ROOM)
    return NULL;
  p = timesAt(p, rec->clock, ctx);
  for (i = 0; i < EVENT_PARAM_MAX && format[i] != '\0'; ++i) {
    const EventValueUnion *value = &rec->values[i];
    unsigned n = cache->headEnd[i] - from;
    const char *label;
    WriterStruct w;
    if ((size_t)(end - p) < n + VALUE_ROOM)
      return NULL;
    for (unsigned k = 0; k < n; k += COPY_BLOCK)   /* " name=", and the head before it */
      memcpy(p + k, cache->head + from + k, COPY_BLOCK);
    p += n;
    from = cache->headEnd[i];
    switch (format[i]) {
    case 'P': case 'A':
      p = hexAt(p, value->u);
      label = ctx->label != NULL ? ctx->label(ctx->labelClosure, value->u) : NULL;
      if (label != NULL) {
        size_t len = strlen(label);
        if (!roomFor(p, end, len))
          return NULL;
        writerInit(&w, p, (size_t)(end - p));
        putChar(&w, '[');
        putEscaped(&w, label, len);
        putChar(&w, ']');
        p += w.len;
      }
      break;
    case 'W': case 'U':
      p = decimalAt(p, value->u);
      break;
    case 'D':
      writerInit(&w, p, (size_t)(end - p));
      putDouble(&w, value->d);
      p += w.len;
      break;
    case 'S':
      if (!roomFor(p, end, rec->stringLength))
        return NULL;
      writerInit(&w, p, (size_t)(end - p));
      putChar(&w, '"');
      if (value->s != NULL)
        putEscaped(&w, value->s, rec->stringLength);
      putChar(&w, '"');
      p += w.len;
      break;
    default:
      *p++ = '?';
      break;
    }
  }
  *p = '\0';
  return p;
}


/* EventFormat -- one line of text for an event
 *
 *   ELAPSED WALLCLOCK THREAD KIND EVENT name=value ...
 *
 * With a cache, the text between the times and the values is copied
 * from the latest line of the same thread, kind and event.
 */

size_t EventFormat(char *buf, size_t size, const EventRecordStruct *rec,
                   const EventFormatContextStruct *ctx)
{
  WriterStruct w;
  const EventDescStruct *desc = rec->desc;
  EventFormatCacheStruct *cache = ctx->cache;
  unsigned i;

  if (cache != NULL && headCache(cache, rec, ctx)) {
    char *end = formatFast(buf, buf + size, rec, ctx, cache);
    size_t from = 0;
    if (end != NULL)
      return (size_t)(end - buf);
    writerInit(&w, buf, size);
    putTimes(&w, rec->clock, ctx);
    for (i = 0; i < EVENT_PARAM_MAX && desc->format[i] != '\0'; ++i) {
      putChars(&w, cache->head + from, cache->headEnd[i] - from);
      from = cache->headEnd[i];
      putValue(&w, rec, i, ctx);
    }
    return writerFinish(&w);
  }
  writerInit(&w, buf, size);
  putTimes(&w, rec->clock, ctx);
  putChar(&w, ' ');
  putThreadKind(&w, rec, ctx);
  putChar(&w, ' ');

  if (desc == NULL) {
    putString(&w, "? code=");
    putHex(&w, rec->code, 4);
    putString(&w, " length=");
    putUnsigned(&w, rec->length, 1);
    return writerFinish(&w);
  }

  if (desc->format == NULL || desc->format[0] == '\0') {
    putString(&w, desc->name != NULL ? desc->name : "?");
    return writerFinish(&w);
  }
  putPadded(&w, desc->name != NULL ? desc->name : "?", ctx->nameWidth);

  for (i = 0; i < EVENT_PARAM_MAX && desc->format[i] != '\0'; ++i) {
    putParamName(&w, desc, i);
    putValue(&w, rec, i, ctx);
  }
  return writerFinish(&w);
}
