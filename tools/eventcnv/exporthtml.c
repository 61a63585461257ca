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
  int64_t lastNs;
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
      if (label != NULL) {
        ExportPutChar(f, '[');
        ExportPutString(f, label);
        ExportPutChar(f, ']');
      }
      break;
    case 'D':
      ExportPutDouble(f, v->d);
      break;
    case 'S':
      ExportPutChar(f, '"');
      ExportPut(f, v->s, rec->stringLength);
      ExportPutChar(f, '"');
      break;
    default:
      ExportPutUnsigned(f, v->u);
    }
  }
}

/* SpanBar -- a span closed, or still open at the end: a bar */
static void SpanBar(void *closure, SpanWhat what, const SpanStruct *span)
{
  HtmlStruct *state = closure;
  ExportOutStruct *out = &state->spans;
  int name;
  if (what == SpanOPENED)
    return;
  name = NameIndex(&state->spanNames, state->ex->registry->spans[span->span].name);
  if (name < 0) {
    out->err = ENOMEM;
    return;
  }
  if (!state->firstSpan)
    ExportPutChar(out, ',');
  state->firstSpan = 0;
  ExportPutUnsigned(out, (unsigned)name);
  ExportPutChar(out, ',');
  ExportPutUnsigned(out, span->lane);
  ExportPutChar(out, ',');
  ExportPutSigned(out, span->beginNs);
  ExportPutChar(out, ',');
  ExportPutSigned(out, what == SpanCLOSED ? span->endNs : state->lastNs);
  ExportPutString(out, what == SpanCLOSED ? ",0,\"" : ",1,\"");
  ExportPutHex(out, span->key);
  ExportPutChar(out, '"');
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
  ExportPutString(name, counter->name);
  if (counter->key != EVENT_COUNTER_NO_KEY) {
    uint64_t key = rec->values[counter->key].u;
    const char *label = ex->fmt.label != NULL ? ex->fmt.label(ex->fmt.labelClosure, key) : NULL;
    ExportPutChar(name, '[');
    if (label != NULL)
      ExportPutString(name, label);
    else
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
  "var W = 5, n = D.ev.length / W, i, j;\n"
  "var T = new Float64Array(n), TR = new Int32Array(n), NM = new Int32Array(n), KD = new Int32Array(n);\n"
  "var F = new Array(n);\n"
  "for (i = 0, j = 0; i < n; i++, j += W) {\n"
  "  T[i] = D.ev[j]; TR[i] = D.ev[j + 1]; NM[i] = D.ev[j + 2]; KD[i] = D.ev[j + 3]; F[i] = D.ev[j + 4];\n"
  "}\n"
  "D.ev = null;\n"
  "var nt = D.tracks.length, nk = D.kinds.length;\n"
  "function group(key, count) {   /* the indexes of each key's events, in time order */\n"
  "  var c = new Int32Array(count), out = [], k;\n"
  "  for (i = 0; i < n; i++) c[key[i]]++;\n"
  "  for (k = 0; k < count; k++) { out.push(new Int32Array(c[k])); c[k] = 0; }\n"
  "  for (i = 0; i < n; i++) out[key[i]][c[key[i]]++] = i;\n"
  "  return out;\n"
  "}\n"
  "var byTrack = group(TR, nt), byKind = group(KD, nk);\n"
  "var S = D.sp, ns = S.length / 6, spanRows = [], sn;\n"
  "for (sn = 0; sn < D.spans.length; sn++) spanRows.push(1);\n"
  "var LANES = 24;   /* span lanes drawn apart; above, they share the last */\n"
  "function laneOf(o) { return Math.min(S[o + 1], LANES - 1); }\n"
  "for (i = 0; i < ns; i++) spanRows[S[i * 6]] = Math.max(spanRows[S[i * 6]], laneOf(i * 6) + 1);\n"
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
  "for (i = 0; i < D.spans.length; i++) spanColours.push(\"hsl(\" + Math.round(i * 137 + 20) % 360 + \",60%,55%)\");\n"
  "\n"
  "var canvas = document.getElementById(\"tl\"), ctx = canvas.getContext(\"2d\");\n"
  "var tip = document.getElementById(\"tip\"), info = document.getElementById(\"info\");\n"
  "var LABEL = 190, AXIS = 22, ROW = 18, SPANROW = 7, RATE = 26, COUNTER = 30;\n"
  "var rows = [];   /* {kind: \"track\"|\"span\"|\"rate\", index, y, h, label} */\n"
  "function layout() {\n"
  "  var y = AXIS, k;\n"
  "  rows = [];\n"
  "  for (k = 0; k < nt; k++) { rows.push({kind: \"track\", index: k, y: y, h: ROW, label: D.tracks[k]}); y += ROW; }\n"
  "  for (k = 0; k < D.spans.length; k++) {\n"
  "    var h = Math.max(ROW, spanRows[k] * SPANROW + 4);\n"
  "    rows.push({kind: \"span\", index: k, y: y, h: h, label: D.spans[k]}); y += h;\n"
  "  }\n"
  "  for (k = 0; k < D.counters.length; k++) {\n"
  "    rows.push({kind: \"counter\", index: k, y: y, h: COUNTER, label: D.counters[k]}); y += COUNTER;\n"
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
  "for (i = 0; i < ns; i++) { tmin = Math.min(tmin, S[i * 6 + 2]); tmax = Math.max(tmax, S[i * 6 + 3]); }\n"
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
  "/* drawTrack -- a track's events as marks; zoomed out, one mark a pixel\n"
  " * (the first event in it), found by binary search: thinning */\n"
  "function drawTrack(row) {\n"
  "  var list = byTrack[row.index], a = lower(list, v0), b = lower(list, v1 + 1), drawn = 0, x;\n"
  "  if (b - a <= (width - LABEL) * 2) {\n"
  "    for (j = a; j < b; j++) {\n"
  "      ctx.fillStyle = colours[KD[list[j]]];\n"
  "      ctx.fillRect(Math.floor(xOf(T[list[j]])), row.y + 3, 2, row.h - 6);\n"
  "      drawn++;\n"
  "    }\n"
  "    return drawn;\n"
  "  }\n"
  "  var per = (v1 - v0) / (width - LABEL);\n"
  "  for (x = LABEL; x < width; x++) {\n"
  "    var t = v0 + (x - LABEL) * per, k = lower(list, t);\n"
  "    if (k < list.length && T[list[k]] < t + per) {\n"
  "      ctx.fillStyle = colours[KD[list[k]]];\n"
  "      ctx.fillRect(x, row.y + 3, 1, row.h - 6);\n"
  "      drawn++;\n"
  "    }\n"
  "  }\n"
  "  return drawn;\n"
  "}\n"
  "\n"
  "function drawSpans(row) {\n"
  "  var drawn = 0;\n"
  "  for (j = 0; j < ns; j++) {\n"
  "    var o = j * 6;\n"
  "    if (S[o] !== row.index || S[o + 3] < v0 || S[o + 2] > v1) continue;\n"
  "    var x0 = Math.max(LABEL, xOf(S[o + 2])), x1 = Math.min(width, xOf(S[o + 3]));\n"
  "    ctx.fillStyle = spanColours[row.index];\n"
  "    ctx.globalAlpha = S[o + 4] ? 0.4 : 0.85;\n"
  "    ctx.fillRect(x0, row.y + 2 + laneOf(o) * SPANROW, Math.max(1, x1 - x0), SPANROW - 1);\n"
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
  "  ctx.strokeStyle = spanColours[k % Math.max(spanColours.length, 1)] || \"#36c\"; ctx.lineWidth = 1.5;\n"
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
  "  var drawn = 0, lines = 0, r;\n"
  "  for (r = 0; r < rows.length; r++) {\n"
  "    var row = rows[r];\n"
  "    ctx.fillStyle = r % 2 ? \"#f6f6f6\" : \"#fff\";\n"
  "    if (row.kind !== \"rate\") ctx.fillRect(0, row.y, width, row.h);\n"
  "    ctx.save(); ctx.beginPath(); ctx.rect(LABEL, row.y, width - LABEL, row.h); ctx.clip();\n"
  "    drawn += row.kind === \"track\" ? drawTrack(row) : row.kind === \"span\" ? drawSpans(row)\n"
  "      : row.kind === \"counter\" ? (lines += drawCounter(row)) : drawRate(row);\n"
  "    ctx.restore();\n"
  "    ctx.fillStyle = \"#222\"; ctx.font = \"12px sans-serif\";\n"
  "    ctx.fillText(row.label.length > 28 ? row.label.slice(0, 27) + \"\\u2026\" : row.label, 4, row.y + 13);\n"
  "  }\n"
  "  document.body.dataset.drawn = drawn;\n"
  "  document.body.dataset.counters = lines;\n"
  "  document.body.dataset.drawms = Math.round(performance.now() - started);\n"
  "}\n"
  "\n"
  "function rowAt(y) {\n"
  "  for (var r = 0; r < rows.length; r++) if (y >= rows[r].y && y < rows[r].y + rows[r].h) return rows[r];\n"
  "  return null;\n"
  "}\n"
  "/* pick -- the event or span under the pointer, within 4 pixels */\n"
  "function pick(x, y) {\n"
  "  var row = rowAt(y), best = null, bestD = 4, k;\n"
  "  if (row === null || x < LABEL) return null;\n"
  "  if (row.kind === \"track\") {\n"
  "    var list = byTrack[row.index], t = tOf(x), a = lower(list, t);\n"
  "    for (k = Math.max(0, a - 2); k < Math.min(list.length, a + 2); k++) {\n"
  "      var d = Math.abs(xOf(T[list[k]]) - x);\n"
  "      if (d <= bestD) { bestD = d; best = list[k]; }\n"
  "    }\n"
  "    if (best === null) return null;\n"
  "    return fmt(T[best]) + \"  \" + D.tracks[TR[best]] + \"  \" + D.kinds[KD[best]] + \"  \" + D.names[NM[best]]\n"
  "      + \"\\n\" + F[best];\n"
  "  }\n"
  "  if (row.kind === \"span\") {\n"
  "    var tt = tOf(x), lane = Math.floor((y - row.y - 2) / SPANROW);\n"
  "    for (k = 0; k < ns; k++) {\n"
  "      var o = k * 6;\n"
  "      if (S[o] === row.index && laneOf(o) === lane && S[o + 2] <= tt && tt <= S[o + 3])\n"
  "        return D.spans[row.index] + \" key=\" + S[o + 5] + (S[o + 4] ? \" (unfinished)\" : \"\")\n"
  "          + \"\\n\" + fmt(S[o + 2]) + \" .. \" + fmt(S[o + 3]) + \": \" + fmt(S[o + 3] - S[o + 2]);\n"
  "    }\n"
  "  }\n"
  "  if (row.kind === \"counter\") {\n"
  "    var at = counterAt(row.index, tOf(x));\n"
  "    if (at >= 0) return D.counters[row.index] + \" = \" + byCounter[row.index][1][at]\n"
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
  "  if (text) { tip.textContent = text; tip.style.left = (e.pageX + 12) + \"px\"; tip.style.top = (e.pageY + 12) + \"px\"; }\n"
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
  "document.getElementById(\"head\").textContent = D.title + \": \" + n + \" events, \" + nt + \" threads, \"\n"
  "  + ns + \" spans; \" + fmt(tmax - tmin) + \". Drag to pan, wheel to zoom, double-click to see all;\"\n"
  "  + \" point at an event for its fields, click to keep them below.\";\n"
  "draw();\n"
  "document.body.dataset.loadms = Math.round(performance.now());\n"
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
  if (html.eventIndex == NULL || html.kindIndex == NULL || html.trackers == NULL)
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
  {
    /* The program's name escaped as the text's (.export.text), then for HTML */
    char *title = malloc(4 * strlen(ex->info->program) + 1);
    if (title == NULL)
      goto fail;
    TextTo(title, 4 * strlen(ex->info->program) + 1, ex->info->program);
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
  if (ns > state->lastNs)
    state->lastNs = ns;
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

/* PutTracks -- each track's name: its thread's, with its process's when
 * there are several logs */
static void PutTracks(ExportStruct *ex, HtmlStruct *state)
{
  ExportOutStruct *out = &ex->out, *name = &state->fields;
  char serial[16];
  ExportPutString(out, "],\"tracks\":[");
  for (size_t i = 0; i < state->trackCount; ++i) {
    const ExportThreadStruct *thread;
    (void)ExportUse(ex, state->tracks[i].source);
    thread = ExportThreadFind(ex, state->tracks[i].serial);
    name->used = 0;
    if (ex->sourceCount > 1) {
      ExportPutString(name, ex->info->program);
      ExportPutChar(name, '[');
      ExportPutUnsigned(name, ex->info->pid);
      ExportPutString(name, "] ");
    }
    snprintf(serial, sizeof serial, "T%lu", (unsigned long)state->tracks[i].serial);
    ExportPutString(name, serial);
    if (thread != NULL && thread->name != NULL) {
      ExportPutChar(name, ' ');
      ExportPut(name, thread->name, thread->nameLength);
    }
    if (i > 0)
      ExportPutChar(out, ',');
    PutSafe(out, state, name->buf, name->used);
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
  ExportPutString(out, ",\"title\":");
  PutSafe(out, state, ex->sources[0].info->program, strlen(ex->sources[0].info->program));
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
