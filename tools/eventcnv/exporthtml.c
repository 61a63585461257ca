/* <tools/eventcnv/exporthtml.c> -- a timeline in one HTML file
 *
 * .design: design/telemetry.txt .export.html
 *
 * eventcnv --format html writes one self-contained HTML file that draws
 * the events on a canvas, offline: no network, no external script.  The
 * page is tools/eventcnv/timeline.html, built into eventcnv as a string
 * (build/gen/eventcnv/timeline.c); this file writes the log's data into
 * it: binary, in base64, as the page decodes it into typed arrays.  Per
 * thread its events' times and types, and apart their values, with a
 * checkpoint every 64 events, so that the page decodes fields only of
 * the events it shows; spans sorted here into their rows and lanes;
 * counters' points per counter.  Numbers are LEB128, times as the
 * difference from the one before (zigzag, as they may go back).
 */

#include "export.h"
#include "textsafe.h"
#include "span.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char ExportTimelinePage[];   /* build/gen/eventcnv/timeline.c */

enum {
  CHECKPOINT = 64,              /* events between a track's checkpoints: the page's CK */
  LANES = 64,                   /* span lanes of a row; past them, one folded lane */
  PART = 3 << 18,               /* raw bytes a bin element: 1 MiB of base64, whole groups of 3 */
  SLOTS = 16                    /* parameters whose numbers go as the difference from the last */
};

/* NameListStruct -- names made global across logs (each log has its own
 * registry): a name's index in the page */
typedef struct NameListStruct {
  const char **names;
  size_t count, limit;
} NameListStruct;

/* TrackStruct -- a thread's events: core (time difference and type an
 * event), vals (their parameters' values), ck (where in vals each 64th
 * event's begin, 4 bytes little-endian) */
typedef struct TrackStruct {
  size_t source;
  uint32_t serial;
  uint64_t n;
  int64_t lastNs;
  uint64_t last[SLOTS];         /* the last number of each parameter's place, 0 at a checkpoint */
  ExportOutStruct core, vals, ck;
  size_t coreAt, valsAt, ckAt;  /* offsets in the page's data */
} TrackStruct;

/* TypeStruct -- an event name and kind of one log: its name, kind and
 * parameters in the page */
typedef struct TypeStruct {
  size_t source;
  const EventDescStruct *desc;
  unsigned kind;
  int name, kindIndex, next;    /* next: the type of the same event and another kind, or -1 */
} TypeStruct;

typedef struct SpanBarStruct {
  int64_t begin, end;
  uint64_t key;
  int name;
  long track, beginTrack, endTrack;   /* track: on its thread's, or -1 (async) */
  size_t source;
  unsigned flags;               /* 1 unfinished, 2 key in hex, 4 async */
  size_t row;
  unsigned lane;
} SpanBarStruct;

typedef struct RowStruct {      /* an async row: a process's spans of one name */
  size_t source;
  int name;
} RowStruct;

typedef struct PointStruct {
  int counter;
  int64_t ns;
  uint64_t bits;                /* the value: a double's bits, or unsigned */
  size_t seq;
} PointStruct;

typedef struct HtmlStruct {
  ExportOutStruct scratch;
  NameListStruct events, kinds, spanNames;
  NameListStruct counterNames;  /* "name" or "name[key]": owned */
  unsigned char *counterDouble; /* by counter: its values are doubles */
  size_t counterLimit;
  int **typeFirst;              /* by log, by registry index: first type, or -1 */
  TypeStruct *types;
  size_t typeCount, typeLimit;
  SpanTrackerStruct **trackers; /* by log */
  TrackStruct *tracks;
  size_t trackCount, trackLimit;
  SpanBarStruct *spans;
  size_t spanCount, spanLimit;
  PointStruct *points;
  size_t pointCount, pointLimit;
  int64_t *lastNs;              /* by log: its latest event's time */
  int failed;                   /* out of memory */
  ExportStruct *ex;
  /* the base64 writer */
  unsigned char pending[3];
  size_t pendingCount, partUsed, bytes;
} HtmlStruct;

static HtmlStruct html;

/* Grow -- room for one more of *count items of size in *array; 0 if out
 * of memory */
static int Grow(void *array, size_t *count, size_t *limit, size_t size)
{
  void **p = array;
  if (*count == *limit) {
    size_t bigger = *limit > 0 ? 2 * *limit : 64;
    void *moved = realloc(*p, bigger * size);
    if (moved == NULL)
      return 0;
    *p = moved;
    *limit = bigger;
  }
  return 1;
}

static void PutVarint(ExportOutStruct *out, uint64_t v)
{
  char *p = ExportReserve(out, 10), *q = p;
  if (p == NULL)
    return;
  while (v >= 0x80) {
    *q++ = (char)(v | 0x80);
    v >>= 7;
  }
  *q++ = (char)v;
  out->used += (size_t)(q - p);
}

static void PutZigzag(ExportOutStruct *out, int64_t v)
{
  PutVarint(out, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* PutMember -- ,"key":v in the meta's JSON */
static void PutMember(ExportOutStruct *out, const char *key, uint64_t v)
{
  ExportPutString(out, ",\"");
  ExportPutString(out, key);
  ExportPutString(out, "\":");
  ExportPutUnsigned(out, v);
}

static void PutBytes(ExportOutStruct *out, const char *s, size_t n)
{
  PutVarint(out, n);
  ExportPut(out, s, n);
}

/* PutSafe -- s (n bytes) as a JSON string that cannot end the script
 * element it is in: "<" as \u003c */
static void PutSafe(ExportOutStruct *out, HtmlStruct *state, const char *s, size_t n)
{
  state->scratch.used = 0;
  ExportPutJsonString(&state->scratch, s, n);
  if (state->scratch.err != 0) {
    out->err = state->scratch.err;
    return;
  }
  const char *p = state->scratch.buf, *end = p + state->scratch.used;
  while (p < end) {
    const char *lt = memchr(p, '<', (size_t)(end - p));
    if (lt == NULL) {
      ExportPut(out, p, (size_t)(end - p));
      break;
    }
    ExportPut(out, p, (size_t)(lt - p));
    ExportPut(out, "\\u003c", 6);
    p = lt + 1;
  }
}

/* NameIndex -- the index of name in list, added if new; -1 if out of memory */
static int NameIndex(NameListStruct *list, const char *name)
{
  for (size_t i = 0; i < list->count; ++i)
    if (strcmp(list->names[i], name) == 0)
      return (int)i;
  if (!Grow(&list->names, &list->count, &list->limit, sizeof *list->names))
    return -1;
  list->names[list->count] = name;
  return (int)list->count++;
}

static void PutNames(ExportOutStruct *out, HtmlStruct *state, const char *key,
                     const NameListStruct *list)
{
  ExportPutString(out, key);
  for (size_t i = 0; i < list->count; ++i) {
    if (i > 0)
      ExportPutChar(out, ',');
    PutSafe(out, state, list->names[i], strlen(list->names[i]));
  }
  ExportPutChar(out, ']');
}

/* Track -- the page's track of a thread, made when first seen; -1 if out
 * of memory */
static long Track(ExportStruct *ex, HtmlStruct *state, uint32_t serial)
{
  ExportThreadStruct *thread = ExportThread(ex, serial);
  if (thread == NULL)
    return -1;
  if (thread->writer == NULL) {
    TrackStruct *track;
    if (!Grow(&state->tracks, &state->trackCount, &state->trackLimit, sizeof *state->tracks))
      return -1;
    track = &state->tracks[state->trackCount];
    memset(track, 0, sizeof *track);
    track->source = ex->source;
    track->serial = serial;
    track->core.fd = track->vals.fd = track->ck.fd = -1;
    thread->writer = (void *)(uintptr_t)++state->trackCount;
  }
  return (long)(uintptr_t)thread->writer - 1;
}

/* Type -- the page's type of rec: its name and kind; -1 if out of memory */
static int Type(ExportStruct *ex, HtmlStruct *state, const EventRecordStruct *rec, unsigned kind)
{
  unsigned e = (unsigned)(rec->desc - ex->registry->events);
  int *link = &state->typeFirst[ex->source][e];
  TypeStruct *type;
  for (; *link >= 0; link = &state->types[*link].next)
    if (state->types[*link].kind == kind)
      return *link;
  if (!Grow(&state->types, &state->typeCount, &state->typeLimit, sizeof *state->types))
    return -1;
  type = &state->types[state->typeCount];
  type->source = ex->source;
  type->desc = rec->desc;
  type->kind = kind;
  type->next = -1;
  type->name = NameIndex(&state->events, rec->desc->name);
  type->kindIndex = NameIndex(&state->kinds, kind < ex->registry->kindCount
                              ? ex->registry->kinds[kind].name : "?");
  if (type->name < 0 || type->kindIndex < 0)
    return -1;
  *link = (int)state->typeCount;
  return (int)state->typeCount++;
}

/* PutNumber -- the number of parameter place p: as the difference
 * from the last of that place on the track (addresses and counts move
 * little from one event to the next), zigzag, modulo 2^64 */
static void PutNumber(ExportOutStruct *f, TrackStruct *track, unsigned p, uint64_t v)
{
  if (p < SLOTS) {
    PutZigzag(f, (int64_t)(v - track->last[p]));
    track->last[p] = v;
  } else
    PutVarint(f, v);
}

/* PutValues -- rec's parameters' values, for the page to show as
 * eventcnv's text does: P and A as the number and its label (escaped as
 * the text's, .export.text), D as the text shows it, S escaped as the
 * text's, the rest as the number */
static void PutValues(ExportStruct *ex, HtmlStruct *state, TrackStruct *track, const EventRecordStruct *rec)
{
  const EventDescStruct *desc = rec->desc;
  ExportOutStruct *s = &state->scratch, *f = &track->vals;
  for (unsigned p = 0; p < desc->paramCount; ++p) {
    const EventValueUnion *v = &rec->values[p];
    switch (desc->format[p]) {
    case 'P': case 'A': {
      const char *label = ex->fmt.label != NULL ? ex->fmt.label(ex->fmt.labelClosure, v->u) : NULL;
      char safe[256];
      PutNumber(f, track, p, v->u);
      if (label != NULL)
        label = TextTo(safe, sizeof safe, label);
      PutBytes(f, label != NULL ? label : "", label != NULL ? strlen(label) : 0);
      break;
    }
    case 'D':
      s->used = 0;
      ExportPutDouble(s, v->d);
      PutBytes(f, s->buf, s->used);
      break;
    case 'S': {
      size_t need = EventEscape(NULL, 0, v->s, rec->stringLength) + 1;
      char *at = ExportReserve(s, need);
      if (at == NULL)
        break;
      EventEscape(at, need, v->s, rec->stringLength);
      PutBytes(f, at, need - 1);
      break;
    }
    default:
      PutNumber(f, track, p, v->u);
    }
  }
}

/* SpanBar -- a span closed, or still open at the end: kept, to be
 * sorted into rows and lanes at the end.  design/telemetry.txt
 * .export.span.thread */
static void SpanBar(void *closure, SpanWhat what, const SpanStruct *span)
{
  HtmlStruct *state = closure;
  SpanBarStruct *bar;
  if (what == SpanOPENED)
    return;
  if (!Grow(&state->spans, &state->spanCount, &state->spanLimit, sizeof *state->spans)) {
    state->failed = 1;
    return;
  }
  bar = &state->spans[state->spanCount];
  bar->name = NameIndex(&state->spanNames, state->ex->registry->spans[span->span].name);
  bar->beginTrack = Track(state->ex, state, span->beginThread);
  bar->endTrack = what == SpanCLOSED ? Track(state->ex, state, span->endThread) : -1;
  if (bar->name < 0 || bar->beginTrack < 0 || (what == SpanCLOSED && bar->endTrack < 0)) {
    state->failed = 1;
    return;
  }
  bar->track = span->onThread ? bar->beginTrack : -1;
  bar->source = state->ex->source;
  bar->begin = span->beginNs;
  bar->end = what == SpanCLOSED ? span->endNs : state->lastNs[state->ex->source];
  bar->key = span->key;
  bar->flags = (what == SpanCLOSED ? 0u : 1u) | (EventTypeOf(span->keyLetter)->hex ? 2u : 0u)
               | (span->onThread ? 0u : 4u);
  ++state->spanCount;
}

/* CounterPoint -- counter i's new value from rec: a point on the line of
 * its name and key (the key's label, else its hex), as the Chrome export
 * names its tracks.  .export.html.counter */
static int CounterPoint(ExportStruct *ex, HtmlStruct *state, const EventRecordStruct *rec, int i)
{
  const EventCounterDescStruct *counter = &ex->registry->counters[i];
  const EventValueUnion *value = &rec->values[counter->value];
  ExportOutStruct *name = &state->scratch;
  char letter = rec->desc->format[counter->value], *copy;
  PointStruct *point;
  int track;
  if (letter == 'D' && !(value->d - value->d == 0))   /* no NaN or infinity on a line */
    return 0;
  name->used = 0;
  if (ex->sourceCount > 1) {   /* each process's counters apart */
    ExportPutUnsigned(name, ex->source);
    ExportPutChar(name, ' ');
  }
  ExportPutString(name, counter->name);
  if (counter->key != EVENT_COUNTER_NO_KEY) {
    uint64_t key = rec->values[counter->key].u;
    const char *label = ex->fmt.label != NULL ? ex->fmt.label(ex->fmt.labelClosure, key) : NULL;
    ExportPutChar(name, '[');
    if (label != NULL) {
      char safe[256];
      ExportPutString(name, TextTo(safe, sizeof safe, label));
    } else
      ExportPutHex(name, key);
    ExportPutChar(name, ']');
  }
  ExportPutChar(name, '\0');
  if (name->err != 0)
    return 1;
  track = NameIndex(&state->counterNames, name->buf);
  if (track < 0)
    return 1;
  if (state->counterNames.names[track] == name->buf) {   /* new: keep a copy */
    size_t limit = state->counterLimit;
    copy = malloc(name->used);
    if (copy == NULL || ((size_t)track >= limit
                         && !Grow(&state->counterDouble, &limit, &state->counterLimit, 1))) {
      free(copy);
      --state->counterNames.count;
      return 1;
    }
    state->counterNames.names[track] = memcpy(copy, name->buf, name->used);
    state->counterDouble[track] = letter == 'D';
  }
  if (!Grow(&state->points, &state->pointCount, &state->pointLimit, sizeof *state->points))
    return 1;
  point = &state->points[state->pointCount];
  point->counter = track;
  point->ns = ExportElapsedNs(ex, rec->clock);
  point->seq = state->pointCount++;
  if (state->counterDouble[track])
    memcpy(&point->bits, letter == 'D' ? &value->d : &(double){(double)value->u}, sizeof point->bits);
  else
    point->bits = letter == 'D' ? (uint64_t)value->d : value->u;
  return 0;
}

static int HtmlBegin(ExportStruct *ex)
{
  ExportOutStruct *out = &ex->out;
  const char *page = ExportTimelinePage, *mark = strstr(page, "<!--TITLE-->");
  memset(&html, 0, sizeof html);
  html.scratch.fd = -1;
  html.ex = ex;
  ex->state = &html;
  html.typeFirst = calloc(ex->sourceCount, sizeof *html.typeFirst);
  html.trackers = calloc(ex->sourceCount, sizeof *html.trackers);
  html.lastNs = calloc(ex->sourceCount, sizeof *html.lastNs);
  if (html.typeFirst == NULL || html.trackers == NULL || html.lastNs == NULL || mark == NULL)
    goto fail;
  for (size_t i = 0; i < ex->sourceCount; ++i) {
    const EventRegistryStruct *registry = ex->sources[i].registry;
    html.typeFirst[i] = malloc((registry->eventCount + 1) * sizeof *html.typeFirst[i]);
    if (html.typeFirst[i] == NULL)
      goto fail;
    for (unsigned e = 0; e <= registry->eventCount; ++e)
      html.typeFirst[i][e] = -1;
    if (registry->spanCount > 0) {
      html.trackers[i] = SpanTrackerCreate(registry, 0, SpanBar, &html);
      if (html.trackers[i] == NULL)
        goto fail;
    }
  }
  ExportPut(out, page, (size_t)(mark - page));
  for (size_t i = 0; i < ex->sourceCount; ++i) {
    /* Each program's name escaped as the text's (.export.text), then for HTML */
    const char *program = ex->sources[i].info->program;
    char *title = malloc(4 * strlen(program) + 1);
    if (title == NULL)
      goto fail;
    TextTo(title, 4 * strlen(program) + 1, program);
    if (i > 0)
      ExportPutString(out, ", ");
    for (const char *p = title; *p != '\0'; ++p)
      if (*p == '<' || *p == '&')
        ExportPutString(out, *p == '<' ? "&lt;" : "&amp;");
      else
        ExportPutChar(out, *p);
    free(title);
  }
  return 0;
fail:
  fprintf(stderr, "eventcnv: out of memory\n");
  return 1;
}

/* HtmlEvery -- spans and counters from every event, whatever the filter */
static int HtmlEvery(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  HtmlStruct *state = ex->state;
  int64_t ns = ExportElapsedNs(ex, rec->clock);
  if (ns > state->lastNs[ex->source])
    state->lastNs[ex->source] = ns;
  if (state->trackers[ex->source] != NULL
      && (SpanTrackerEvent(state->trackers[ex->source], rec, ns, seq) != 0 || state->failed)) {
    fprintf(stderr, "eventcnv: out of memory\n");
    return 1;
  }
  for (int i = SpanCounterOf(ex->registry, rec->code, -1); i >= 0;
       i = SpanCounterOf(ex->registry, rec->code, i))
    if (CounterPoint(ex, state, rec, i) != 0) {
      fprintf(stderr, "eventcnv: out of memory\n");
      return 1;
    }
  return 0;
}

/* HtmlEvent -- on its thread's track: time and type, and its values */
static int HtmlEvent(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  HtmlStruct *state = ex->state;
  unsigned kind = rec->kind < EVENT_STREAM_KIND_LIMIT ? rec->kind : EVENT_STREAM_KIND_LIMIT - 1;
  long k = Track(ex, state, rec->thread);
  int type = Type(ex, state, rec, kind);
  int64_t ns = ExportElapsedNs(ex, rec->clock);
  TrackStruct *track;
  (void)seq;
  if (k < 0 || type < 0) {
    fprintf(stderr, "eventcnv: out of memory\n");
    return 1;
  }
  track = &state->tracks[k];
  PutZigzag(&track->core, ns - track->lastNs);
  PutVarint(&track->core, (unsigned)type);
  track->lastNs = ns;
  if (track->n++ % CHECKPOINT == 0) {
    uint32_t at = (uint32_t)track->vals.used;
    unsigned char le[4] = {(unsigned char)at, (unsigned char)(at >> 8),
                           (unsigned char)(at >> 16), (unsigned char)(at >> 24)};
    ExportPut(&track->ck, (const char *)le, 4);
    memset(track->last, 0, sizeof track->last);
  }
  PutValues(ex, state, track, rec);
  if (track->core.err != 0 || track->vals.err != 0 || track->ck.err != 0 || track->vals.used > UINT32_MAX) {
    fprintf(stderr, "eventcnv: out of memory\n");
    return 1;
  }
  return 0;
}

/* The base64 writer: the page's data as script elements of class bin */
static const char binElement[] = "<script class=\"bin\" type=\"application/octet-stream\">";

static void Base64(ExportOutStruct *out, const unsigned char *p, size_t n)
{
  static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char *o = ExportReserve(out, (n + 2) / 3 * 4);
  if (o == NULL)
    return;
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0u) | (i + 2 < n ? p[i + 2] : 0u);
    *o++ = digits[v >> 18];
    *o++ = digits[v >> 12 & 63];
    *o++ = i + 1 < n ? digits[v >> 6 & 63] : '=';
    *o++ = i + 2 < n ? digits[v & 63] : '=';
  }
  out->used += (n + 2) / 3 * 4;
}

/* Data -- n bytes of the page's data: whole groups of three as they
 * come, a part closed at PART bytes; returns their offset */
static size_t Data(ExportOutStruct *out, HtmlStruct *state, const void *bytes, size_t n)
{
  const unsigned char *p = bytes;
  size_t at = state->bytes;
  state->bytes += n;
  while (n > 0) {
    size_t take;
    if (state->partUsed == 0)
      ExportPutString(out, binElement);
    while (state->pendingCount > 0 && state->pendingCount < 3 && n > 0) {
      state->pending[state->pendingCount++] = *p++;
      --n;
    }
    if (state->pendingCount == 3) {
      Base64(out, state->pending, 3);
      state->pendingCount = 0;
      state->partUsed += 3;
    }
    take = n < PART - state->partUsed ? n : PART - state->partUsed;
    take -= take % 3;
    Base64(out, p, take);
    p += take;
    n -= take;
    state->partUsed += take;
    if (n > 0 && n < 3 && state->partUsed < PART) {   /* kept for the next */
      memcpy(state->pending, p, n);
      state->pendingCount = n;
      n = 0;
    }
    if (state->partUsed >= PART) {
      ExportPutString(out, "</script>\n");
      state->partUsed = 0;
    }
  }
  return at;
}

static void DataEnd(ExportOutStruct *out, HtmlStruct *state)
{
  if (state->pendingCount > 0) {
    if (state->partUsed == 0)
      ExportPutString(out, binElement);
    Base64(out, state->pending, state->pendingCount);
    state->partUsed += state->pendingCount;
  }
  if (state->partUsed > 0)
    ExportPutString(out, "</script>\n");
}

static int ByRowBegin(const void *a, const void *b)
{
  const SpanBarStruct *x = a, *y = b;
  if (x->row != y->row)
    return x->row < y->row ? -1 : 1;
  if (x->begin != y->begin)
    return x->begin < y->begin ? -1 : 1;
  return (x->end < y->end) - (x->end > y->end);   /* the outer first */
}

static int ByRowLane(const void *a, const void *b)
{
  const SpanBarStruct *x = a, *y = b;
  if (x->row == y->row && x->lane != y->lane)
    return x->lane < y->lane ? -1 : 1;
  return ByRowBegin(a, b);
}

static int ByCounter(const void *a, const void *b)
{
  const PointStruct *x = a, *y = b;
  if (x->counter != y->counter)
    return x->counter < y->counter ? -1 : 1;
  return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Lanes -- each span's row (its thread's track, or after them its
 * process's async row of its name) and lane: on a thread its depth, the
 * spans sorted by begin (.export.span.thread: they nest); async the
 * lowest lane free; past LANES, the last lane, folded.  The spans end
 * sorted by row, lane and begin.  Returns the async rows, *rowCount
 * set, or NULL if out of memory. */
static RowStruct *Lanes(HtmlStruct *state, size_t *rowCount)
{
  RowStruct *rows = NULL;
  size_t count = 0, limit = 0, depth = 0;
  int64_t lanes[LANES], *stack = NULL;
  for (size_t i = 0; i < state->spanCount; ++i) {
    SpanBarStruct *bar = &state->spans[i];
    size_t r;
    if (bar->track >= 0) {
      bar->row = (size_t)bar->track;
      continue;
    }
    for (r = 0; r < count; ++r)
      if (rows[r].source == bar->source && rows[r].name == bar->name)
        break;
    if (r == count) {
      if (!Grow(&rows, &count, &limit, sizeof *rows))
        goto fail;
      rows[count].source = bar->source;
      rows[count++].name = bar->name;
    }
    bar->row = state->trackCount + r;
  }
  if (state->spanCount > 0)   /* spans is NULL when there are none */
    qsort(state->spans, state->spanCount, sizeof *state->spans, ByRowBegin);
  stack = malloc((state->spanCount + 1) * sizeof *stack);
  if (stack == NULL)
    goto fail;
  for (size_t i = 0; i < state->spanCount; ++i) {
    SpanBarStruct *bar = &state->spans[i];
    if (i == 0 || bar->row != bar[-1].row) {
      depth = 0;
      for (unsigned l = 0; l < LANES; ++l)
        lanes[l] = INT64_MIN;
    }
    if (bar->row < state->trackCount) {   /* on its thread: its depth */
      while (depth > 0 && stack[depth - 1] <= bar->begin)
        --depth;
      bar->lane = depth < LANES ? (unsigned)depth : LANES;
      stack[depth++] = bar->end;
    } else {                               /* async: the lowest lane free */
      unsigned l = 0;
      while (l < LANES && lanes[l] > bar->begin)
        ++l;
      if (l < LANES)
        lanes[l] = bar->end;
      bar->lane = l;
    }
  }
  free(stack);
  if (state->spanCount > 0)
    qsort(state->spans, state->spanCount, sizeof *state->spans, ByRowLane);
  *rowCount = count;
  return rows != NULL ? rows : malloc(1);
fail:
  free(rows);
  return NULL;
}

/* PutSpans -- the spans in the data; their rows in the meta: per row its
 * track (or -1, async, with process and name), how many spans each lane
 * holds, and how many are folded into the last */
static void PutSpans(ExportStruct *ex, HtmlStruct *state, ExportOutStruct *meta)
{
  ExportOutStruct *out = &ex->out, *buf = &state->scratch;
  size_t rowCount, at = state->bytes;
  RowStruct *rows = Lanes(state, &rowCount);
  int firstRow = 1;
  if (rows == NULL) {
    out->err = ENOMEM;
    return;
  }
  ExportPutString(meta, ",\"spanCount\":");
  ExportPutUnsigned(meta, state->spanCount);
  ExportPutString(meta, ",\"laneLimit\":");
  ExportPutUnsigned(meta, LANES);
  ExportPutString(meta, ",\"rows\":[");
  for (size_t i = 0, lane = 0; i < state->spanCount; ) {
    const SpanBarStruct *first = &state->spans[i];
    size_t j = i, folded = 0;
    int64_t begin = 0;
    buf->used = 0;
    for (; j < state->spanCount && state->spans[j].row == first->row; ++j) {
      const SpanBarStruct *bar = &state->spans[j];
      if (j == i || bar->lane != bar[-1].lane)
        begin = 0;
      PutVarint(buf, (unsigned)bar->name);
      PutZigzag(buf, bar->begin - begin);
      PutZigzag(buf, bar->end - bar->begin);
      PutVarint(buf, bar->flags);
      PutVarint(buf, bar->key);
      PutVarint(buf, (uint64_t)(bar->beginTrack + 1));
      PutVarint(buf, (uint64_t)(bar->endTrack + 1));
      begin = bar->begin;
      folded += bar->lane == LANES;
    }
    Data(out, state, buf->buf, buf->used);
    if (!firstRow)
      ExportPutChar(meta, ',');
    firstRow = 0;
    ExportPutString(meta, "{\"track\":");
    if (first->row < state->trackCount) {
      ExportPutUnsigned(meta, first->row);
      ExportPutString(meta, ",\"proc\":");
      ExportPutUnsigned(meta, state->tracks[first->row].source);
    } else {
      ExportPutString(meta, "-1,\"proc\":");
      ExportPutUnsigned(meta, rows[first->row - state->trackCount].source);
      ExportPutString(meta, ",\"name\":");
      ExportPutUnsigned(meta, (unsigned)rows[first->row - state->trackCount].name);
    }
    PutMember(meta, "folded", folded);
    ExportPutString(meta, ",\"lanes\":[");
    for (lane = 0; i < j; ++lane) {   /* every lane to the last, empty ones too */
      size_t n = 0;
      while (i < j && state->spans[i].lane == lane) {
        ++i;
        ++n;
      }
      if (lane > 0)
        ExportPutChar(meta, ',');
      ExportPutUnsigned(meta, n);
    }
    ExportPutString(meta, "]}");
  }
  ExportPutString(meta, "],\"spans\":");
  ExportPutUnsigned(meta, at);
  free(rows);
}

/* PutCounters -- each counter's points in the data, sorted by counter
 * and in time order; in the meta its name, process, points and where */
static void PutCounters(ExportStruct *ex, HtmlStruct *state, ExportOutStruct *meta)
{
  ExportOutStruct *out = &ex->out, *buf = &state->scratch;
  if (state->pointCount > 0)   /* points is NULL when there are none */
    qsort(state->points, state->pointCount, sizeof *state->points, ByCounter);
  ExportPutString(meta, ",\"counters\":[");
  for (size_t c = 0, i = 0; c < state->counterNames.count; ++c) {
    const char *name = state->counterNames.names[c];
    size_t j = i, at;
    int64_t ns = 0;
    buf->used = 0;
    for (; j < state->pointCount && state->points[j].counter == (int)c; ++j) {
      PutZigzag(buf, state->points[j].ns - ns);
      ns = state->points[j].ns;
      if (state->counterDouble[c]) {
        char le[8];
        for (unsigned b = 0; b < 8; ++b)
          le[b] = (char)(state->points[j].bits >> (8 * b));
        ExportPut(buf, le, 8);
      } else
        PutVarint(buf, state->points[j].bits);
    }
    at = Data(out, state, buf->buf, buf->used);   /* before PutSafe, which uses buf */
    if (c > 0)
      ExportPutChar(meta, ',');
    ExportPutString(meta, "{\"name\":");
    if (ex->sourceCount > 1)    /* the process number is for grouping only */
      name = strchr(name, ' ') + 1;
    PutSafe(meta, state, name, strlen(name));
    PutMember(meta, "proc", ex->sourceCount > 1 ? strtoul(state->counterNames.names[c], NULL, 10) : 0);
    PutMember(meta, "n", j - i);
    PutMember(meta, "d", state->counterDouble[c]);
    PutMember(meta, "at", at);
    ExportPutChar(meta, '}');
    i = j;
  }
  ExportPutChar(meta, ']');
}

/* PutTracks -- each track's data, and in the meta its name (its
 * thread's: serial and name, escaped as the text's), process and
 * serial, by which the page groups them, its events and where they are */
static void PutTracks(ExportStruct *ex, HtmlStruct *state, ExportOutStruct *meta)
{
  ExportOutStruct *out = &ex->out;
  char text[256];
  for (size_t i = 0; i < state->trackCount; ++i) {
    TrackStruct *track = &state->tracks[i];
    track->coreAt = Data(out, state, track->core.buf, track->core.used);
    track->ckAt = Data(out, state, track->ck.buf, track->ck.used);
    track->valsAt = Data(out, state, track->vals.buf, track->vals.used);
  }
  ExportPutString(meta, "{\"tracks\":[");
  for (size_t i = 0; i < state->trackCount; ++i) {
    const TrackStruct *track = &state->tracks[i];
    const ExportThreadStruct *thread;
    char name[512];
    (void)ExportUse(ex, track->source);
    thread = ExportThreadFind(ex, track->serial);
    snprintf(name, sizeof name, "T%lu", (unsigned long)track->serial);
    if (thread != NULL && thread->name != NULL) {
      size_t n = thread->nameLength < 200 ? thread->nameLength : 200;
      char raw[201];
      memcpy(raw, thread->name, n);
      raw[n] = '\0';
      snprintf(name + strlen(name), sizeof name - strlen(name), " %s", TextTo(text, sizeof text, raw));
    }
    ExportPutString(meta, i > 0 ? ",{\"name\":" : "{\"name\":");
    PutSafe(meta, state, name, strlen(name));
    PutMember(meta, "proc", track->source);
    PutMember(meta, "serial", track->serial);
    PutMember(meta, "n", track->n);
    PutMember(meta, "core", track->coreAt);
    PutMember(meta, "ck", track->ckAt);
    PutMember(meta, "vals", track->valsAt);
    ExportPutChar(meta, '}');
  }
  ExportPutString(meta, "],\"procs\":[");
  for (size_t i = 0; i < ex->sourceCount; ++i) {
    char name[300];
    snprintf(name, sizeof name, "%s[%lu]", TextTo(text, sizeof text, ex->sources[i].info->program),
             (unsigned long)ex->sources[i].info->pid);
    if (i > 0)
      ExportPutChar(meta, ',');
    PutSafe(meta, state, name, strlen(name));
  }
  /* types: name, kind and parameters (fmts, one a type) */
  ExportPutString(meta, "],\"types\":[");
  for (size_t i = 0; i < state->typeCount; ++i) {
    char entry[64];
    snprintf(entry, sizeof entry, "%s[%d,%d,%lu]", i > 0 ? "," : "", state->types[i].name,
             state->types[i].kindIndex, (unsigned long)i);
    ExportPutString(meta, entry);
  }
  ExportPutString(meta, "],\"fmts\":[");
  for (size_t i = 0; i < state->typeCount; ++i) {
    const EventDescStruct *desc = state->types[i].desc;
    ExportPutString(meta, i > 0 ? ",[" : "[");
    PutSafe(meta, state, desc->format, desc->paramCount);
    ExportPutString(meta, ",[");
    for (unsigned p = 0; p < desc->paramCount; ++p) {
      if (p > 0)
        ExportPutChar(meta, ',');
      PutSafe(meta, state, desc->paramNames[p], strlen(desc->paramNames[p]));
    }
    ExportPutString(meta, "]]");
  }
  ExportPutChar(meta, ']');
}

static void Free(HtmlStruct *state, size_t sourceCount)
{
  for (size_t i = 0; i < sourceCount; ++i) {
    if (state->typeFirst != NULL)
      free(state->typeFirst[i]);
    if (state->trackers != NULL)
      SpanTrackerDestroy(state->trackers[i]);
  }
  for (size_t i = 0; i < state->trackCount; ++i) {
    free(state->tracks[i].core.buf);
    free(state->tracks[i].vals.buf);
    free(state->tracks[i].ck.buf);
  }
  free(state->typeFirst);
  free(state->types);
  free(state->trackers);
  free(state->lastNs);
  free(state->tracks);
  free(state->spans);
  free(state->points);
  free(state->events.names);
  free(state->kinds.names);
  free(state->spanNames.names);
  for (size_t i = 0; i < state->counterNames.count; ++i)
    free((char *)state->counterNames.names[i]);
  free(state->counterNames.names);
  free(state->counterDouble);
  free(state->scratch.buf);
}

static int HtmlEnd(ExportStruct *ex)
{
  HtmlStruct *state = ex->state;
  ExportOutStruct *out = &ex->out, meta = {NULL, 0, 0, -1, 0};
  const char *page = ExportTimelinePage, *title = strstr(page, "<!--TITLE-->"),
    *data = title != NULL ? strstr(title, "<!--DATA-->") : NULL;
  if (state == NULL)
    return 0;
  for (size_t i = 0; state->trackers != NULL && i < ex->sourceCount; ++i)
    if (state->trackers[i] != NULL && ExportUse(ex, i) == 0)
      SpanTrackerFinish(state->trackers[i]);
  if (data != NULL) {
    title += strlen("<!--TITLE-->");
    ExportPut(out, title, (size_t)(data - title));
    PutTracks(ex, state, &meta);
    PutSpans(ex, state, &meta);
    PutCounters(ex, state, &meta);
    PutNames(&meta, state, ",\"names\":[", &state->events);
    PutNames(&meta, state, ",\"kinds\":[", &state->kinds);
    PutNames(&meta, state, ",\"spanNames\":[", &state->spanNames);
    ExportPutString(&meta, ",\"bytes\":");
    ExportPutUnsigned(&meta, state->bytes);
    ExportPutChar(&meta, '}');
    DataEnd(out, state);
    ExportPutString(out, "<script id=\"meta\" type=\"application/json\">");
    ExportPut(out, meta.buf, meta.used);
    ExportPutString(out, "</script>");
    data += strlen("<!--DATA-->");
    ExportPutString(out, data);
  }
  if (out->err == 0 && (meta.err != 0 || state->scratch.err != 0 || state->failed))
    out->err = ENOMEM;
  free(meta.buf);
  Free(state, ex->sourceCount);
  return 0;
}

const ExportWriterStruct ExportHtml = {"html", 0, HtmlBegin, HtmlEvent, HtmlEvery, HtmlEnd, NULL, 0};
