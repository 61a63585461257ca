/* <src/read/eventheader.c> -- the stream layer: the header and its registry
 *
 * .design: design/stream.txt .stream.header .stream.header.var
 *
 * eventParseHeader reads a stream's header, fixed part and variable
 * part, into the stream: its version, layout and clocks, and the
 * registry it carries, checked as gen checks a registry (names, formats,
 * codes) and, from 2.0, against the header's check.  A header that
 * fails is refused, with the offset and what is wrong.  The merge of
 * the registries a stream carries is eventmerge.c's.
 */

#include "eventstreamint.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reading the header.  design/stream.txt .stream.header .stream.header.var
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
  eventFormatMessage(ps->msg, ps->msgSize,
                "offset %" PRIu64 ": header truncated: %s runs past the end of the header (header length %" PRIu64 ")",
                (uint64_t)at, what, (uint64_t)ps->end);
  return 0;
}

static int parseOutOfMemory(ParseStruct *ps)
{
  eventFormatMessage(ps->msg, ps->msgSize, "offset %" PRIu64 ": out of memory reading the registry",
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
    eventFormatMessage(ps->msg, ps->msgSize, "offset %" PRIu64 ": %s: internal error: string area full",
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
 * design/registry.txt .reg.limits */
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
    eventFormatMessage(ps->msg, ps->msgSize,
                  "offset %" PRIu64 ": %s %s is not a name (a C identifier of 1 to 63 characters)",
                  (uint64_t)at, what, eventQuote(q, sizeof q, *nameReturn));
    return 0;
  }
  return 1;
}

/* checkFormat -- letters from PAWUSD, at most 16, S only last.
 * design/registry.txt .reg.format .reg.limits */
static const char *checkFormat(const char *format, size_t length)
{
  size_t i;
  if (length > EVENT_PARAM_MAX)
    return "has more than 16 parameters";
  if (strlen(format) != length)
    return "has a NUL in it";
  for (i = 0; i < length; ++i) {
    const EventTypeStruct *type = EventTypeOf(format[i]);
    if (type == NULL)
      return "has a letter other than P, A, W, U, S and D";
    if (type->form == EventTypeSTRING && i + 1 != length)
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
  if (kindCount > EVENT_KIND_LIMIT || kindCount == 0) {
    eventFormatMessage(ps->msg, ps->msgSize,
                  "offset %" PRIu64 ": kind count %" PRIu64 " is not from 1 to EVENT_KIND_LIMIT (32)",
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
    eventFormatMessage(ps->msg, ps->msgSize, "offset %" PRIu64 ": event code 0 is not allowed (it ends a block)",
                  (uint64_t)entry->offset);
    return 0;
  }
  if (kind >= stream->registry.kindCount) {
    eventFormatMessage(ps->msg, ps->msgSize,
                  "offset %" PRIu64 ": event code 0x%04" PRIx64 " has kind %" PRIu64 ", but there are %" PRIu64 " kinds",
                  (uint64_t)entry->offset, (uint64_t)code, (uint64_t)kind,
                  (uint64_t)stream->registry.kindCount);
    return 0;
  }
  why = checkFormat(desc->format, formatLength);
  if (why != NULL) {
    char q[80];
    eventFormatMessage(ps->msg, ps->msgSize, "offset %" PRIu64 ": event code 0x%04" PRIx64 ": format %s %s",
                  (uint64_t)entry->offset, (uint64_t)code, eventQuote(q, sizeof q, desc->format), why);
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
      eventFormatMessage(ps->msg, ps->msgSize,
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
 * variable part.  design/stream.txt .stream.header.var */
static int parseRegistryBody(ParseStruct *ps)
{
  EventStreamStruct *stream = ps->stream;
  SortDescStruct *sorted;
  unsigned eventCount, i;
  size_t paramSlots, paramUsed = 0;
  int ok;

  if (!parseStr(ps, &stream->registry.name, NULL, "the registry name") || !parseKinds(ps)
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

static int parseRegistry(ParseStruct *ps)
{
  return parseStr(ps, &ps->stream->info.program, NULL, "the program name")
         && parseRegistryBody(ps);
}

/* parseHeaderCheck -- 2.0 on: the header's check, after the registry,
 * over every byte before it.  A damaged header would misname every
 * event, so it is refused.  design/stream.txt .stream.header.check */
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
    eventFormatMessage(ps->msg, ps->msgSize,
                  "offset %" PRIu64 ": header damaged: its check is 0x%08" PRIx32
                  ", its bytes give 0x%08" PRIx32 ", so its registry cannot be trusted",
                  (uint64_t)ps->pos, stored, computed);
    return 0;
  }
  ps->stream->info.headerChecks[ps->stream->info.headerChecks[0] != 0] = (uint32_t)ps->pos;
  ps->pos += 4;
  return 1;
}

/* parseFlagsCheck -- 3.0.5 on: after the spans' check, the check of
 * the flags byte, which the header's check takes as 0: an archive's
 * flags say whether its log's live file was recovered into it
 * (.zstd.live), and a flag no check covered turned "incomplete" into
 * "recovered".  design/stream.txt .stream.header.check */
static int parseFlagsCheck(ParseStruct *ps)
{
  EventStreamInfoStruct *info = &ps->stream->info;
  uint32_t stored, computed;
  if (info->major < 2 || info->minor < EVENT_VERSION_FLAGS_CHECKED)
    return 1;
  if (ps->end - ps->pos < 4)
    return parseFail(ps, ps->pos, "the check of the header's flags");
  stored = (uint32_t)EventLoad(ps->stream->base + ps->pos, 4, 0);
  computed = EventFlagsCheck(ps->stream->base);
  if (stored != computed) {
    eventFormatMessage(ps->msg, ps->msgSize,
                  "offset %u: header damaged: its flags byte is 0x%02x, whose check is "
                  "0x%08" PRIx32 " where offset %" PRIu64 " says 0x%08" PRIx32 ", so its flags "
                  "(whether an archive's live file was recovered into it) cannot be trusted",
                  EVENT_STREAM_FLAGS_AT, ps->stream->base[EVENT_STREAM_FLAGS_AT], computed,
                  (uint64_t)ps->pos, stored);
    return 0;
  }
  info->headerChecks[2] = (uint32_t)ps->pos;
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
      || !(mode == PARAM_VALUE ? EventTypeOf(desc->format[*indexReturn])->value
                               : EventTypeOf(desc->format[*indexReturn])->key)) {
    eventFormatMessage(ps->msg, ps->msgSize, "offset %" PRIu64 ": %s, parameter %" PRIu64
                  " of event code 0x%04" PRIx64 ", cannot be one", (uint64_t)at, what,
                  (uint64_t)*indexReturn, (uint64_t)code);
    return 0;
  }
  return 1;
}

/* parseSpans -- 2.0.1 on: the spans and counters after the header's
 * check, then their own check.  design/stream.txt .stream.header.span */
static int parseSpansBody(ParseStruct *ps)
{
  EventStreamStruct *stream = ps->stream;
  EventRegistryStruct *reg = &stream->registry;
  unsigned count, code, key;
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
  return 1;
}

static int parseSpans(ParseStruct *ps)
{
  if (ps->stream->info.major < 2 || ps->stream->info.minor < 1)
    return 1;
  return parseSpansBody(ps) && parseHeaderCheck(ps);
}


/* Several registries.  design/stream.txt .stream.header.registries
 *
 * A stream of 3.0.6 carries, after the first registry, the others in
 * the process when it began, and a registry block for each that joined
 * after.  Each is parsed as the first is, into the stream's fields, then
 * taken into a RegStruct of its own; the stream's registry becomes their
 * merge: kinds and events one after another, in number order, each
 * event's code its registry's number above its own code, and each kind
 * named "registry:Kind" when more than one registry besides the first
 * (telltale's own) has kinds.  A stream with one registry is read as
 * before: no merge. */

/* FieldsStruct -- what the parse functions fill in the stream */
typedef struct FieldsStruct {
  EventRegistryStruct registry;
  EventKindDescStruct *kinds;
  EventDescStruct *events;
  const char **paramStrings;
  EventSpanDescStruct *spans;
  EventCounterDescStruct *counters;
} FieldsStruct;

static void fieldsTake(EventStreamStruct *stream, FieldsStruct *f)
{
  f->registry = stream->registry;
  f->kinds = stream->kinds;
  f->events = stream->events;
  f->paramStrings = stream->paramStrings;
  f->spans = stream->spans;
  f->counters = stream->counters;
  memset(&stream->registry, 0, sizeof stream->registry);
  stream->kinds = NULL;
  stream->events = NULL;
  stream->paramStrings = NULL;
  stream->spans = NULL;
  stream->counters = NULL;
}

static void fieldsPut(EventStreamStruct *stream, const FieldsStruct *f)
{
  stream->registry = f->registry;
  stream->kinds = f->kinds;
  stream->events = f->events;
  stream->paramStrings = f->paramStrings;
  stream->spans = f->spans;
  stream->counters = f->counters;
}

static void fieldsFree(FieldsStruct *f)
{
  free(f->kinds);
  free(f->events);
  free((void *)f->paramStrings);
  free(f->spans);
  free(f->counters);
}

/* regAppend -- a registry of number, parsed into f, joins the stream's;
 * 0, saying why in msg, if its number is another's or there is no room */
static int regAppend(EventStreamStruct *stream, unsigned number, FieldsStruct *f, size_t at,
                     char *msg, size_t msgSize)
{
  RegStruct *r;
  if (number > 0xFF || stream->regOf[number] != 0) {
    eventFormatMessage(msg, msgSize, "offset %" PRIu64 ": registry number %" PRIu64
                       " is %s", (uint64_t)at, (uint64_t)number,
                       number > 0xFF ? "more than 255" : "another registry's already");
    return 0;
  }
  if (stream->regCount == stream->regCapacity) {
    unsigned capacity = stream->regCapacity == 0 ? 4 : 2 * stream->regCapacity;
    RegStruct *more = realloc(stream->regs, capacity * sizeof *more);
    if (more == NULL) {
      eventFormatMessage(msg, msgSize, "offset %" PRIu64 ": out of memory reading a registry",
                         (uint64_t)at);
      return 0;
    }
    stream->regs = more;
    stream->regCapacity = capacity;
  }
  r = &stream->regs[stream->regCount];
  memset(r, 0, sizeof *r);
  r->number = number;
  r->reg = f->registry;
  r->owned[0] = f->kinds;
  r->owned[1] = f->events;
  r->owned[2] = (void *)f->paramStrings;
  r->owned[3] = f->spans;
  r->owned[4] = f->counters;
  stream->regOf[number] = (unsigned char)++stream->regCount;
  return 1;
}

/* regDrop -- the registry regAppend appended last leaves again, as
 * the merge refused it: a block of its kinds is then in no registry of
 * the stream, and read as damage, not by the stream's old merge */
static void regDrop(EventStreamStruct *stream)
{
  RegStruct *r = &stream->regs[--stream->regCount];
  stream->regOf[r->number] = 0;
  for (unsigned j = 0; j < REG_OWNED; ++j)
    free(r->owned[j]);
  free(r->eventMap);
  free(r->codes);
  memset(r, 0, sizeof *r);
}

/* parseMore -- one more registry at ps: its number, its registry and
 * its spans, taken into regs */
static int parseMore(ParseStruct *ps)
{
  EventStreamStruct *stream = ps->stream;
  FieldsStruct was, more;
  unsigned number;
  size_t at = ps->pos;
  int ok;
  if (!parseU16(ps, &number, "a registry's number"))
    return 0;
  fieldsTake(stream, &was);
  ok = parseRegistryBody(ps) && parseSpansBody(ps);
  fieldsTake(stream, &more);
  fieldsPut(stream, &was);
  if (!ok || !regAppend(stream, number, &more, at, ps->msg, ps->msgSize)) {
    fieldsFree(&more);
    return 0;
  }
  return 1;
}

/* parseRegistries -- 3.0.6 on: the other registries in the process
 * when the stream began, and their check */
static int parseRegistries(ParseStruct *ps)
{
  EventStreamStruct *stream = ps->stream;
  unsigned count;
  FieldsStruct first;
  /* The first registry, number 0, is the stream's fields: its own. */
  fieldsTake(stream, &first);
  fieldsPut(stream, &first);
  if (!regAppend(stream, 0, &first, EVENT_STREAM_FIXED_LEN, ps->msg, ps->msgSize))
    return 0;
  memset(stream->regs[0].owned, 0, sizeof stream->regs[0].owned);
  for (unsigned k = 0; k < stream->registry.kindCount; ++k)
    stream->regs[0].kindMap[k] = k;
  eventKindWires(stream);
  if (stream->info.major < 3 || stream->info.minor < EVENT_VERSION_REGISTRIES)
    return 1;
  if (!parseU16(ps, &count, "the count of the other registries"))
    return 0;
  for (unsigned i = 0; i < count; ++i)
    if (!parseMore(ps))
      return 0;
  {
    uint32_t spans = stream->info.headerChecks[1];
    if (!parseHeaderCheck(ps))
      return 0;
    stream->info.headerChecks[3] = stream->info.headerChecks[1];
    stream->info.headerChecks[1] = spans;
  }
  return count == 0 || eventMergeBuild(stream, ps->msg, ps->msgSize);
}

/* eventRegistryBlock -- a registry block's data, pos to end in the
 * stream: its registry joins the stream's.  0 with msg if it cannot.
 * design/stream.txt .stream.block.registry */
int eventRegistryBlock(EventStreamStruct *stream, size_t pos, size_t end, char *msg,
                       size_t msgSize)
{
  ParseStruct ps;
  char *strings = malloc(2 * (end - pos) + 16), *wasStrings = stream->strings;
  size_t wasSize = stream->stringsSize, wasUsed = stream->stringsUsed;
  int ok;
  if (strings == NULL) {
    eventFormatMessage(msg, msgSize, "offset %" PRIu64 ": out of memory reading a registry block",
                       (uint64_t)(stream->origin + pos));
    return 0;
  }
  stream->strings = strings;
  stream->stringsSize = 2 * (end - pos) + 16;
  stream->stringsUsed = 0;
  ps.stream = stream;
  ps.pos = pos;
  ps.end = end;
  ps.msg = msg;
  ps.msgSize = msgSize;
  ok = parseMore(&ps);
  if (ok && !eventMergeBuild(stream, msg, msgSize)) {
    regDrop(stream);            /* refused: its blocks are in no registry */
    ok = 0;
  }
  stream->strings = wasStrings;
  stream->stringsSize = wasSize;
  stream->stringsUsed = wasUsed;
  if (ok)
    stream->regs[stream->regCount - 1].owned[5] = strings;
  else
    free(strings);
  return ok;
}

/* eventRegistriesFree -- the registries' own arrays, and old merges */
void eventRegistriesFree(EventStreamStruct *stream)
{
  int merged = stream->regs != NULL && stream->regs[0].owned[0] != NULL;
  if (merged)
    free((void *)stream->registry.name);
  for (unsigned i = 0; i < stream->regCount; ++i) {
    for (unsigned j = 0; j < REG_OWNED; ++j)
      free(stream->regs[i].owned[j]);
    if (i > 0)
      free(stream->regs[i].codes);
    free(stream->regs[i].eventMap);
  }
  free(stream->regs);
  for (size_t i = 0; i < stream->retiredCount; ++i)
    free(stream->retired[i]);
  free(stream->retired);
}

/* parseVersion -- the magic and the version: another major may have
 * another header.  Returns EventStreamOK or the refusal. */
static EventStreamRes parseVersion(EventStreamStruct *stream, char *msg, size_t msgSize)
{
  const unsigned char *b = stream->base;
  size_t size = stream->size;
  EventStreamInfoStruct *info = &stream->info;

  if (size == 0) {
    eventFormatMessage(msg, msgSize, "offset 0: empty file: not a telltale stream");
    return EventStreamREFUSED;
  }
  if (memcmp(b, EVENT_STREAM_MAGIC, size < EVENT_STREAM_MAGIC_LEN ? size : EVENT_STREAM_MAGIC_LEN) != 0) {
    eventFormatMessage(msg, msgSize, "offset 0: bad magic: not a telltale stream (it does not start with \"%s\")",
                  EVENT_STREAM_MAGIC);
    return EventStreamREFUSED;
  }
  /* The version first: another major may have another header. */
  if (size >= 14) {
    info->major = (unsigned)EventLoad(b + 8, 2, 0);
    info->median = (unsigned)EventLoad(b + 10, 2, 0);
    info->minor = (unsigned)EventLoad(b + 12, 2, 0);
    if (info->major < 1 || info->major > EVENT_VERSION_ZSTD_MAJOR || info->median != EVENT_VERSION_MEDIAN) {
      /* design/stream.txt .sol.version design/index.txt .req.back: 1.0.x too; .zstd.version */
      eventFormatMessage(msg, msgSize,
                    "offset 8: stream version %" PRIu64 ".%" PRIu64 ".%" PRIu64 " is not supported: this reader reads 1.0.x, 2.0.x, %" PRIu64 ".%" PRIu64 ".x and %" PRIu64 ".%" PRIu64 ".x",
                    (uint64_t)info->major, (uint64_t)info->median, (uint64_t)info->minor,
                    (uint64_t)EVENT_VERSION_MAJOR, (uint64_t)EVENT_VERSION_MEDIAN,
                    (uint64_t)EVENT_VERSION_ZSTD_MAJOR, (uint64_t)EVENT_VERSION_MEDIAN);
      return EventStreamREFUSED;
    }
  }
  if (size < EVENT_STREAM_FIXED_LEN) {
    eventFormatMessage(msg, msgSize,
                  "offset 0: header truncated: the file is %" PRIu64 " bytes, the fixed header is 64",
                  (uint64_t)size);
    return EventStreamREFUSED;
  }
  return EventStreamOK;
}

/* parseFixed -- the rest of the fixed part.  design/stream.txt .stream.header */
static EventStreamRes parseFixed(EventStreamStruct *stream, char *msg, size_t msgSize)
{
  const unsigned char *b = stream->base;
  size_t size = stream->size;
  EventStreamInfoStruct *info = &stream->info;
  unsigned mark;
  uint32_t headerLength;
  int flagged;

  mark = (unsigned)EventLoad(b + 14, 2, 0);
  if (mark == EVENT_BYTE_ORDER_MARK) {
    info->layout.bigEndian = 0;
  } else if (mark == 0x0201u) {
    info->layout.bigEndian = 1;
  } else {
    eventFormatMessage(msg, msgSize,
                  "offset 14: bad byte-order mark: bytes %" PRIu64 " %" PRIu64 " (expected 2 1 or 1 2)",
                  (uint64_t)b[14], (uint64_t)b[15]);
    return EventStreamREFUSED;
  }
  info->layout.pointerSize = b[16];
  info->layout.wordSize = b[17];
  if (b[16] != 4 && b[16] != 8) {
    eventFormatMessage(msg, msgSize, "offset 16: pointer size %" PRIu64 " is not supported (4 or 8)", (uint64_t)b[16]);
    return EventStreamREFUSED;
  }
  if (b[17] != 4 && b[17] != 8) {
    eventFormatMessage(msg, msgSize, "offset 17: word size %" PRIu64 " is not supported (4 or 8)", (uint64_t)b[17]);
    return EventStreamREFUSED;
  }
  info->doubleFormat = b[18];
  if (b[18] != 1) {
    eventFormatMessage(msg, msgSize,
                  "offset 18: double format %" PRIu64 " is not supported (1: IEEE 754 binary64)", (uint64_t)b[18]);
    return EventStreamREFUSED;
  }
  headerLength = (uint32_t)EventLoad(b + 20, 4, 0);
  info->headerLength = headerLength;
  if (headerLength < EVENT_STREAM_FIXED_LEN) {
    eventFormatMessage(msg, msgSize, "offset 20: header length %" PRIu64 " is less than the 64-byte fixed header",
                  (uint64_t)headerLength);
    return EventStreamREFUSED;
  }
  if (headerLength > size) {
    eventFormatMessage(msg, msgSize, "offset 20: header length %" PRIu64 " runs past end of file (size %" PRIu64 ")",
                  (uint64_t)headerLength, (uint64_t)size);
    return EventStreamREFUSED;
  }
  info->headerHz = EventLoad(b + 24, 8, 0);
  info->startClock = EventLoad(b + 32, 8, 0);
  info->startRealtime = EventLoad(b + 40, 8, 0);
  info->startMonotonic = EventLoad(b + 48, 8, 0);
  info->pid = (uint32_t)EventLoad(b + 56, 4, 0);
  /* An archive's flags have a check from 4.0.5 (parseFlagsCheck):
   * before, the flag is only said.  design/stream.txt .stream.header.check */
  flagged = info->major >= EVENT_VERSION_ZSTD_MAJOR
            && (b[EVENT_STREAM_FLAGS_AT] & EVENT_ARCHIVE_RECOVERED) != 0;
  info->recoveredInto = flagged && info->minor >= EVENT_VERSION_FLAGS_CHECKED;
  info->recoveredUnchecked = flagged && !info->recoveredInto;
  info->session = info->major >= 2 ? (uint32_t)EventLoad(b + EVENT_STREAM_SESSION_AT, 4, 0) : 0;
  info->blockHeaderLength = info->major >= 2 ? EVENT_BLOCK_HEADER_LEN : EVENT_BLOCK_HEADER_LEN_1;
  return EventStreamOK;
}

/* eventParseHeader -- the fixed part, then the registry.  design/stream.txt .stream.header */
EventStreamRes eventParseHeader(EventStreamStruct *stream, char *msg, size_t msgSize)
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
    eventFormatMessage(msg, msgSize, "offset 64: out of memory reading the registry");
    return EventStreamERROR;
  }
  ps.stream = stream;
  ps.pos = EVENT_STREAM_FIXED_LEN;
  ps.end = info->headerLength;
  ps.msg = msg;
  ps.msgSize = msgSize;
  if (!parseRegistry(&ps) || !parseHeaderCheck(&ps) || !parseSpans(&ps) || !parseFlagsCheck(&ps)
      || !parseRegistries(&ps))
    return EventStreamREFUSED;
  /* A newer minor may add fields: skip them.  design/stream.txt .stream.header.var */
  info->registry = &stream->registry;
  return EventStreamOK;
}

