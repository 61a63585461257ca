/* <tests/unit/test_roundtrip.c> -- every event of the test registry, emitted and read back
 *
 * .design: design/index.txt .req.type design/registry.txt .reg.limits
 *   design/stream.txt .stream design/runtime.txt .sol.intern .sol.block
 *
 * Covers:
 *   roundtrip-1.*  every row of tests/lib/eventdef.h with a code of 0x0100 or
 *                  more, emitted through EVENT_RELATION (so a new row is
 *                  covered without touching this file) with sentinel
 *                  values: zeros and NULL; all-ones pointers, addresses,
 *                  words and UINT32_MAX; the top bit; distinct values per
 *                  parameter (so swapped fields show); doubles 0, NaN,
 *                  +Inf, -Inf, -0.0, DBL_MIN, DBL_TRUE_MIN, DBL_MAX, -1.5;
 *                  strings "", NULL (sent empty), 1023 characters (kept
 *                  whole), 5000 characters (cut to 1023), C escapes and
 *                  high bytes.  The stream is written to memory, decoded
 *                  with EventStreamOpen/EventStreamNext, and every value
 *                  compared bit for bit (NaN by isnan, -0.0 by signbit),
 *                  with the event count, the event lengths, the header and
 *                  a clean StreamEnd.
 *   roundtrip-2.*  strings and labels: EventInternString gives one id per
 *                  string and emits Intern once per session; EventLabelString
 *                  then an A event: EventStreamLabel resolves it and
 *                  EventFormat prints "0x...[label]"; relabelling.
 *   roundtrip-3.*  blocks: a thread with 4096-byte buffers fills hundreds
 *                  of blocks of three kinds, with events of many sizes;
 *                  none is lost and each kind keeps its order; 3.2 the
 *                  same written compact (EventCompact).
 *   roundtrip-4.*  EventBufferSizeSet's argument checks; no default
 *                  telltale.log when the program adds a stream first.
 */

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture.h"


/* Sentinel values ---------------------------------------------------
 *
 * The events are emitted SET_COUNT times.  Each time, every parameter
 * gets a value chosen by the set and, for the "distinct" sets and for
 * doubles, by the parameter's position, so that fields swapped by the
 * encoder or decoder are caught. */

#define SET_COUNT 9                     /* = the number of doubles below */

static const double doubles[SET_COUNT] = {
  0.0, NAN, INFINITY, -INFINITY, -0.0, DBL_MIN, DBL_TRUE_MIN, DBL_MAX, -1.5
};

static char string1023[EVENT_STRING_MAX + 1];   /* kept whole */
static char *string5000;                        /* cut to 1023 */
static const char stringEscapes[] = "tab\there \"quoted\" back\\slash\nnewline";
static const char stringHigh[] = "high bytes \xc3\xa9\xff\x01 end";

#define STRING_COUNT 6
static const char *stringOfSet(unsigned set)
{
  const char *strings[STRING_COUNT] = {
    "", NULL, string1023, string5000, stringEscapes, stringHigh
  };
  return strings[set % STRING_COUNT];
}

static unsigned currentSet;             /* the set being emitted */

/* integerOf -- a P, A, W (bits = pointer width) or U (32) value */
static uint64_t integerOf(int position, unsigned bits)
{
  uint64_t mask = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
  switch (currentSet) {
  case 0: return 0;
  case 1: return mask;                  /* all ones: UINTPTR_MAX, UINT32_MAX */
  case 2: return (uint64_t)1 << (bits - 1);
  case 3: return 1;
  default:                              /* distinct per parameter and set */
    return (UINT64_C(0x9E3779B97F4A7C15) * (uint64_t)(position + 1)
            ^ (uint64_t)currentSet << 4) & mask;
  }
}

/* The arguments of one emission, recorded as they are evaluated.
 * position is a __COUNTER__ value: the preprocessor numbers the
 * parameters left to right, so sorting by it gives the parameter order
 * whatever order the compiler evaluates the arguments in. */
typedef struct ArgStruct {
  int position;
  char letter;
  EventValueUnion value;
} ArgStruct;

static ArgStruct args[EVENT_PARAM_MAX];
static unsigned argCount;

static void argRecord(int position, char letter, EventValueUnion value)
{
  assert_true(argCount < EVENT_PARAM_MAX);
  args[argCount].position = position;
  args[argCount].letter = letter;
  args[argCount].value = value;
  ++argCount;
}

static EventP argP(int position)
{
  EventValueUnion v;
  v.u = integerOf(position, 8 * sizeof(EventP));
  argRecord(position, 'P', v);
  return (EventP)(uintptr_t)v.u;
}

static EventA argA(int position)
{
  EventValueUnion v;
  v.u = integerOf(position, 8 * sizeof(EventA));
  argRecord(position, 'A', v);
  return (EventA)v.u;
}

static EventW argW(int position)
{
  EventValueUnion v;
  v.u = integerOf(position, 8 * sizeof(EventW));
  argRecord(position, 'W', v);
  return (EventW)v.u;
}

static EventU argU(int position)
{
  EventValueUnion v;
  v.u = integerOf(position, 32);
  argRecord(position, 'U', v);
  return (EventU)v.u;
}

static EventD argD(int position)
{
  EventValueUnion v;
  v.d = doubles[(currentSet + (unsigned)position) % SET_COUNT];
  argRecord(position, 'D', v);
  return v.d;
}

static EventS argS(int position)
{
  EventValueUnion v;
  v.s = stringOfSet(currentSet);
  argRecord(position, 'S', v);
  return v.s;
}


/* What was emitted -------------------------------------------------- */

typedef struct ExpectStruct {
  unsigned code;
  unsigned kind;
  const char *name;
  char format[EVENT_PARAM_MAX + 1];     /* "" for none */
  EventValueUnion values[EVENT_PARAM_MAX];
  size_t stringLength;
  unsigned length;                      /* of the whole event */
} ExpectStruct;

static ExpectStruct *expects;
static size_t expectCount, expectLimit;

/* expectEmitted -- note the emission just made from the recorded args */
static void expectEmitted(unsigned code, unsigned kind, const char *name, const char *format)
{
  ExpectStruct *e;
  unsigned length = EVENT_HEADER_LEN;
  if (expectCount == expectLimit) {
    expectLimit = expectLimit == 0 ? 256 : 2 * expectLimit;
    expects = realloc(expects, expectLimit * sizeof *expects);
    assert_non_null(expects);
  }
  e = &expects[expectCount++];
  memset(e, 0, sizeof *e);
  e->code = code;
  e->kind = kind;
  e->name = name;
  for (unsigned i = 1; i < argCount; ++i)       /* insertion sort by position */
    for (unsigned j = i; j > 0 && args[j - 1].position > args[j].position; --j) {
      ArgStruct t = args[j];
      args[j] = args[j - 1];
      args[j - 1] = t;
    }
  assert_int_equal(argCount, strcmp(format, "0") == 0 ? 0 : strlen(format));
  for (unsigned i = 0; i < argCount; ++i) {
    e->format[i] = args[i].letter;
    e->values[i] = args[i].value;
    assert_int_equal(args[i].letter, format[i]);
    switch (args[i].letter) {
    case 'P': case 'A': length += sizeof(EventA); break;
    case 'W': length += sizeof(EventW); break;
    case 'U': length += 4; break;
    case 'D': length += 8; break;
    case 'S':
      e->stringLength = EventStringLength(args[i].value.s);
      length += (unsigned)e->stringLength + 1;
      break;
    }
  }
  e->length = length;
}

/* The emitters of every row, from the relation.
 * EVENT_ARG_<letter> is the relation's placeholder for one parameter;
 * ROUNDTRIP_EMIT turns a row into EVENT_<FORMAT>(Name, args...).  The
 * __VA_OPT__ in ROUNDTRIP_PARAMS drops the comma for format 0 (no
 * parameters); gcc and clang accept it in C11 mode. */
#define EVENT_ARG_P argP(__COUNTER__)
#define EVENT_ARG_A argA(__COUNTER__)
#define EVENT_ARG_W argW(__COUNTER__)
#define EVENT_ARG_U argU(__COUNTER__)
#define EVENT_ARG_D argD(__COUNTER__)
#define EVENT_ARG_S argS(__COUNTER__)
#define ROUNDTRIP_PARAMS(...) __VA_OPT__(,) __VA_ARGS__
#define ROUNDTRIP_CALL(macro, ...) macro(__VA_ARGS__)
#define ROUNDTRIP_EMIT(name, code, always, kind, format, params) \
  if ((code) >= EVENT_CODE_RESERVED_LIMIT) { \
    argCount = 0; \
    ROUNDTRIP_CALL(EVENT_##format, name ROUNDTRIP_PARAMS params); \
    expectEmitted((code), EventKind##kind, #name, #format); \
  }

/* emitAll -- every client row once, with the current set's values */
static void emitAll(void)
{
  EVENT_RELATION(ROUNDTRIP_EMIT)
}

#undef ROUNDTRIP_EMIT

/* ROW_COUNT -- the relation's rows that emitAll emits */
#define ROUNDTRIP_COUNT(name, code, always, kind, format, params) \
  + ((code) >= EVENT_CODE_RESERVED_LIMIT)
enum { ROW_COUNT = 0 EVENT_RELATION(ROUNDTRIP_COUNT) };
#undef ROUNDTRIP_COUNT


/* Comparing ---------------------------------------------------------- */

static void assertDoubleSame(double got, double want, const char *where)
{
  uint64_t gotBits, wantBits;
  if (isnan(want)) {
    if (!isnan(got))
      fail_msg("%s: want NaN, got %.17g", where, got);
    return;
  }
  if (signbit(want) != signbit(got))
    fail_msg("%s: sign of %.17g differs from %.17g", where, got, want);
  memcpy(&gotBits, &got, sizeof got);
  memcpy(&wantBits, &want, sizeof want);
  if (gotBits != wantBits)
    fail_msg("%s: want %.17g (0x%016" PRIx64 "), got %.17g (0x%016" PRIx64 ")",
             where, want, wantBits, got, gotBits);
}

/* assertRecordIs -- rec decodes exactly what e says was emitted */
static void assertRecordIs(const EventRecordStruct *rec, const ExpectStruct *e, size_t index)
{
  char where[160];
  snprintf(where, sizeof where, "event %zu (%s, code 0x%04x)", index, e->name, e->code);
  if (rec->code != e->code)
    fail_msg("%s: decoded code 0x%04x", where, rec->code);
  assert_non_null(rec->desc);
  assert_string_equal(rec->desc->name, e->name);
  assert_string_equal(rec->desc->format, e->format);
  assert_int_equal(rec->kind, e->kind);
  if (rec->length != e->length)
    fail_msg("%s: length %u, want %u", where, rec->length, e->length);
  for (unsigned i = 0; e->format[i] != '\0'; ++i) {
    char field[200];
    snprintf(field, sizeof field, "%s parameter %u (%c)", where, i, e->format[i]);
    switch (e->format[i]) {
    case 'D':
      assertDoubleSame(rec->values[i].d, e->values[i].d, field);
      break;
    case 'S': {
      const char *want = e->values[i].s != NULL ? e->values[i].s : "";
      if (rec->stringLength != e->stringLength)
        fail_msg("%s: string length %zu, want %zu", field, rec->stringLength, e->stringLength);
      if (memcmp(rec->values[i].s, want, e->stringLength) != 0 || rec->values[i].s[e->stringLength] != '\0')
        fail_msg("%s: string differs", field);
      break;
    }
    default:
      if (rec->values[i].u != e->values[i].u)
        fail_msg("%s: 0x%" PRIx64 ", want 0x%" PRIx64, field, rec->values[i].u, e->values[i].u);
    }
  }
}


/* roundtrip-1: every row, every set ---------------------------------- */

static void makeStrings(void)
{
  for (size_t i = 0; i < EVENT_STRING_MAX; ++i)
    string1023[i] = (char)('a' + i % 26);
  string1023[EVENT_STRING_MAX] = '\0';
  string5000 = malloc(5001);
  assert_non_null(string5000);
  for (size_t i = 0; i < 5000; ++i)
    string5000[i] = (char)('A' + i % 26);
  string5000[5000] = '\0';
}

/* roundtrip-1.1: every row of the relation is in the registry, and the
 * relation leaves out only the retired rows */
static void roundtrip_1_1_relation_covers_registry(void **state)
{
  unsigned client = 0, retired = 0;
  (void)state;
  for (unsigned i = 0; i < EventRegistry.eventCount; ++i) {
    const EventDescStruct *d = &EventRegistry.events[i];
    if (d->code < EVENT_CODE_RESERVED_LIMIT)
      continue;
    if (d->retired)
      ++retired;
    else
      ++client;
  }
  assert_int_equal(client, ROW_COUNT);
  assert_true(retired >= 1);                    /* TestRetired */
}

/* roundtrip-1.2: emit every row in every set; decode; compare */
static void roundtrip_1_2_every_row_every_set(void **state)
{
  CaptureStruct c;
  EventRecordStruct rec, last;
  size_t *cursor, decoded = 0, all = 0, streamEnds = 0;
  (void)state;

  expectCount = 0;
  CaptureStart(&c);
  for (currentSet = 0; currentSet < SET_COUNT; ++currentSet)
    emitAll();
  assert_int_equal(expectCount, (size_t)ROW_COUNT * SET_COUNT);
  CaptureFinish(&c);

  /* the header */
  assert_int_equal(c.info->major, EVENT_VERSION_MAJOR);
  assert_int_equal(c.info->median, EVENT_VERSION_MEDIAN);
  assert_int_equal(c.info->layout.pointerSize, sizeof(EventP));
  assert_int_equal(c.info->layout.wordSize, sizeof(EventW));
  assert_int_equal(c.info->doubleFormat, 1);
  assert_int_equal(c.info->pid, (uint32_t)getpid());
  assert_string_equal(c.info->registry->name, "telltale tests");
  assert_int_equal(c.info->registry->eventCount, EventRegistry.eventCount);
  {
    const EventDescStruct *retired = EventRegistryLookup(c.info->registry, EventCodeTestRetired);
    assert_non_null(retired);
    assert_true(retired->retired);
    assert_string_equal(retired->name, "TestRetired");
  }

  /* Each kind is one sequence from this thread, so within a kind the
   * events come back in the order they were emitted.  Across kinds the
   * order is the clock's, which is not checked here. */
  cursor = calloc(EVENT_KIND_LIMIT, sizeof *cursor);
  assert_non_null(cursor);
  memset(&last, 0, sizeof last);
  while (CaptureNext(&c, &rec)) {
    ++all;
    last = rec;
    if (rec.code == EventCodeStreamEnd)
      ++streamEnds;
    if (rec.code < EVENT_CODE_RESERVED_LIMIT)
      continue;
    assert_true(rec.kind < EVENT_KIND_LIMIT);
    while (cursor[rec.kind] < expectCount && expects[cursor[rec.kind]].kind != rec.kind)
      ++cursor[rec.kind];
    if (cursor[rec.kind] == expectCount)
      fail_msg("an extra %s event (code 0x%04x) was decoded",
               rec.desc != NULL ? rec.desc->name : "?", rec.code);
    assertRecordIs(&rec, &expects[cursor[rec.kind]], cursor[rec.kind]);
    ++cursor[rec.kind];
    ++decoded;
  }
  assert_int_equal(decoded, expectCount);
  assert_int_equal(all, c.info->eventCount);
  assert_int_equal(c.info->unknownCount, 0);
  assert_int_equal(c.info->skippedBytes, 0);
  assert_int_equal(EventStreamProblemCount(c.reader), 0);

  /* a clean end: StreamEnd once, last, counting the blocks before its own */
  assert_true(c.info->streamEnd);
  assert_int_equal(streamEnds, 1);
  assert_int_equal(last.code, EventCodeStreamEnd);
  assert_int_equal(last.values[0].u, c.info->blockCount - 1);

  free(cursor);
  CaptureClose(&c);
}

/* roundtrip-1.3: the long strings: 1023 characters kept, 5000 cut to
 * 1023, and the events are exactly as long as their strings need */
static void roundtrip_1_3_long_strings(void **state)
{
  CaptureStruct c;
  EventRecordStruct rec;
  unsigned seen = 0;
  (void)state;
  CaptureStart(&c);
  EVENT_S(TestS, string1023);
  EVENT_S(TestS, string5000);
  EVENT_WS(TestWS, 7, string5000);
  EVENT_S(TestS, NULL);
  CaptureFinish(&c);
  while (CaptureNext(&c, &rec)) {
    const char *want = seen == 0 ? string1023 : string5000;
    if (rec.code != EventCodeTestS && rec.code != EventCodeTestWS)
      continue;
    if (seen == 3) {                            /* NULL: sent empty */
      assert_int_equal(rec.code, EventCodeTestS);
      assert_int_equal(rec.stringLength, 0);
      assert_string_equal(rec.values[0].s, "");
      assert_int_equal(rec.length, EVENT_HEADER_LEN + 1);
    } else {
      unsigned s = rec.code == EventCodeTestWS ? 1 : 0;
      assert_int_equal(rec.stringLength, EVENT_STRING_MAX);
      assert_int_equal(strlen(rec.values[s].s), EVENT_STRING_MAX);
      assert_memory_equal(rec.values[s].s, want, EVENT_STRING_MAX);
      assert_int_equal(rec.length, EVENT_HEADER_LEN + s * sizeof(EventW) + EVENT_STRING_MAX + 1);
      if (s == 1)
        assert_int_equal(rec.values[0].u, 7);
    }
    ++seen;
  }
  assert_int_equal(seen, 4);
  CaptureClose(&c);
}


/* roundtrip-2: strings and labels ------------------------------------ */

/* countInterns -- Intern events of a string, and the id of the last */
static size_t countInterns(CaptureStruct *c, const char *string, uint64_t *idReturn)
{
  EventRecordStruct rec;
  size_t n = 0;
  CaptureRewind(c);
  while (CaptureNext(c, &rec))
    if (rec.code == EventCodeIntern && strcmp(rec.values[1].s, string) == 0) {
      ++n;
      *idReturn = rec.values[0].u;
    }
  return n;
}

/* roundtrip-2.1: one id per string, one Intern per string */
static void roundtrip_2_1_intern_once(void **state)
{
  CaptureStruct c;
  char alphaCopy[] = "alpha";
  char *cut = malloc(EVENT_STRING_MAX + 1);
  EventW alpha, alpha2, beta, longId, cutId;
  uint64_t id = 0;
  (void)state;
  assert_non_null(cut);
  memcpy(cut, string5000, EVENT_STRING_MAX);
  cut[EVENT_STRING_MAX] = '\0';

  CaptureStart(&c);
  alpha = EventInternString("alpha");
  alpha2 = EventInternString(alphaCopy);        /* same text, other pointer */
  beta = EventInternString("beta");
  longId = EventInternString(string5000);       /* cut to 1023 characters */
  cutId = EventInternString(cut);
  assert_true(alpha != 0);
  assert_int_equal(alpha, alpha2);
  assert_true(beta != 0 && beta != alpha);
  assert_true(longId != 0);
  assert_int_equal(longId, cutId);
  assert_int_equal(EventInternString("alpha"), alpha);
  CaptureFinish(&c);

  assert_int_equal(countInterns(&c, "alpha", &id), 1);
  assert_int_equal(id, alpha);
  assert_int_equal(countInterns(&c, "beta", &id), 1);
  assert_int_equal(id, beta);
  assert_int_equal(countInterns(&c, cut, &id), 1);
  assert_int_equal(id, longId);
  CaptureClose(&c);
  free(cut);
}

/* roundtrip-2.2: in a new session a string seen before is interned
 * again, so that the new stream can resolve labels made with it */
static void roundtrip_2_2_intern_again_in_new_session(void **state)
{
  CaptureStruct c;
  uint64_t id = 0;
  EventW first, again;
  (void)state;
  CaptureStart(&c);
  first = EventInternString("session string");
  CaptureFinish(&c);
  assert_int_equal(countInterns(&c, "session string", &id), 1);
  CaptureClose(&c);

  CaptureStart(&c);
  again = EventInternString("session string");
  EventLabel((EventA)0x1234, again);
  EVENT_A(TestA, (EventA)0x1234);
  CaptureFinish(&c);
  assert_int_equal(again, first);
  assert_int_equal(countInterns(&c, "session string", &id), 1);
  assert_int_equal(id, again);
  {
    EventRecordStruct rec;
    int found = 0;
    CaptureRewind(&c);
    while (CaptureNext(&c, &rec))
      if (rec.code == EventCodeTestA) {
        const char *label = EventStreamLabel(c.reader, rec.values[0].u);
        assert_non_null(label);
        assert_string_equal(label, "session string");
        found = 1;
      }
    assert_true(found);
  }
  CaptureClose(&c);
}

/* formatLine -- EventFormat's line for rec, with the stream's context */
static void formatLine(CaptureStruct *c, const EventRecordStruct *rec, char *line, size_t size)
{
  EventFormatContextStruct ctx;
  size_t n;
  EventStreamFormatContext(c->reader, &ctx);
  n = EventFormat(line, size, rec, &ctx);
  assert_true(n < size);
}

/* roundtrip-2.3: a label resolves, and EventFormat shows it after the
 * address; an unlabelled address has none; a relabel replaces it */
static void roundtrip_2_3_label_resolves_and_formats(void **state)
{
  static int labelled, unlabelled;
  EventA here = (EventA)&labelled, there = (EventA)&unlabelled;
  CaptureStruct c;
  EventRecordStruct rec;
  unsigned seen = 0;
  (void)state;
  CaptureStart(&c);
  EventLabelString(here, "label one");
  EVENT_A(TestA, here);
  EVENT_A(TestA, there);
  EventLabelString(here, "label two");
  EVENT_A(TestA, here);
  CaptureFinish(&c);

  while (CaptureNext(&c, &rec)) {
    char line[512], want[64];
    const char *label;
    if (rec.code != EventCodeTestA)
      continue;
    formatLine(&c, &rec, line, sizeof line);
    label = EventStreamLabel(c.reader, rec.values[0].u);
    switch (seen++) {
    case 0:
      assert_int_equal(rec.values[0].u, here);
      assert_non_null(label);
      assert_string_equal(label, "label one");
      snprintf(want, sizeof want, "a=0x%" PRIx64 "[label one]", (uint64_t)here);
      if (strstr(line, want) == NULL)
        fail_msg("line '%s' lacks '%s'", line, want);
      break;
    case 1:
      assert_int_equal(rec.values[0].u, there);
      assert_null(label);
      if (strchr(line, '[') != NULL)
        fail_msg("unlabelled address shows a label: '%s'", line);
      break;
    case 2:
      assert_non_null(label);
      assert_string_equal(label, "label two");
      if (strstr(line, "[label two]") == NULL)
        fail_msg("line '%s' lacks '[label two]'", line);
      break;
    }
  }
  assert_int_equal(seen, 3);
  CaptureClose(&c);
}


/* roundtrip-3: blocks ----------------------------------------------- */

#define BLOCK_EVENTS 60000

static char boundaryChar(size_t i, size_t j)
{
  return (char)('a' + (i + j) % 26);
}

/* emitMany -- events of three kinds and many sizes, from a new thread
 * (the buffer size applies to threads set up after EventBufferSizeSet) */
static void *emitMany(void *arg)
{
  char s[EVENT_STRING_MAX + 1];
  (void)arg;
  for (size_t i = 0; i < BLOCK_EVENTS; ++i) {
    EVENT_W(TestW, i);
    if (i % 7 == 0) {
      size_t n = i % (EVENT_STRING_MAX + 1);
      for (size_t j = 0; j < n; ++j)
        s[j] = boundaryChar(i, j);
      s[n] = '\0';
      EVENT_WS(TestWS, i, s);
    }
    if (i % 3 == 0)
      EVENT_PAW(TestPAW, (void *)(uintptr_t)i, (EventA)~i, i * 3);
  }
  return NULL;
}

/* roundtrip-3.1: nothing lost, order kept, across hundreds of blocks */
/* manyBlocks -- roundtrip-3.1's emission and checks; with compact,
 * the blocks written compact by EventCompact (design/runtime.txt
 * .compact), which is then set back */
static void manyBlocks(int compact)
{
  CaptureStruct c;
  EventRecordStruct rec;
  pthread_t thread;
  size_t nextW = 0, nextWS = 0, nextPAW = 0, bytes = 0;
  int was = 0;
  CaptureStart(&c);
  if (compact)
    was = EventCompact(1);
  assert_int_equal(EventBufferSizeSet(4096), 0);
  assert_int_equal(pthread_create(&thread, NULL, emitMany, NULL), 0);
  assert_int_equal(pthread_join(thread, NULL), 0);
  assert_int_equal(EventBufferSizeSet(64 * 1024), 0);
  CaptureFinish(&c);

  while (CaptureNext(&c, &rec)) {
    bytes += rec.length;
    switch (rec.code) {
    case EventCodeTestW:
      if (rec.values[0].u != nextW)
        fail_msg("TestW %" PRIu64 " where %zu was due", rec.values[0].u, nextW);
      ++nextW;
      break;
    case EventCodeTestWS: {
      size_t i = (size_t)rec.values[0].u, n = i % (EVENT_STRING_MAX + 1);
      if (i != nextWS)
        fail_msg("TestWS %zu where %zu was due", i, nextWS);
      assert_int_equal(rec.stringLength, n);
      for (size_t j = 0; j < n; ++j)
        if (rec.values[1].s[j] != boundaryChar(i, j))
          fail_msg("TestWS %zu: character %zu differs", i, j);
      nextWS += 7;
      break;
    }
    case EventCodeTestPAW:
      if (rec.values[0].u != nextPAW)
        fail_msg("TestPAW %" PRIu64 " where %zu was due", rec.values[0].u, nextPAW);
      assert_int_equal(rec.values[1].u, (uint64_t)(EventA)~(uintptr_t)nextPAW);
      assert_int_equal(rec.values[2].u, nextPAW * 3);
      nextPAW += 3;
      break;
    default:
      break;
    }
  }
  assert_int_equal(nextW, BLOCK_EVENTS);
  assert_int_equal(nextWS, (BLOCK_EVENTS + 6) / 7 * 7);
  assert_int_equal(nextPAW, (BLOCK_EVENTS + 2) / 3 * 3);
  /* 4096-byte blocks hold at most 4072 bytes of events each */
  assert_true(c.info->blockCount >= bytes / (4096 - EVENT_BLOCK_HEADER_LEN));
  assert_true(c.info->blockCount > 500);
  if (compact) {
    /* every block but those that would not be shorter: none here */
    assert_int_equal(c.info->compactBlocks, c.info->blockCount);
    assert_int_equal(EventCompact(was), 1);
  }
  CaptureClose(&c);
}

static void roundtrip_3_1_small_buffers_many_blocks(void **state)
{
  (void)state;
  manyBlocks(0);
}

/* roundtrip-3.2: the same, compact by EventCompact */
static void roundtrip_3_2_compact_by_call(void **state)
{
  (void)state;
  manyBlocks(1);
}


/* roundtrip-4: odds and ends ----------------------------------------- */

/* roundtrip-4.1: buffer sizes must be powers of two from 4096 to 64M */
static void roundtrip_4_1_buffer_size_checked(void **state)
{
  (void)state;
  assert_int_equal(EventBufferSizeSet(0), 22);
  assert_int_equal(EventBufferSizeSet(2048), 22);
  assert_int_equal(EventBufferSizeSet(4095), 22);
  assert_int_equal(EventBufferSizeSet(4097), 22);
  assert_int_equal(EventBufferSizeSet(6144), 22);
  assert_int_equal(EventBufferSizeSet((size_t)128 * 1024 * 1024), 22);
  assert_int_equal(EventBufferSizeSet(4096), 0);
  assert_int_equal(EventBufferSizeSet((size_t)64 * 1024 * 1024), 0);
  assert_int_equal(EventBufferSizeSet(64 * 1024), 0);
}

/* roundtrip-4.2: a program that adds a stream before its first event
 * gets no default telltale.log (the tests run in an empty directory) */
static void roundtrip_4_2_no_default_log(void **state)
{
  (void)state;
  assert_int_equal(access("telltale.log", F_OK), -1);
}


int main(void)
{
  char dir[] = "/tmp/test_roundtrip.XXXXXX";
  int failures;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(roundtrip_1_1_relation_covers_registry),
    cmocka_unit_test(roundtrip_1_2_every_row_every_set),
    cmocka_unit_test(roundtrip_1_3_long_strings),
    cmocka_unit_test(roundtrip_2_1_intern_once),
    cmocka_unit_test(roundtrip_2_2_intern_again_in_new_session),
    cmocka_unit_test(roundtrip_2_3_label_resolves_and_formats),
    cmocka_unit_test(roundtrip_3_1_small_buffers_many_blocks),
    cmocka_unit_test(roundtrip_3_2_compact_by_call),
    cmocka_unit_test(roundtrip_4_1_buffer_size_checked),
    cmocka_unit_test(roundtrip_4_2_no_default_log),
  };
  if (mkdtemp(dir) == NULL || chdir(dir) != 0) {
    perror("test_roundtrip: temporary directory");
    return 1;
  }
  makeStrings();
  failures = cmocka_run_group_tests(tests, NULL, NULL);
  free(string5000);
  free(expects);
  EventFinish();                /* so that the check below sees the end */
  if (access("telltale.log", F_OK) == 0) {
    fprintf(stderr, "test_roundtrip: a default telltale.log was written in %s\n", dir);
    ++failures;
  } else
    (void)rmdir(dir);
  return failures == 0 ? 0 : 1;
}
