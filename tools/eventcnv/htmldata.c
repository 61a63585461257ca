/* <tools/eventcnv/htmldata.c> -- the HTML timeline's data, as its page reads it
 *
 * .design: design/export.txt .export.html
 *
 * What exporthtml.c gathered, encoded for tools/eventcnv/timeline.html:
 * numbers as LEB128 (signed ones zigzag); the tracks', spans' and
 * counters' bytes in script elements of class bin, in base64, that the
 * page decodes into typed arrays; spans sorted here into their rows and
 * lanes, counters' points per counter; and the meta, a JSON object that
 * says where each is and names the events, kinds and spans.
 */

#include "htmlint.h"
#include "textsafe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void HtmlPutVarint(ExportOutStruct *out, uint64_t v)
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

void HtmlPutZigzag(ExportOutStruct *out, int64_t v)
{
  HtmlPutVarint(out, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* putMember -- ,"key":v in the meta's JSON */
static void putMember(ExportOutStruct *out, const char *key, uint64_t v)
{
  ExportPutString(out, ",\"");
  ExportPutString(out, key);
  ExportPutString(out, "\":");
  ExportPutUnsigned(out, v);
}

void HtmlPutBytes(ExportOutStruct *out, const char *s, size_t n)
{
  HtmlPutVarint(out, n);
  ExportPut(out, s, n);
}

/* putSafe -- s (n bytes) as a JSON string that cannot end the script
 * element it is in: "<" as \u003c */
static void putSafe(ExportOutStruct *out, HtmlStruct *state, const char *s, size_t n)
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

static void putNames(ExportOutStruct *out, HtmlStruct *state, const char *key,
                     const NameListStruct *list)
{
  ExportPutString(out, key);
  for (size_t i = 0; i < list->count; ++i) {
    if (i > 0)
      ExportPutChar(out, ',');
    putSafe(out, state, list->names[i], strlen(list->names[i]));
  }
  ExportPutChar(out, ']');
}

/* The base64 writer: the page's data as script elements of class bin */
static const char binElement[] = "<script class=\"bin\" type=\"application/octet-stream\">";

static void base64(ExportOutStruct *out, const unsigned char *p, size_t n)
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

/* dataAdd -- n bytes of the page's data: whole groups of three as they
 * come, a part closed at PART bytes; returns their offset */
static size_t dataAdd(ExportOutStruct *out, HtmlStruct *state, const void *bytes, size_t n)
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
      base64(out, state->pending, 3);
      state->pendingCount = 0;
      state->partUsed += 3;
    }
    take = n < PART - state->partUsed ? n : PART - state->partUsed;
    take -= take % 3;
    base64(out, p, take);
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

static void dataEnd(ExportOutStruct *out, HtmlStruct *state)
{
  if (state->pendingCount > 0) {
    if (state->partUsed == 0)
      ExportPutString(out, binElement);
    base64(out, state->pending, state->pendingCount);
    state->partUsed += state->pendingCount;
  }
  if (state->partUsed > 0)
    ExportPutString(out, "</script>\n");
}

static int byRowBegin(const void *a, const void *b)
{
  const SpanBarStruct *x = a, *y = b;
  if (x->row != y->row)
    return x->row < y->row ? -1 : 1;
  if (x->begin != y->begin)
    return x->begin < y->begin ? -1 : 1;
  return (x->end < y->end) - (x->end > y->end);   /* the outer first */
}

static int byRowLane(const void *a, const void *b)
{
  const SpanBarStruct *x = a, *y = b;
  if (x->row == y->row && x->lane != y->lane)
    return x->lane < y->lane ? -1 : 1;
  return byRowBegin(a, b);
}

static int byCounter(const void *a, const void *b)
{
  const PointStruct *x = a, *y = b;
  if (x->counter != y->counter)
    return x->counter < y->counter ? -1 : 1;
  return (x->seq > y->seq) - (x->seq < y->seq);
}

/* spanLanes -- each span's row (its thread's track, or after them its
 * process's async row of its name) and lane: on a thread its depth, the
 * spans sorted by begin (.export.span.thread: they nest); async the
 * lowest lane free; past LANES, the last lane, folded.  The spans end
 * sorted by row, lane and begin.  Returns the async rows, *rowCount
 * set, or NULL if out of memory. */
static RowStruct *spanLanes(HtmlStruct *state, size_t *rowCount)
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
      if (!HtmlGrow(&rows, &count, &limit, sizeof *rows))
        goto fail;
      rows[count].source = bar->source;
      rows[count++].name = bar->name;
    }
    bar->row = state->trackCount + r;
  }
  if (state->spanCount > 0)   /* spans is NULL when there are none */
    qsort(state->spans, state->spanCount, sizeof *state->spans, byRowBegin);
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
    qsort(state->spans, state->spanCount, sizeof *state->spans, byRowLane);
  *rowCount = count;
  return rows != NULL ? rows : malloc(1);
fail:
  free(rows);
  return NULL;
}

/* putSpans -- the spans in the data; their rows in the meta: per row its
 * track (or -1, async, with process and name), how many spans each lane
 * holds, and how many are folded into the last */
static void putSpans(ExportStruct *ex, HtmlStruct *state, ExportOutStruct *meta)
{
  ExportOutStruct *out = &ex->out, *buf = &state->scratch;
  size_t rowCount, at = state->bytes;
  RowStruct *rows = spanLanes(state, &rowCount);
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
      HtmlPutVarint(buf, (unsigned)bar->name);
      HtmlPutZigzag(buf, bar->begin - begin);
      HtmlPutZigzag(buf, bar->end - bar->begin);
      HtmlPutVarint(buf, bar->flags);
      HtmlPutVarint(buf, bar->key);
      HtmlPutVarint(buf, (uint64_t)(bar->beginTrack + 1));
      HtmlPutVarint(buf, (uint64_t)(bar->endTrack + 1));
      begin = bar->begin;
      folded += bar->lane == LANES;
    }
    dataAdd(out, state, buf->buf, buf->used);
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
    putMember(meta, "folded", folded);
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

/* putCounters -- each counter's points in the data, sorted by counter
 * and in time order; in the meta its name, process, points and where */
static void putCounters(ExportStruct *ex, HtmlStruct *state, ExportOutStruct *meta)
{
  ExportOutStruct *out = &ex->out, *buf = &state->scratch;
  if (state->pointCount > 0)   /* points is NULL when there are none */
    qsort(state->points, state->pointCount, sizeof *state->points, byCounter);
  ExportPutString(meta, ",\"counters\":[");
  for (size_t c = 0, i = 0; c < state->counterNames.count; ++c) {
    const char *name = state->counterNames.names[c];
    size_t j = i, at;
    int64_t ns = 0;
    buf->used = 0;
    for (; j < state->pointCount && state->points[j].counter == (int)c; ++j) {
      HtmlPutZigzag(buf, state->points[j].ns - ns);
      ns = state->points[j].ns;
      if (state->counterDouble[c]) {
        char le[8];
        for (unsigned b = 0; b < 8; ++b)
          le[b] = (char)(state->points[j].bits >> (8 * b));
        ExportPut(buf, le, 8);
      } else
        HtmlPutVarint(buf, state->points[j].bits);
    }
    at = dataAdd(out, state, buf->buf, buf->used);   /* before PutSafe, which uses buf */
    if (c > 0)
      ExportPutChar(meta, ',');
    ExportPutString(meta, "{\"name\":");
    if (ex->sourceCount > 1)    /* the process number is for grouping only */
      name = strchr(name, ' ') + 1;
    putSafe(meta, state, name, strlen(name));
    putMember(meta, "proc", ex->sourceCount > 1 ? strtoul(state->counterNames.names[c], NULL, 10) : 0);
    putMember(meta, "n", j - i);
    putMember(meta, "d", state->counterDouble[c]);
    putMember(meta, "at", at);
    ExportPutChar(meta, '}');
    i = j;
  }
  ExportPutChar(meta, ']');
}

/* putTracks -- each track's data, and in the meta its name (its
 * thread's: serial and name, escaped as the text's), process and
 * serial, by which the page groups them, its events and where they are */
static void putTracks(ExportStruct *ex, HtmlStruct *state, ExportOutStruct *meta)
{
  ExportOutStruct *out = &ex->out;
  char text[256];
  for (size_t i = 0; i < state->trackCount; ++i) {
    TrackStruct *track = &state->tracks[i];
    track->coreAt = dataAdd(out, state, track->core.buf, track->core.used);
    track->ckAt = dataAdd(out, state, track->ck.buf, track->ck.used);
    track->valsAt = dataAdd(out, state, track->vals.buf, track->vals.used);
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
    putSafe(meta, state, name, strlen(name));
    putMember(meta, "proc", track->source);
    putMember(meta, "serial", track->serial);
    putMember(meta, "n", track->n);
    putMember(meta, "core", track->coreAt);
    putMember(meta, "ck", track->ckAt);
    putMember(meta, "vals", track->valsAt);
    ExportPutChar(meta, '}');
  }
  ExportPutString(meta, "],\"procs\":[");
  for (size_t i = 0; i < ex->sourceCount; ++i) {
    char name[300];
    snprintf(name, sizeof name, "%s[%lu]", TextTo(text, sizeof text, ex->sources[i].info->program),
             (unsigned long)ex->sources[i].info->pid);
    if (i > 0)
      ExportPutChar(meta, ',');
    putSafe(meta, state, name, strlen(name));
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
    putSafe(meta, state, desc->format, desc->paramCount);
    ExportPutString(meta, ",[");
    for (unsigned p = 0; p < desc->paramCount; ++p) {
      if (p > 0)
        ExportPutChar(meta, ',');
      putSafe(meta, state, desc->paramNames[p], strlen(desc->paramNames[p]));
    }
    ExportPutString(meta, "]]");
  }
  ExportPutChar(meta, ']');
}

/* HtmlPutData -- the tracks, spans and counters as the page's data in
 * bin elements on out, and in meta what the page needs to read them, with
 * the names of events, kinds and spans */
void HtmlPutData(ExportStruct *ex, HtmlStruct *state, ExportOutStruct *out,
                 ExportOutStruct *meta)
{
  putTracks(ex, state, meta);
  putSpans(ex, state, meta);
  putCounters(ex, state, meta);
  putNames(meta, state, ",\"names\":[", &state->events);
  putNames(meta, state, ",\"kinds\":[", &state->kinds);
  putNames(meta, state, ",\"spanNames\":[", &state->spanNames);
  ExportPutString(meta, ",\"bytes\":");
  ExportPutUnsigned(meta, state->bytes);
  ExportPutChar(meta, '}');
  dataEnd(out, state);
}
