/* <tools/heap/flame.c> -- the profile as a flame graph: one SVG file
 *
 * .design: design/heap.txt .heap.flame
 *
 * The stacks are merged into a tree from the outermost frame in: two
 * frames are one node when their parents are and they name the same
 * function, or, without a function, the same module and address.  A
 * node's width is its share of the total of the chosen value; children
 * sit above their parent, sorted by name, as flamegraph.pl draws them.
 * The file holds its own script (hover shows a frame's details, a click
 * zooms to it, "#zoom=N" in the address zooms to the N-th frame on
 * load) and names nothing outside itself.
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "svg.h"

#define FLAME_WIDTH 1200.0      /* the picture's width in pixels */
#define FLAME_PAD 10.0          /* left and right margin */
#define FLAME_TOP 64            /* title, total and the zoom button above */
#define FLAME_BOTTOM 32         /* the details line below */
#define FLAME_FRAME 16          /* a frame's height */
#define FLAME_CHAR 7.3          /* a character's width at 12 px monospace */
#define FLAME_MIN_WIDTH 0.1     /* narrower frames are left out */

/* FlameNodeStruct -- a frame of the merged tree.  Index 0 is the root
 * ("all"); 0 also ends a list of children, since the root is no one's
 * child. */
typedef struct FlameNodeStruct {
  const ProfileFrameStruct *frame;      /* NULL for the root */
  uint64_t value;
  size_t parent, first, next;
  size_t below;                 /* nodes under this one */
  unsigned depth;
} FlameNodeStruct;

typedef struct FlameTreeStruct {
  FlameNodeStruct *nodes;
  size_t count, size;
  size_t *table;                /* node indices by (parent, frame); 0 empty */
  size_t tableSize;             /* a power of 2 */
  unsigned maxDepth;
} FlameTreeStruct;

static uint64_t hashString(uint64_t h, const char *s)
{
  for (; *s != '\0'; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;     /* FNV-1a */
  return h;
}

static uint64_t frameHash(const ProfileFrameStruct *f)
{
  uint64_t h = 0xcbf29ce484222325ULL;
  if (f->function != NULL)
    return hashString(h, f->function);
  h = hashString(h, f->module != NULL ? f->module : "");
  return (h ^ f->address) * 0x9e3779b97f4a7c15ULL;
}

static int stringsSame(const char *a, const char *b)
{
  return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* frameSame -- whether two frames are one node of the flame graph */
static int frameSame(const ProfileFrameStruct *a, const ProfileFrameStruct *b)
{
  if (a->function != NULL || b->function != NULL)
    return stringsSame(a->function, b->function);
  return a->address == b->address && stringsSame(a->module, b->module);
}

/* frameCompare -- the order of siblings: named functions by name, then
 * frames without a symbol by module and address */
static int frameCompare(const ProfileFrameStruct *a, const ProfileFrameStruct *b)
{
  int c;
  if (a->function != NULL && b->function != NULL)
    return strcmp(a->function, b->function);
  if (a->function != NULL || b->function != NULL)
    return a->function != NULL ? -1 : 1;
  c = strcmp(a->module != NULL ? a->module : "", b->module != NULL ? b->module : "");
  if (c != 0)
    return c;
  return a->address < b->address ? -1 : a->address > b->address;
}

static size_t slotOf(const FlameTreeStruct *tree, size_t parent, const ProfileFrameStruct *frame)
{
  uint64_t h = frameHash(frame) ^ (parent * 0xff51afd7ed558ccdULL);
  size_t mask = tree->tableSize - 1, i = (size_t)(h ^ h >> 29) & mask;
  for (;;) {
    size_t n = tree->table[i];
    if (n == 0 || (tree->nodes[n].parent == parent && frameSame(tree->nodes[n].frame, frame)))
      return i;
    i = (i + 1) & mask;
  }
}

static int treeGrow(FlameTreeStruct *tree)
{
  size_t i, oldSize = tree->tableSize, *old = tree->table;
  FlameNodeStruct *nodes = realloc(tree->nodes, 2 * tree->size * sizeof *nodes);
  if (nodes == NULL)
    return -1;
  tree->nodes = nodes;
  tree->size *= 2;
  tree->tableSize = 2 * oldSize;
  tree->table = calloc(tree->tableSize, sizeof *tree->table);
  if (tree->table == NULL) {
    tree->table = old;
    tree->tableSize = oldSize;
    return -1;
  }
  for (i = 0; i < oldSize; i++)
    if (old[i] != 0)
      tree->table[slotOf(tree, tree->nodes[old[i]].parent, tree->nodes[old[i]].frame)] = old[i];
  free(old);
  return 0;
}

/* child -- the node for frame under parent, made if it is not there */
static size_t child(FlameTreeStruct *tree, size_t parent, const ProfileFrameStruct *frame)
{
  size_t slot = slotOf(tree, parent, frame), n;
  FlameNodeStruct *node;
  if (tree->table[slot] != 0)
    return tree->table[slot];
  if (tree->count == tree->size) {      /* the table is kept at most half full */
    if (treeGrow(tree) != 0)
      return 0;
    slot = slotOf(tree, parent, frame);
  }
  n = tree->count++;
  node = &tree->nodes[n];
  node->frame = frame;
  node->value = 0;
  node->parent = parent;
  node->first = 0;
  node->below = 0;
  node->next = tree->nodes[parent].first;
  node->depth = tree->nodes[parent].depth + 1;
  tree->nodes[parent].first = n;
  if (node->depth > tree->maxDepth)
    tree->maxDepth = node->depth;
  tree->table[slot] = n;
  return n;
}

static const FlameNodeStruct *sortNodes;

static int childCompare(const void *a, const void *b)
{
  return frameCompare(sortNodes[*(const size_t *)a].frame, sortNodes[*(const size_t *)b].frame);
}

/* treeSort -- each node's children in frameCompare's order */
static int treeSort(FlameTreeStruct *tree)
{
  size_t n, c, k, *kids = malloc(tree->count * sizeof *kids);
  if (kids == NULL)
    return -1;
  sortNodes = tree->nodes;
  for (n = 0; n < tree->count; n++) {
    k = 0;
    for (c = tree->nodes[n].first; c != 0; c = tree->nodes[c].next)
      kids[k++] = c;
    if (k < 2)
      continue;
    qsort(kids, k, sizeof *kids, childCompare);
    tree->nodes[n].first = kids[0];
    for (c = 0; c + 1 < k; c++)
      tree->nodes[kids[c]].next = kids[c + 1];
    tree->nodes[kids[k - 1]].next = 0;
  }
  free(kids);
  return 0;
}

/* treeBuild -- merge the stacks weighed by value; the root's value is the total */
static int treeBuild(FlameTreeStruct *tree, const ProfileStruct *profile, ProfileValue value)
{
  size_t s, d, n;
  tree->size = 1024;
  tree->tableSize = 2 * tree->size;
  tree->nodes = malloc(tree->size * sizeof *tree->nodes);
  tree->table = calloc(tree->tableSize, sizeof *tree->table);
  tree->count = 1;
  tree->maxDepth = 0;
  if (tree->nodes == NULL || tree->table == NULL)
    return -1;
  memset(&tree->nodes[0], 0, sizeof tree->nodes[0]);
  for (s = 0; s < profile->stackCount; s++) {
    const ProfileStackStruct *stack = &profile->stacks[s];
    uint64_t v = stack->values[value];
    if (v == 0)
      continue;
    tree->nodes[0].value += v;
    n = 0;
    for (d = stack->depth; d > 0; d--) {
      n = child(tree, n, &stack->frames[d - 1]);
      if (n == 0)
        return -1;
      tree->nodes[n].value += v;
    }
  }
  for (n = tree->count - 1; n > 0; n--)     /* a child comes after its parent */
    tree->nodes[tree->nodes[n].parent].below += 1 + tree->nodes[n].below;
  return treeSort(tree);
}

static const char *baseName(const char *path)
{
  const char *slash = strrchr(path, '/');
  return slash != NULL && slash[1] != '\0' ? slash + 1 : path;
}

/* nodeName -- what a frame is called: its function, else its address
 * in its module ("0x7f01... in libfoo.so") */
static const char *nodeName(char *buf, size_t size, const ProfileFrameStruct *frame)
{
  if (frame == NULL)
    return "all";
  if (frame->function != NULL)
    return frame->function;
  if (frame->module != NULL)
    snprintf(buf, size, "0x%llx in %s", (unsigned long long)frame->address, baseName(frame->module));
  else
    snprintf(buf, size, "0x%llx", (unsigned long long)frame->address);
  return buf;
}

/* nodeColour -- a warm colour for a function, the same for its name in
 * every graph; blue-grey for a frame without a symbol */
static void nodeColour(char *buf, size_t size, const ProfileFrameStruct *frame)
{
  uint64_t h;
  if (frame == NULL) {
    snprintf(buf, size, "rgb(200,200,200)");
    return;
  }
  h = frameHash(frame);
  h ^= h >> 31;
  if (frame->function != NULL)
    snprintf(buf, size, "rgb(%u,%u,%u)", 205 + (unsigned)(h % 50), (unsigned)((h >> 8) % 200),
             (unsigned)((h >> 16) % 55));
  else {
    unsigned grey = 150 + (unsigned)(h % 40);
    snprintf(buf, size, "rgb(%u,%u,%u)", grey, grey + 10, grey + 50);
  }
}

static const char flameScript[] =
  "var svg, details, frames, unzoomButton;\n"
  "var WIDTH = " "%.0f" ", PAD = " "%.0f" ", CHAR = " "%.1f" ";\n"
  "function nameOf(g) { return g.querySelector('title').textContent.split('\\n')[0]; }\n"
  "function place(g, x, w) {\n"
  "  var r = g.querySelector('rect'), t = g.querySelector('text');\n"
  "  r.setAttribute('x', x.toFixed(2));\n"
  "  r.setAttribute('width', w.toFixed(2));\n"
  "  if (!t) return;\n"
  "  var name = nameOf(g), n = Math.floor((w - 6) / CHAR);\n"
  "  t.setAttribute('x', (x + 3).toFixed(2));\n"
  "  t.textContent = n < 3 ? '' : name.length <= n ? name : name.slice(0, n - 2) + '..';\n"
  "}\n"
  "function zoom(z) {\n"
  "  var zx = +z.getAttribute('data-x'), zw = +z.getAttribute('data-w');\n"
  "  var zy = +z.querySelector('rect').getAttribute('y'), scale = (WIDTH - 2 * PAD) / zw;\n"
  "  frames.forEach(function (g) {\n"
  "    var x = +g.getAttribute('data-x'), w = +g.getAttribute('data-w');\n"
  "    var y = +g.querySelector('rect').getAttribute('y');\n"
  "    var inside = x >= zx - 0.005 && x + w <= zx + zw + 0.005;\n"
  "    var around = x <= zx + 0.005 && x + w >= zx + zw - 0.005;\n"
  "    g.classList.remove('hide', 'dim');\n"
  "    if (y > zy && around) { g.classList.add('dim'); place(g, PAD, WIDTH - 2 * PAD); }\n"
  "    else if (y <= zy && inside) place(g, PAD + (x - zx) * scale, w * scale);\n"
  "    else g.classList.add('hide');\n"
  "  });\n"
  "  unzoomButton.classList.remove('hide');\n"
  "}\n"
  "function unzoom() {\n"
  "  frames.forEach(function (g) {\n"
  "    g.classList.remove('hide', 'dim');\n"
  "    place(g, +g.getAttribute('data-x'), +g.getAttribute('data-w'));\n"
  "  });\n"
  "  unzoomButton.classList.add('hide');\n"
  "}\n"
  "function init(evt) {\n"
  "  svg = document.documentElement;\n"
  "  details = document.getElementById('details');\n"
  "  unzoomButton = document.getElementById('unzoom');\n"
  "  frames = Array.prototype.slice.call(document.getElementById('frames').children);\n"
  "  frames.forEach(function (g) {\n"
  "    var r = g.querySelector('rect');\n"
  "    g.setAttribute('data-x', r.getAttribute('x'));\n"
  "    g.setAttribute('data-w', r.getAttribute('width'));\n"
  "    g.addEventListener('mouseover', function () {\n"
  "      details.textContent = g.querySelector('title').textContent.split('\\n').slice(0, 2).join(': ');\n"
  "    });\n"
  "    g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
  "    g.addEventListener('click', function () { zoom(g); });\n"
  "  });\n"
  "  unzoomButton.addEventListener('click', unzoom);\n"
  "  var m = /zoom=(\\d+)/.exec(location.hash);\n"
  "  if (m && frames[+m[1]]) zoom(frames[+m[1]]);\n"
  "  svg.setAttribute('data-frames', frames.length);\n"
  "}\n";

/* valueText -- "1,234 bytes, 56.78%" */
static void valueText(FILE *out, uint64_t v, uint64_t total, ProfileValue value)
{
  char count[32];
  const char *unit = ProfileValueUnit[value];
  fprintf(out, "%s %s, %.2f%%", SvgCount(count, sizeof count, v),
          strcmp(unit, "bytes") == 0 ? "bytes" : ProfileValueName[value],
          total > 0 ? 100.0 * (double)v / (double)total : 0.0);
}

static void writeNode(FILE *out, const FlameNodeStruct *node, double x, double w, double y,
                      uint64_t total, ProfileValue value)
{
  char name[600], colour[32];
  const char *label = nodeName(name, sizeof name, node->frame);
  size_t chars = w > 6 ? (size_t)((w - 6) / FLAME_CHAR) : 0;
  fputs("<g><title>", out);
  SvgText(out, label, 0);
  fputc('\n', out);
  valueText(out, node->value, total, value);
  if (node->frame != NULL && node->frame->module != NULL) {
    fputs("\nmodule ", out);
    SvgText(out, node->frame->module, 0);
  }
  if (node->frame != NULL && node->frame->file != NULL) {   /* no line: a node merges many */
    fputs("\nfile ", out);
    SvgText(out, node->frame->file, 0);
  }
  nodeColour(colour, sizeof colour, node->frame);
  fprintf(out, "</title><rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>",
          x, y, w, FLAME_FRAME - 1, colour);
  fprintf(out, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + 11.5);
  if (chars >= 3)
    SvgText(out, label, chars);
  fputs("</text></g>\n", out);
}

/* writeFrames -- every node at least FLAME_MIN_WIDTH wide, parents
 * before children, left to right; the number left out (a narrow
 * node's callees are narrower still) */
static int writeFrames(FILE *out, const FlameTreeStruct *tree, unsigned height, ProfileValue value,
                       size_t *omitted)
{
  typedef struct { size_t node; double x; } TodoStruct;
  uint64_t total = tree->nodes[0].value;
  double scale = total > 0 ? (FLAME_WIDTH - 2 * FLAME_PAD) / (double)total : 0;
  TodoStruct *todo = malloc(tree->count * sizeof *todo);
  size_t top = 0, c, k;
  if (todo == NULL)
    return -1;
  *omitted = 0;
  todo[top].node = 0;
  todo[top++].x = FLAME_PAD;
  while (top > 0) {
    TodoStruct t = todo[--top];
    const FlameNodeStruct *node = &tree->nodes[t.node];
    double w = (double)node->value * scale, x;
    double y = height - FLAME_BOTTOM - (node->depth + 1) * FLAME_FRAME;
    if (t.node != 0 && w < FLAME_MIN_WIDTH) {
      *omitted += 1 + node->below;
      continue;
    }
    writeNode(out, node, t.x, w, y, total, value);
    /* Push the children so that the leftmost is taken first. */
    k = 0;
    for (c = node->first; c != 0; c = tree->nodes[c].next)
      k++;
    top += k;
    x = t.x;
    k = top;
    for (c = node->first; c != 0; c = tree->nodes[c].next) {
      todo[--k].node = c;
      todo[k].x = x;
      x += (double)tree->nodes[c].value * scale;
    }
  }
  free(todo);
  return 0;
}

int ProfileWriteFlame(FILE *out, const ProfileStruct *profile, ProfileValue value, const char *title)
{
  FlameTreeStruct tree = {0};
  unsigned height;
  size_t omitted = 0;
  char count[32];
  int result = -1;
  errno = 0;
  if (value >= PROFILE_VALUE_LIMIT) {
    errno = EINVAL;
    return -1;
  }
  if (treeBuild(&tree, profile, value) != 0)
    goto done;
  height = FLAME_TOP + (tree.maxDepth + 1) * FLAME_FRAME + FLAME_BOTTOM;
  fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" height=\"%u\""
          " viewBox=\"0 0 %.0f %u\" onload=\"init(evt)\">\n",
          FLAME_WIDTH, height, FLAME_WIDTH, height);
  fputs("<style>\n"
        "text { font-family: monospace; font-size: 12px; fill: #000; }\n"
        "#title { font-size: 17px; text-anchor: middle; }\n"
        "#total { fill: #444; text-anchor: middle; }\n"
        "#unzoom { cursor: pointer; fill: #06c; }\n"
        "#frames g { cursor: pointer; }\n"
        "#frames g:hover rect { stroke: #000; stroke-width: 0.5; }\n"
        ".hide { display: none; }\n"
        ".dim rect { opacity: 0.5; }\n"
        "</style>\n"
        "<script type=\"text/ecmascript\"><![CDATA[\n", out);
  fprintf(out, flameScript, FLAME_WIDTH, FLAME_PAD, FLAME_CHAR);
  fputs("]]></script>\n", out);
  fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%u\" fill=\"#fbfbf4\"/>\n",
          FLAME_WIDTH, height);
  fprintf(out, "<text id=\"title\" x=\"%.0f\" y=\"24\">", FLAME_WIDTH / 2);
  SvgText(out, title != NULL ? title : "Flame graph", 0);
  fprintf(out, "</text>\n<text id=\"total\" x=\"%.0f\" y=\"44\">", FLAME_WIDTH / 2);
  if (profile->program != NULL) {
    SvgText(out, profile->program, 0);
    fputs(": ", out);
  }
  SvgText(out, ProfileValueName[value], 0);
  fprintf(out, ", total %s%s in %zu stacks", SvgCount(count, sizeof count, tree.nodes[0].value),
          strcmp(ProfileValueUnit[value], "bytes") == 0 ? " bytes" : "", profile->stackCount);
  fprintf(out, "</text>\n<text id=\"unzoom\" class=\"hide\" x=\"%.0f\" y=\"24\">Reset zoom</text>\n",
          FLAME_PAD);
  fprintf(out, "<text id=\"details\" x=\"%.0f\" y=\"%u\"> </text>\n<g id=\"frames\">\n", FLAME_PAD,
          height - 10);
  if (writeFrames(out, &tree, height, value, &omitted) != 0)
    goto done;
  fputs("</g>\n", out);
  if (omitted > 0)
    fprintf(out, "<!-- %zu frames narrower than %.1f pixels left out -->\n", omitted, FLAME_MIN_WIDTH);
  fputs("</svg>\n", out);
  if (fflush(out) == 0 && !ferror(out))
    result = 0;
done:
  if (result != 0 && errno == 0)
    errno = EIO;
  free(tree.nodes);
  free(tree.table);
  return result;
}
