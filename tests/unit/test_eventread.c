/* <tests/unit/test_eventread.c> -- unit tests of the shared decoder
 *
 * .design: design/index.txt .req.share design/stream.txt .stream
 *
 * Covers: EventDecode on hand-built bytes for every format letter, in
 * both byte orders and with 4- and 8-byte pointers and words; truncation
 * at every byte of an event and every wrong length (each in a buffer of
 * exactly the bytes available, so AddressSanitizer catches any read
 * beyond); the checks on strings; EventFormat's line layout, labels,
 * escapes, elapsed and wall-clock times, an unknown code, and cutting
 * short at every buffer size; EventFormatDouble against printf's %.17g;
 * the stream reader on a stream built here: header, registry, time-order
 * merge, labels, unknown codes, version refusal, its blocks in the
 * merge's order (EventStreamBlock); and the reader fed
 * every truncation and many random mutations (fixed seed) of that
 * stream, which must never crash.  The compact form (eventpack.c):
 * events of every letter with extreme and wrapping values round-trip
 * byte for byte, every cut gives a whole-event prefix, every byte
 * changed decodes within bounds, and what the encoder cannot pack (an
 * unknown code, a wrong length) it leaves raw.
 *
 * Run: build/tests/test_eventread (or build/san/tests/test_eventread).
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "eventpack.h"
#include "eventread.h"


/* A registry for the tests.  Codes sorted, as eventcom.h requires. */

static const EventKindDescStruct testKinds[] = {
  {"Telltale", "telltale's own events"},
  {"Test", "test events"},
};

static const char *const streamEndNames[] = {"blocks"};
static const char *const internNames[] = {"id", "string"};
static const char *const labelNames[] = {"address", "id"};
static const char *const allNames[] = {"p", "a", "w", "u", "d", "s"};
static const char *const strNames[] = {"text"};
static const char *const dblNames[] = {"value"};
static const char *const uwNames[] = {"u", "w"};
static const char *const wordsNames[] = {"p", "a", "w"};
static const char *const noDocs[] = {"", "", "", "", "", ""};

static const EventDescStruct testEvents[] = {
  {0x0002, 0, 1, 0, 1, "StreamEnd", "W", "end", streamEndNames, noDocs},
  {0x0004, 0, 1, 0, 2, "Intern", "WS", "intern", internNames, noDocs},
  {0x0005, 0, 1, 0, 2, "Label", "AW", "label", labelNames, noDocs},
  {0x0100, 1, 1, 0, 6, "AllLetters", "PAWUDS", "one of each", allNames, noDocs},
  {0x0101, 1, 1, 0, 1, "Str", "S", "a string", strNames, noDocs},
  {0x0102, 1, 1, 0, 0, "Nothing", "", "no parameters", NULL, NULL},
  {0x0103, 1, 1, 0, 1, "Dbl", "D", "a double", dblNames, noDocs},
  {0x0104, 1, 0, 0, 2, "UW", "UW", "two numbers", uwNames, noDocs},
  {0x0112, 1, 1, 0, 3, "Words", "PAW", "three words", wordsNames, noDocs},
};

static const EventRegistryStruct testRegistry = {
  "test", 2, testKinds, sizeof testEvents / sizeof testEvents[0], testEvents, 0, NULL, 0, NULL
};


/* Building bytes.  BufStruct appends integers in a chosen byte order. */

typedef struct BufStruct {
  unsigned char data[65536];
  size_t len;
  int big;
} BufStruct;

static void Put(BufStruct *b, uint64_t value, unsigned size)
{
  unsigned i;
  assert_true(b->len + size <= sizeof b->data);
  for (i = 0; i < size; ++i) {
    unsigned shift = b->big ? 8 * (size - 1 - i) : 8 * i;
    b->data[b->len++] = (unsigned char)(value >> shift);
  }
}

static void PutLE(BufStruct *b, uint64_t value, unsigned size)
{
  int big = b->big;
  b->big = 0;
  Put(b, value, size);
  b->big = big;
}

static void PutBytes(BufStruct *b, const void *p, size_t n)
{
  assert_true(b->len + n <= sizeof b->data);
  memcpy(b->data + b->len, p, n);
  b->len += n;
}

static void PutDoubleBits(BufStruct *b, double d)
{
  uint64_t bits;
  memcpy(&bits, &d, sizeof bits);
  Put(b, bits, 8);
}

/* PutHeader -- code, length (patched by EndEvent), clock; returns the start */
static size_t BeginEvent(BufStruct *b, unsigned code, uint64_t clock)
{
  size_t start = b->len;
  Put(b, code, 2);
  Put(b, 0, 2);
  Put(b, clock, 8);
  return start;
}

static void EndEvent(BufStruct *b, size_t start)
{
  size_t len = b->len;
  b->len = start + 2;
  Put(b, len - start, 2);
  b->len = len;
}

/* PutAllLetters -- an AllLetters (PAWUDS) event */
static size_t PutAllLetters(BufStruct *b, const EventLayoutStruct *layout, uint64_t clock,
                            uint64_t p, uint64_t a, uint64_t w, uint32_t u, double d, const char *s)
{
  size_t start = BeginEvent(b, 0x0100, clock);
  Put(b, p, layout->pointerSize);
  Put(b, a, layout->pointerSize);
  Put(b, w, layout->wordSize);
  Put(b, u, 4);
  PutDoubleBits(b, d);
  PutBytes(b, s, strlen(s) + 1);
  EndEvent(b, start);
  return b->len - start;
}

static EventLayoutStruct Layout(int big, unsigned pointerSize, unsigned wordSize)
{
  EventLayoutStruct layout;
  layout.bigEndian = (unsigned)big;
  layout.pointerSize = pointerSize;
  layout.wordSize = wordSize;
  return layout;
}

/* Decode -- EventDecode on a copy of the bytes in a buffer of exactly
 * avail bytes, so that a read past the end is an ASan report. */
static EventDecodeRes Decode(const EventLayoutStruct *layout, const unsigned char *p, size_t avail,
                             EventRecordStruct *rec, const char **why)
{
  unsigned char *copy = malloc(avail > 0 ? avail : 1);
  EventDecodeRes res;
  assert_non_null(copy);
  memcpy(copy, p, avail);
  res = EventDecode(layout, &testRegistry, avail > 0 ? copy : copy + 1, avail, rec, why);
  /* Strings point into the copy: compare them before freeing. */
  if (res == EventDecodeOK && rec->desc != NULL && strchr(rec->desc->format, 'S') != NULL) {
    size_t i = strlen(rec->desc->format) - 1;
    rec->values[i].s = (const char *)p + ((const unsigned char *)rec->values[i].s - copy);
  }
  free(copy);
  return res;
}


/* EventDecode */

static void CheckAllLetters(int big, unsigned pointerSize, unsigned wordSize)
{
  EventLayoutStruct layout = Layout(big, pointerSize, wordSize);
  BufStruct *b = calloc(1, sizeof *b);
  EventRecordStruct rec;
  const char *why = NULL;
  uint64_t pmask = pointerSize == 8 ? UINT64_MAX : 0xFFFFFFFFu;
  uint64_t wmask = wordSize == 8 ? UINT64_MAX : 0xFFFFFFFFu;
  size_t len;

  b->big = big;
  len = PutAllLetters(b, &layout, 0x0102030405060708u, 0x1122334455667788u & pmask,
                      0x8877665544332211u & pmask, 0xFEDCBA9876543210u & wmask, 0xCAFEF00Du,
                      -1.5, "hello");
  assert_int_equal(len, 12 + 2 * pointerSize + wordSize + 4 + 8 + 6);
  assert_int_equal(Decode(&layout, b->data, b->len, &rec, &why), EventDecodeOK);
  assert_non_null(rec.desc);
  assert_string_equal(rec.desc->name, "AllLetters");
  assert_int_equal(rec.code, 0x0100);
  assert_int_equal(rec.length, len);
  assert_true(rec.clock == 0x0102030405060708u);
  assert_true(rec.values[0].u == (0x1122334455667788u & pmask));
  assert_true(rec.values[1].u == (0x8877665544332211u & pmask));
  assert_true(rec.values[2].u == (0xFEDCBA9876543210u & wmask));
  assert_true(rec.values[3].u == 0xCAFEF00Du);
  assert_true(rec.values[4].d == -1.5);
  assert_int_equal(rec.stringLength, 5);
  assert_memory_equal(rec.values[5].s, "hello", 6);
  free(b);
}

static void test_decode_letters_little64(void **state)
{
  (void)state;
  CheckAllLetters(0, 8, 8);
}

static void test_decode_letters_big64(void **state)
{
  (void)state;
  CheckAllLetters(1, 8, 8);
}

static void test_decode_letters_little32(void **state)
{
  (void)state;
  CheckAllLetters(0, 4, 4);
}

static void test_decode_letters_big32(void **state)
{
  (void)state;
  CheckAllLetters(1, 4, 4);
}

static void test_decode_letters_mixed(void **state)
{
  (void)state;
  CheckAllLetters(0, 4, 8);
  CheckAllLetters(1, 8, 4);
}

/* test_decode_native -- an event laid out by the compiler decodes with
 * the native layout, so a byte-swapped layout is the other order */
static void test_decode_native(void **state)
{
  EventLayoutStruct native, swapped;
  unsigned char bytes[EVENT_HEADER_LEN + 4 + sizeof(EventW)];
  EventHeaderStruct header;
  EventU u = 0x01020304u;
  EventW w = (EventW)0x0A0B0C0D;
  EventRecordStruct rec;
  (void)state;

  EventLayoutNative(&native);
  assert_int_equal(native.pointerSize, sizeof(void *));
  assert_int_equal(native.wordSize, sizeof(EventW));
  header.codeLength = EVENT_CODE_LENGTH(0x0104, sizeof bytes);
  header.clock = 42;
  memcpy(bytes, &header, sizeof header);
  memcpy(bytes + EVENT_HEADER_LEN, &u, 4);
  memcpy(bytes + EVENT_HEADER_LEN + 4, &w, sizeof w);
  assert_int_equal(Decode(&native, bytes, sizeof bytes, &rec, NULL), EventDecodeOK);
  assert_true(rec.clock == 42);
  assert_true(rec.values[0].u == 0x01020304u);
  assert_true(rec.values[1].u == 0x0A0B0C0D);

  swapped = native;
  swapped.bigEndian = !native.bigEndian;
  /* Read the other way, the length is 0x1800: more than there is. */
  assert_int_equal(Decode(&swapped, bytes, sizeof bytes, &rec, NULL), EventDecodeTRUNCATED);
  assert_int_equal(rec.code, 0x0401);
  assert_int_equal(rec.length, (unsigned)sizeof bytes << 8);
}

/* test_decode_truncated -- every prefix of every event is refused */
static void test_decode_truncated(void **state)
{
  static const int bigs[] = {0, 1};
  static const unsigned sizes[] = {4, 8};
  unsigned bi, si, kind;
  (void)state;
  for (bi = 0; bi < 2; ++bi)
    for (si = 0; si < 2; ++si)
      for (kind = 0; kind < 4; ++kind) {
        EventLayoutStruct layout = Layout(bigs[bi], sizes[si], sizes[si]);
        BufStruct *b = calloc(1, sizeof *b);
        EventRecordStruct rec;
        size_t avail, start;
        b->big = bigs[bi];
        switch (kind) {
        case 0:
          PutAllLetters(b, &layout, 7, 1, 2, 3, 4, 5.0, "five");
          break;
        case 1:
          start = BeginEvent(b, 0x0101, 7);
          PutBytes(b, "", 1);
          EndEvent(b, start);
          break;
        case 2:
          start = BeginEvent(b, 0x0102, 7);
          EndEvent(b, start);
          break;
        default:
          start = BeginEvent(b, 0x0999, 7);   /* unknown */
          Put(b, 0xABCDEF, 4);
          EndEvent(b, start);
          break;
        }
        assert_int_equal(Decode(&layout, b->data, b->len, &rec, NULL),
                         kind == 3 ? EventDecodeUNKNOWN : EventDecodeOK);
        for (avail = 0; avail < b->len; ++avail) {
          const char *why = NULL;
          EventDecodeRes res = Decode(&layout, b->data, avail, &rec, &why);
          assert_int_equal(res, EventDecodeTRUNCATED);
          assert_non_null(why);
        }
        free(b);
      }
}

/* test_decode_wrong_length -- every length but the right one is refused */
static void test_decode_wrong_length(void **state)
{
  unsigned kind;
  (void)state;
  for (kind = 0; kind < 3; ++kind) {
    EventLayoutStruct layout = Layout(0, 8, 8);
    BufStruct *b = calloc(1, sizeof *b);
    EventRecordStruct rec;
    size_t right, start, len;
    if (kind == 0) {
      PutAllLetters(b, &layout, 7, 1, 2, 3, 4, 5.0, "five");
    } else if (kind == 1) {
      start = BeginEvent(b, 0x0104, 7);
      Put(b, 1, 4);
      Put(b, 2, 8);
      EndEvent(b, start);
    } else {
      start = BeginEvent(b, 0x0101, 7);
      PutBytes(b, "xyz", 4);
      EndEvent(b, start);
    }
    right = b->len;
    memset(b->data + right, 0xAA, 64);       /* junk after the event */
    for (len = 0; len < right + 64; ++len) {
      const char *why = NULL;
      EventDecodeRes res;
      if (len == right)
        continue;
      b->data[2] = (unsigned char)len;       /* little-endian length */
      b->data[3] = (unsigned char)(len >> 8);
      res = Decode(&layout, b->data, right + 64, &rec, &why);
      assert_true(res == EventDecodeCORRUPT);
      assert_non_null(why);
    }
    free(b);
  }
}

static void test_decode_end_and_unknown(void **state)
{
  EventLayoutStruct layout = Layout(0, 8, 8);
  unsigned char zeros[4] = {0, 0, 0xFF, 0xFF};
  unsigned char unknown[20] = {0x34, 0x12, 20, 0};
  EventRecordStruct rec;
  (void)state;
  assert_int_equal(Decode(&layout, zeros, 2, &rec, NULL), EventDecodeEND);
  assert_int_equal(Decode(&layout, zeros, 4, &rec, NULL), EventDecodeEND);
  assert_int_equal(Decode(&layout, unknown, sizeof unknown, &rec, NULL), EventDecodeUNKNOWN);
  assert_null(rec.desc);
  assert_int_equal(rec.code, 0x1234);
  assert_int_equal(rec.length, 20);
  /* With no registry, every code is unknown. */
  assert_int_equal(EventDecode(&layout, NULL, unknown, sizeof unknown, &rec, NULL),
                   EventDecodeUNKNOWN);
  assert_null(EventRegistryLookup(&testRegistry, 0x0003));
  assert_ptr_equal(EventRegistryLookup(&testRegistry, 0x0104), &testEvents[7]);
  assert_ptr_equal(EventRegistryLookup(&testRegistry, 0x0002), &testEvents[0]);
}

static EventDecodeRes DecodeString(const char *s, size_t n, EventRecordStruct *rec)
{
  EventLayoutStruct layout = Layout(0, 8, 8);
  BufStruct *b = calloc(1, sizeof *b);
  EventDecodeRes res;
  size_t start = BeginEvent(b, 0x0101, 0);
  PutBytes(b, s, n);
  EndEvent(b, start);
  res = Decode(&layout, b->data, b->len, rec, NULL);
  free(b);
  return res;
}

static void test_decode_strings(void **state)
{
  EventRecordStruct rec;
  char *longest = malloc(EVENT_STRING_MAX + 2);
  (void)state;
  assert_int_equal(DecodeString("", 1, &rec), EventDecodeOK);
  assert_int_equal(rec.stringLength, 0);
  assert_int_equal(DecodeString("ab\0c", 5, &rec), EventDecodeCORRUPT);    /* NUL inside */
  assert_int_equal(DecodeString("abc", 3, &rec), EventDecodeCORRUPT);      /* no NUL */
  assert_int_equal(DecodeString("", 0, &rec), EventDecodeCORRUPT);         /* no room */
  memset(longest, 'x', EVENT_STRING_MAX + 1);
  longest[EVENT_STRING_MAX] = '\0';
  assert_int_equal(DecodeString(longest, EVENT_STRING_MAX + 1, &rec), EventDecodeOK);
  assert_int_equal(rec.stringLength, EVENT_STRING_MAX);
  longest[EVENT_STRING_MAX] = 'x';
  longest[EVENT_STRING_MAX + 1] = '\0';
  assert_int_equal(DecodeString(longest, EVENT_STRING_MAX + 2, &rec), EventDecodeCORRUPT);
  free(longest);
}


/* EventFormat */

static const char *TestLabel(void *closure, uint64_t address)
{
  (void)closure;
  return address == 0x7f00 ? "the \"pool\"" : NULL;
}

static void TestContext(EventFormatContextStruct *ctx)
{
  EventFormatContextInit(ctx, &testRegistry);
  ctx->startClock = 1000;
  ctx->clockHz = 3000000000u;                  /* 3 ticks per ns */
  ctx->startRealtime = 1700000000123456789u;   /* 22:13:20.123456789 UTC */
  ctx->label = TestLabel;
}

static void test_format_line(void **state)
{
  EventFormatContextStruct ctx;
  EventRecordStruct rec;
  char line[512];
  size_t len;
  (void)state;

  TestContext(&ctx);
  assert_int_equal(ctx.kindWidth, 8);        /* "Telltale" */
  assert_int_equal(ctx.nameWidth, 10);       /* "AllLetters" */
  memset(&rec, 0, sizeof rec);
  rec.desc = &testEvents[3];
  rec.code = 0x0100;
  rec.clock = 1000 + (uint64_t)3 * 1500000000u;       /* 1.5 s */
  rec.thread = 2;
  rec.kind = 1;
  rec.values[0].u = 0;
  rec.values[1].u = 0x7f00;
  rec.values[2].u = UINT64_MAX;
  rec.values[3].u = 4294967295u;
  rec.values[4].d = 0.1;
  rec.values[5].s = "a\"b\\c\n\001\377";
  rec.stringLength = 8;
  len = EventFormat(line, sizeof line, &rec, &ctx);
  assert_string_equal(line,
    "    1.500000000 22:13:21.623456789 T2  Test     AllLetters p=0x0 a=0x7f00[the \\\"pool\\\"] "
    "w=18446744073709551615 u=4294967295 d=0.10000000000000001 s=\"a\\\"b\\\\c\\n\\001\\377\"");
  assert_int_equal(len, strlen(line));

  /* No parameters: no padding after the name. */
  rec.desc = &testEvents[5];
  rec.code = 0x0102;
  rec.clock = 1000 + 1;                      /* 1/3 ns: truncated to 0 */
  rec.thread = 12345;
  EventFormat(line, sizeof line, &rec, &ctx);
  assert_string_equal(line, "    0.000000000 22:13:20.123456789 T12345 Test     Nothing");

  /* Before the start: negative elapsed time. */
  rec.clock = 1000 - 3 * 250;
  rec.thread = 1;
  rec.kind = 0;
  EventFormat(line, sizeof line, &rec, &ctx);
  assert_string_equal(line, "   -0.000000250 22:13:20.123456539 T1  Telltale Nothing");

  /* Unknown code, and a kind the registry does not have. */
  memset(&rec, 0, sizeof rec);
  rec.code = 0x1234;
  rec.length = 20;
  rec.clock = 1000;
  rec.thread = 3;
  rec.kind = 7;
  EventFormat(line, sizeof line, &rec, &ctx);
  assert_string_equal(line, "    0.000000000 22:13:20.123456789 T3  K7       ? code=0x1234 length=20");

  /* A clock counting ns, from a context with no registry. */
  EventFormatContextInit(&ctx, NULL);
  rec.clock = 86400000000123u;
  rec.kind = 1;
  EventFormat(line, sizeof line, &rec, &ctx);
  assert_string_equal(line, "86400.000000123 00:00:00.000000123 T3  K1 ? code=0x1234 length=20");
}

/* test_format_short_buffer -- every buffer size, exactly allocated */
static void test_format_short_buffer(void **state)
{
  EventFormatContextStruct ctx;
  EventRecordStruct rec;
  char full[512];
  size_t fullLen, size;
  (void)state;
  TestContext(&ctx);
  memset(&rec, 0, sizeof rec);
  rec.desc = &testEvents[3];
  rec.code = 0x0100;
  rec.values[1].u = 0x7f00;
  rec.values[4].d = -2.5e-300;
  rec.values[5].s = "string";
  rec.stringLength = 6;
  fullLen = EventFormat(full, sizeof full, &rec, &ctx);
  assert_int_equal(fullLen, strlen(full));
  assert_int_equal(EventFormat(NULL, 0, &rec, &ctx), fullLen);
  for (size = 1; size <= fullLen + 1; ++size) {
    char *buf = malloc(size);
    assert_int_equal(EventFormat(buf, size, &rec, &ctx), fullLen);
    assert_int_equal(strlen(buf), size - 1 < fullLen ? size - 1 : fullLen);
    assert_memory_equal(buf, full, strlen(buf));
    free(buf);
  }
}

static void CheckDouble(double d)
{
  char mine[64], theirs[64];
  EventFormatDouble(mine, sizeof mine, d);
  if (isnan(d))
    strcpy(theirs, "nan");
  else
    snprintf(theirs, sizeof theirs, "%.17g", d);
  if (strcmp(mine, theirs) != 0)
    fail_msg("%a: EventFormatDouble gives %s, printf gives %s", d, mine, theirs);
}

static uint64_t randomState = 0x9E3779B97F4A7C15u;

static uint64_t Random(void)        /* xorshift64*: the same on every platform */
{
  randomState ^= randomState >> 12;
  randomState ^= randomState << 25;
  randomState ^= randomState >> 27;
  return randomState * 0x2545F4914F6CDD1Du;
}

/* test_format_numbers: decimal and hex fields, and the time columns
 * with and without the cache, against snprintf's arithmetic */
static void test_format_numbers(void **state)
{
  EventFormatContextStruct ctx, cached;
  EventFormatCacheStruct cache;
  EventRecordStruct rec;
  char line[512], expect[512], plain[128], fast[128];
  uint64_t clock = 0;
  unsigned i;
  (void)state;
  TestContext(&ctx);
  ctx.label = NULL;
  cached = ctx;
  memset(&cache, 0, sizeof cache);
  cached.cache = &cache;
  for (i = 0; i < 200000; ++i) {
    uint64_t w = Random() >> (Random() % 64), u = Random() >> (32 + Random() % 32);
    uint64_t a = Random() >> (Random() % 64);
    uint64_t ticks, seconds, ns, real;
    const char *space;
    /* numbers: U and W in decimal, A in hex */
    memset(&rec, 0, sizeof rec);
    rec.desc = &testEvents[7];               /* UW */
    rec.values[0].u = u;
    rec.values[1].u = w;
    rec.clock = 1000;
    EventFormat(line, sizeof line, &rec, &ctx);
    snprintf(expect, sizeof expect, "u=%llu w=%llu", (unsigned long long)u, (unsigned long long)w);
    space = strstr(line, "u=");
    assert_non_null(space);
    assert_string_equal(space, expect);
    rec.desc = &testEvents[2];               /* Label: AW */
    rec.values[0].u = a;
    EventFormat(line, sizeof line, &rec, &ctx);
    snprintf(expect, sizeof expect, "=0x%llx ", (unsigned long long)a);
    assert_non_null(strstr(line, expect));
    /* times: mostly small steps, sometimes across seconds or backwards */
    switch (Random() % 8) {
    case 0: clock = Random() % 4000000000000u; break;
    case 1: clock += 3000000000u - Random() % 7; break;
    default: clock += Random() % 5000; break;
    }
    EventFormatTimes(plain, sizeof plain, clock, &ctx);
    EventFormatTimes(fast, sizeof fast, clock, &cached);
    assert_string_equal(fast, plain);
    ticks = clock >= ctx.startClock ? clock - ctx.startClock : ctx.startClock - clock;
    seconds = ticks / ctx.clockHz;
    ns = (ticks % ctx.clockHz) / 3;          /* 3 ticks per ns */
    real = clock >= ctx.startClock ? ctx.startRealtime + seconds * 1000000000u + ns
                                   : ctx.startRealtime - seconds * 1000000000u - ns;
    snprintf(expect, sizeof expect, "%s%llu.%09llu", clock >= ctx.startClock ? "" : "-",
             (unsigned long long)seconds, (unsigned long long)ns);
    snprintf(expect + strlen(expect), sizeof expect - strlen(expect), " %02u:%02u:%02u.%09u",
             (unsigned)(real / 1000000000u % 86400 / 3600), (unsigned)(real / 1000000000u % 3600 / 60),
             (unsigned)(real / 1000000000u % 60), (unsigned)(real % 1000000000u));
    assert_string_equal(plain + strspn(plain, " "), expect);
  }
}

/* test_format_cached: with a cache, whole lines are what they are
 * without one, as the event, thread and kind change from line to line
 * (the cache keeps the text between the times and the values), and
 * the same when cut short, or when the buffer is near what formatFast
 * needs (sizes around a line's length, strings whose escapes need most
 * of the buffer), and for clocks before the start */
static void test_format_cached(void **state)
{
  EventFormatContextStruct ctx, cached;
  EventFormatCacheStruct cache;
  EventRecordStruct rec;
  char line[512], fast[512];
  const size_t count = sizeof testEvents / sizeof testEvents[0];
  unsigned i, j;
  (void)state;
  TestContext(&ctx);
  cached = ctx;
  memset(&cache, 0, sizeof cache);
  cached.cache = &cache;
  for (i = 0; i < 20000; ++i) {
    size_t size = Random() % 8 == 0 ? 1 + Random() % 80
                  : Random() % 4 == 0 ? 60 + Random() % 200 : sizeof line;
    size_t a, b;
    static char odd[120];         /* escapes four bytes a byte */
    memset(odd, '\001', sizeof odd - 1);
    memset(&rec, 0, sizeof rec);
    rec.desc = Random() % 50 == 0 ? NULL : &testEvents[Random() % count];
    rec.code = rec.desc != NULL ? rec.desc->code : 0x7777;
    rec.length = 40;
    rec.thread = (uint32_t)(Random() % 3 == 0 ? Random() % 200 : 1);
    rec.kind = (unsigned)(Random() % 3);     /* 2: not in the registry */
    rec.clock = Random() % 16 == 0 ? Random() % 1000 : 1000 + Random() % 100000000u;
    for (j = 0; rec.desc != NULL && rec.desc->format[j] != '\0'; ++j) {
      rec.values[j].u = Random() >> (Random() % 64);
      if (strchr("PA", rec.desc->format[j]) != NULL && Random() % 4 == 0)
        rec.values[j].u = 0x7f00;             /* labelled */
      if (rec.desc->format[j] == 'S' && Random() % 4 == 0) {
        rec.values[j].s = odd;
        rec.stringLength = 40 + Random() % 80;
      } else if (rec.desc->format[j] == 'S') {
        rec.values[j].s = "a \"string\"";
        rec.stringLength = 10;
      }
    }
    a = EventFormat(line, size, &rec, &ctx);
    b = EventFormat(fast, size, &rec, &cached);
    assert_int_equal(b, a);
    assert_string_equal(fast, line);
  }
}

static void test_format_double(void **state)
{
  static const double special[] = {
    0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 1e-5, 1e-4, 1.5e-4, 123456789012345678.0, 1e16, 1e17, 1e18,
    12345678901234567.0, 99999999999999999.0, 9.9999999999999999e22, 1e300, 1e-300,
    5e-324, 2.2250738585072009e-308, 2.2250738585072014e-308, 1.7976931348623157e308,
    3.141592653589793, 2.5, 0.30000000000000004, 100.0, 1e21, 4.35, 0.000123456789
  };
  char buf[64];
  unsigned i;
  (void)state;
  for (i = 0; i < sizeof special / sizeof special[0]; ++i) {
    CheckDouble(special[i]);
    CheckDouble(-special[i]);
  }
  EventFormatDouble(buf, sizeof buf, NAN);
  assert_string_equal(buf, "nan");
  EventFormatDouble(buf, sizeof buf, -NAN);
  assert_string_equal(buf, "nan");
  EventFormatDouble(buf, sizeof buf, INFINITY);
  assert_string_equal(buf, "inf");
  EventFormatDouble(buf, sizeof buf, -INFINITY);
  assert_string_equal(buf, "-inf");
  for (i = 0; i < 20000; ++i) {
    uint64_t bits = Random();
    double d;
    memcpy(&d, &bits, sizeof d);
    CheckDouble(d);
  }
  for (i = 0; i < 5000; ++i)        /* short decimals, where rounding ties are likely */
    CheckDouble((double)(Random() % 2000001) / 1000.0 - 1000.0);
}


/* The stream reader, on a stream built here.  design/stream.txt .stream */

static void PutStr(BufStruct *b, const char *s)
{
  PutLE(b, strlen(s), 2);
  PutBytes(b, s, strlen(s));
}

/* BuildHeader -- the header for testRegistry, in b's byte order */
static void BuildHeader(BufStruct *b, unsigned major, unsigned median, unsigned minor,
                        const char *extra)
{
  size_t lengthAt, i, p;
  PutBytes(b, "TELLTALE", 8);
  PutLE(b, major, 2);
  PutLE(b, median, 2);
  PutLE(b, minor, 2);
  Put(b, 0x0102, 2);
  PutBytes(b, "\x08\x08\x01\x00", 4);
  lengthAt = b->len;
  PutLE(b, 0, 4);
  PutLE(b, 1000000000, 8);                   /* 1 GHz: ticks are ns */
  PutLE(b, 5000, 8);                         /* start clock */
  PutLE(b, 1700000000000000000u, 8);
  PutLE(b, 777, 8);
  PutLE(b, 99, 4);
  PutLE(b, 0, 4);
  PutStr(b, "tester");
  PutStr(b, testRegistry.name);
  PutLE(b, testRegistry.kindCount, 2);
  for (i = 0; i < testRegistry.kindCount; ++i) {
    PutStr(b, testKinds[i].name);
    PutStr(b, testKinds[i].doc);
  }
  PutLE(b, testRegistry.eventCount, 2);
  for (i = testRegistry.eventCount; i > 0; --i) {   /* backwards: the reader sorts */
    const EventDescStruct *desc = &testEvents[i - 1];
    PutLE(b, desc->code, 2);
    PutLE(b, desc->kind, 1);
    PutLE(b, desc->always | desc->retired << 1, 1);
    PutStr(b, desc->format);
    PutStr(b, desc->name);
    PutStr(b, desc->doc);
    for (p = 0; p < desc->paramCount; ++p) {
      PutStr(b, desc->paramNames[p]);
      PutStr(b, "doc");
    }
  }
  if (extra != NULL)
    PutBytes(b, extra, strlen(extra));
  {
    size_t len = b->len;
    b->len = lengthAt;
    PutLE(b, len, 4);
    b->len = len;
  }
}

static size_t BeginBlock(BufStruct *b, uint32_t thread, unsigned kind, uint64_t seq)
{
  size_t start = b->len;
  PutBytes(b, "TTBK", 4);
  Put(b, 0, 4);
  Put(b, thread, 4);
  Put(b, kind, 2);
  Put(b, 0, 2);
  Put(b, seq, 8);
  return start;
}

static void EndBlock(BufStruct *b, size_t start)
{
  size_t len = b->len;
  b->len = start + 4;
  Put(b, len - start, 4);
  b->len = len;
}

static void PutUW(BufStruct *b, uint64_t clock, uint32_t u, uint64_t w)
{
  size_t start = BeginEvent(b, 0x0104, clock);
  Put(b, u, 4);
  Put(b, w, 8);
  EndEvent(b, start);
}

/* BuildStream -- two threads, interleaved clocks, labels, an unknown code */
static void BuildStream(BufStruct *b, int big, unsigned major, unsigned median, unsigned minor,
                        const char *extra)
{
  EventLayoutStruct layout = Layout(big, 8, 8);
  size_t block, start;
  b->big = big;
  b->len = 0;
  BuildHeader(b, major, median, minor, extra);

  block = BeginBlock(b, 1, 1, 0);
  PutUW(b, 5010, 1, 10);
  PutUW(b, 5030, 1, 30);
  start = BeginEvent(b, 0x0777, 5031);       /* unknown: skipped */
  Put(b, 0, 4);
  EndEvent(b, start);
  PutAllLetters(b, &layout, 5050, 0x10, 0x7f00, 3, 4, 0.5, "all");
  EndBlock(b, block);

  block = BeginBlock(b, 2, 0, 1);
  start = BeginEvent(b, 0x0004, 5020);       /* Intern 9 "pool" */
  Put(b, 9, 8);
  PutBytes(b, "pool", 5);
  EndEvent(b, start);
  PutUW(b, 5030, 2, 32);                     /* ties with seq 0's: after it */
  start = BeginEvent(b, 0x0005, 5040);       /* Label 0x7f00 9 */
  Put(b, 0x7f00, 8);
  Put(b, 9, 8);
  EndEvent(b, start);
  Put(b, 0, 2);                              /* code 0 ends the data */
  PutBytes(b, "padding", 7);
  EndBlock(b, block);

  block = BeginBlock(b, 1, 1, 2);
  PutUW(b, 5060, 1, 60);
  EndBlock(b, block);

  block = BeginBlock(b, 2, 0, 3);
  start = BeginEvent(b, 0x0002, 5070);       /* StreamEnd */
  Put(b, 3, 8);
  EndEvent(b, start);
  EndBlock(b, block);
}

/* ReadAll -- open, iterate and format everything; returns events read */
static size_t ReadAll(const unsigned char *data, size_t size, unsigned options, char *lines,
                      size_t linesSize)
{
  EventStreamStruct *stream;
  EventFormatContextStruct ctx;
  EventRecordStruct rec;
  char msg[256], line[4096];
  size_t count = 0, used = 0;
  EventStreamRes res = EventStreamOpen(&stream, data, size, options, msg, sizeof msg);
  if (res != EventStreamOK) {
    assert_null(stream);
    assert_true(strncmp(msg, "offset ", 7) == 0);
    return 0;
  }
  EventStreamFormatContext(stream, &ctx);
  while ((res = EventStreamNext(stream, &rec)) == EventStreamOK) {
    size_t len = EventFormat(line, sizeof line, &rec, &ctx);
    assert_true(len < sizeof line);
    if (lines != NULL && used + len + 1 < linesSize) {
      memcpy(lines + used, line, len);
      lines[used + len] = '\n';
      used += len + 1;
      lines[used] = '\0';
    }
    ++count;
  }
  if (res == EventStreamERROR) {
    size_t i;
    assert_true(EventStreamProblemCount(stream) > 0);
    for (i = 0; i < EventStreamProblemCount(stream); ++i)
      assert_non_null(EventStreamProblem(stream, i));
  } else {
    assert_int_equal(res, EventStreamEND);
    assert_int_equal(EventStreamProblemCount(stream), 0);
  }
  assert_int_equal(EventStreamNext(stream, &rec), res);   /* stays at the end */
  EventStreamClose(stream);
  return count;
}

static void test_stream_read(void **state)
{
  static const char expected[] =
    "    0.000000010 22:13:20.000000010 T1  Test     UW         u=1 w=10\n"
    "    0.000000020 22:13:20.000000020 T2  Telltale Intern     id=9 string=\"pool\"\n"
    "    0.000000030 22:13:20.000000030 T1  Test     UW         u=1 w=30\n"
    "    0.000000030 22:13:20.000000030 T2  Telltale UW         u=2 w=32\n"
    "    0.000000040 22:13:20.000000040 T2  Telltale Label      address=0x7f00[pool] id=9\n"
    "    0.000000050 22:13:20.000000050 T1  Test     AllLetters p=0x10 a=0x7f00[pool] w=3 u=4 d=0.5 s=\"all\"\n"
    "    0.000000060 22:13:20.000000060 T1  Test     UW         u=1 w=60\n"
    "    0.000000070 22:13:20.000000070 T2  Telltale StreamEnd  blocks=3\n";
  int big;
  (void)state;
  for (big = 0; big < 2; ++big) {
    BufStruct *b = calloc(1, sizeof *b);
    EventStreamStruct *stream;
    const EventStreamInfoStruct *info;
    char msg[256], lines[4096];
    unsigned char *copy;

    BuildStream(b, big, 1, 0, 0, NULL);
    copy = malloc(b->len);
    memcpy(copy, b->data, b->len);
    assert_int_equal(EventStreamOpen(&stream, copy, b->len, 0, msg, sizeof msg), EventStreamOK);
    info = EventStreamInfo(stream);
    assert_int_equal(info->major, 1);
    assert_int_equal(info->layout.bigEndian, (unsigned)big);
    assert_int_equal(info->layout.pointerSize, 8);
    assert_true(info->clockHz == 1000000000u);
    assert_true(info->startClock == 5000);
    assert_int_equal(info->pid, 99);
    assert_string_equal(info->program, "tester");
    assert_string_equal(info->registry->name, "test");
    assert_int_equal(info->registry->eventCount, testRegistry.eventCount);
    assert_string_equal(info->registry->events[3].paramNames[5], "s");
    assert_int_equal(info->blockCount, 4);
    assert_int_equal(info->eventCount, 8);
    assert_int_equal(info->unknownCount, 1);
    assert_true(info->streamEnd);
    EventStreamClose(stream);

    assert_int_equal(ReadAll(copy, b->len, 0, lines, sizeof lines), 8);
    assert_string_equal(lines, expected);
    free(copy);
    free(b);
  }
}

/* test_stream_blocks -- the blocks in the merge's order, each with its
 * sound events as stored; the merge works after them */
static void test_stream_blocks(void **state)
{
  static const struct { uint32_t thread; unsigned kind; uint64_t seq; size_t size, events; } want[] = {
    {1, 1, 0, 2 * 24 + 16 + 52, 3},   /* two UW, an unknown, AllLetters */
    {1, 1, 2, 24, 1},
    {2, 0, 1, 25 + 24 + 28, 3},       /* Intern, UW, Label: code 0 ends the data */
    {2, 0, 3, 20, 1},
  };
  BufStruct *b = calloc(1, sizeof *b);
  EventStreamStruct *stream;
  EventStreamBlockStruct block;
  EventRecordStruct rec;
  char msg[256];
  size_t events = 0;
  (void)state;
  BuildStream(b, 0, 1, 0, 0, NULL);
  assert_int_equal(EventStreamOpen(&stream, b->data, b->len, 0, msg, sizeof msg), EventStreamOK);
  assert_int_equal(EventStreamBlockCount(stream), 4);
  for (size_t i = 0; i < 4; ++i) {
    size_t pos = 0;
    EventStreamBlock(stream, i, &block);
    assert_int_equal(block.thread, want[i].thread);
    assert_int_equal(block.kind, want[i].kind);
    assert_int_equal(block.level, 0);
    assert_true(block.seq == want[i].seq);
    assert_int_equal(block.size, want[i].size);
    assert_int_equal(block.events, want[i].events);
    assert_false(block.cut);
    assert_false(block.compact);
    assert_true(block.data > b->data && block.data + block.size <= b->data + b->len);
    while (pos < block.size)      /* whole events, each to its length */
      pos += (size_t)block.data[pos + 2] | (size_t)block.data[pos + 3] << 8;
    assert_int_equal(pos, block.size);
  }
  EventStreamBlock(stream, 0, &block);
  assert_int_equal(block.data[0] | block.data[1] << 8, 0x0104);
  while (EventStreamNext(stream, &rec) == EventStreamOK)
    ++events;
  assert_int_equal(events, 8);
  EventStreamClose(stream);
  free(b);
}

static void CheckRefused(BufStruct *b, const char *message)
{
  EventStreamStruct *stream;
  char msg[256];
  assert_int_equal(EventStreamOpen(&stream, b->data, b->len, 0, msg, sizeof msg), EventStreamREFUSED);
  assert_null(stream);
  assert_string_equal(msg, message);
}

/* CheckByBits -- CRC32C bit by bit, from its definition: the oracle */
static uint32_t CheckByBits(uint32_t crc, const unsigned char *p, size_t n)
{
  crc = ~crc;
  while (n-- > 0) {
    crc ^= *p++;
    for (int k = 0; k < 8; ++k)
      crc = crc & 1 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}

/* The block check is the standard CRC32C, in one piece or in many, of
 * any length and alignment (the instruction's three lanes join right).
 * design/stream.txt .stream.check */
static void test_check(void **state)
{
  static unsigned char big[70000];
  uint32_t whole, parts = 0;
  (void)state;
  assert_int_equal(EventCheck(0, "123456789", 9), 0xE3069283u);
  assert_int_equal(EventCheck(0, "", 0), 0);
  for (size_t i = 0; i < sizeof big; ++i)
    big[i] = (unsigned char)(i * 2654435761u >> 13);
  whole = EventCheck(0, big, sizeof big);
  for (size_t at = 0, step = 1; at < sizeof big; at += step, step = step * 3 % 1031 + 1)
    parts = EventCheck(parts, big + at, at + step <= sizeof big ? step : sizeof big - at);
  assert_int_equal(whole, parts);
  assert_int_equal(whole, CheckByBits(0, big, sizeof big));
  for (size_t i = 0, at = 7, n = 1; i < 200; ++i, at = (at * 31 + 5) % 4000, n = (n * 2 + 977) % 60000)
    assert_int_equal(EventCheck((uint32_t)i, big + at, n), CheckByBits((uint32_t)i, big + at, n));
  big[12345] ^= 1;
  assert_true(EventCheck(0, big, sizeof big) != whole);
}

/* test_check_ways: every way EventCheck has (a table, the crc32
 * instruction, that with VPCLMULQDQ) gives the bit-by-bit CRC, at every
 * length to past where folding starts (640 bytes) and at block lengths,
 * from any alignment; a way this processor lacks is said, not passed */
static void test_check_ways(void **state)
{
  static unsigned char big[70000];
  (void)state;
  for (size_t i = 0; i < sizeof big; ++i)
    big[i] = (unsigned char)(i * 2654435761u >> 11);
  for (int how = 0; how <= 2; ++how) {
    uint32_t crc = 0;
    if (!EventCrcBy(how, &crc, big, 1)) {
      print_message("EventCrcBy(%d): not on this processor, not compared\n", how);
      continue;
    }
    for (size_t n = 0; n < 1400; ++n) {
      crc = (uint32_t)n * 0x9E3779B9u;
      assert_true(EventCrcBy(how, &crc, big + n % 29, n));
      assert_int_equal(crc, CheckByBits((uint32_t)n * 0x9E3779B9u, big + n % 29, n));
    }
    for (size_t n = 65536 - 200; n <= 65536 + 40; n += 7) {
      crc = 0;
      assert_true(EventCrcBy(how, &crc, big + n % 13, n));
      assert_int_equal(crc, CheckByBits(0, big + n % 13, n));
    }
  }
}

static void test_stream_versions(void **state)
{
  BufStruct *b = calloc(1, sizeof *b);
  char lines[4096];
  (void)state;
  BuildStream(b, 0, 5, 0, 0, NULL);
  CheckRefused(b, "offset 8: stream version 5.0.0 is not supported: this reader reads 1.0.x, 2.0.x, 3.0.x and 4.0.x");
  BuildStream(b, 0, 1, 1, 3, NULL);
  CheckRefused(b, "offset 8: stream version 1.1.3 is not supported: this reader reads 1.0.x, 2.0.x, 3.0.x and 4.0.x");
  BuildStream(b, 1, 1, 0, 65535, "fields a newer minor added");
  assert_int_equal(ReadAll(b->data, b->len, 0, lines, sizeof lines), 8);
  b->len = 30;
  CheckRefused(b, "offset 0: header truncated: the file is 30 bytes, the fixed header is 64");
  b->len = 5;
  CheckRefused(b, "offset 0: header truncated: the file is 5 bytes, the fixed header is 64");
  b->data[3] = 'X';
  CheckRefused(b, "offset 0: bad magic: not a telltale stream (it does not start with \"TELLTALE\")");
  free(b);
}

static void test_stream_block_faults(void **state)
{
  BufStruct *b = calloc(1, sizeof *b);
  EventStreamStruct *stream;
  EventRecordStruct rec;
  char msg[256];
  size_t headerLen, count;
  (void)state;
  BuildStream(b, 0, 1, 0, 0, NULL);
  headerLen = b->data[20] | (size_t)b->data[21] << 8;
  /* Break the second block's magic: without resync, the first block is read. */
  {
    size_t second = headerLen + (b->data[headerLen + 4] | (size_t)b->data[headerLen + 5] << 8);
    b->data[second + 3] = 'X';
    assert_int_equal(EventStreamOpen(&stream, b->data, b->len, 0, msg, sizeof msg), EventStreamOK);
    count = 0;
    while (EventStreamNext(stream, &rec) == EventStreamOK)
      ++count;
    assert_int_equal(count, 3);
    assert_int_equal(EventStreamProblemCount(stream), 1);
    snprintf(msg, sizeof msg, "offset %zu: bad block magic \"TTBX\" (expected \"TTBK\")", second);
    assert_string_equal(EventStreamProblem(stream, 0), msg);
    EventStreamClose(stream);
    /* With resync, the blocks after it are read too. */
    assert_int_equal(EventStreamOpen(&stream, b->data, b->len, EVENT_STREAM_RESYNC, msg, sizeof msg),
                     EventStreamOK);
    count = 0;
    while (EventStreamNext(stream, &rec) == EventStreamOK)
      ++count;
    assert_int_equal(count, 5);
    assert_int_equal(EventStreamProblemCount(stream), 1);
    assert_true(strstr(EventStreamProblem(stream, 0), "skipped") != NULL);
    assert_true(EventStreamInfo(stream)->skippedBytes > 0);
    EventStreamClose(stream);
  }
  free(b);
}

/* test_stream_every_truncation -- every prefix of the stream, exactly allocated */
static void test_stream_every_truncation(void **state)
{
  BufStruct *b = calloc(1, sizeof *b);
  size_t len;
  (void)state;
  BuildStream(b, 1, 1, 0, 0, NULL);
  for (len = 0; len <= b->len; ++len) {
    unsigned char *copy = malloc(len > 0 ? len : 1);
    memcpy(copy, b->data, len);
    (void)ReadAll(copy, len, 0, NULL, 0);
    (void)ReadAll(copy, len, EVENT_STREAM_RESYNC, NULL, 0);
    free(copy);
  }
  free(b);
}

/* test_stream_mutations -- random damage must never crash */
static void test_stream_mutations(void **state)
{
  BufStruct *b = calloc(1, sizeof *b);
  unsigned i;
  (void)state;
  randomState = 12345;
  for (i = 0; i < 20000; ++i) {
    size_t len, n, j;
    unsigned char *copy;
    BuildStream(b, (int)(i & 1), 1, 0, 0, NULL);
    len = b->len;
    copy = malloc(len);
    memcpy(copy, b->data, len);
    n = 1 + Random() % 6;
    for (j = 0; j < n; ++j) {
      uint64_t r = Random();
      size_t at = (size_t)(Random() % len);
      switch (r % 5) {
      case 0: copy[at] = (unsigned char)(r >> 8); break;           /* any byte */
      case 1: copy[at] ^= (unsigned char)(1u << (r >> 8) % 8); break;  /* one bit */
      case 2: copy[at] = 0; break;
      case 3: copy[at] = 0xFF; break;
      default:                                                      /* a small number */
        if (at + 2 <= len) {
          copy[at] = (unsigned char)(r >> 8) % 40;
          copy[at + 1] = 0;
        }
        break;
      }
    }
    if (Random() % 4 == 0)
      len = (size_t)(Random() % len);
    (void)ReadAll(copy, len, (unsigned)(Random() % 2), NULL, 0);
    free(copy);
  }
  free(b);
}


/* The compact form.  design/runtime.txt .compact */

static uint64_t packRandom(uint64_t *x)
{
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

/* packEvent -- a raw event of code, in the machine's layout, at p:
 * fields from the generator, values extreme one time in four */
static size_t packEvent(unsigned char *p, unsigned code, EventClock clock, uint64_t *x)
{
  const EventDescStruct *desc = EventRegistryLookup(&testRegistry, code);
  size_t at = EVENT_HEADER_LEN;
  uint32_t codeLength;
  for (const char *f = desc->format; *f != '\0'; ++f) {
    uint64_t r = packRandom(x), v = r % 4 == 0 ? UINT64_MAX - r % 3 : r % 4 == 1 ? r % 200 : r;
    switch (*f) {
    case 'P': case 'A': { uintptr_t w = (uintptr_t)v; memcpy(p + at, &w, sizeof w); at += sizeof w; break; }
    case 'W': { EventW w = (EventW)v; memcpy(p + at, &w, sizeof w); at += sizeof w; break; }
    case 'U': { uint32_t u = (uint32_t)v; memcpy(p + at, &u, 4); at += 4; break; }
    case 'D': { double d = (double)(int64_t)v / 3.0; memcpy(p + at, &d, 8); at += 8; break; }
    default: {                                  /* S */
      size_t n = r % 5 == 0 ? 0 : r % 40;
      for (size_t i = 0; i < n; ++i)
        p[at + i] = (unsigned char)('a' + (r >> (i % 50)) % 26);
      p[at + n] = 0;
      at += n + 1;
    }
    }
  }
  codeLength = EVENT_CODE_LENGTH(code, at);
  memcpy(p, &codeLength, 4);
  memcpy(p + 4, &clock, 8);
  return at;
}

/* packBlock -- raw events of every test code, with clocks that mostly
 * rise and sometimes fall or jump; codes that share their low four bits
 * (0x0002, 0x0102 and 0x0112; 0x0004 and 0x0104) take turns with others in the
 * encoder's codes at hand (.compact.encode.cost) */
static size_t packBlock(unsigned char *raw, size_t limit, uint64_t seed)
{
  static const unsigned codes[] = {0x0002, 0x0004, 0x0005, 0x0100, 0x0101, 0x0102, 0x0103, 0x0104,
                                   0x0112};
  uint64_t x = seed;
  EventClock clock = packRandom(&x);
  size_t size = 0;
  while (size + EVENT_SIZE_MAX <= limit) {
    uint64_t r = packRandom(&x);
    clock += r % 8 == 0 ? packRandom(&x) : r % 8 == 1 ? (EventClock)-(int64_t)(r % 1000) : r % 300;
    size += packEvent(raw + size, codes[r / 8 % 9], clock, &x);
  }
  return size;
}

/* pack-1.1: every letter round-trips, byte for byte */
static void test_pack_roundtrip(void **state)
{
  static unsigned char raw[65536], packed[65536], back[65536];
  EventPackStateStruct *pack = malloc(sizeof *pack);
  EventLayoutStruct native;
  (void)state;
  assert_non_null(pack);
  EventLayoutNative(&native);
  for (uint64_t seed = 1; seed < 40; ++seed) {
    size_t rawSize = packBlock(raw, seed % 2 ? sizeof raw : 3000, seed * 0x9E3779B97F4A7C15u);
    size_t n = EventPackEncode(pack, &testRegistry, raw, rawSize, packed, sizeof packed), out, got;
    const char *why = NULL;
    assert_true(n > 0 && n < rawSize);
    assert_true(EventPackRawSize(packed, n, &got));
    assert_int_equal(got, rawSize);
    memset(back, 0xAA, sizeof back);
    if (!EventPackDecode(pack, packed, n, native.bigEndian, back, sizeof back, &out, &why))
      fail_msg("seed %u: %s", (unsigned)seed, why);
    assert_int_equal(out, rawSize);
    assert_memory_equal(back, raw, rawSize);
  }
  free(pack);
}

/* pack-1.2: every cut decodes to a whole-event prefix and says so; every
 * byte changed decodes within its bounds (ASan checks the reads) */
static void test_pack_damage(void **state)
{
  static unsigned char raw[8192], packed[8192], back[8192];
  EventPackStateStruct *pack = malloc(sizeof *pack);
  EventLayoutStruct native;
  size_t rawSize, n;
  uint64_t x = 77;
  (void)state;
  assert_non_null(pack);
  EventLayoutNative(&native);
  rawSize = packBlock(raw, 4000, 12345);
  n = EventPackEncode(pack, &testRegistry, raw, rawSize, packed, sizeof packed);
  assert_true(n > 0);
  for (size_t cut = 0; cut < n; ++cut) {
    unsigned char *in = malloc(cut > 0 ? cut : 1);
    size_t out = 0;
    const char *why = NULL;
    memcpy(in, packed, cut);
    assert_false(EventPackDecode(pack, in, cut, native.bigEndian, back, rawSize, &out, &why));
    assert_non_null(why);
    assert_true(out <= rawSize);
    assert_memory_equal(back, raw, out);
    for (size_t e = 0; e < out; e += (size_t)EventLoad(raw + e + 2, 2, native.bigEndian))
      assert_true(e + EventLoad(raw + e + 2, 2, native.bigEndian) <= out);
    free(in);
  }
  for (size_t i = 0; i < n; ++i)
    for (unsigned t = 0; t < 3; ++t) {
      unsigned char *in = malloc(n);
      size_t out = 0;
      const char *why = NULL;
      memcpy(in, packed, n);
      in[i] = (unsigned char)(t == 0 ? in[i] ^ 1 : t == 1 ? 0xFF : packRandom(&x));
      (void)EventPackDecode(pack, in, n, native.bigEndian, back, rawSize, &out, &why);
      assert_true(out <= rawSize);
      free(in);
    }
  free(pack);
}

/* pack-1.3: what the encoder cannot pack stays raw: an unknown code, a
 * length not the registry's, a string with no NUL, no saving */
static void test_pack_refused(void **state)
{
  static unsigned char raw[4096], packed[8192];
  EventPackStateStruct *pack = malloc(sizeof *pack);
  uint64_t x = 5;
  size_t size;
  uint32_t codeLength;
  (void)state;
  assert_non_null(pack);
  size = packEvent(raw, 0x0104, 1000, &x);
  size += packEvent(raw + size, 0x0104, 1010, &x);
  assert_true(EventPackEncode(pack, &testRegistry, raw, size, packed, sizeof packed) > 0);
  codeLength = EVENT_CODE_LENGTH(0x0777, EVENT_HEADER_LEN);     /* unknown */
  memcpy(raw + size, &codeLength, 4);
  assert_int_equal(EventPackEncode(pack, &testRegistry, raw, size + EVENT_HEADER_LEN, packed,
                                   sizeof packed), 0);
  codeLength = EVENT_CODE_LENGTH(0x0104, EVENT_HEADER_LEN + 4);   /* UW is longer */
  memcpy(raw + size, &codeLength, 4);
  assert_int_equal(EventPackEncode(pack, &testRegistry, raw, size + EVENT_HEADER_LEN + 4, packed,
                                   sizeof packed), 0);
  size = packEvent(raw, 0x0101, 5, &x);
  raw[size - 1] = 'x';                                          /* no NUL */
  assert_int_equal(EventPackEncode(pack, &testRegistry, raw, size, packed, sizeof packed), 0);
  size = packEvent(raw, 0x0102, 5, &x);                         /* 12 bytes: no saving */
  assert_int_equal(EventPackEncode(pack, &testRegistry, raw, size, packed, 12), 0);
  free(pack);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_decode_letters_little64),
    cmocka_unit_test(test_decode_letters_big64),
    cmocka_unit_test(test_decode_letters_little32),
    cmocka_unit_test(test_decode_letters_big32),
    cmocka_unit_test(test_decode_letters_mixed),
    cmocka_unit_test(test_decode_native),
    cmocka_unit_test(test_decode_truncated),
    cmocka_unit_test(test_decode_wrong_length),
    cmocka_unit_test(test_decode_end_and_unknown),
    cmocka_unit_test(test_decode_strings),
    cmocka_unit_test(test_format_line),
    cmocka_unit_test(test_format_short_buffer),
    cmocka_unit_test(test_format_double),
    cmocka_unit_test(test_format_numbers),
    cmocka_unit_test(test_format_cached),
    cmocka_unit_test(test_stream_read),
    cmocka_unit_test(test_check),
    cmocka_unit_test(test_check_ways),
    cmocka_unit_test(test_stream_versions),
    cmocka_unit_test(test_stream_block_faults),
    cmocka_unit_test(test_stream_blocks),
    cmocka_unit_test(test_stream_every_truncation),
    cmocka_unit_test(test_stream_mutations),
    cmocka_unit_test(test_pack_roundtrip),
    cmocka_unit_test(test_pack_damage),
    cmocka_unit_test(test_pack_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
