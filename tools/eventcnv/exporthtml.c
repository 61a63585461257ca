/* <tools/eventcnv/exporthtml.c> -- a timeline in one HTML file
 *
 * .design: design/export.txt .export.html
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
 *
 * This file gathers them as the log is read; htmldata.c encodes them
 * into the page (htmlint.h).
 */

#include "htmlint.h"
#include "textsafe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char ExportTimelinePage[];   /* build/gen/eventcnv/timeline.c */

static HtmlStruct html;

/* HtmlGrow -- room for one more of *count items of size in *array; 0 if out
 * of memory */
int HtmlGrow(void *array, size_t *count, size_t *limit, size_t size)
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

/* nameIndex -- the index of name in list, added if new; -1 if out of memory */
static int nameIndex(NameListStruct *list, const char *name)
{
  for (size_t i = 0; i < list->count; ++i)
    if (strcmp(list->names[i], name) == 0)
      return (int)i;
  if (!HtmlGrow(&list->names, &list->count, &list->limit, sizeof *list->names))
    return -1;
  list->names[list->count] = name;
  return (int)list->count++;
}

/* trackOf -- the page's track of a thread, made when first seen; -1 if out
 * of memory */
static long trackOf(ExportStruct *ex, HtmlStruct *state, uint32_t serial)
{
  ExportThreadStruct *thread = ExportThread(ex, serial);
  if (thread == NULL)
    return -1;
  if (thread->writer == NULL) {
    TrackStruct *track;
    if (!HtmlGrow(&state->tracks, &state->trackCount, &state->trackLimit, sizeof *state->tracks))
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

/* typeOf -- the page's type of rec: its name and kind; -1 if out of memory */
static int typeOf(ExportStruct *ex, HtmlStruct *state, const EventRecordStruct *rec, unsigned kind)
{
  unsigned e = (unsigned)(rec->desc - ex->registry->events);
  int *link = &state->typeFirst[ex->source][e];
  TypeStruct *type;
  for (; *link >= 0; link = &state->types[*link].next)
    if (state->types[*link].kind == kind)
      return *link;
  if (!HtmlGrow(&state->types, &state->typeCount, &state->typeLimit, sizeof *state->types))
    return -1;
  type = &state->types[state->typeCount];
  type->source = ex->source;
  type->desc = rec->desc;
  type->kind = kind;
  type->next = -1;
  type->name = nameIndex(&state->events, rec->desc->name);
  type->kindIndex = nameIndex(&state->kinds, kind < ex->registry->kindCount
                              ? ex->registry->kinds[kind].name : "?");
  if (type->name < 0 || type->kindIndex < 0)
    return -1;
  *link = (int)state->typeCount;
  return (int)state->typeCount++;
}

/* putNumber -- the number of parameter place p: as the difference
 * from the last of that place on the track (addresses and counts move
 * little from one event to the next), zigzag, modulo 2^64 */
static void putNumber(ExportOutStruct *f, TrackStruct *track, unsigned p, uint64_t v)
{
  if (p < SLOTS) {
    HtmlPutZigzag(f, (int64_t)(v - track->last[p]));
    track->last[p] = v;
  } else
    HtmlPutVarint(f, v);
}

/* putValues -- rec's parameters' values, for the page to show as
 * eventcnv's text does: P and A as the number and its label (escaped as
 * the text's, .export.text), D as the text shows it, S escaped as the
 * text's, the rest as the number */
static void putValues(ExportStruct *ex, HtmlStruct *state, TrackStruct *track, const EventRecordStruct *rec)
{
  const EventDescStruct *desc = rec->desc;
  ExportOutStruct *s = &state->scratch, *f = &track->vals;
  for (unsigned p = 0; p < desc->paramCount; ++p) {
    const EventValueUnion *v = &rec->values[p];
    switch (desc->format[p]) {
    case 'P': case 'A': {
      const char *label = ex->fmt.label != NULL ? ex->fmt.label(ex->fmt.labelClosure, v->u) : NULL;
      char safe[256];
      putNumber(f, track, p, v->u);
      if (label != NULL)
        label = TextTo(safe, sizeof safe, label);
      HtmlPutBytes(f, label != NULL ? label : "", label != NULL ? strlen(label) : 0);
      break;
    }
    case 'D':
      s->used = 0;
      ExportPutDouble(s, v->d);
      HtmlPutBytes(f, s->buf, s->used);
      break;
    case 'S': {
      size_t need = EventEscape(NULL, 0, v->s, rec->stringLength) + 1;
      char *at = ExportReserve(s, need);
      if (at == NULL)
        break;
      EventEscape(at, need, v->s, rec->stringLength);
      HtmlPutBytes(f, at, need - 1);
      break;
    }
    default:
      putNumber(f, track, p, v->u);
    }
  }
}

/* spanBar -- a span closed, or still open at the end: kept, to be
 * sorted into rows and lanes at the end.  design/export.txt
 * .export.span.thread */
static void spanBar(void *closure, SpanWhat what, const SpanStruct *span)
{
  HtmlStruct *state = closure;
  SpanBarStruct *bar;
  if (what == SpanOPENED)
    return;
  if (!HtmlGrow(&state->spans, &state->spanCount, &state->spanLimit, sizeof *state->spans)) {
    state->failed = 1;
    return;
  }
  bar = &state->spans[state->spanCount];
  bar->name = nameIndex(&state->spanNames, state->ex->registry->spans[span->span].name);
  bar->beginTrack = trackOf(state->ex, state, span->beginThread);
  bar->endTrack = what == SpanCLOSED ? trackOf(state->ex, state, span->endThread) : -1;
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

/* counterPoint -- counter i's new value from rec: a point on the line of
 * its name and key (the key's label, else its hex), as the Chrome export
 * names its tracks.  .export.html.counter */
static int counterPoint(ExportStruct *ex, HtmlStruct *state, const EventRecordStruct *rec, int i)
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
  track = nameIndex(&state->counterNames, name->buf);
  if (track < 0)
    return 1;
  if (state->counterNames.names[track] == name->buf) {   /* new: keep a copy */
    size_t limit = state->counterLimit;
    copy = malloc(name->used);
    if (copy == NULL || ((size_t)track >= limit
                         && !HtmlGrow(&state->counterDouble, &limit, &state->counterLimit, 1))) {
      free(copy);
      --state->counterNames.count;
      return 1;
    }
    state->counterNames.names[track] = memcpy(copy, name->buf, name->used);
    state->counterDouble[track] = letter == 'D';
  }
  if (!HtmlGrow(&state->points, &state->pointCount, &state->pointLimit, sizeof *state->points))
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

static int htmlBegin(ExportStruct *ex)
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
      html.trackers[i] = SpanTrackerCreate(registry, 0, spanBar, &html);
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

/* htmlEvery -- spans and counters from every event, whatever the filter */
static int htmlEvery(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
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
    if (counterPoint(ex, state, rec, i) != 0) {
      fprintf(stderr, "eventcnv: out of memory\n");
      return 1;
    }
  return 0;
}

/* htmlEvent -- on its thread's track: time and type, and its values */
static int htmlEvent(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  HtmlStruct *state = ex->state;
  unsigned kind = rec->kind < EVENT_STREAM_KIND_LIMIT ? rec->kind : EVENT_STREAM_KIND_LIMIT - 1;
  long k = trackOf(ex, state, rec->thread);
  int type = typeOf(ex, state, rec, kind);
  int64_t ns = ExportElapsedNs(ex, rec->clock);
  TrackStruct *track;
  (void)seq;
  if (k < 0 || type < 0) {
    fprintf(stderr, "eventcnv: out of memory\n");
    return 1;
  }
  track = &state->tracks[k];
  HtmlPutZigzag(&track->core, ns - track->lastNs);
  HtmlPutVarint(&track->core, (unsigned)type);
  track->lastNs = ns;
  if (track->n++ % CHECKPOINT == 0) {
    uint32_t at = (uint32_t)track->vals.used;
    unsigned char le[4] = {(unsigned char)at, (unsigned char)(at >> 8),
                           (unsigned char)(at >> 16), (unsigned char)(at >> 24)};
    ExportPut(&track->ck, (const char *)le, 4);
    memset(track->last, 0, sizeof track->last);
  }
  putValues(ex, state, track, rec);
  if (track->core.err != 0 || track->vals.err != 0 || track->ck.err != 0 || track->vals.used > UINT32_MAX) {
    fprintf(stderr, "eventcnv: out of memory\n");
    return 1;
  }
  return 0;
}

static void htmlFree(HtmlStruct *state, size_t sourceCount)
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

static int htmlEnd(ExportStruct *ex)
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
    HtmlPutData(ex, state, out, &meta);
    ExportPutString(out, "<script id=\"meta\" type=\"application/json\">");
    ExportPut(out, meta.buf, meta.used);
    ExportPutString(out, "</script>");
    data += strlen("<!--DATA-->");
    ExportPutString(out, data);
  }
  if (out->err == 0 && (meta.err != 0 || state->scratch.err != 0 || state->failed))
    out->err = ENOMEM;
  free(meta.buf);
  htmlFree(state, ex->sourceCount);
  return 0;
}

const ExportWriterStruct ExportHtml = {"html", 0, htmlBegin, htmlEvent, htmlEvery, htmlEnd, NULL, 0};
