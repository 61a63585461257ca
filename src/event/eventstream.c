/* <src/event/eventstream.c> -- the stream layer: header, index and merge
 *
 * .design: design/telemetry.txt .stream .eventcnv.reader
 *
 * See eventread.h for the interface.  For the tools only: it allocates
 * with malloc, sorts with qsort and formats messages with snprintf.
 * Every read of the input is checked against the bytes left, and faults
 * are reported as "offset N: what is wrong", N counting bytes from the
 * start of the stream.
 */

#include "eventread.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static size_t tableHash(uint64_t key, size_t capacity)
{
  key ^= key >> 33;
  key *= 0xFF51AFD7ED558CCDu;
  key ^= key >> 33;
  return (size_t)key & (capacity - 1);
}

static TableEntryStruct *tableFind(const TableStruct *table, uint64_t key)
{
  size_t i;
  if (table->capacity == 0)
    return NULL;
  for (i = tableHash(key, table->capacity);; i = (i + 1) & (table->capacity - 1)) {
    TableEntryStruct *entry = &table->entries[i];
    if (!entry->used || entry->key == key)
      return entry;
  }
}

/* tableSet -- returns 0 on success, 1 if out of memory */
static int tableSet(TableStruct *table, uint64_t key, uint64_t value)
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
        *tableFind(&bigger, table->entries[i].key) = table->entries[i];
    free(table->entries);
    *table = bigger;
  }
  entry = tableFind(table, key);
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
  EventSpanDescStruct *spans;   /* 2.0.1 on: .stream.header.span */
  EventCounterDescStruct *counters;
  char *strings;                /* NUL-terminated copies of the header's strs */
  size_t stringsSize, stringsUsed;

  CodeStruct *codes;            /* 65536 of them, by code */
  unsigned swap;                /* the data's byte order is not the machine's */
  size_t *counts;               /* known events by kind and event: [kind * eventCount + i] */
  ThreadStruct *threads;        /* sorted by serial */
  size_t threadCount;

  BlockStruct *blocks;
  size_t blockCount, blockCapacity;
  IndexEntryStruct *indexes;    /* the log's block indexes, for indexCheck */
  TableStruct seen;             /* index -> offset of the block read with it */
  size_t indexCount, indexCapacity;
  int merging;                  /* mergeStart has run */
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


/* Formatted messages, by snprintf: every number is passed as uint64_t
 * and printed with PRIu64 or PRIx64, which the compiler checks. */

static void formatMessage(char *buf, size_t size, const char *format, ...)
  __attribute__((format(printf, 3, 4)));
static void addProblem(EventStreamStruct *stream, const char *format, ...)
  __attribute__((format(printf, 2, 3)));

static void formatMessage(char *buf, size_t size, const char *format, ...)
{
  va_list args;
  if (size == 0)
    return;
  va_start(args, format);
  (void)vsnprintf(buf, size, format, args);
  va_end(args);
}

/* quote -- s quoted with C escapes, in buf, for a message */
static const char *quote(char *buf, size_t size, const char *s)
{
  size_t n = strlen(s);
  if (size < 3)
    return "";
  buf[0] = '"';
  n = EventEscape(buf + 1, size - 2, s, n);
  if (n > size - 3)
    n = size - 3;
  buf[n + 1] = '"';
  buf[n + 2] = '\0';
  return buf;
}

/* addProblem -- record a fault of the stream */
static void addProblem(EventStreamStruct *stream, const char *format, ...)
{
  va_list args;
  char *text;
  int n;

  va_start(args, format);
  n = vsnprintf(NULL, 0, format, args);
  va_end(args);
  text = n < 0 ? NULL : malloc((size_t)n + 1);
  if (text == NULL) {
    stream->outOfMemory = 1;
    return;
  }
  va_start(args, format);
  (void)vsnprintf(text, (size_t)n + 1, format, args);
  va_end(args);

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

static int parseFail(ParseStruct *ps, size_t at, const char *what)
{
  formatMessage(ps->msg, ps->msgSize,
                "offset %" PRIu64 ": header truncated: %s runs past the end of the header (header length %" PRIu64 ")",
                (uint64_t)at, what, (uint64_t)ps->end);
  return 0;
}

static int parseOutOfMemory(ParseStruct *ps)
{
  formatMessage(ps->msg, ps->msgSize, "offset %" PRIu64 ": out of memory reading the registry",
                (uint64_t)ps->pos);
  return 0;
}

static int parseU8(ParseStruct *ps, unsigned *valueReturn, const char *what)
{
  if (ps->end - ps->pos < 1)
    return parseFail(ps, ps->pos, what);
  *valueReturn = ps->stream->base[ps->pos];
  ps->pos += 1;
  return 1;
}

static int parseU16(ParseStruct *ps, unsigned *valueReturn, const char *what)
{
  if (ps->end - ps->pos < 2)
    return parseFail(ps, ps->pos, what);
  *valueReturn = (unsigned)EventLoad(ps->stream->base + ps->pos, 2, 0);
  ps->pos += 2;
  return 1;
}

/* parseStr -- a str (u16 length, bytes) copied with a NUL */
static int parseStr(ParseStruct *ps, const char **strReturn, size_t *lengthReturn, const char *what)
{
  EventStreamStruct *stream = ps->stream;
  size_t at = ps->pos;
  unsigned length;
  char *copy;
  if (!parseU16(ps, &length, what))
    return 0;
  if (ps->end - ps->pos < length)
    return parseFail(ps, at, what);
  if (stream->stringsSize - stream->stringsUsed < (size_t)length + 1) {
    /* Cannot happen: the strings area is sized for the whole header. */
    formatMessage(ps->msg, ps->msgSize, "offset %" PRIu64 ": %s: internal error: string area full",
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

/* isName -- a C identifier of at most EVENT_NAME_MAX characters.
 * design/telemetry.txt .reg.limits */
static int isName(const char *s, size_t length)
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

/* parseName -- a str that must be a name */
static int parseName(ParseStruct *ps, const char **nameReturn, const char *what)
{
  size_t at = ps->pos, length;
  if (!parseStr(ps, nameReturn, &length, what))
    return 0;
  if (!isName(*nameReturn, length)) {
    char q[160];
    formatMessage(ps->msg, ps->msgSize,
                  "offset %" PRIu64 ": %s %s is not a name (a C identifier of 1 to 63 characters)",
                  (uint64_t)at, what, quote(q, sizeof q, *nameReturn));
    return 0;
  }
  return 1;
}

/* checkFormat -- letters from PAWUSD, at most 16, S only last.
 * design/telemetry.txt .reg.format .reg.limits */
static const char *checkFormat(const char *format, size_t length)
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

static int sortDescCompare(const void *a, const void *b)
{
  const SortDescStruct *da = a, *db = b;
  if (da->desc.code != db->desc.code)
    return da->desc.code < db->desc.code ? -1 : 1;
  return da->offset < db->offset ? -1 : da->offset > db->offset;
}

/* parseRegistry -- the variable part of the header */
/* parseKinds -- the kind count and table */
static int parseKinds(ParseStruct *ps)
{
  EventStreamStruct *stream = ps->stream;
  unsigned kindCount;
  if (!parseU16(ps, &kindCount, "the kind count"))
    return 0;
  if (kindCount > EVENT_KIND_LIMIT) {
    formatMessage(ps->msg, ps->msgSize,
                  "offset %" PRIu64 ": kind count %" PRIu64 " is more than EVENT_KIND_LIMIT (32)",
                  (uint64_t)(ps->pos - 2), (uint64_t)kindCount);
    return 0;
  }
  stream->kinds = calloc(kindCount + 1, sizeof *stream->kinds);
  if (stream->kinds == NULL)
    return parseOutOfMemory(ps);
  for (unsigned i = 0; i < kindCount; ++i)
    if (!parseName(ps, &stream->kinds[i].name, "a kind name")
        || !parseStr(ps, &stream->kinds[i].doc, NULL, "a kind doc"))
      return 0;
  stream->registry.kindCount = kindCount;
  stream->registry.kinds = stream->kinds;
  return 1;
}

/* parseEvent -- one event's entry into *entry, its parameters' names
 * and docs into the next slots of stream->paramStrings */
static int parseEvent(ParseStruct *ps, SortDescStruct *entry, size_t paramSlots, size_t *paramUsed)
{
  EventStreamStruct *stream = ps->stream;
  EventDescStruct *desc = &entry->desc;
  unsigned code, kind, flags;
  size_t formatLength, used = *paramUsed;
  const char *why;

  entry->offset = ps->pos;
  if (!parseU16(ps, &code, "an event code") || !parseU8(ps, &kind, "an event kind")
      || !parseU8(ps, &flags, "an event's flags")
      || !parseStr(ps, &desc->format, &formatLength, "an event format"))
    return 0;
  if (code == 0) {
    formatMessage(ps->msg, ps->msgSize, "offset %" PRIu64 ": event code 0 is not allowed (it ends a block)",
                  (uint64_t)entry->offset);
    return 0;
  }
  if (kind >= stream->registry.kindCount) {
    formatMessage(ps->msg, ps->msgSize,
                  "offset %" PRIu64 ": event code 0x%04" PRIx64 " has kind %" PRIu64 ", but there are %" PRIu64 " kinds",
                  (uint64_t)entry->offset, (uint64_t)code, (uint64_t)kind,
                  (uint64_t)stream->registry.kindCount);
    return 0;
  }
  why = checkFormat(desc->format, formatLength);
  if (why != NULL) {
    char q[80];
    formatMessage(ps->msg, ps->msgSize, "offset %" PRIu64 ": event code 0x%04" PRIx64 ": format %s %s",
                  (uint64_t)entry->offset, (uint64_t)code, quote(q, sizeof q, desc->format), why);
    return 0;
  }
  if (!parseName(ps, &desc->name, "an event name") || !parseStr(ps, &desc->doc, NULL, "an event doc"))
    return 0;
  desc->code = code;
  desc->kind = kind;
  desc->always = flags & 1u;
  desc->retired = flags >> 1 & 1u;
  desc->paramCount = (unsigned)formatLength;
  if (paramSlots - used < 2 * formatLength)
    return parseFail(ps, ps->pos, "an event's parameters");
  desc->paramNames = stream->paramStrings + used;
  desc->paramDocs = stream->paramStrings + used + formatLength;
  for (size_t p = 0; p < formatLength; ++p)
    if (!parseName(ps, &stream->paramStrings[used + p], "a parameter name")
        || !parseStr(ps, &stream->paramStrings[used + formatLength + p], NULL, "a parameter doc"))
      return 0;
  *paramUsed = used + 2 * formatLength;
  return 1;
}

/* sortEvents -- the events by code, for EventRegistryLookup; a code
 * may appear once */
static int sortEvents(ParseStruct *ps, SortDescStruct *sorted, unsigned eventCount)
{
  EventStreamStruct *stream = ps->stream;
  qsort(sorted, eventCount, sizeof *sorted, sortDescCompare);
  for (unsigned i = 0; i < eventCount; ++i) {
    if (i > 0 && sorted[i].desc.code == sorted[i - 1].desc.code) {
      formatMessage(ps->msg, ps->msgSize,
                    "offset %" PRIu64 ": event code 0x%04" PRIx64 " appears twice in the registry",
                    (uint64_t)sorted[i].offset, (uint64_t)sorted[i].desc.code);
      return 0;
    }
    stream->events[i] = sorted[i].desc;
  }
  stream->registry.eventCount = eventCount;
  stream->registry.events = stream->events;
  return 1;
}

/* parseRegistry -- the names, the kinds and the events of the header's
 * variable part.  design/telemetry.txt .stream.header.var */
static int parseRegistry(ParseStruct *ps)
{
  EventStreamStruct *stream = ps->stream;
  SortDescStruct *sorted;
  unsigned eventCount, i;
  size_t paramSlots, paramUsed = 0;
  int ok;

  if (!parseStr(ps, &stream->info.program, NULL, "the program name")
      || !parseStr(ps, &stream->registry.name, NULL, "the registry name") || !parseKinds(ps)
      || !parseU16(ps, &eventCount, "the event count"))
    return 0;
  /* Each event entry takes at least 10 bytes: check before allocating. */
  if ((size_t)eventCount * 10 > ps->end - ps->pos)
    return parseFail(ps, ps->pos, "the event table");
  sorted = calloc((size_t)eventCount + 1, sizeof *sorted);
  stream->events = calloc((size_t)eventCount + 1, sizeof *stream->events);
  /* Each parameter takes at least 4 bytes: two str lengths. */
  paramSlots = 2 * ((ps->end - ps->pos) / 4) + 2;
  stream->paramStrings = calloc(paramSlots, sizeof *stream->paramStrings);
  if (sorted == NULL || stream->events == NULL || stream->paramStrings == NULL) {
    free(sorted);
    return parseOutOfMemory(ps);
  }
  ok = 1;
  for (i = 0; i < eventCount && ok; ++i)
    ok = parseEvent(ps, &sorted[i], paramSlots, &paramUsed);
  ok = ok && sortEvents(ps, sorted, eventCount);
  free(sorted);
  return ok;
}

/* parseHeader -- the fixed part, then the registry.  design/telemetry.txt .stream.header */
/* parseHeaderCheck -- 2.0 on: the header's check, after the registry,
 * over every byte before it.  A damaged header would misname every
 * event, so it is refused.  design/telemetry.txt .stream.header.check */
static int parseHeaderCheck(ParseStruct *ps)
{
  uint32_t stored, computed;
  if (ps->stream->info.major < 2)
    return 1;
  if (ps->end - ps->pos < 4)
    return parseFail(ps, ps->pos, "the header's check");
  stored = (uint32_t)EventLoad(ps->stream->base + ps->pos, 4, 0);
  computed = EventHeaderCheck(ps->stream->base, ps->pos);
  if (stored != computed) {
    formatMessage(ps->msg, ps->msgSize,
                  "offset %" PRIu64 ": header damaged: its check is 0x%08" PRIx32
                  ", its bytes give 0x%08" PRIx32 ", so its registry cannot be trusted",
                  (uint64_t)ps->pos, stored, computed);
    return 0;
  }
  ps->pos += 4;
  return 1;
}

/* parseParam -- a parameter index of the event of code: a key (P, A,
 * W, U), which may be EVENT_COUNTER_NO_KEY if optional, or a counter's
 * value (W, U, D) */
enum { PARAM_KEY, PARAM_KEY_OPTIONAL, PARAM_VALUE };
static int parseParam(ParseStruct *ps, unsigned code, unsigned *indexReturn, int mode,
                      const char *what)
{
  size_t at = ps->pos;
  const EventDescStruct *desc = EventRegistryLookup(&ps->stream->registry, code);
  if (!parseU8(ps, indexReturn, what))
    return 0;
  if (mode == PARAM_KEY_OPTIONAL && *indexReturn == EVENT_COUNTER_NO_KEY)
    return 1;
  if (desc == NULL || *indexReturn >= desc->paramCount
      || strchr(mode == PARAM_VALUE ? "WUD" : "PAWU", desc->format[*indexReturn]) == NULL) {
    formatMessage(ps->msg, ps->msgSize, "offset %" PRIu64 ": %s, parameter %" PRIu64
                  " of event code 0x%04" PRIx64 ", cannot be one", (uint64_t)at, what,
                  (uint64_t)*indexReturn, (uint64_t)code);
    return 0;
  }
  return 1;
}

/* parseSpans -- 2.0.1 on: the spans and counters after the header's
 * check, then their own check.  design/telemetry.txt .stream.header.span */
static int parseSpans(ParseStruct *ps)
{
  EventStreamStruct *stream = ps->stream;
  EventRegistryStruct *reg = &stream->registry;
  unsigned count, code, key;
  if (stream->info.major < 2 || stream->info.minor < 1)
    return 1;
  if (!parseU16(ps, &count, "the span count"))
    return 0;
  stream->spans = calloc((size_t)count + 1, sizeof *stream->spans);
  if (stream->spans == NULL)
    return parseOutOfMemory(ps);
  reg->spans = stream->spans;
  for (reg->spanCount = 0; reg->spanCount < count; ++reg->spanCount) {
    EventSpanDescStruct *span = &stream->spans[reg->spanCount];
    if (!parseName(ps, &span->name, "a span name") || !parseU16(ps, &span->begin, "a span's begin")
        || !parseU16(ps, &span->end, "a span's end")
        || !parseParam(ps, span->begin, &span->beginKey, PARAM_KEY, "a span's key")
        || !parseParam(ps, span->end, &span->endKey, PARAM_KEY, "a span's key"))
      return 0;
  }
  if (!parseU16(ps, &count, "the counter count"))
    return 0;
  stream->counters = calloc((size_t)count + 1, sizeof *stream->counters);
  if (stream->counters == NULL)
    return parseOutOfMemory(ps);
  reg->counters = stream->counters;
  for (reg->counterCount = 0; reg->counterCount < count; ++reg->counterCount) {
    EventCounterDescStruct *counter = &stream->counters[reg->counterCount];
    if (!parseName(ps, &counter->name, "a counter name") || !parseU16(ps, &code, "a counter's event")
        || !parseParam(ps, code, &counter->value, PARAM_VALUE, "a counter's value")
        || !parseParam(ps, code, &key, PARAM_KEY_OPTIONAL, "a counter's key"))
      return 0;
    counter->code = code;
    counter->key = key;
  }
  return parseHeaderCheck(ps);
}

/* parseVersion -- the magic and the version: another major may have
 * another header.  Returns EventStreamOK or the refusal. */
static EventStreamRes parseVersion(EventStreamStruct *stream, char *msg, size_t msgSize)
{
  const unsigned char *b = stream->base;
  size_t size = stream->size;
  EventStreamInfoStruct *info = &stream->info;

  if (size == 0) {
    formatMessage(msg, msgSize, "offset 0: empty file: not a telltale stream");
    return EventStreamREFUSED;
  }
  if (memcmp(b, EVENT_STREAM_MAGIC, size < EVENT_STREAM_MAGIC_LEN ? size : EVENT_STREAM_MAGIC_LEN) != 0) {
    formatMessage(msg, msgSize, "offset 0: bad magic: not a telltale stream (it does not start with \"%s\")",
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
      formatMessage(msg, msgSize,
                    "offset 8: stream version %" PRIu64 ".%" PRIu64 ".%" PRIu64 " is not supported: this reader reads 1.0.x and %" PRIu64 ".%" PRIu64 ".x",
                    (uint64_t)info->major, (uint64_t)info->median, (uint64_t)info->minor,
                    (uint64_t)EVENT_VERSION_MAJOR, (uint64_t)EVENT_VERSION_MEDIAN);
      return EventStreamREFUSED;
    }
  }
  if (size < EVENT_STREAM_FIXED_LEN) {
    formatMessage(msg, msgSize,
                  "offset 0: header truncated: the file is %" PRIu64 " bytes, the fixed header is 64",
                  (uint64_t)size);
    return EventStreamREFUSED;
  }
  return EventStreamOK;
}

/* parseFixed -- the rest of the fixed part.  design/telemetry.txt .stream.header */
static EventStreamRes parseFixed(EventStreamStruct *stream, char *msg, size_t msgSize)
{
  const unsigned char *b = stream->base;
  size_t size = stream->size;
  EventStreamInfoStruct *info = &stream->info;
  unsigned mark;
  uint32_t headerLength;

  mark = (unsigned)EventLoad(b + 14, 2, 0);
  if (mark == EVENT_BYTE_ORDER_MARK) {
    info->layout.bigEndian = 0;
  } else if (mark == 0x0201u) {
    info->layout.bigEndian = 1;
  } else {
    formatMessage(msg, msgSize,
                  "offset 14: bad byte-order mark: bytes %" PRIu64 " %" PRIu64 " (expected 2 1 or 1 2)",
                  (uint64_t)b[14], (uint64_t)b[15]);
    return EventStreamREFUSED;
  }
  info->layout.pointerSize = b[16];
  info->layout.wordSize = b[17];
  if (b[16] != 4 && b[16] != 8) {
    formatMessage(msg, msgSize, "offset 16: pointer size %" PRIu64 " is not supported (4 or 8)", (uint64_t)b[16]);
    return EventStreamREFUSED;
  }
  if (b[17] != 4 && b[17] != 8) {
    formatMessage(msg, msgSize, "offset 17: word size %" PRIu64 " is not supported (4 or 8)", (uint64_t)b[17]);
    return EventStreamREFUSED;
  }
  info->doubleFormat = b[18];
  if (b[18] != 1) {
    formatMessage(msg, msgSize,
                  "offset 18: double format %" PRIu64 " is not supported (1: IEEE 754 binary64)", (uint64_t)b[18]);
    return EventStreamREFUSED;
  }
  headerLength = (uint32_t)EventLoad(b + 20, 4, 0);
  info->headerLength = headerLength;
  if (headerLength < EVENT_STREAM_FIXED_LEN) {
    formatMessage(msg, msgSize, "offset 20: header length %" PRIu64 " is less than the 64-byte fixed header",
                  (uint64_t)headerLength);
    return EventStreamREFUSED;
  }
  if (headerLength > size) {
    formatMessage(msg, msgSize, "offset 20: header length %" PRIu64 " runs past end of file (size %" PRIu64 ")",
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
  return EventStreamOK;
}

/* parseHeader -- the fixed part, then the registry.  design/telemetry.txt .stream.header */
static EventStreamRes parseHeader(EventStreamStruct *stream, char *msg, size_t msgSize)
{
  EventStreamInfoStruct *info = &stream->info;
  EventStreamRes res;
  ParseStruct ps;

  res = parseVersion(stream, msg, msgSize);
  if (res == EventStreamOK)
    res = parseFixed(stream, msg, msgSize);
  if (res != EventStreamOK)
    return res;
  /* Every str copy takes its bytes plus a NUL, and at least 2 bytes of
   * header per str: this is room for all of them. */
  stream->stringsSize = 2 * (size_t)(info->headerLength - EVENT_STREAM_FIXED_LEN) + 16;
  stream->strings = malloc(stream->stringsSize);
  if (stream->strings == NULL) {
    formatMessage(msg, msgSize, "offset 64: out of memory reading the registry");
    return EventStreamERROR;
  }
  ps.stream = stream;
  ps.pos = EVENT_STREAM_FIXED_LEN;
  ps.end = info->headerLength;
  ps.msg = msg;
  ps.msgSize = msgSize;
  if (!parseRegistry(&ps) || !parseHeaderCheck(&ps) || !parseSpans(&ps))
    return EventStreamREFUSED;
  /* A newer minor may add fields: skip them.  design/telemetry.txt .stream.header.var */
  info->registry = &stream->registry;
  return EventStreamOK;
}


/* Indexing the blocks.  design/telemetry.txt .stream.block
 *
 * indexBlocks walks the blocks in file order and every event in them,
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

/* findBlockMagic -- the offset of the next "TTBK" at or after from, or size */
static size_t findBlockMagic(const EventStreamStruct *stream, size_t from)
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

/* fill -- for a scan: make the window hold need bytes from *pos on,
 * or all there are to the end of the stream.  The window moves: *pos
 * is where the same byte is after.  design/telemetry.txt .eventcnv.scan */
static void fill(EventStreamStruct *stream, size_t *pos, size_t need)
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
        addProblem(stream, "offset %" PRIu64 ": the stream could not be read further",
                   (uint64_t)(stream->origin + stream->size));
      stream->eof = 1;
      return;
    }
    stream->size += (size_t)n;
  }
}

/* addBlock -- note a block, at its stream offset */
static int addBlock(EventStreamStruct *stream, const BlockStruct *block)
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

static int isFormat(const EventDescStruct *desc, const char *format)
{
  return desc != NULL && desc->format != NULL && strcmp(desc->format, format) == 0;
}

/* Loading in the data's byte order, for the index and the merge: swap
 * is 1 if it is not the machine's. */

static uint16_t load16(const unsigned char *p, unsigned swap)
{
  uint16_t v;
  memcpy(&v, p, sizeof v);
  return swap ? (uint16_t)(v >> 8 | v << 8) : v;
}

static uint64_t load64(const unsigned char *p, unsigned swap)
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

/* fixedLength -- the length of every event of desc in this layout, or
 * 0 if it has a string (its length varies) */
static unsigned fixedLength(const EventDescStruct *desc, const EventLayoutStruct *layout)
{
  unsigned length = EVENT_HEADER_LEN, i;
  for (i = 0; desc->format[i] != '\0'; ++i)
    switch (desc->format[i]) {
    case 'P': case 'A': length += layout->pointerSize; break;
    case 'W': length += layout->wordSize; break;
    case 'U': length += 4; break;
    case 'D': length += 8; break;
    default: return 0;          /* S, or a letter parseRegistry refused */
    }
  return length;
}

/* codesInit -- the direct table of codes, and the counts.  An event of
 * a fixed length and not one of telltale's own (which the index reads)
 * is sound if its length is that length: its fields need no look. */
static int codesInit(EventStreamStruct *stream)
{
  const EventRegistryStruct *registry = &stream->registry;
  EventLayoutStruct native;
  unsigned i;
  EventLayoutNative(&native);
  stream->swap = native.bigEndian != stream->info.layout.bigEndian;
  stream->codes = calloc(EVENT_CODE_LIMIT, sizeof *stream->codes);
  stream->counts = calloc((size_t)registry->kindCount * registry->eventCount + 1,
                          sizeof *stream->counts);
  if (stream->codes == NULL || stream->counts == NULL)
    return 0;
  for (i = 0; i < registry->eventCount; ++i) {
    const EventDescStruct *desc = &registry->events[i];
    CodeStruct *c = &stream->codes[desc->code & 0xFFFF];
    c->event = (uint16_t)(i + 1);
    c->length = desc->code < EVENT_CODE_RESERVED_LIMIT ? 0 : (uint16_t)fixedLength(desc, &stream->info.layout);
  }
  return 1;
}

/* noteOwn -- what the index notes of telltale's own events: StreamEnd,
 * the ClockSyncs with the lowest and highest clock, the drops, threads
 * started and ended.  design/telemetry.txt .stream.own */
static void noteOwn(EventStreamInfoStruct *info, IndexStruct *index, const EventRecordStruct *rec)
{
  if (rec->code == EVENT_CODE_STREAM_END && isFormat(rec->desc, "W")) {
    info->streamEnd = 1;
  } else if (rec->code == EVENT_CODE_CLOCK_SYNC && isFormat(rec->desc, "WW")) {
    SyncStruct sync;
    sync.clock = rec->clock;
    sync.monotonic = rec->values[0].u;
    if (info->clockSyncCount == 0 || sync.clock < index->first.clock)
      index->first = sync;
    if (info->clockSyncCount == 0 || sync.clock > index->last.clock)
      index->last = sync;
    ++info->clockSyncCount;
  } else if (rec->code == EVENT_CODE_EVENTS_DROPPED && rec->desc->paramCount == 2
             && rec->values[0].u < EVENT_KIND_LIMIT) {   /* design/telemetry.txt .sol.dropped */
    info->dropped[rec->values[0].u] += rec->values[1].u;
  } else if (rec->code == EVENT_CODE_THREAD_START) {
    ++info->threadStarts;
  } else if (rec->code == EVENT_CODE_THREAD_EXIT) {
    ++info->threadExits;
  }
}

/* indexEvents -- check the events of one block and note what matters.
 * Returns 1 if the block is sound; else reports the fault.
 *
 * Most events take the first path: a code in the table with a fixed
 * length, and that length.  Every other event (a string, one of
 * telltale's own, an unknown code, a fault) is decoded in full.
 * design/telemetry.txt .eventcnv.reader */
static int indexEvents(EventStreamStruct *stream, IndexStruct *index, BlockStruct *block, size_t end)
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
      unsigned length = load16(p + 2, swap);
      CodeStruct c = codes[load16(p, swap)];
      if (length == c.length && length != 0 && length <= end - pos) {
        EventClock clock = load64(p + 4, swap);
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
      noteOwn(info, index, &rec);
      pos += rec.length;
      continue;
    }
    /* EventDecodeTRUNCATED, EventDecodeCORRUPT */
    block->dataEnd = pos;
    if (end - pos >= EVENT_HEADER_LEN)
      addProblem(stream, "offset %" PRIu64 ": event code 0x%04" PRIx64 " length %" PRIu64 ": %s (%" PRIu64 " bytes left in the block at offset %" PRIu64 ")",
                 (uint64_t)(stream->origin + pos), (uint64_t)rec.code, (uint64_t)rec.length, why,
                 (uint64_t)(end - pos), (uint64_t)(stream->origin + block->offset));
    else
      addProblem(stream, "offset %" PRIu64 ": %s (%" PRIu64 " bytes left in the block at offset %" PRIu64 ")",
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

static int threadCompare(const void *a, const void *b)
{
  const ThreadStruct *ta = a, *tb = b;
  return ta->thread < tb->thread ? -1 : ta->thread > tb->thread;
}

/* indexThreads -- the threads with events, and how many each has */
static int indexThreads(EventStreamStruct *stream)
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
  qsort(stream->threads, n, sizeof *stream->threads, threadCompare);
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

/* blockRead -- read the header of the block at pos into *block.
 * Returns 1 if it is sound; else 0, with what is wrong in what.  A
 * block running past the end of the stream is also marked cut.
 * design/telemetry.txt .stream.check */
static int blockRead(EventStreamStruct *stream, size_t pos, BlockStruct *block, char *what,
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
    formatMessage(what, whatSize, "block header cut short: %" PRIu64 " bytes left, a block header is %" PRIu64 "",
                  (uint64_t)left, (uint64_t)headerLength);
    return 0;
  }
  if (memcmp(p, EVENT_BLOCK_MAGIC, 4) != 0) {
    char found[5], q[24];
    memcpy(found, p, 4);
    found[4] = '\0';
    formatMessage(what, whatSize, "bad block magic %s (expected \"%s\")", quote(q, sizeof q, found),
                  EVENT_BLOCK_MAGIC);
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
    formatMessage(what, whatSize, "block length %" PRIu64 " is less than the %" PRIu64 "-byte block header",
                  (uint64_t)h.length, (uint64_t)headerLength);
  else if (h.length > EVENT_BLOCK_LENGTH_MAX)
    formatMessage(what, whatSize, "block length %" PRIu64 " is more than any block's (%" PRIu64 ")",
                  (uint64_t)h.length, (uint64_t)EVENT_BLOCK_LENGTH_MAX);
  else if (h.kind >= stream->registry.kindCount)
    formatMessage(what, whatSize, "block kind %" PRIu64 " is not in the registry (%" PRIu64 " kinds)",
                  (uint64_t)h.kind, (uint64_t)stream->registry.kindCount);
  else if (info->major >= 2 && h.session != info->session)
    formatMessage(what, whatSize, "block of another session: id 0x%04" PRIx64 ", the stream's is 0x%04" PRIx64 "",
                  (uint64_t)h.session, (uint64_t)info->session);
  else if (block->cut)
    formatMessage(what, whatSize, "block cut short: its length is %" PRIu64 ", the stream has %" PRIu64 " of its bytes",
                  (uint64_t)h.length, (uint64_t)left);
  else if (info->major >= 2 && (h.flags & EVENT_BLOCK_CHECKED) == 0)
    formatMessage(what, whatSize, "block has no check");
  else if (info->major >= 2 && EventBlockCheck(p, h.length) != h.check)
    formatMessage(what, whatSize, "block damaged (thread %" PRIu64 ", kind %" PRIu64 ", %" PRIu64 " bytes): its check is 0x%04" PRIx64 ", "
                  "its bytes give 0x%04" PRIx64 ", so none of its events are shown", (uint64_t)h.thread,
                  (uint64_t)h.kind, (uint64_t)h.length, (uint64_t)h.check,
                  (uint64_t)EventBlockCheck(p, h.length));
  else
    return 1;
  block->cut = block->cut && h.length >= headerLength && h.length <= EVENT_BLOCK_LENGTH_MAX
               && h.kind < stream->registry.kindCount
               && (info->major < 2 || h.session == info->session);
  return 0;
}

/* indexNote -- note a block's index and offset, for indexCheck.
 * Returns 0, having said so, if a block with this index was read
 * already: the log holds it twice (spliced, or a write repeated), and
 * its events are not read again.  design/telemetry.txt .stream.check */
static int indexNote(EventStreamStruct *stream, const BlockStruct *block)
{
  TableEntryStruct *first;
  size_t offset = stream->origin + block->offset;
  if (block->index == EVENT_BLOCK_INDEX_NONE)
    return 1;
  first = tableFind(&stream->seen, block->index);
  if (first != NULL && first->used) {
    ++stream->info.duplicateBlocks;
    addProblem(stream, "offset %" PRIu64 ": block %" PRIu64 " of the log again (first at offset %"
               PRIu64 "): its events are not shown twice", (uint64_t)offset,
               (uint64_t)block->index, first->value);
    return 0;
  }
  if (tableSet(&stream->seen, block->index, offset))
    stream->outOfMemory = 1;
  if (stream->indexCount == stream->indexCapacity) {
    size_t capacity = stream->indexCapacity == 0 ? 64 : stream->indexCapacity * 2;
    IndexEntryStruct *bigger = realloc(stream->indexes, capacity * sizeof *bigger);
    if (bigger == NULL) {
      stream->outOfMemory = 1;
      return 1;
    }
    stream->indexes = bigger;
    stream->indexCapacity = capacity;
  }
  stream->indexes[stream->indexCount].index = block->index;
  stream->indexes[stream->indexCount].offset = offset;
  ++stream->indexCount;
  return 1;
}

static int indexEntryCompare(const void *a, const void *b)
{
  const IndexEntryStruct *x = a, *y = b;
  if (x->index != y->index)
    return x->index < y->index ? -1 : 1;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* indexCheck -- every block the log was written with is there, in the
 * order written: the indexes read rise in file order from 0 to the
 * highest.  Only where the walk read to the end: a walk stopped at
 * damage reports that.  design/telemetry.txt .stream.check */
static void indexCheck(EventStreamStruct *stream)
{
  EventStreamInfoStruct *info = &stream->info;
  IndexEntryStruct *e = stream->indexes;
  size_t n = stream->indexCount, reports = 0, outOfOrder = 0;
  uint64_t expect = 0;
  if (n == 0)
    return;
  for (size_t i = 1; i < n; ++i)
    if (e[i].index < e[i - 1].index && outOfOrder++ == 0)
      addProblem(stream, "offset %" PRIu64 ": block %" PRIu64 " of the log comes after block %"
                 PRIu64 " (at offset %" PRIu64 "): the log's blocks are not in the order written",
                 (uint64_t)e[i].offset, (uint64_t)e[i].index, (uint64_t)e[i - 1].index,
                 (uint64_t)e[i - 1].offset);
  info->misorderedBlocks = outOfOrder;
  qsort(e, n, sizeof *e, indexEntryCompare);
  for (size_t i = 0; i < n; ++i) {
    if (e[i].index > expect) {
      info->missingBlocks += e[i].index - expect;
      if (++reports <= 8) {
        if (e[i].index == expect + 1)
          addProblem(stream, "block %" PRIu64 " of the log is missing: between offsets %" PRIu64
                     " and %" PRIu64, expect,
                     expect == 0 ? (uint64_t)info->headerLength : (uint64_t)e[i - 1].offset,
                     (uint64_t)e[i].offset);
        else if (expect == 0)
          addProblem(stream, "blocks 0 to %" PRIu64 " of the log are missing: the first block "
                     "there is at offset %" PRIu64, (uint64_t)e[i].index - 1,
                     (uint64_t)e[i].offset);
        else
          addProblem(stream, "blocks %" PRIu64 " to %" PRIu64 " of the log are missing: between "
                     "offsets %" PRIu64 " and %" PRIu64, expect, (uint64_t)e[i].index - 1,
                     (uint64_t)e[i - 1].offset, (uint64_t)e[i].offset);
      }
    }
    expect = (uint64_t)e[i].index + 1;
  }
  if (reports > 8)
    addProblem(stream, "%" PRIu64 " more gaps in the log's blocks not listed", (uint64_t)reports - 8);
}

/* blockFault -- report a bad block at pos; with resync, skip to the
 * next block magic and return where it is, else return 0 (stop). */
static size_t blockFault(EventStreamStruct *stream, size_t pos, const char *what)
{
  EventStreamInfoStruct *info = &stream->info;
  size_t next, size = stream->size;
  ++info->badBlocks;
  if ((stream->options & EVENT_STREAM_RESYNC) == 0) {
    addProblem(stream, "offset %" PRIu64 ": %s", (uint64_t)(stream->origin + pos), what);
    return 0;
  }
  next = findBlockMagic(stream, pos + 1);
  info->skippedBytes += next - pos;
  if (next < size)
    addProblem(stream, "offset %" PRIu64 ": %s; skipped %" PRIu64 " bytes to the next block at offset %" PRIu64 "",
               (uint64_t)(stream->origin + pos), what, (uint64_t)(next - pos),
               (uint64_t)(stream->origin + next));
  else
    addProblem(stream, "offset %" PRIu64 ": %s; skipped the last %" PRIu64 " bytes of the file",
               (uint64_t)(stream->origin + pos), what, (uint64_t)(next - pos));
  return next;
}

/* blockCut -- the sound events of a block cut short by the end of the
 * stream (a full disk, a program killed in write()): shown, unchecked,
 * and the rest said lost.  The walk ends here. */
static void blockCut(EventStreamStruct *stream, IndexStruct *index, BlockStruct *block,
                     const char *what)
{
  EventStreamInfoStruct *info = &stream->info;
  ++info->badBlocks;
  (void)indexEvents(stream, index, block, stream->size);
  addProblem(stream, "offset %" PRIu64 ": %s: the %" PRIu64 " whole events before the cut are shown, unchecked; the rest of the block is lost",
             (uint64_t)(stream->origin + block->offset), what, (uint64_t)block->events);
  if (block->dataEnd > block->offset + info->blockHeaderLength && !addBlock(stream, block))
    stream->outOfMemory = 1;
}

/* indexBlocks -- walk the blocks in file order.  Each is checked
 * (blockRead), then its events (indexEvents).  At damage the walk stops,
 * or with resync goes on at the next block.  design/telemetry.txt
 * .eventcnv.reader, .stream.check */
static void indexBlocks(EventStreamStruct *stream)
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
    fill(stream, &pos, headerLength);
    if (stream->size - pos >= headerLength
        && memcmp(stream->base + pos, EVENT_BLOCK_MAGIC, 4) == 0) {
      uint64_t length = EventLoad(stream->base + pos + 4, 4, info->layout.bigEndian);
      if (length <= EVENT_BLOCK_LENGTH_MAX)
        fill(stream, &pos, (size_t)length);
    }
    if (pos >= stream->size)
      break;
    if (!blockRead(stream, pos, &block, what, sizeof what)) {
      if (block.cut) {          /* the end: its events, if not read already */
        if (indexNote(stream, &block))
          blockCut(stream, &index, &block, what);
        else
          ++info->badBlocks;
        complete = 0;
        break;
      }
      pos = blockFault(stream, pos, what);
      if (pos == 0) {
        complete = 0;
        info->stopped = 1;
        break;
      }
      continue;
    }
    if (!indexNote(stream, &block)) {
      pos += block.length;
      continue;
    }
    ++info->blockCount;
    if (!indexEvents(stream, &index, &block, pos + block.length)) {
      ++info->badBlocks;
      if (!resync) {
        if (block.dataEnd > pos + headerLength && !addBlock(stream, &block))
          stream->outOfMemory = 1;
        complete = 0;
        info->stopped = pos + block.length < stream->size || stream->read != NULL;
        break;
      }
      info->skippedBytes += pos + block.length - block.dataEnd;
    }
    if (block.dataEnd > pos + headerLength && !addBlock(stream, &block)) {
      stream->outOfMemory = 1;
      break;
    }
    pos += block.length;
  }
  if (complete)
    indexCheck(stream);
  info->streamSize = stream->origin + stream->size;
  if (stream->read != NULL) {   /* the scan is over: its window goes */
    free(stream->window);
    stream->window = NULL;
    stream->base = NULL;
    stream->size = 0;
    stream->merging = 1;        /* and it has no events to merge */
  }
  if (info->eventCount == 0)
    info->firstClock = 0;
  if (!indexThreads(stream))
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

static int blockCompare(const void *a, const void *b)
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

/* seqSeek -- move a cursor to the next known event at or after its
 * position, reading only its header.  Returns 0 if the sequence has no
 * more events.  indexEvents checked every event before dataEnd: each
 * has a code other than 0 and a length from 12 to what is left. */
static int seqSeek(EventStreamStruct *stream, SeqStruct *seq)
{
  while (seq->block < seq->blockLimit) {
    const BlockStruct *block = &stream->blocks[seq->block];
    if (seq->pos < block->dataEnd) {
      const unsigned char *p = stream->base + seq->pos;
      unsigned event = stream->codes[load16(p, stream->swap)].event;
      unsigned length = load16(p + 2, stream->swap);
      if (event != 0) {
        seq->clock = load64(p + 4, stream->swap);
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

/* seqBefore -- whether sequence a's event comes before b's: by clock,
 * then block sequence number, then offset, so the order is total. */
static int seqBefore(const EventStreamStruct *stream, size_t a, size_t b)
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

static void heapDown(EventStreamStruct *stream, size_t i)
{
  size_t *heap = stream->heap, n = stream->heapCount;
  for (;;) {
    size_t left = 2 * i + 1, right = left + 1, least = i;
    size_t t;
    if (left < n && seqBefore(stream, heap[left], heap[least]))
      least = left;
    if (right < n && seqBefore(stream, heap[right], heap[least]))
      least = right;
    if (least == i)
      return;
    t = heap[i];
    heap[i] = heap[least];
    heap[least] = t;
    i = least;
  }
}

/* seqStarts -- whether block i starts a sequence: a (thread, kind,
 * signal level) of its own.  Blocks sorted by blockCompare. */
static int seqStarts(const EventStreamStruct *stream, size_t i)
{
  const BlockStruct *b = &stream->blocks[i];
  return i == 0 || b->thread != b[-1].thread || b->kind != b[-1].kind || b->level != b[-1].level;
}

/* mergeStart -- group the blocks into sequences and heap them */
static int mergeStart(EventStreamStruct *stream)
{
  size_t i, count = 0;
  stream->merging = 1;
  if (stream->blockCount == 0)
    return 1;
  qsort(stream->blocks, stream->blockCount, sizeof *stream->blocks, blockCompare);
  for (i = 0; i < stream->blockCount; ++i)
    if (seqStarts(stream, i))
      ++count;
  stream->seqs = calloc(count, sizeof *stream->seqs);
  stream->heap = calloc(count, sizeof *stream->heap);
  if (stream->seqs == NULL || stream->heap == NULL)
    return 0;
  for (i = 0; i < stream->blockCount; ++i) {
    SeqStruct *seq;
    if (seqStarts(stream, i)) {
      seq = &stream->seqs[stream->seqCount++];
      seq->block = i;
      seq->pos = stream->blocks[i].offset + stream->info.blockHeaderLength;
    }
    stream->seqs[stream->seqCount - 1].blockLimit = i + 1;
  }
  for (i = 0; i < stream->seqCount; ++i)
    if (seqSeek(stream, &stream->seqs[i]))
      stream->heap[stream->heapCount++] = i;
  for (i = stream->heapCount / 2; i > 0; --i)
    heapDown(stream, i - 1);
  return 1;
}


/* streamIndex -- read the header, then index the blocks.  On failure,
 * closes the stream. */
static EventStreamRes streamIndex(EventStreamStruct *stream, char *msg, size_t msgSize)
{
  EventStreamRes res = parseHeader(stream, msg, msgSize);
  if (res != EventStreamOK) {
    EventStreamClose(stream);
    return res;
  }
  if (!codesInit(stream)) {
    formatMessage(msg, msgSize, "offset %" PRIu64 ": out of memory", (uint64_t)stream->info.headerLength);
    EventStreamClose(stream);
    return EventStreamERROR;
  }
  indexBlocks(stream);
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
    formatMessage(msg, msgSize, "offset 0: out of memory");
    return EventStreamERROR;
  }
  stream->base = buf;
  stream->size = buf != NULL ? size : 0;
  stream->options = options;
  stream->eof = 1;
  res = streamIndex(stream, msg, msgSize);
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
    formatMessage(msg, msgSize, "offset 0: out of memory");
    EventStreamClose(stream);
    return EventStreamERROR;
  }
  stream->base = stream->window;
  stream->windowCapacity = SCAN_WINDOW;
  stream->read = read;
  stream->readClosure = closure;
  /* The fixed header, then the whole header, for parseHeader. */
  fill(stream, &pos, EVENT_STREAM_FIXED_LEN);
  if (stream->size >= EVENT_STREAM_FIXED_LEN)
    fill(stream, &pos, (size_t)EventLoad(stream->base + 20, 4, 0));
  if (stream->problemCount > 0 || stream->outOfMemory) {
    formatMessage(msg, msgSize, "%s", stream->problemCount > 0 ? stream->problems[0] : "offset 0: out of memory");
    EventStreamClose(stream);
    return EventStreamERROR;
  }
  res = streamIndex(stream, msg, msgSize);
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
  free(stream->seen.entries);
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
  free(stream->spans);
  free(stream->counters);
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

  if (!stream->merging && !mergeStart(stream))
    stream->outOfMemory = 1;
  if (stream->heapCount == 0)
    return stream->problemCount > 0 || stream->outOfMemory ? EventStreamERROR : EventStreamEND;
  seq = &stream->seqs[stream->heap[0]];
  block = &stream->blocks[seq->block];
  p = stream->base + seq->pos;
  memset(recReturn, 0, sizeof *recReturn);
  recReturn->code = load16(p, stream->swap);
  recReturn->length = load16(p + 2, stream->swap);
  recReturn->clock = seq->clock;
  /* indexEvents checked it: this cannot fail. */
  (void)EventDecodeFields(&stream->info.layout, seq->desc, p, recReturn->length, recReturn, &why);
  recReturn->thread = block->thread;
  recReturn->kind = block->kind;
  recReturn->offset = seq->pos;

  seq->pos += recReturn->length;
  if (!seqSeek(stream, seq))
    stream->heap[0] = stream->heap[--stream->heapCount];
  heapDown(stream, 0);

  /* design/telemetry.txt .req.intern */
  if (rec->code == EVENT_CODE_INTERN && isFormat(rec->desc, "WS")) {
    if (tableSet(&stream->interns, rec->values[0].u,
                 (uint64_t)((const unsigned char *)rec->values[1].s - stream->base)))
      stream->outOfMemory = 1;
  } else if (rec->code == EVENT_CODE_LABEL && isFormat(rec->desc, "AW")) {
    if (tableSet(&stream->labels, rec->values[0].u, rec->values[1].u))
      stream->outOfMemory = 1;
  }
  return EventStreamOK;
}


const char *EventStreamLabel(void *closure, uint64_t address)
{
  const EventStreamStruct *stream = closure;
  const TableEntryStruct *label, *string;
  label = tableFind(&stream->labels, address);
  if (label == NULL || !label->used)
    return NULL;
  string = tableFind(&stream->interns, label->value);
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
