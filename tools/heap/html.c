/* <tools/heap/html.c> -- the profile as one self-contained HTML page:
 * what heaptrack_gui shows
 *
 * .design: design/heap.txt .heap.html
 *
 * The page holds its data as JSON (the summary, each distinct frame's
 * name once, each stack as its five values and its frames' indexes,
 * the bytes live over time of the top call sites, the sizes) and a
 * script that draws, with nothing from outside: the summary; the
 * bottom-up tree (call sites, then their callers) and the top-down tree
 * (the outermost frames, then their callees), each node with its
 * inclusive and exclusive allocations and its inclusive bytes, peak,
 * leaked and temporary, children drawn when a node is opened; the heap
 * over time with the top sites stacked; the flame graph (flame.c's SVG,
 * as a data: URL); the histogram of sizes.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "heapint.h"
#include "report.h"
#include "textsafe.h"

/* putJsonString -- s as a JSON string, each byte that is unsafe (a
 * control, invalid UTF-8) a '?', and '<' escaped, so that "</script>"
 * cannot end the page's script */
static void putJsonString(FILE *out, const char *s)
{
  putc('"', out);
  for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; ) {
    size_t n;
    if (TextUnsafe(p, strlen((const char *)p), &n))
      putc('?', out);
    else if (*p == '"' || *p == '\\')
      fprintf(out, "\\%c", *p);
    else if (*p == '<')
      fputs("\\u003c", out);
    else
      fwrite(p, 1, n, out);
    p += n;
  }
  putc('"', out);
}

/* NamesStruct -- the distinct frame names, by hash */
typedef struct NamesStruct {
  char **names;
  size_t count, capacity;
  size_t *slots;                /* index + 1; 0 empty */
  size_t slotCount;
} NamesStruct;

static void *htmlAlloc(void *p, size_t size)
{
  if ((p = realloc(p, size > 0 ? size : 1)) == NULL)
    ReportOutOfMemory();
  return p;
}

static uint64_t nameHash(const char *s)
{
  uint64_t h = 0xcbf29ce484222325ULL;
  for (; *s != '\0'; ++s)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
  return h;
}

/* nameIndex -- the index of name, added if new */
static size_t nameIndex(NamesStruct *nm, const char *name)
{
  size_t i;
  if ((nm->count + 1) * 2 > nm->slotCount) {
    size_t oldCount = nm->slotCount;
    size_t *old = nm->slots;
    nm->slotCount = oldCount == 0 ? 1024 : oldCount * 2;
    nm->slots = htmlAlloc(NULL, nm->slotCount * sizeof *nm->slots);
    memset(nm->slots, 0, nm->slotCount * sizeof *nm->slots);
    for (size_t k = 0; k < oldCount; ++k)
      if (old[k] != 0) {
        i = (size_t)nameHash(nm->names[old[k] - 1]) & (nm->slotCount - 1);
        while (nm->slots[i] != 0)
          i = (i + 1) & (nm->slotCount - 1);
        nm->slots[i] = old[k];
      }
    free(old);
  }
  i = (size_t)nameHash(name) & (nm->slotCount - 1);
  while (nm->slots[i] != 0 && strcmp(nm->names[nm->slots[i] - 1], name) != 0)
    i = (i + 1) & (nm->slotCount - 1);
  if (nm->slots[i] == 0) {
    if (nm->count == nm->capacity)
      nm->names = htmlAlloc(nm->names, (nm->capacity = nm->capacity * 2 + 64) * sizeof *nm->names);
    nm->names[nm->count] = htmlAlloc(NULL, strlen(name) + 1);
    memcpy(nm->names[nm->count++], name, strlen(name) + 1);
    nm->slots[i] = nm->count;
  }
  return nm->slots[i] - 1;
}

/* putBase64 -- data as base64 */
static void putBase64(FILE *out, const unsigned char *data, size_t size)
{
  static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < size; i += 3) {
    uint32_t v = (uint32_t)data[i] << 16 | (i + 1 < size ? (uint32_t)data[i + 1] << 8 : 0)
                 | (i + 2 < size ? data[i + 2] : 0);
    putc(digits[v >> 18 & 63], out);
    putc(digits[v >> 12 & 63], out);
    putc(i + 1 < size ? digits[v >> 6 & 63] : '=', out);
    putc(i + 2 < size ? digits[v & 63] : '=', out);
  }
}

static const char htmlScript[] =
  "const D = JSON.parse(document.getElementById('data').textContent);\n"
  "const V = ['allocations', 'bytes', 'peak', 'leaked', 'temporary'];\n"
  "const fmt = n => n.toLocaleString('en-US');\n"
  "function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls;\n"
  "  if (text !== undefined) e.textContent = text; return e; }\n"
  "function add(a, v) { for (let i = 0; i < 5; i++) a[i] += v[i]; }\n"
  "/* a tree: bottom-up from the call site out, top-down from the outermost frame in */\n"
  "function build(topDown) {\n"
  "  const root = {kids: new Map(), incl: [0, 0, 0, 0, 0], self: [0, 0, 0, 0, 0]};\n"
  "  for (const st of D.stacks) {\n"
  "    const v = st.slice(0, 5), fr = st.slice(5), path = topDown ? fr.slice().reverse() : fr;\n"
  "    let n = root;\n"
  "    add(n.incl, v);\n"
  "    path.forEach((f, i) => {\n"
  "      let k = n.kids.get(f);\n"
  "      if (!k) { k = {f: f, kids: new Map(), incl: [0, 0, 0, 0, 0], self: [0, 0, 0, 0, 0]}; n.kids.set(f, k); }\n"
  "      add(k.incl, v);\n"
  "      if (i === (topDown ? path.length - 1 : 0)) add(k.self, v);\n"
  "      n = k;\n"
  "    });\n"
  "  }\n"
  "  return root;\n"
  "}\n"
  "const LIMIT = 200;\n"
  "/* children drawn when a node is opened */\n"
  "function kids(parent, node) {\n"
  "  const list = [...node.kids.values()].sort((a, b) => b.incl[0] - a.incl[0] || b.incl[1] - a.incl[1]\n"
  "    || (D.frames[a.f] < D.frames[b.f] ? -1 : D.frames[a.f] > D.frames[b.f]));\n"
  "  list.slice(0, LIMIT).forEach(k => {\n"
  "    const d = el('details', 'node'), s = el('summary');\n"
  "    d.dataset.name = D.frames[k.f];\n"
  "    d.node = k;\n"
  "    [k.incl[0], k.self[0], k.incl[1], k.incl[2], k.incl[3], k.incl[4]].forEach((x, i) =>\n"
  "      s.appendChild(el('span', 'num v' + i, fmt(x))));\n"
  "    s.appendChild(el('span', 'name', D.frames[k.f]));\n"
  "    d.appendChild(s);\n"
  "    if (k.kids.size > 0)\n"
  "      d.addEventListener('toggle', () => { if (d.open && d.children.length === 1) kids(d, k); });\n"
  "    else d.classList.add('leaf');\n"
  "    parent.appendChild(d);\n"
  "  });\n"
  "  if (list.length > LIMIT) parent.appendChild(el('div', 'more', (list.length - LIMIT) + ' more'));\n"
  "}\n"
  "function tree(id, topDown) {\n"
  "  const box = document.getElementById(id), head = el('div', 'head');\n"
  "  ['allocations', 'self', 'bytes', 'peak', 'leaked', 'temporary'].forEach((h, i) =>\n"
  "    head.appendChild(el('span', 'num v' + i, h)));\n"
  "  head.appendChild(el('span', 'name', topDown ? 'function (callees below)' : 'call site (callers below)'));\n"
  "  box.appendChild(head);\n"
  "  kids(box, build(topDown));\n"
  "  if (location.hash === '#open')  /* the first level open: its children drawn */\n"
  "    box.querySelectorAll(':scope > details').forEach(d => { d.open = true; if (d.node.kids.size) kids(d, d.node); });\n"
  "}\n"
  "function summary() {\n"
  "  const t = document.getElementById('summary'), s = D.summary;\n"
  "  [['allocations', fmt(s.allocations) + ' calls, ' + fmt(s.bytes) + ' bytes'],\n"
  "   ['frees', fmt(s.frees) + ' (' + fmt(s.unknownFrees) + ' of blocks never seen allocated)'],\n"
  "   ['peak heap', fmt(s.peak) + ' bytes live at ' + s.peakS.toFixed(6) + ' s of ' + s.durationS.toFixed(6) + ' s'],\n"
  "   ...(s.maxRss ? [['max RSS', fmt(s.maxRss) + ' bytes, the process\\'s']] : []),\n"
  "   ['leaked', fmt(s.leaked) + ' bytes in ' + fmt(s.leakedBlocks) + ' blocks'],\n"
  "   ['temporary', fmt(s.temporary) + ' allocations'],\n"
  "   ['stacks', fmt(D.stacks.length)]].forEach(([k, v]) => {\n"
  "    const r = t.insertRow(); r.dataset.key = k; r.insertCell().textContent = k; r.insertCell().textContent = v; });\n"
  "}\n"
  "const NS = 'http://www.w3.org/2000/svg';\n"
  "function svgEl(tag, attrs) { const e = document.createElementNS(NS, tag);\n"
  "  for (const k in attrs) e.setAttribute(k, attrs[k]); return e; }\n"
  "const COLOURS = ['#e6550d', '#3182bd', '#31a354', '#756bb1', '#636363', '#fd8d3c', '#6baed6', '#74c476'];\n"
  "/* over time: the top sites stacked, the rest above; at = 0 their bytes\n"
  "   live, at = the series' count + 1 their allocations in each slice */\n"
  "function chart(id, at, what) {\n"
  "  const box = document.getElementById(id), S = D.series, W = 1000, H = 300, m = S.names.length;\n"
  "  const rows = S.rows.map(r => r.slice(at, at + m + 1));\n"
  "  const svg = svgEl('svg', {width: W + 300, height: H + 40, 'class': 'chart-svg'});\n"
  "  const n = rows.length, top = Math.max(1, ...rows.map(r => r[r.length - 1]));\n"
  "  const x = i => 40 + (n > 1 ? i * W / (n - 1) : 0), y = b => 10 + H - b * H / top;\n"
  "  const base = new Array(n).fill(0);\n"
  "  S.names.concat(['everything else']).forEach((name, k) => {\n"
  "    const up = rows.map((r, i) => base[i] + (k < S.names.length ? r[k]\n"
  "      : Math.max(0, r[r.length - 1] - r.slice(0, S.names.length).reduce((a, b) => a + b, 0))));\n"
  "    let pts = up.map((b, i) => x(i) + ',' + y(b));\n"
  "    pts = pts.concat(base.map((b, i) => x(i) + ',' + y(b)).reverse());\n"
  "    const p = svgEl('polygon', {points: pts.join(' '), fill: COLOURS[k % COLOURS.length], 'class': 'series'});\n"
  "    p.appendChild(svgEl('title', {})).textContent = name;\n"
  "    svg.appendChild(p);\n"
  "    const key = svgEl('text', {x: W + 60, y: 20 + 16 * k, 'font-size': 12, fill: COLOURS[k % COLOURS.length], 'class': 'legend'});\n"
  "    key.textContent = name;\n"
  "    svg.appendChild(key);\n"
  "    up.forEach((b, i) => base[i] = b);\n"
  "  });\n"
  "  const t = svgEl('text', {x: 40, y: H + 32, 'font-size': 12});\n"
  "  t.textContent = what + ' over ' + (S.sliceS * Math.max(0, n - 1)).toFixed(3) + ' s, at most ' + fmt(top);\n"
  "  svg.appendChild(t);\n"
  "  box.appendChild(svg);\n"
  "}\n"
  "function histogram() {\n"
  "  const t = document.getElementById('sizes'), most = Math.max(1, ...D.histogram.map(h => h[1]));\n"
  "  D.histogram.forEach(h => {\n"
  "    const r = t.insertRow(); r.className = 'size';\n"
  "    r.insertCell().textContent = h[0]; r.insertCell().textContent = fmt(h[1]); r.insertCell().textContent = fmt(h[2]);\n"
  "    const bar = el('div', 'bar'); bar.style.width = (300 * h[1] / most) + 'px'; r.insertCell().appendChild(bar);\n"
  "  });\n"
  "}\n"
  "summary(); tree('bottom-up', false); tree('top-down', true);\n"
  "chart('chart', 0, 'bytes live'); chart('chart-allocations', D.series.names.length + 1, 'allocations a slice');\n"
  "histogram();\n"
  "document.body.dataset.ready = '1';\n";

static const char htmlStyle[] =
  "body { font: 13px sans-serif; margin: 1em 2em; }\n"
  "h2 { margin-top: 1.5em; border-bottom: 1px solid #ccc; }\n"
  "#summary td:first-child { padding-right: 2em; font-weight: bold; }\n"
  "summary, .head { font-family: monospace; white-space: nowrap; }\n"
  ".head { font-weight: bold; padding-left: 1.2em; }\n"
  ".num { display: inline-block; width: 9em; text-align: right; padding-right: 0.5em; }\n"
  ".name { padding-left: 1em; }\n"
  "details details { margin-left: 1.5em; }\n"
  "details.leaf > summary { list-style: none; padding-left: 1.2em; }\n"
  ".bar { height: 0.8em; background: #3182bd; }\n"
  "#sizes td { padding: 0 1em; text-align: right; }\n";

int HeapWriteHtml(FILE *out, const HeapProfileStruct *hp, const HeapSeriesStruct *series,
                  char *const *seriesNames, const char *title)
{
  const HeapLogStruct *log = &hp->log;
  const ProfileStruct *p = &hp->profile;
  NamesStruct nm = {0};
  char *flame = NULL;
  size_t flameSize = 0;
  FILE *mem;
  int res = 0;

  fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n<title>", out);
  TextPut(out, title);          /* not in the script: .export.text */
  fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1 id=\"title\"></h1>\n", htmlStyle);
  fputs("<h2>Summary</h2>\n<table id=\"summary\"></table>\n"
        "<h2>Bottom-up: call sites, then their callers</h2>\n<div id=\"bottom-up\"></div>\n"
        "<h2>Top-down: from the outermost frames in</h2>\n<div id=\"top-down\"></div>\n"
        "<h2>Memory over time, the top sites by peak stacked</h2>\n<div id=\"chart\"></div>\n"
        "<h2>Allocations over time, the same sites stacked</h2>\n<div id=\"chart-allocations\"></div>\n"
        "<h2>Flame graph (allocations)</h2>\n<div id=\"flame\">", out);
  if ((mem = open_memstream(&flame, &flameSize)) != NULL) {
    res = ProfileWriteFlame(mem, p, ProfileAllocations, title);
    if (fclose(mem) != 0)
      res = -1;
  }
  if (flame != NULL && res == 0) {
    fputs("<object id=\"flame-graph\" type=\"image/svg+xml\" width=\"1200\" data=\"data:image/svg+xml;base64,", out);
    putBase64(out, (const unsigned char *)flame, flameSize);
    fputs("\"></object>", out);
  }
  free(flame);
  fputs("</div>\n<h2>Sizes (requested, in powers of two)</h2>\n<table id=\"sizes\">"
        "<tr><th>bytes</th><th>allocations</th><th>bytes</th><th></th></tr></table>\n", out);

  /* the data */
  fputs("<script id=\"data\" type=\"application/json\">\n{\"title\": ", out);
  putJsonString(out, title);
  fprintf(out, ",\n\"summary\": {\"allocations\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"frees\": %"
          PRIu64 ", \"unknownFrees\": %" PRIu64 ", \"peak\": %" PRIu64 ", \"peakS\": %.6f, "
          "\"durationS\": %.6f, \"leaked\": %" PRIu64 ", \"leakedBlocks\": %" PRIu64 ", "
          "\"temporary\": %" PRIu64 ", \"maxRss\": %" PRIu64 "},\n\"stacks\": [", log->allocations,
          log->bytes, log->frees, log->unknownFrees, log->peakBytes, (double)log->peakNs / 1e9,
          (double)log->durationNs / 1e9, log->leakedBytes, log->leakedBlocks, log->temporary,
          log->peakRss);
  for (size_t i = 0; i < p->stackCount; ++i) {
    const ProfileStackStruct *s = &p->stacks[i];
    fprintf(out, "%s\n[", i > 0 ? "," : "");
    for (unsigned v = 0; v < PROFILE_VALUE_LIMIT; ++v)
      fprintf(out, "%s%" PRIu64, v > 0 ? "," : "", s->values[v]);
    for (size_t f = 0; f < s->depth; ++f) {
      char name[1024];
      HeapFrameName(&s->frames[f], name, sizeof name);
      fprintf(out, ",%zu", nameIndex(&nm, name));
    }
    putc(']', out);
  }
  fputs("],\n\"frames\": [", out);
  for (size_t i = 0; i < nm.count; ++i) {
    fputs(i > 0 ? ",\n" : "\n", out);
    putJsonString(out, nm.names[i]);
    free(nm.names[i]);
  }
  free(nm.names);
  free(nm.slots);
  fprintf(out, "],\n\"series\": {\"sliceS\": %.9f, \"names\": [",
          series != NULL ? (double)series->sliceNs / 1e9 : 0.0);
  for (size_t k = 0; series != NULL && k < series->count; ++k) {
    fputs(k > 0 ? ", " : "", out);
    putJsonString(out, seriesNames[k]);
  }
  fputs("], \"rows\": [", out);
  for (size_t r = 0; series != NULL && r < series->rowCount; ++r) {
    fprintf(out, "%s[", r > 0 ? ",\n" : "\n");
    for (size_t k = 0; k < 2 * (series->count + 1); ++k)
      fprintf(out, "%s%" PRIu64, k > 0 ? "," : "", series->rows[r * 2 * (series->count + 1) + k]);
    putc(']', out);
  }
  fputs("]},\n\"histogram\": [", out);
  for (unsigned c = 0, first = 1; c < HEAP_HISTOGRAM_LIMIT; ++c) {
    char range[64];
    if (log->histogram[c][0] == 0)
      continue;
    if (c == 0)
      snprintf(range, sizeof range, "0");
    else                        /* as the text report's SIZES */
      snprintf(range, sizeof range, "%" PRIu64 "-%" PRIu64, (uint64_t)1 << (c - 1),
               c == 64 ? UINT64_MAX : ((uint64_t)1 << c) - 1);
    fprintf(out, "%s[\"%s\", %" PRIu64 ", %" PRIu64 "]", first ? "\n" : ",\n", range,
            log->histogram[c][0], log->histogram[c][1]);
    first = 0;
  }
  fprintf(out, "]}\n</script>\n<script>\ndocument.getElementById('title').textContent = "
          "'heap profile of ' + JSON.parse(document.getElementById('data').textContent).title;\n"
          "%s</script>\n</body></html>\n", htmlScript);
  if (fflush(out) != 0 || ferror(out)) {
    if (errno == 0)
      errno = EIO;
    return -1;
  }
  return res;
}
