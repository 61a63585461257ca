/* <tools/heap/chart.c> -- heap in use over time: one SVG line chart
 *
 * .design: design/heap.txt .heap.chart
 *
 * The line is a step: the heap keeps its size from one sample to the
 * next.  Samples that fall in one pixel column are drawn as one
 * vertical stroke from their least to their most, ending at the last,
 * so the file grows with the chart's width, not with the samples, and
 * no peak is lost.  The peak is marked with its value and time.
 */

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "profile.h"
#include "svg.h"

#define CHART_WIDTH 1000.0
#define CHART_HEIGHT 440.0
#define CHART_LEFT 100.0        /* room for the heap's tick labels */
#define CHART_RIGHT 30.0
#define CHART_TOP 60.0          /* the title and the program */
#define CHART_BOTTOM 60.0       /* the time's tick labels and name */

/* AxisStruct -- a linear axis: the data's 0..limit onto pixels, and
 * its ticks in a unit that suits the range */
typedef struct AxisStruct {
  double limit;                 /* in data units (ns, bytes), > 0 */
  double unit;                  /* data units in one display unit */
  const char *unitName;
  double step;                  /* between ticks, in display units */
} AxisStruct;

/* niceStep -- 1, 2 or 5 times a power of ten, near range / 6 */
static double niceStep(double range)
{
  double rough = range / 6, power = pow(10, floor(log10(rough))), f = rough / power;
  return power * (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10);
}

static void timeAxis(AxisStruct *axis, double ns)
{
  axis->limit = ns > 0 ? ns : 1;
  if (axis->limit < 1e3) {
    axis->unit = 1;
    axis->unitName = "ns";
  } else if (axis->limit < 1e6) {
    axis->unit = 1e3;
    axis->unitName = "\xc2\xb5s";     /* µs */
  } else if (axis->limit < 1e9) {
    axis->unit = 1e6;
    axis->unitName = "ms";
  } else {
    axis->unit = 1e9;
    axis->unitName = "s";
  }
  axis->step = niceStep(axis->limit / axis->unit);
}

/* bytesAxis -- a binary unit; the top rounded up to a tick, so that
 * the peak is never drawn on the frame */
static void bytesAxis(AxisStruct *axis, double bytes)
{
  static const char *const names[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  size_t u = 0;
  double top;
  axis->unit = 1;
  while (bytes >= 1024 * axis->unit && u + 1 < sizeof names / sizeof names[0]) {
    axis->unit *= 1024;
    u++;
  }
  axis->unitName = names[u];
  top = bytes > 0 ? bytes / axis->unit : 1;
  axis->step = u == 0 && top < 6 ? 1 : niceStep(top);
  axis->limit = ceil(top / axis->step * 1.0000001) * axis->step * axis->unit;
  if (axis->limit <= bytes)
    axis->limit = bytes + axis->step * axis->unit;
}

static double xOf(const AxisStruct *axis, double ns)
{
  return CHART_LEFT + ns / axis->limit * (CHART_WIDTH - CHART_LEFT - CHART_RIGHT);
}

static double yOf(const AxisStruct *axis, double bytes)
{
  return CHART_HEIGHT - CHART_BOTTOM - bytes / axis->limit * (CHART_HEIGHT - CHART_TOP - CHART_BOTTOM);
}

/* writeTicks -- one axis's grid lines and labels */
static void writeTicks(FILE *out, const AxisStruct *axis, int vertical)
{
  double v;
  int i;
  for (i = 0; (v = i * axis->step) * axis->unit <= axis->limit * 1.0000001; i++) {
    if (vertical) {
      double y = yOf(axis, v * axis->unit);
      fprintf(out, "<line class=\"grid\" x1=\"%.0f\" y1=\"%.2f\" x2=\"%.0f\" y2=\"%.2f\"/>"
              "<text class=\"ytick\" x=\"%.0f\" y=\"%.2f\">%g</text>\n",
              CHART_LEFT, y, CHART_WIDTH - CHART_RIGHT, y, CHART_LEFT - 6, y + 4, v);
    } else {
      double x = xOf(axis, v * axis->unit);
      fprintf(out, "<line class=\"grid\" x1=\"%.2f\" y1=\"%.0f\" x2=\"%.2f\" y2=\"%.0f\"/>"
              "<text class=\"xtick\" x=\"%.2f\" y=\"%.0f\">%g</text>\n",
              x, CHART_TOP, x, CHART_HEIGHT - CHART_BOTTOM, x, CHART_HEIGHT - CHART_BOTTOM + 18, v);
    }
  }
}

/* writeLine -- the step line, a pixel column at a time */
static void writeLine(FILE *out, const ProfileStruct *profile, const AxisStruct *time,
                      const AxisStruct *heap)
{
  size_t i;
  double level = 0, column = -1, least = 0, most = 0, last = 0, x = 0, lastX = xOf(time, 0);
  double lastY = yOf(heap, 0);
  int open = 0;
  fprintf(out, "<polyline id=\"line\" points=\"%.2f,%.2f", lastX, lastY);
#define CHART_POINT(px, py) \
  do { \
    double _x = (px), _y = (py); \
    if (_x != lastX || _y != lastY) \
      fprintf(out, " %.2f,%.2f", _x, _y); \
    lastX = _x; \
    lastY = _y; \
  } while (0)
  for (i = 0; i <= profile->sampleCount; i++) {
    const ProfileSampleStruct *s = i < profile->sampleCount ? &profile->samples[i] : NULL;
    double sx = s != NULL ? xOf(time, (double)s->ns) : 0, b = s != NULL ? (double)s->bytes : 0;
    if (open && (s == NULL || floor(sx) != column)) {       /* the column is done */
      CHART_POINT(x, yOf(heap, level));
      CHART_POINT(x, yOf(heap, least));
      CHART_POINT(x, yOf(heap, most));
      CHART_POINT(x, yOf(heap, last));
      level = last;
      open = 0;
    }
    if (s == NULL)
      break;
    if (!open) {
      open = 1;
      column = floor(sx);
      x = sx;
      least = most = b;
    }
    least = b < least ? b : least;
    most = b > most ? b : most;
    last = b;
  }
  CHART_POINT(xOf(time, time->limit), yOf(heap, level));
#undef CHART_POINT
  fputs("\"/>\n", out);
}

/* timeText -- ns in the axis's unit: "1.234 ms" */
static const char *timeText(char *buf, size_t size, const AxisStruct *time, double ns)
{
  snprintf(buf, size, "%.4g %s", ns / time->unit, time->unitName);
  return buf;
}

int ProfileWriteChart(FILE *out, const ProfileStruct *profile, const char *title)
{
  AxisStruct time, heap;
  const ProfileSampleStruct *peak = NULL;
  double end = (double)profile->durationNs;
  char bytes[48], count[32], when[48];
  size_t i;

  errno = 0;
  if (profile->sampleCount > 0) {
    peak = &profile->samples[profile->peakSample < profile->sampleCount ? profile->peakSample : 0];
    for (i = 0; i < profile->sampleCount; i++)   /* the peak is the most, whatever the index says */
      if (profile->samples[i].bytes > peak->bytes)
        peak = &profile->samples[i];
    if ((double)profile->samples[profile->sampleCount - 1].ns > end)
      end = (double)profile->samples[profile->sampleCount - 1].ns;
  }
  timeAxis(&time, end);
  bytesAxis(&heap, peak != NULL ? (double)peak->bytes : 0);

  fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" height=\"%.0f\""
          " viewBox=\"0 0 %.0f %.0f\">\n", CHART_WIDTH, CHART_HEIGHT, CHART_WIDTH, CHART_HEIGHT);
  fputs("<style>\n"
        "text { font-family: sans-serif; font-size: 12px; fill: #222; }\n"
        "#title { font-size: 17px; text-anchor: middle; }\n"
        "#program { fill: #555; text-anchor: middle; }\n"
        ".grid { stroke: #ddd; stroke-width: 1; }\n"
        ".axis { stroke: #222; stroke-width: 1; }\n"
        ".xtick { text-anchor: middle; }\n"
        ".ytick { text-anchor: end; }\n"
        ".name { font-size: 13px; text-anchor: middle; }\n"
        "#line { fill: none; stroke: #c0392b; stroke-width: 1.5; }\n"
        "#peak { fill: #c0392b; stroke: #fff; }\n"
        "#peak-guide { stroke: #c0392b; stroke-dasharray: 4 3; }\n"
        "#peak-label { font-weight: bold; fill: #c0392b; }\n"
        "</style>\n", out);
  fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#fff\"/>\n",
          CHART_WIDTH, CHART_HEIGHT);
  fprintf(out, "<text id=\"title\" x=\"%.0f\" y=\"24\">", CHART_WIDTH / 2);
  SvgText(out, title != NULL ? title : "Heap in use", 0);
  fprintf(out, "</text>\n<text id=\"program\" x=\"%.0f\" y=\"44\">", CHART_WIDTH / 2);
  if (profile->program != NULL)
    SvgText(out, profile->program, 0);
  fprintf(out, "%s%zu samples over %s</text>\n", profile->program != NULL ? ": " : "",
          profile->sampleCount, timeText(when, sizeof when, &time, end));

  writeTicks(out, &time, 0);
  writeTicks(out, &heap, 1);
  fprintf(out, "<line class=\"axis\" x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/>\n"
          "<line class=\"axis\" x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/>\n",
          CHART_LEFT, CHART_TOP, CHART_LEFT, CHART_HEIGHT - CHART_BOTTOM,
          CHART_LEFT, CHART_HEIGHT - CHART_BOTTOM, CHART_WIDTH - CHART_RIGHT, CHART_HEIGHT - CHART_BOTTOM);
  fprintf(out, "<text id=\"xname\" class=\"name\" x=\"%.0f\" y=\"%.0f\">time (%s)</text>\n",
          (CHART_LEFT + CHART_WIDTH - CHART_RIGHT) / 2, CHART_HEIGHT - 16, time.unitName);
  fprintf(out, "<text id=\"yname\" class=\"name\" transform=\"rotate(-90)\" x=\"%.0f\" y=\"20\">"
          "heap in use (%s)</text>\n", -(CHART_TOP + CHART_HEIGHT - CHART_BOTTOM) / 2, heap.unitName);

  writeLine(out, profile, &time, &heap);
  if (peak == NULL)
    fprintf(out, "<text id=\"empty\" class=\"name\" x=\"%.0f\" y=\"%.0f\">no samples</text>\n",
            (CHART_LEFT + CHART_WIDTH - CHART_RIGHT) / 2, (CHART_TOP + CHART_HEIGHT - CHART_BOTTOM) / 2);
  else {
    double px = xOf(&time, (double)peak->ns), py = yOf(&heap, (double)peak->bytes);
    int left = px > (CHART_LEFT + CHART_WIDTH - CHART_RIGHT) / 2;
    fprintf(out, "<line id=\"peak-guide\" x1=\"%.0f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n",
            CHART_LEFT, py, px, py);
    fprintf(out, "<circle id=\"peak\" cx=\"%.2f\" cy=\"%.2f\" r=\"4\" data-bytes=\"%llu\" data-ns=\"%llu\"/>\n",
            px, py, (unsigned long long)peak->bytes, (unsigned long long)peak->ns);
    fprintf(out, "<text id=\"peak-label\" x=\"%.2f\" y=\"%.2f\" text-anchor=\"%s\">peak %s (%s bytes) at %s</text>\n",
            left ? px - 8 : px + 8, py - 8 > CHART_TOP - 4 ? py - 8 : py + 16, left ? "end" : "start",
            SvgBytes(bytes, sizeof bytes, (double)peak->bytes), SvgCount(count, sizeof count, peak->bytes),
            timeText(when, sizeof when, &time, (double)peak->ns));
  }
  fputs("</svg>\n", out);
  if (fflush(out) != 0 || ferror(out)) {
    if (errno == 0)
      errno = EIO;
    return -1;
  }
  return 0;
}
