/* <tools/eventcnv/exporthtml.c> -- a timeline in one HTML file
 *
 * .design: design/telemetry.txt .export.html
 *
 * eventcnv --format html writes one self-contained HTML file that draws
 * the events on a canvas, offline: no network, no external script.  The
 * events are data in the page (a JSON script element: per event its
 * time, track, name, kind and fields as text); the script below, part
 * of this file, draws a track per thread with a mark per event coloured
 * by kind, a track per span name with its spans as bars, a line per
 * counter and key, and a rate strip per kind, and zooms, pans and shows
 * an event's fields.  Zoomed
 * out it draws at most one mark a pixel, found by binary search, so a
 * million events draw as fast as a thousand.
 */

#include "export.h"
#include "textsafe.h"
#include "span.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NameListStruct -- names made global across logs (each log has its own
 * registry): a name's index in the page */
typedef struct NameListStruct {
  const char **names;
  size_t count, limit;
} NameListStruct;

typedef struct TrackStruct {
  size_t source;
  uint32_t serial;
} TrackStruct;

typedef struct HtmlStruct {
  int first;                    /* no event written yet */
  ExportOutStruct scratch, fields, spans, counters;   /* memory */
  NameListStruct events, kinds, spanNames;
  NameListStruct counterNames;  /* "name" or "name[key]": owned */
  int **eventIndex;             /* by log, by registry index: index in events, or -1 */
  int (*kindIndex)[EVENT_STREAM_KIND_LIMIT];
  SpanTrackerStruct **trackers; /* by log */
  TrackStruct *tracks;
  size_t trackCount, trackLimit;
  int firstSpan, firstCounter;
  int64_t *lastNs;              /* by log: its latest event's time */
  ExportStruct *ex;
} HtmlStruct;

static HtmlStruct html;

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
  if (list->count == list->limit) {
    size_t limit = list->limit > 0 ? 2 * list->limit : 64;
    const char **bigger = realloc(list->names, limit * sizeof *bigger);
    if (bigger == NULL)
      return -1;
    list->names = bigger;
    list->limit = limit;
  }
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

/* Track -- the page's track of rec's thread, made when first seen; -1
 * if out of memory */
static long Track(ExportStruct *ex, HtmlStruct *state, uint32_t serial)
{
  ExportThreadStruct *thread = ExportThread(ex, serial);
  if (thread == NULL)
    return -1;
  if (thread->writer == NULL) {
    if (state->trackCount == state->trackLimit) {
      size_t limit = state->trackLimit > 0 ? 2 * state->trackLimit : 64;
      TrackStruct *bigger = realloc(state->tracks, limit * sizeof *bigger);
      if (bigger == NULL)
        return -1;
      state->tracks = bigger;
      state->trackLimit = limit;
    }
    state->tracks[state->trackCount].source = ex->source;
    state->tracks[state->trackCount].serial = serial;
    thread->writer = (void *)(uintptr_t)++state->trackCount;
  }
  return (long)(uintptr_t)thread->writer - 1;
}

/* PutFields -- rec's fields as eventcnv prints them, name=value ... */
static void PutFields(ExportStruct *ex, ExportOutStruct *f, const EventRecordStruct *rec)
{
  const EventDescStruct *desc = rec->desc;
  f->used = 0;
  for (unsigned p = 0; p < desc->paramCount; ++p) {
    const EventValueUnion *v = &rec->values[p];
    const char *label;
    if (p > 0)
      ExportPutChar(f, ' ');
    ExportPutString(f, desc->paramNames[p]);
    ExportPutChar(f, '=');
    switch (desc->format[p]) {
    case 'P': case 'A':
      ExportPutHex(f, v->u);
      label = ex->fmt.label != NULL ? ex->fmt.label(ex->fmt.labelClosure, v->u) : NULL;
      if (label != NULL) {   /* escaped as the text's (.export.text) */
        char safe[256];
        ExportPutChar(f, '[');
        ExportPutString(f, TextTo(safe, sizeof safe, label));
        ExportPutChar(f, ']');
      }
      break;
    case 'D':
      ExportPutDouble(f, v->d);
      break;
    case 'S': {                 /* escaped as eventcnv's text (.export.text) */
      size_t need = EventEscape(NULL, 0, v->s, rec->stringLength) + 1;
      char *at = ExportReserve(f, need + 2);
      if (at == NULL)
        break;
      at[0] = '"';
      EventEscape(at + 1, need, v->s, rec->stringLength);
      at[need] = '"';
      f->used += need + 1;
      break;
    }
    default:
      ExportPutUnsigned(f, v->u);
    }
  }
}

/* SpanBar -- a span closed, or still open at the end: name, process,
 * its thread's track if it nests there (else -1: async), begin, end,
 * unfinished, key (in its parameter's form), begin and end tracks.
 * design/telemetry.txt .export.span.thread */
static void SpanBar(void *closure, SpanWhat what, const SpanStruct *span)
{
  HtmlStruct *state = closure;
  ExportOutStruct *out = &state->spans;
  long begin, end = -1;
  int name;
  if (what == SpanOPENED)
    return;
  name = NameIndex(&state->spanNames, state->ex->registry->spans[span->span].name);
  begin = Track(state->ex, state, span->beginThread);
  if (what == SpanCLOSED)
    end = Track(state->ex, state, span->endThread);
  if (name < 0 || begin < 0 || (what == SpanCLOSED && end < 0)) {
    out->err = ENOMEM;
    return;
  }
  if (!state->firstSpan)
    ExportPutChar(out, ',');
  state->firstSpan = 0;
  ExportPutUnsigned(out, (unsigned)name);
  ExportPutChar(out, ',');
  ExportPutUnsigned(out, state->ex->source);
  ExportPutChar(out, ',');
  ExportPutSigned(out, span->onThread ? begin : -1);
  ExportPutChar(out, ',');
  ExportPutSigned(out, span->beginNs);
  ExportPutChar(out, ',');
  ExportPutSigned(out, what == SpanCLOSED ? span->endNs : state->lastNs[state->ex->source]);
  ExportPutString(out, what == SpanCLOSED ? ",0,\"" : ",1,\"");
  if (span->keyLetter == 'P' || span->keyLetter == 'A')
    ExportPutHex(out, span->key);
  else
    ExportPutUnsigned(out, span->key);
  ExportPutString(out, "\",");
  ExportPutSigned(out, begin);
  ExportPutChar(out, ',');
  ExportPutSigned(out, end);
}

/* CounterPoint -- counter i's new value from rec: a point on the line of
 * its name and key (the key's label, else its hex), as the Chrome export
 * names its tracks.  .export.html.counter */
static int CounterPoint(ExportStruct *ex, HtmlStruct *state, const EventRecordStruct *rec, int i)
{
  const EventCounterDescStruct *counter = &ex->registry->counters[i];
  const EventValueUnion *value = &rec->values[counter->value];
  ExportOutStruct *name = &state->scratch, *out = &state->counters;
  char letter = rec->desc->format[counter->value], *copy;
  int track;
  if (letter == 'D' && !(value->d - value->d == 0))   /* JSON has no NaN or infinity */
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
    copy = malloc(name->used);
    if (copy == NULL) {
      --state->counterNames.count;
      return 1;
    }
    state->counterNames.names[track] = memcpy(copy, name->buf, name->used);
  }
  if (!state->firstCounter)
    ExportPutChar(out, ',');
  state->firstCounter = 0;
  ExportPutUnsigned(out, (unsigned)track);
  ExportPutChar(out, ',');
  ExportPutSigned(out, ExportElapsedNs(ex, rec->clock));
  ExportPutChar(out, ',');
  if (letter == 'D')
    ExportPutDouble(out, value->d);
  else
    ExportPutUnsigned(out, value->u);
  return out->err != 0;
}

/* The page's style and script.  The script reads the data element:
 * ev (5 values an event: ns since the start, track, name, kind, fields),
 * sp (6 a span: name, lane, begin, end, unfinished, key), ct (3 a
 * counter's point: counter, ns since the start, value), and the names
 * of tracks, events, kinds, spans and counters.  It sets on the body
 * data-drawn (how many marks, bars, lines and strips it drew),
 * data-counters (how many counter lines), data-drawms (how long the last
 * drawing took), data-loadms (when the page was drawn first) and
 * data-errors (how many errors the page met), for tests/html.py; a
 * #view=FROM,TO (ns since the start) in the address shows that span.
 * design/telemetry.txt .export.html */
static const char style[] =
  "html { overflow-y: scroll; }\n"   /* the width is the same with the scroll bar */
  "body { margin: 0; font: 12px sans-serif; }\n"
  "#head { padding: 4px 8px; background: #eee; }\n"
  "#tip { position: absolute; display: none; background: #ffffe8; border: 1px solid #999; padding: 3px 6px;\n"
  "  white-space: pre; pointer-events: none; font: 12px monospace; }\n"
  "#info { white-space: pre; font: 12px monospace; padding: 4px 8px; border-top: 1px solid #ccc; min-height: 3em; }\n"
  "canvas { display: block; }\n";

static const char script[] =
  "(function () {\n"
  "\"use strict\";\n"
  "var errors = 0;\n"
  "window.addEventListener(\"error\", function () { document.body.dataset.errors = ++errors; });\n"
  "document.body.dataset.errors = 0;\n"
  "var D = JSON.parse(document.getElementById(\"data\").textContent);\n"
  "var W = 5, n = D.ev.length / W, i, j, k;\n"
  "var T = new Float64Array(n), TR = new Int32Array(n), NM = new Int32Array(n), KD = new Int32Array(n);\n"
  "var F = new Array(n);\n"
  "for (i = 0, j = 0; i < n; i++, j += W) {\n"
  "  T[i] = D.ev[j]; TR[i] = D.ev[j + 1]; NM[i] = D.ev[j + 2]; KD[i] = D.ev[j + 3]; F[i] = D.ev[j + 4];\n"
  "}\n"
  "D.ev = null;\n"
  "var nt = D.tracks.length, nk = D.kinds.length, np = D.procs.length;\n"
  "function group(key, count) {   /* the indexes of each key's events, in time order */\n"
  "  var c = new Int32Array(count), out = [];\n"
  "  for (i = 0; i < n; i++) c[key[i]]++;\n"
  "  for (k = 0; k < count; k++) { out.push(new Int32Array(c[k])); c[k] = 0; }\n"
  "  for (i = 0; i < n; i++) out[key[i]][c[key[i]]++] = i;\n"
  "  return out;\n"
  "}\n"
  "var byTrack = group(TR, nt), byKind = group(KD, nk);\n"
  "/* spans: 9 values each: name, process, thread track (-1: async), begin,\n"
  " * end, unfinished, key, begin and end thread tracks (-1: unfinished).  design/telemetry.txt\n"
  " * .export.span.thread: those on a thread nest there, drawn below its\n"
  " * marks at their depth; the others go on a track per process and span\n"
  " * name, each in the lowest lane free, LANES at most (the rest folded\n"
  " * into the last lane, and the header says how many) */\n"
  "var SW = 9, S = D.sp, ns = S.length / SW, LANES = 64, folded = 0;\n"
  "var depthOf = new Int32Array(ns), laneOf = new Int32Array(ns);\n"
  "var threadSpans = [], trackDepth = new Int32Array(nt), asyncRows = {}, asyncList = [];\n"
  "for (k = 0; k < nt; k++) threadSpans.push([]);\n"
  "for (i = 0; i < ns; i++) {\n"
  "  var o = i * SW;\n"
  "  if (S[o + 2] >= 0) threadSpans[S[o + 2]].push(i);\n"
  "  else {\n"
  "    var key = S[o + 1] + \"/\" + S[o];\n"
  "    if (!(key in asyncRows)) { asyncRows[key] = {proc: S[o + 1], name: S[o], list: [], lanes: 1}; asyncList.push(key); }\n"
  "    asyncRows[key].list.push(i);\n"
  "  }\n"
  "}\n"
  "function byBegin(a, b) { return S[a * SW + 3] - S[b * SW + 3] || S[b * SW + 4] - S[a * SW + 4]; }\n"
  "for (k = 0; k < nt; k++) {   /* depth: how many of the thread's spans enclose it */\n"
  "  var list = threadSpans[k], ends = [];\n"
  "  list.sort(byBegin);\n"
  "  for (j = 0; j < list.length; j++) {\n"
  "    var b = S[list[j] * SW + 3];\n"
  "    while (ends.length > 0 && ends[ends.length - 1] <= b) ends.pop();\n"
  "    depthOf[list[j]] = ends.length;\n"
  "    if (ends.length + 1 > trackDepth[k]) trackDepth[k] = ends.length + 1;\n"
  "    ends.push(S[list[j] * SW + 4]);\n"
  "  }\n"
  "}\n"
  "asyncList.forEach(function (key) {\n"
  "  var row = asyncRows[key], laneEnd = [];\n"
  "  row.list.sort(byBegin);\n"
  "  for (j = 0; j < row.list.length; j++) {\n"
  "    var s = row.list[j], lane = 0;\n"
  "    while (lane < laneEnd.length && laneEnd[lane] > S[s * SW + 3]) lane++;\n"
  "    if (lane >= LANES) { lane = LANES - 1; folded++; }\n"
  "    laneOf[s] = lane;\n"
  "    laneEnd[lane] = Math.max(laneEnd[lane] || -Infinity, S[s * SW + 4]);\n"
  "  }\n"
  "  row.lanes = Math.max(1, laneEnd.length);\n"
  "});\n"
  "var C = D.ct, nc = C.length / 3, byCounter = [], cmin = [], cmax = [];   /* counters: [times, values] */\n"
  "for (i = 0; i < D.counters.length; i++) { byCounter.push([[], []]); cmin.push(Infinity); cmax.push(-Infinity); }\n"
  "for (i = 0; i < nc; i++) {\n"
  "  var cn = C[i * 3], cv = C[i * 3 + 2];\n"
  "  byCounter[cn][0].push(C[i * 3 + 1]); byCounter[cn][1].push(cv);\n"
  "  cmin[cn] = Math.min(cmin[cn], cv); cmax[cn] = Math.max(cmax[cn], cv);\n"
  "}\n"
  "D.ct = null;\n"
  "var colours = [];\n"
  "for (i = 0; i < nk; i++) colours.push(\"hsl(\" + Math.round(i * 360 / Math.max(nk, 1) + 200) % 360 + \",70%,45%)\");\n"
  "var spanColours = [];\n"
  "for (i = 0; i < Math.max(D.spans.length, 1); i++) spanColours.push(\"hsl(\" + Math.round(i * 137 + 20) % 360 + \",60%,55%)\");\n"
  "\n"
  "var canvas = document.getElementById(\"tl\"), ctx = canvas.getContext(\"2d\");\n"
  "var tip = document.getElementById(\"tip\"), info = document.getElementById(\"info\");\n"
  "var LABEL = 190, AXIS = 22, ROW = 18, SPANROW = 7, RATE = 26, COUNTER = 30, PROC = 16;\n"
  "function cname(k) { return np > 1 ? D.counters[k].replace(/^[0-9]+ /, \"\") : D.counters[k]; }\n"
  "var rows = [];   /* {kind: \"proc\"|\"track\"|\"async\"|\"counter\"|\"rate\", index, y, h, label} */\n"
  "function layout() {   /* per process: its threads, its async spans, its counters */\n"
  "  var y = AXIS, p, order = [];\n"
  "  rows = [];\n"
  "  for (k = 0; k < nt; k++) order.push(k);\n"
  "  order.sort(function (a, b) { return D.tproc[a] - D.tproc[b] || D.tserial[a] - D.tserial[b]; });\n"
  "  for (p = 0; p < np; p++) {\n"
  "    if (np > 1) { rows.push({kind: \"proc\", index: p, y: y, h: PROC, label: D.procs[p]}); y += PROC; }\n"
  "    for (j = 0; j < nt; j++) {\n"
  "      k = order[j];\n"
  "      if (D.tproc[k] !== p) continue;\n"
  "      var h = ROW + (trackDepth[k] > 0 ? trackDepth[k] * SPANROW + 3 : 0);\n"
  "      rows.push({kind: \"track\", index: k, y: y, h: h, label: D.tracks[k]}); y += h;\n"
  "    }\n"
  "    asyncList.forEach(function (key) {\n"
  "      var row = asyncRows[key];\n"
  "      if (row.proc !== p) return;\n"
  "      var h = Math.max(ROW, row.lanes * SPANROW + 4);\n"
  "      rows.push({kind: \"async\", index: key, y: y, h: h, label: D.spans[row.name] + \" (async)\"}); y += h;\n"
  "    });\n"
  "    for (k = 0; k < D.counters.length; k++) {\n"
  "      if (D.cproc[k] !== p) continue;\n"
  "      rows.push({kind: \"counter\", index: k, y: y, h: COUNTER, label: cname(k)}); y += COUNTER;\n"
  "    }\n"
  "  }\n"
  "  y += 6;\n"
  "  for (k = 0; k < nk; k++) {\n"
  "    if (byKind[k].length === 0) continue;\n"
  "    rows.push({kind: \"rate\", index: k, y: y, h: RATE, label: D.kinds[k] + \" rate\"}); y += RATE;\n"
  "  }\n"
  "  return y + 4;\n"
  "}\n"
  "var height = layout();\n"
  "var tmin = n > 0 ? T[0] : 0, tmax = n > 0 ? T[n - 1] : 1;\n"
  "for (i = 0; i < ns; i++) { tmin = Math.min(tmin, S[i * SW + 3]); tmax = Math.max(tmax, S[i * SW + 4]); }\n"
  "for (i = 0; i < byCounter.length; i++) {\n"
  "  var ts = byCounter[i][0]; tmin = Math.min(tmin, ts[0]); tmax = Math.max(tmax, ts[ts.length - 1]);\n"
  "}\n"
  "if (tmax <= tmin) tmax = tmin + 1000;\n"
  "var pad = (tmax - tmin) * 0.02, v0 = tmin - pad, v1 = tmax + pad;\n"
  "var view = /^#view=(-?[0-9.e+]+),(-?[0-9.e+]+)$/.exec(location.hash);   /* #view=FROM,TO in ns */\n"
  "if (view !== null && +view[2] > +view[1]) { v0 = +view[1]; v1 = +view[2]; }\n"
  "var width = 800, dpr = window.devicePixelRatio || 1;\n"
  "\n"
  "function lower(list, t) {   /* the first position of list whose time is >= t */\n"
  "  var lo = 0, hi = list.length;\n"
  "  while (lo < hi) { var mid = (lo + hi) >> 1; if (T[list[mid]] < t) lo = mid + 1; else hi = mid; }\n"
  "  return lo;\n"
  "}\n"
  "function xOf(t) { return LABEL + (t - v0) / (v1 - v0) * (width - LABEL); }\n"
  "function tOf(x) { return v0 + (x - LABEL) / (width - LABEL) * (v1 - v0); }\n"
  "function fmt(ns) {\n"
  "  var a = Math.abs(ns);\n"
  "  if (a >= 1e9) return (ns / 1e9).toFixed(6) + \" s\";\n"
  "  if (a >= 1e6) return (ns / 1e6).toFixed(3) + \" ms\";\n"
  "  if (a >= 1e3) return (ns / 1e3).toFixed(3) + \" \\u00b5s\";\n"
  "  return Math.round(ns) + \" ns\";\n"
  "}\n"
  "\n"
  "function drawAxis() {\n"
  "  var span = v1 - v0, step = Math.pow(10, Math.floor(Math.log10(span / 8))), t;\n"
  "  if (span / step > 16) step *= 5; else if (span / step > 8) step *= 2;\n"
  "  ctx.fillStyle = \"#444\"; ctx.font = \"11px sans-serif\"; ctx.strokeStyle = \"#ddd\";\n"
  "  for (t = Math.ceil(v0 / step) * step; t <= v1; t += step) {\n"
  "    var x = Math.round(xOf(t)) + 0.5;\n"
  "    ctx.beginPath(); ctx.moveTo(x, AXIS - 4); ctx.lineTo(x, height); ctx.stroke();\n"
  "    ctx.fillText(fmt(t), x + 2, 12);\n"
  "  }\n"
  "}\n"
  "\n"
  "/* drawMarks -- a track's events as marks; zoomed out, one mark a pixel\n"
  " * (the first event in it), found by binary search: thinning */\n"
  "function drawMarks(row) {\n"
  "  var list = byTrack[row.index], a = lower(list, v0), b = lower(list, v1 + 1), drawn = 0, x;\n"
  "  if (b - a <= (width - LABEL) * 2) {\n"
  "    for (j = a; j < b; j++) {\n"
  "      ctx.fillStyle = colours[KD[list[j]]];\n"
  "      ctx.fillRect(Math.floor(xOf(T[list[j]])), row.y + 3, 2, ROW - 6);\n"
  "      drawn++;\n"
  "    }\n"
  "    return drawn;\n"
  "  }\n"
  "  var per = (v1 - v0) / (width - LABEL);\n"
  "  for (x = LABEL; x < width; x++) {\n"
  "    var t = v0 + (x - LABEL) * per, k2 = lower(list, t);\n"
  "    if (k2 < list.length && T[list[k2]] < t + per) {\n"
  "      ctx.fillStyle = colours[KD[list[k2]]];\n"
  "      ctx.fillRect(x, row.y + 3, 1, ROW - 6);\n"
  "      drawn++;\n"
  "    }\n"
  "  }\n"
  "  return drawn;\n"
  "}\n"
  "\n"
  "/* drawBars -- spans of list at y0 + their depth (or lane) */\n"
  "function drawBars(list, y0, slot) {\n"
  "  var drawn = 0;\n"
  "  for (j = 0; j < list.length; j++) {\n"
  "    var s = list[j], o = s * SW;\n"
  "    if (S[o + 3] > v1) break;   /* sorted by begin */\n"
  "    if (S[o + 4] < v0) continue;\n"
  "    var x0 = Math.max(LABEL, xOf(S[o + 3])), x1 = Math.min(width, xOf(S[o + 4]));\n"
  "    ctx.fillStyle = spanColours[S[o]];\n"
  "    ctx.globalAlpha = S[o + 5] ? 0.4 : 0.85;\n"
  "    ctx.fillRect(x0, y0 + slot[s] * SPANROW, Math.max(1, x1 - x0), SPANROW - 1);\n"
  "    drawn++;\n"
  "  }\n"
  "  ctx.globalAlpha = 1;\n"
  "  return drawn;\n"
  "}\n"
  "\n"
  "/* counterAt -- the index of counter k's last point at or before t, or -1 */\n"
  "function counterAt(k, t) {\n"
  "  var ts = byCounter[k][0], lo = 0, hi = ts.length;\n"
  "  while (lo < hi) { var mid = (lo + hi) >> 1; if (ts[mid] <= t) lo = mid + 1; else hi = mid; }\n"
  "  return lo - 1;\n"
  "}\n"
  "/* drawCounter -- a counter as steps between its least and its most value;\n"
  " * zoomed out, its value at each pixel's start (thinning) */\n"
  "function drawCounter(row) {\n"
  "  var k = row.index, ts = byCounter[k][0], vs = byCounter[k][1], lo = cmin[k], hi = cmax[k];\n"
  "  var a = Math.max(0, counterAt(k, v0)), b = counterAt(k, v1) + 1, x, p;\n"
  "  function yOf(v) { return row.y + row.h - 3 - (hi > lo ? (v - lo) / (hi - lo) : 0.5) * (row.h - 8); }\n"
  "  if (b <= a) return 0;\n"
  "  ctx.strokeStyle = spanColours[k % spanColours.length]; ctx.lineWidth = 1.5;\n"
  "  ctx.beginPath();\n"
  "  if (b - a <= (width - LABEL) * 2) {\n"
  "    ctx.moveTo(Math.max(LABEL, xOf(ts[a])), yOf(vs[a]));\n"
  "    for (p = a + 1; p < b; p++) { ctx.lineTo(xOf(ts[p]), yOf(vs[p - 1])); ctx.lineTo(xOf(ts[p]), yOf(vs[p])); }\n"
  "    ctx.lineTo(Math.min(width, xOf(tmax)), yOf(vs[b - 1]));\n"
  "  } else {\n"
  "    for (x = LABEL; x < width; x++) {\n"
  "      p = counterAt(k, tOf(x));\n"
  "      if (p < 0) continue;\n"
  "      if (x === LABEL || p === 0) ctx.moveTo(x, yOf(vs[p])); else ctx.lineTo(x, yOf(vs[p]));\n"
  "    }\n"
  "  }\n"
  "  ctx.stroke(); ctx.lineWidth = 1;\n"
  "  ctx.fillStyle = \"#666\"; ctx.font = \"10px sans-serif\";\n"
  "  ctx.fillText(\"max \" + (+hi.toPrecision(6)), LABEL + 4, row.y + 10);\n"
  "  return 1;\n"
  "}\n"
  "\n"
  "/* drawRate -- events of a kind per bin of 3 pixels, scaled to the most */\n"
  "function drawRate(row) {\n"
  "  var list = byKind[row.index], bins = Math.floor((width - LABEL) / 3), counts = [], most = 0, b;\n"
  "  for (b = 0; b < bins; b++) {\n"
  "    var c = lower(list, tOf(LABEL + (b + 1) * 3)) - lower(list, tOf(LABEL + b * 3));\n"
  "    counts.push(c); if (c > most) most = c;\n"
  "  }\n"
  "  ctx.fillStyle = colours[row.index];\n"
  "  for (b = 0; b < bins && most > 0; b++)\n"
  "    if (counts[b] > 0) {\n"
  "      var h = Math.max(1, counts[b] / most * (row.h - 4));\n"
  "      ctx.fillRect(LABEL + b * 3, row.y + row.h - 2 - h, 3, h);\n"
  "    }\n"
  "  return most > 0 ? 1 : 0;\n"
  "}\n"
  "\n"
  "function draw() {\n"
  "  var started = performance.now();\n"
  "  width = Math.max(400, document.documentElement.clientWidth);\n"
  "  canvas.width = width * dpr; canvas.height = height * dpr;\n"
  "  canvas.style.width = width + \"px\"; canvas.style.height = height + \"px\";\n"
  "  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);\n"
  "  ctx.fillStyle = \"#fff\"; ctx.fillRect(0, 0, width, height);\n"
  "  drawAxis();\n"
  "  var drawn = 0, lines = 0, bars = 0, r;\n"
  "  for (r = 0; r < rows.length; r++) {\n"
  "    var row = rows[r];\n"
  "    ctx.fillStyle = row.kind === \"proc\" ? \"#dde\" : r % 2 ? \"#f6f6f6\" : \"#fff\";\n"
  "    if (row.kind !== \"rate\") ctx.fillRect(0, row.y, width, row.h);\n"
  "    ctx.save(); ctx.beginPath(); ctx.rect(LABEL, row.y, width - LABEL, row.h); ctx.clip();\n"
  "    if (row.kind === \"track\") {\n"
  "      drawn += drawMarks(row);\n"
  "      bars += drawBars(threadSpans[row.index], row.y + ROW, depthOf);\n"
  "    } else if (row.kind === \"async\") {\n"
  "      bars += drawBars(asyncRows[row.index].list, row.y + 2, laneOf);\n"
  "    } else if (row.kind === \"counter\") {\n"
  "      lines += drawCounter(row);\n"
  "    } else if (row.kind === \"rate\") {\n"
  "      drawn += drawRate(row);\n"
  "    }\n"
  "    ctx.restore();\n"
  "    ctx.fillStyle = \"#222\"; ctx.font = row.kind === \"proc\" ? \"bold 12px sans-serif\" : \"12px sans-serif\";\n"
  "    ctx.fillText(row.label.length > 28 && row.kind !== \"proc\" ? row.label.slice(0, 27) + \"\\u2026\" : row.label,\n"
  "                 4, row.y + 13);\n"
  "  }\n"
  "  document.body.dataset.drawn = drawn + bars;\n"
  "  document.body.dataset.bars = bars;\n"
  "  document.body.dataset.counters = lines;\n"
  "  document.body.dataset.drawms = Math.round(performance.now() - started);\n"
  "}\n"
  "\n"
  "function rowAt(y) {\n"
  "  for (var r = 0; r < rows.length; r++) if (y >= rows[r].y && y < rows[r].y + rows[r].h) return rows[r];\n"
  "  return null;\n"
  "}\n"
  "function spanText(s) {\n"
  "  var o = s * SW;\n"
  "  return D.spans[S[o]] + \" key=\" + S[o + 6] + (S[o + 5] ? \" (unfinished)\" : \"\")\n"
  "    + \"\\n\" + fmt(S[o + 3]) + \" .. \" + fmt(S[o + 4]) + \": \" + fmt(S[o + 4] - S[o + 3])\n"
  "    + (S[o + 2] < 0 ? \"\\nbegan on \" + D.tracks[S[o + 7]] + (S[o + 8] >= 0 ? \", ended on \" + D.tracks[S[o + 8]] : \"\") : \"\");\n"
  "}\n"
  "function spanAt(list, slot, n0, tt) {\n"
  "  for (var q = 0; q < list.length; q++) {\n"
  "    var o = list[q] * SW;\n"
  "    if (S[o + 3] > tt) break;\n"
  "    if (slot[list[q]] === n0 && tt <= S[o + 4]) return list[q];\n"
  "  }\n"
  "  return -1;\n"
  "}\n"
  "/* pick -- the event or span under the pointer, within 4 pixels */\n"
  "function pick(x, y) {\n"
  "  var row = rowAt(y), best = null, bestD = 4, q, s;\n"
  "  if (row === null || x < LABEL) return null;\n"
  "  if (row.kind === \"track\" && y >= row.y + ROW) {\n"
  "    s = spanAt(threadSpans[row.index], depthOf, Math.floor((y - row.y - ROW) / SPANROW), tOf(x));\n"
  "    return s < 0 ? null : spanText(s) + \"\\non \" + D.tracks[row.index];\n"
  "  }\n"
  "  if (row.kind === \"track\") {\n"
  "    var list = byTrack[row.index], t = tOf(x), a = lower(list, t);\n"
  "    for (q = Math.max(0, a - 2); q < Math.min(list.length, a + 2); q++) {\n"
  "      var d = Math.abs(xOf(T[list[q]]) - x);\n"
  "      if (d <= bestD) { bestD = d; best = list[q]; }\n"
  "    }\n"
  "    if (best === null) return null;\n"
  "    return fmt(T[best]) + \"  \" + D.tracks[TR[best]] + \"  \" + D.kinds[KD[best]] + \"  \" + D.names[NM[best]]\n"
  "      + \"\\n\" + F[best];\n"
  "  }\n"
  "  if (row.kind === \"async\") {\n"
  "    s = spanAt(asyncRows[row.index].list, laneOf, Math.floor((y - row.y - 2) / SPANROW), tOf(x));\n"
  "    if (s < 0) return null;\n"
  "    return spanText(s);\n"
  "  }\n"
  "  if (row.kind === \"counter\") {\n"
  "    var at = counterAt(row.index, tOf(x));\n"
  "    if (at >= 0) return cname(row.index) + \" = \" + byCounter[row.index][1][at]\n"
  "      + \"\\nsince \" + fmt(byCounter[row.index][0][at]);\n"
  "  }\n"
  "  return null;\n"
  "}\n"
  "\n"
  "var drag = null;\n"
  "canvas.addEventListener(\"mousedown\", function (e) { drag = {x: e.offsetX, v0: v0, v1: v1}; });\n"
  "window.addEventListener(\"mouseup\", function () { drag = null; });\n"
  "canvas.addEventListener(\"mousemove\", function (e) {\n"
  "  if (drag !== null) {\n"
  "    var dt = (e.offsetX - drag.x) / (width - LABEL) * (drag.v1 - drag.v0);\n"
  "    v0 = drag.v0 - dt; v1 = drag.v1 - dt; draw(); return;\n"
  "  }\n"
  "  var text = pick(e.offsetX, e.offsetY);\n"
  "  tip.style.display = text ? \"block\" : \"none\";\n"
  "  if (text) { tip.textContent = text; tip.style.left = Math.min(e.pageX + 12, width - 300) + \"px\"; tip.style.top = (e.pageY + 12) + \"px\"; }\n"
  "});\n"
  "canvas.addEventListener(\"click\", function (e) {\n"
  "  var text = pick(e.offsetX, e.offsetY);\n"
  "  if (text) info.textContent = text;\n"
  "});\n"
  "canvas.addEventListener(\"wheel\", function (e) {\n"
  "  e.preventDefault();\n"
  "  if (e.offsetX < LABEL) return;\n"
  "  var t = tOf(e.offsetX), f = Math.exp(e.deltaY * 0.002);\n"
  "  var nv0 = t - (t - v0) * f, nv1 = t + (v1 - t) * f;\n"
  "  if (nv1 - nv0 > 10) { v0 = nv0; v1 = nv1; draw(); }\n"
  "}, {passive: false});\n"
  "canvas.addEventListener(\"dblclick\", function () { v0 = tmin - pad; v1 = tmax + pad; draw(); });\n"
  "window.addEventListener(\"resize\", draw);\n"
  "document.getElementById(\"head\").textContent = D.procs.join(\", \") + \": \" + n + \" events, \" + nt + \" threads, \"\n"
  "  + ns + \" spans\" + (folded > 0 ? \" (\" + folded + \" async spans past \" + LANES + \" lanes folded into the last)\" : \"\")\n"
  "  + \"; \" + fmt(tmax - tmin) + \". Drag to pan, wheel to zoom, double-click to see all;\"\n"
  "  + \" point at an event or span for its fields, click to keep them below.\";\n"
  "document.body.dataset.folded = folded;\n"
  "draw();\n"
  "document.body.dataset.loadms = Math.round(performance.now());\n"
  "document.body.dataset.overflow = document.documentElement.scrollWidth - document.documentElement.clientWidth;\n"
  "})();\n";

static int HtmlBegin(ExportStruct *ex)
{
  ExportOutStruct *out = &ex->out;
  memset(&html, 0, sizeof html);
  html.first = html.firstSpan = html.firstCounter = 1;
  html.scratch.fd = html.fields.fd = html.spans.fd = html.counters.fd = -1;
  html.ex = ex;
  ex->state = &html;
  html.eventIndex = calloc(ex->sourceCount, sizeof *html.eventIndex);
  html.kindIndex = calloc(ex->sourceCount, sizeof *html.kindIndex);
  html.trackers = calloc(ex->sourceCount, sizeof *html.trackers);
  html.lastNs = calloc(ex->sourceCount, sizeof *html.lastNs);
  if (html.eventIndex == NULL || html.kindIndex == NULL || html.trackers == NULL || html.lastNs == NULL)
    goto fail;
  for (size_t i = 0; i < ex->sourceCount; ++i) {
    const EventRegistryStruct *registry = ex->sources[i].registry;
    html.eventIndex[i] = malloc((registry->eventCount + 1) * sizeof *html.eventIndex[i]);
    if (html.eventIndex[i] == NULL)
      goto fail;
    for (unsigned e = 0; e < registry->eventCount; ++e)
      html.eventIndex[i][e] = -1;
    for (unsigned k = 0; k < EVENT_STREAM_KIND_LIMIT; ++k)
      html.kindIndex[i][k] = -1;
    if (registry->spanCount > 0) {
      html.trackers[i] = SpanTrackerCreate(registry, 0, SpanBar, &html);
      if (html.trackers[i] == NULL)
        goto fail;
    }
  }
  ExportPutString(out, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>telltale: ");
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
  ExportPutString(out, "</title>\n<style>\n");
  ExportPutString(out, style);
  ExportPutString(out, "</style></head>\n<body><div id=\"head\"></div><canvas id=\"tl\"></canvas>"
                  "<div id=\"info\"></div><div id=\"tip\"></div>\n"
                  "<script id=\"data\" type=\"application/json\">{\"ev\":[\n");
  return 0;
fail:
  fprintf(stderr, "eventcnv: out of memory\n");
  return 1;
}

/* HtmlEvery -- spans from every event, whatever the filter */
static int HtmlEvery(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  HtmlStruct *state = ex->state;
  int64_t ns = ExportElapsedNs(ex, rec->clock);
  if (ns > state->lastNs[ex->source])
    state->lastNs[ex->source] = ns;
  if (state->trackers[ex->source] != NULL
      && SpanTrackerEvent(state->trackers[ex->source], rec, ns, seq) != 0) {
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

/* HtmlEvent -- time, track, name, kind, fields */
static int HtmlEvent(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  HtmlStruct *state = ex->state;
  ExportOutStruct *out = &ex->out;
  unsigned e = (unsigned)(rec->desc - ex->registry->events);
  unsigned kind = rec->kind < EVENT_STREAM_KIND_LIMIT ? rec->kind : EVENT_STREAM_KIND_LIMIT - 1;
  int *name = &state->eventIndex[ex->source][e], *kindIndex = &state->kindIndex[ex->source][kind];
  long track = Track(ex, state, rec->thread);
  (void)seq;
  if (*name < 0)
    *name = NameIndex(&state->events, rec->desc->name);
  if (*kindIndex < 0)
    *kindIndex = NameIndex(&state->kinds, kind < ex->registry->kindCount
                           ? ex->registry->kinds[kind].name : "?");
  if (*name < 0 || *kindIndex < 0 || track < 0) {
    fprintf(stderr, "eventcnv: out of memory\n");
    return 1;
  }
  if (!state->first)
    ExportPut(out, ",\n", 2);
  state->first = 0;
  ExportPutSigned(out, ExportElapsedNs(ex, rec->clock));
  ExportPutChar(out, ',');
  ExportPutUnsigned(out, (uint64_t)track);
  ExportPutChar(out, ',');
  ExportPutUnsigned(out, (unsigned)*name);
  ExportPutChar(out, ',');
  ExportPutUnsigned(out, (unsigned)*kindIndex);
  ExportPutChar(out, ',');
  PutFields(ex, &state->fields, rec);
  PutSafe(out, state, state->fields.buf, state->fields.used);
  return 0;
}

/* PutTracks -- each track's name (its thread's: serial and name,
 * escaped as the text's), process and serial, by which the page groups
 * them; each process's name; each counter's process; the title, every
 * program's name */
static void PutTracks(ExportStruct *ex, HtmlStruct *state)
{
  ExportOutStruct *out = &ex->out, *name = &state->fields;
  char text[256];
  ExportPutString(out, "],\"tracks\":[");
  for (size_t i = 0; i < state->trackCount; ++i) {
    const ExportThreadStruct *thread;
    (void)ExportUse(ex, state->tracks[i].source);
    thread = ExportThreadFind(ex, state->tracks[i].serial);
    name->used = 0;
    snprintf(text, sizeof text, "T%lu", (unsigned long)state->tracks[i].serial);
    ExportPutString(name, text);
    if (thread != NULL && thread->name != NULL) {
      size_t n = thread->nameLength < 200 ? thread->nameLength : 200;
      char raw[201];
      memcpy(raw, thread->name, n);
      raw[n] = '\0';
      ExportPutChar(name, ' ');
      ExportPutString(name, TextTo(text, sizeof text, raw));
    }
    if (i > 0)
      ExportPutChar(out, ',');
    PutSafe(out, state, name->buf, name->used);
  }
  ExportPutString(out, "],\"tproc\":[");
  for (size_t i = 0; i < state->trackCount; ++i) {
    if (i > 0)
      ExportPutChar(out, ',');
    ExportPutUnsigned(out, state->tracks[i].source);
  }
  ExportPutString(out, "],\"tserial\":[");
  for (size_t i = 0; i < state->trackCount; ++i) {
    if (i > 0)
      ExportPutChar(out, ',');
    ExportPutUnsigned(out, state->tracks[i].serial);
  }
  ExportPutString(out, "],\"procs\":[");
  for (size_t i = 0; i < ex->sourceCount; ++i) {
    name->used = 0;
    ExportPutString(name, TextTo(text, sizeof text, ex->sources[i].info->program));
    ExportPutChar(name, '[');
    ExportPutUnsigned(name, ex->sources[i].info->pid);
    ExportPutChar(name, ']');
    if (i > 0)
      ExportPutChar(out, ',');
    PutSafe(out, state, name->buf, name->used);
  }
  ExportPutString(out, "],\"cproc\":[");
  for (size_t i = 0; i < state->counterNames.count; ++i) {
    if (i > 0)
      ExportPutChar(out, ',');
    ExportPutUnsigned(out, ex->sourceCount > 1 ? strtoul(state->counterNames.names[i], NULL, 10) : 0);
  }
  ExportPutChar(out, ']');
}

static int HtmlEnd(ExportStruct *ex)
{
  HtmlStruct *state = ex->state;
  ExportOutStruct *out = &ex->out;
  if (state == NULL)
    return 0;
  for (size_t i = 0; state->trackers != NULL && i < ex->sourceCount; ++i)
    if (state->trackers[i] != NULL && ExportUse(ex, i) == 0)
      SpanTrackerFinish(state->trackers[i]);
  ExportPutString(out, "],\"sp\":[");
  if (state->spans.used > 0)   /* buf is NULL when none was written */
    ExportPut(out, state->spans.buf, state->spans.used);
  ExportPutString(out, "],\"ct\":[");
  if (state->counters.used > 0)
    ExportPut(out, state->counters.buf, state->counters.used);
  PutTracks(ex, state);
  PutNames(out, state, ",\"names\":[", &state->events);
  PutNames(out, state, ",\"kinds\":[", &state->kinds);
  PutNames(out, state, ",\"spans\":[", &state->spanNames);
  PutNames(out, state, ",\"counters\":[", &state->counterNames);
  ExportPutString(out, "}</script>\n<script>\n");
  ExportPutString(out, script);
  ExportPutString(out, "</script></body></html>\n");
  if (out->err == 0 && (state->spans.err != 0 || state->fields.err != 0))
    out->err = state->spans.err != 0 ? state->spans.err : state->fields.err;
  if (out->err == 0 && state->counters.err != 0)
    out->err = state->counters.err;
  for (size_t i = 0; i < ex->sourceCount; ++i) {
    if (state->eventIndex != NULL)
      free(state->eventIndex[i]);
    if (state->trackers != NULL)
      SpanTrackerDestroy(state->trackers[i]);
  }
  free(state->eventIndex);
  free(state->kindIndex);
  free(state->trackers);
  free(state->lastNs);
  free(state->tracks);
  free(state->events.names);
  free(state->kinds.names);
  free(state->spanNames.names);
  for (size_t i = 0; i < state->counterNames.count; ++i)
    free((char *)state->counterNames.names[i]);
  free(state->counterNames.names);
  free(state->counters.buf);
  free(state->scratch.buf);
  free(state->fields.buf);
  free(state->spans.buf);
  return 0;
}

const ExportWriterStruct ExportHtml = {"html", 0, HtmlBegin, HtmlEvent, HtmlEvery, HtmlEnd, NULL, 0};
